"""Shared pieces of the cluster tests: a raw connection to one broker, the transaction coordinator of a
transactional id, reading partitions back."""

from __future__ import annotations

import time
from dataclasses import dataclass

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import KafkaConsumer
from pykafka_client.protocol.messages import FindCoordinatorRequest
from pykafka_client.structs import TopicPartition
from tests.integration.wire import Conn


@dataclass
class Endpoint:
    """What ``tests.integration.wire.Conn`` needs of a broker."""

    port: int


def conn(cluster: MiniCluster, broker_id: int) -> Conn:
    """A raw connection to broker ``broker_id`` of ``cluster``."""
    return Conn(Endpoint(cluster.brokers[broker_id].port))  # type: ignore[arg-type]


def transaction_coordinator(cluster: MiniCluster, transactional_id: str) -> int:
    """The broker id FindCoordinator names for ``transactional_id`` (retried while the coordinator is not
    available: the first lookup creates ``__transaction_state``, and its leader must load it)."""
    deadline = time.monotonic() + 60
    while True:
        with conn(cluster, next(b for b, p in cluster.brokers.items() if p.alive)) as c:
            resp = c.call(FindCoordinatorRequest(key=transactional_id, key_type=1), 3)
        if resp.error_code == 0:
            return int(resp.node_id)
        assert time.monotonic() < deadline, f"no transaction coordinator for {transactional_id!r}: {resp}"
        time.sleep(0.2)


def read_back(bootstrap: str, topic: str, partitions: int, expected: int, timeout_s: float = 120.0
              ) -> dict[int, list[bytes]]:
    """Every record of ``topic`` (values per partition, in offset order) once ``expected`` were read or time ran
    out (read_uncommitted, from the beginning, no group)."""
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False) as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + timeout_s
        n = 0
        while n < expected and time.monotonic() < deadline:
            for r in c.poll(0.5):
                out[r.partition].append(r.value)
                n += 1
        # a little more: anything beyond ``expected`` is a duplicate the test must see
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            for r in c.poll(0.2):
                out[r.partition].append(r.value)
    return out
