"""``send_batch`` against MiniBroker: every record arrives once, in order per partition, with the metadata the
future reports; idempotent, transactional, through a small ``buffer.memory``, every codec; on the compiled
kernel and on the pure-Python reference (``record_impl``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer, KafkaProducer
from pykafka_client.producer.partitioner import partition_for_key
from pykafka_client.structs import TopicPartition
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("record_impl"), pytest.mark.timeout(120)]

PARTITIONS = 3


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker({"num.partitions": PARTITIONS}) as b:
        yield b


def _read_all(broker: MiniBroker, topic: str, expected: int) -> list[Any]:
    consumer = KafkaConsumer({
        "bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    })
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        out: list[Any] = []
        for _ in range(100):
            out.extend(consumer.poll(0.2))
            if len(out) >= expected:
                break
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_round_trip_keyed_and_unkeyed(broker: MiniBroker, codec: str) -> None:
    topic = f"sb-{uuid.uuid4().hex[:10]}"
    n = 3000
    values = [b"v%05d" % i + b"x" * (i % 300) for i in range(n)]
    keys = [None if i % 5 == 0 else b"k%d" % (i % 17) for i in range(n)]
    config = {"bootstrap.servers": broker.bootstrap_servers, "compression.type": codec, "batch.size": 4096,
              "buffer.memory": 200_000, "linger.ms": 2}
    with KafkaProducer(config) as p:
        first = p.send_batch(topic, values[:1000])
        second = p.send_batch(topic, values[1000:], keys[1000:], timestamps=[1_700_000_000_000 + i for i in range(n - 1000)])
        md_first, md_second = first.result(30), second.result(30)
    records = _read_all(broker, topic, n)
    assert sorted(r.value for r in records) == sorted(values)
    by_value = {r.value: r for r in records}
    for i, md in enumerate(md_first):
        r = by_value[values[i]]
        assert (md.partition, md.offset) == (r.partition, r.offset)
    for i, md in enumerate(md_second):
        r = by_value[values[1000 + i]]
        assert (md.partition, md.offset, md.timestamp) == (r.partition, r.offset, 1_700_000_000_000 + i)
        key = keys[1000 + i]
        assert r.key == key
        if key is not None:
            assert md.partition == partition_for_key(key, PARTITIONS)
    for partition in range(PARTITIONS):  # per partition in the order sent
        got = [r.value for r in records if r.partition == partition and r.value in set(values[1000:])]
        assert got == [v for v in values[1000:] if by_value[v].partition == partition]


def test_transactional_send_batch_commits_and_aborts(broker: MiniBroker) -> None:
    topic = f"sbt-{uuid.uuid4().hex[:10]}"
    config = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"tx-{topic}"}
    with KafkaProducer(config) as p:
        p.init_transactions(30)
        p.begin_transaction()
        p.send_batch(topic, [b"aborted-%d" % i for i in range(500)], partition=1)
        p.abort_transaction(30)
        p.begin_transaction()
        f = p.send_batch(topic, [b"committed-%d" % i for i in range(500)], [b"k%d" % i for i in range(500)])
        p.commit_transaction(30)
        assert len(f.result(0)) == 500
    got = _read_all(broker, topic, 500)
    assert sorted(r.value for r in got) == sorted(b"committed-%d" % i for i in range(500))
