"""Shared pieces of the cluster tests: a raw connection to one broker, reading partitions back."""

from __future__ import annotations

import time
from dataclasses import dataclass

from pykafka_client import KafkaConsumer
from pykafka_client.structs import TopicPartition


@dataclass
class Endpoint:
    """What ``tests.integration.wire.Conn`` needs of a broker."""

    port: int


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
