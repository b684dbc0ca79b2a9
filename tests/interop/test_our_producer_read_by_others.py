"""Records written by OUR KafkaProducer, read back byte-exact by librdkafka (confluent-kafka) and kafka-python.

Every codec, keys and null keys, empty and null values, headers (repeated names too), explicit timestamps,
acks 0/1/all (the idempotent default is acks=all), against mini_broker.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaProducer
from pykafka_client.admin import NewTopic
from tests.interop.records import CODECS, Rec, make_records

ck = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

N = 40


def _produce_ours(broker: MiniBroker, topic: str, partition: int, recs: list[Rec], **conf: object) -> list[int]:
    config: dict[str, object] = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, **conf}
    with KafkaProducer(config) as producer:
        futures = [
            producer.send(topic, value=r.value, key=r.key, partition=partition, timestamp=r.timestamp,
                          headers=list(r.headers) or None)
            for r in recs
        ]
        producer.flush(30.0)
        return [f.result(timeout=30).offset for f in futures]


def _read_with_librdkafka(broker: MiniBroker, topic: str, partition: int, count: int) -> list[Any]:
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ours-read-by-ck",
                     "enable.auto.commit": False, "enable.partition.eof": False, "check.crcs": True})
    try:
        c.assign([ck.TopicPartition(topic, partition, ck.OFFSET_BEGINNING)])
        out: list[Any] = []
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            out.append(m)
        return out
    finally:
        c.close()


def _read_with_kafka_python(broker: MiniBroker, topic: str, partition: int, count: int) -> list[Any]:
    tp = kafka.TopicPartition(topic, partition)
    c = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False, check_crcs=True)
    try:
        c.assign([tp])
        c.seek_to_beginning(tp)
        out: list[Any] = []
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            for batch in c.poll(timeout_ms=1000).values():
                out.extend(batch)
        return out
    finally:
        c.close()


@pytest.mark.parametrize("codec", ("none", *CODECS))
def test_librdkafka_and_kafka_python_read_our_batches_byte_exact(codec: str) -> None:
    with MiniBroker(num_partitions=1) as broker:
        topic = f"ours-{codec}"
        with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)], timeout=10.0)
        expected: dict[int, list[Rec]] = {}
        for partition, acks in enumerate(("0", "1", "all")):
            recs = make_records(N, f"{codec}-{acks}")
            conf: dict[str, object] = {"acks": acks, "compression.type": codec}
            if acks != "all":
                conf["enable.idempotence"] = False
            offsets = _produce_ours(broker, topic, partition, recs, **conf)
            if acks != "0":
                assert offsets == list(range(N))
            expected[partition] = recs

        for partition, recs in expected.items():
            got = _read_with_librdkafka(broker, topic, partition, N)
            assert [m.offset() for m in got] == list(range(N))
            assert [Rec(m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1]) for m in got] == recs
            assert all(m.timestamp()[0] == ck.TIMESTAMP_CREATE_TIME for m in got)

            got_kp = _read_with_kafka_python(broker, topic, partition, N)
            assert [r.offset for r in got_kp] == list(range(N))
            assert [Rec(r.key, r.value, tuple(r.headers), r.timestamp) for r in got_kp] == recs
