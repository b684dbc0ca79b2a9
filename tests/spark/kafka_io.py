"""Helpers the Spark write tests share: create a topic and read whole partitions back with our consumer."""

from __future__ import annotations

import time
from dataclasses import dataclass

from pykafka_client import KafkaConsumer, TopicPartition
from pykafka_client.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, partitions, 1)], timeout=30)


@dataclass(frozen=True)
class ReadRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


def values_of(records: list[ReadRecord]) -> list[bytes]:
    """The records' values, each checked to be set (these tests write no null values)."""
    out: list[bytes] = []
    for r in records:
        assert r.value is not None, f"a null value at offset {r.offset}"
        out.append(r.value)
    return out


def read_topic(bootstrap: str, topic: str, partitions: int, isolation: str = "read_uncommitted",
               timeout: float = 60.0) -> list[ReadRecord]:
    """Every record visible under ``isolation``, partition by partition, up to the end offsets (under
    read_committed the LSO: the caller makes sure no transaction is left open)."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    out: list[ReadRecord] = []
    with KafkaConsumer({"bootstrap.servers": bootstrap, "isolation.level": isolation,
                        "enable.auto.commit": False}) as c:
        if isolation == "read_committed":
            with KafkaConsumer({"bootstrap.servers": bootstrap}) as hw_reader:
                deadline = time.monotonic() + timeout
                while c.end_offsets(tps, timeout=20) != hw_reader.end_offsets(tps, timeout=20):
                    assert time.monotonic() < deadline, "a transaction stayed open"
                    time.sleep(0.05)
        c.assign(tps)
        c.seek_to_beginning(tps)
        ends = c.end_offsets(tps, timeout=20)
        deadline = time.monotonic() + timeout
        while any(c.position(tp, timeout=20) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"reading {topic} did not reach {ends}"
            for r in c.poll(0.5):
                out.append(ReadRecord(r.partition, r.offset, r.key, r.value,
                                      tuple((h[0], h[1]) for h in (r.headers or ())), r.timestamp))
    return sorted(out, key=lambda r: (r.partition, r.offset))
