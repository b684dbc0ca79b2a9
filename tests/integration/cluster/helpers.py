"""Shared pieces of the cluster tests: a raw connection to one broker, the transaction coordinator of a
transactional id, reading partitions back, a cluster shared by several tests made whole between them."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import KafkaConsumer
from pykafka_client.protocol.messages import DescribeTransactionsRequest, FindCoordinatorRequest
from pykafka_client.structs import TopicPartition
from tests.integration.wire import Conn


@dataclass
class Endpoint:
    """What ``tests.integration.wire.Conn`` needs of a broker."""

    port: int


def conn(cluster: MiniCluster, broker_id: int) -> Conn:
    """A raw connection to broker ``broker_id`` of ``cluster``."""
    return Conn(Endpoint(cluster.brokers[broker_id].port))  # type: ignore[arg-type]


#: what a broker answers for a transactional id it does not serve (yet): COORDINATOR_LOAD_IN_PROGRESS,
#: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
NOT_SERVING = frozenset({14, 15, 16})


def transaction_coordinator(cluster: MiniCluster, transactional_id: str) -> int:
    """The broker id FindCoordinator names for ``transactional_id``, once that broker serves it (retried while
    the coordinator is not available: the first lookup creates ``__transaction_state``; FindCoordinator names
    the partition's leader as soon as the answering broker's metadata has it, and the leader loads the
    partition on its own thread after that, answering COORDINATOR_LOAD_IN_PROGRESS meanwhile)."""
    deadline = time.monotonic() + 60
    while True:
        with conn(cluster, next(b for b, p in cluster.brokers.items() if p.alive)) as c:
            resp = c.call(FindCoordinatorRequest(key=transactional_id, key_type=1), 3)
        if resp.error_code == 0 and serves_transactional_id(cluster, int(resp.node_id), transactional_id):
            return int(resp.node_id)
        assert time.monotonic() < deadline, f"no transaction coordinator for {transactional_id!r}: {resp}"
        time.sleep(0.2)


def serves_transactional_id(cluster: MiniCluster, broker_id: int, transactional_id: str) -> bool:
    """Whether broker ``broker_id`` answers for ``transactional_id`` as its loaded coordinator (DescribeTransactions:
    the id's state or TRANSACTIONAL_ID_NOT_FOUND, not one of :data:`NOT_SERVING`)."""
    if not cluster.brokers[broker_id].alive:
        return False
    try:
        with conn(cluster, broker_id) as c:
            resp = c.call(DescribeTransactionsRequest(transactional_ids=[transactional_id]), 0)
    except OSError:
        return False
    return int(resp.transaction_states[0].error_code) not in NOT_SERVING


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
                assert r.value is not None, "the cluster tests write no null values"
                out[r.partition].append(r.value)
                n += 1
        # a little more: anything beyond ``expected`` is a duplicate the test must see
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            for r in c.poll(0.2):
                assert r.value is not None, "the cluster tests write no null values"
                out[r.partition].append(r.value)
    return out


def restored_after_each_test(cluster: MiniCluster) -> Iterator[MiniCluster]:
    """The body of a function-scoped fixture over a cluster that several tests share (a module- or
    package-scoped one): yields ``cluster``, then starts again any broker the test left down (it failed before
    restarting its victim), so one failure does not fail the tests after it too; a warning names them."""
    yield cluster
    down = cluster.restore()
    if down:
        warnings.warn(f"brokers {down} were down at the end of the test and were started again", stacklevel=1)
