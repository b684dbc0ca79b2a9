"""KafkaProducer against independent Kafka-compatible brokers (Tansu; noida-db when installed)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from pykafka_client import KafkaProducer

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(120)]

kafka = pytest.importorskip("kafka")


def create_topic(bootstrap: str, partitions: int) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"p-{uuid.uuid4().hex[:10]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()
    return name


def read_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[Any]:
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=2000)
    try:
        c.assign([kafka.TopicPartition(topic, p) for p in range(partitions)])
        out: list[Any] = []
        deadline = time.monotonic() + 20
        while len(out) < expected and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out.extend(recs)
        return out
    finally:
        c.close()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_tansu_codecs_keys_headers(tansu_broker_module: Any, codec: str) -> None:
    bootstrap = tansu_broker_module.bootstrap
    topic = create_topic(bootstrap, 3)
    with KafkaProducer({"bootstrap.servers": bootstrap, "compression.type": codec, "max.block.ms": 20_000}) as p:
        fs = [p.send(topic, b"v%d" % i, key=b"k%d" % (i % 7), headers=[("i", b"%d" % i)]) for i in range(300)]
        p.flush(30)
        assert p.transaction_manager is not None and p.transaction_manager.has_producer_id()
    metas = [f.result(0) for f in fs]
    recs = read_all(bootstrap, topic, 3, 300)
    assert sorted(r.value for r in recs) == sorted(b"v%d" % i for i in range(300))
    by_value = {r.value: r for r in recs}
    for i, md in enumerate(metas):
        r = by_value[b"v%d" % i]
        assert (r.partition, r.offset, r.key, r.headers) == (md.partition, md.offset, b"k%d" % (i % 7), [("i", b"%d" % i)])


def test_tansu_restart_records_sent_during_outage_are_delivered(tansu_broker: Any) -> None:
    bootstrap = tansu_broker.bootstrap
    topic = create_topic(bootstrap, 1)
    # Records sent while the only broker is down must be buffered: with the default rebootstrap strategy the
    # producer forgets the topic's partitions once no broker can be reached (as Java's), and these sends would
    # block in the main thread, which restarts the broker only after them.
    cfg = {"bootstrap.servers": bootstrap, "max.block.ms": 20_000, "reconnect.backoff.max.ms": 200,
           "request.timeout.ms": 3000, "delivery.timeout.ms": 60_000, "metadata.recovery.strategy": "none"}
    with KafkaProducer(cfg) as p:
        p.send(topic, b"before", partition=0).result(20)
        tansu_broker.stop()
        during = [p.send(topic, b"during-%d" % i, partition=0) for i in range(20)]
        time.sleep(0.5)
        tansu_broker.start()
        p.flush(40)
        assert all(f.exception(0) is None for f in during), [f.exception(0) for f in during]
        offsets = [f.result(0).offset for f in during]
        assert offsets == sorted(offsets)


def test_noida(noida_broker: Any) -> None:
    bootstrap = noida_broker.bootstrap
    topic = create_topic(bootstrap, 2)
    with KafkaProducer({"bootstrap.servers": bootstrap, "max.block.ms": 20_000}) as p:
        fs = [p.send(topic, b"n%d" % i, key=b"%d" % i) for i in range(100)]
        p.flush(30)
    assert all(f.exception(0) is None for f in fs)
    assert len(read_all(bootstrap, topic, 2, 100)) == 100
