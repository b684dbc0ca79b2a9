"""kafka-python 3 against mini_broker: admin, produce with every codec and acks (idempotent by default for
acks=all), consume back by assign() without a group."""

from __future__ import annotations

from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from tests.interop.records import ACKS, CODECS, Rec, make_records

kafka = pytest.importorskip("kafka")
kafka_admin = pytest.importorskip("kafka.admin")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

N = 30


def _admin(broker: MiniBroker) -> Any:
    return kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=15000)


def _create(broker: MiniBroker, topic: str, partitions: int) -> None:
    admin = _admin(broker)
    try:
        admin.create_topics([kafka_admin.NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def _produce(broker: MiniBroker, topic: str, partition: int, recs: list[Rec], **conf: Any) -> list[int]:
    conf.setdefault("linger_ms", 5)
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, **conf)
    try:
        futures = [p.send(topic, value=r.value, key=r.key, partition=partition, timestamp_ms=r.timestamp,
                          headers=list(r.headers)) for r in recs]
        p.flush(30)
        return [f.get(10).offset for f in futures]
    finally:
        p.close(10)


def _consumer(broker: MiniBroker) -> Any:
    return kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                               consumer_timeout_ms=10000, request_timeout_ms=15000)


def _as_rec(m: Any) -> Rec:
    assert m.timestamp_type == 0
    return Rec(m.key, m.value, tuple((k, v) for k, v in m.headers), m.timestamp)


def _consume(broker: MiniBroker, topic: str, partition: int, start: int | None, count: int) -> list[Any]:
    c = _consumer(broker)
    try:
        tp = kafka.TopicPartition(topic, partition)
        c.assign([tp])
        if start is None:
            c.seek_to_beginning(tp)
        else:
            c.seek(tp, start)
        out: list[Any] = []
        for m in c:
            out.append(m)
            if len(out) >= count:
                break
        return out
    finally:
        c.close()


@pytest.mark.parametrize("codec", CODECS)
def test_produce_every_codec_and_acks_consume_from_earliest(mini_broker: MiniBroker, codec: str) -> None:
    topic = f"kp-{codec}"
    _create(mini_broker, topic, len(ACKS))
    expected: dict[int, list[Rec]] = {}
    for partition, acks in enumerate(ACKS):
        recs = make_records(N, f"{codec}{acks}")
        conf: dict[str, Any] = {"acks": "all" if acks == -1 else acks, "compression_type": codec}
        if acks != -1:
            conf["enable_idempotence"] = False  # idempotence requires acks=all
        offsets = _produce(mini_broker, topic, partition, recs, **conf)
        if acks != 0:
            assert offsets == list(range(N))
        expected[partition] = recs
    for partition, recs in expected.items():
        got = _consume(mini_broker, topic, partition, None, N)
        assert [m.offset for m in got] == list(range(N))
        assert [_as_rec(m) for m in got] == recs


def test_latest_timestamp_and_list_offsets(mini_broker: MiniBroker) -> None:
    topic = "kp-positions"
    _create(mini_broker, topic, 1)
    first = make_records(100, "a")
    _produce(mini_broker, topic, 0, first, acks="all", linger_ms=200)
    c = _consumer(mini_broker)
    try:
        tp = kafka.TopicPartition(topic, 0)
        c.assign([tp])
        assert c.end_offsets([tp]) == {tp: 100}
        assert c.beginning_offsets([tp]) == {tp: 0}
        found = c.offsets_for_times({tp: first[42].timestamp})
        assert found[tp].offset == 42
        assert found[tp].timestamp == first[42].timestamp
        assert c.offsets_for_times({tp: 2**62})[tp] is None
        c.seek_to_end(tp)
        assert c.position(tp) == 100
        second = make_records(5, "b")
        _produce(mini_broker, topic, 0, second, acks=1, enable_idempotence=False)
        got = []
        for m in c:
            got.append(m)
            if len(got) == 5:
                break
        assert [m.offset for m in got] == list(range(100, 105))
        assert [_as_rec(m) for m in got] == second
        # consume from a timestamp: seek to what offsets_for_times found
        c.seek(tp, found[tp].offset)
        again = []
        for m in c:
            again.append(m)
            if len(again) == 3:
                break
        assert [_as_rec(m) for m in again] == first[42:45]
    finally:
        c.close()


def test_create_partitions_and_describe_configs(mini_broker: MiniBroker) -> None:
    topic = "kp-admin"
    admin = _admin(mini_broker)
    try:
        admin.create_topics([kafka_admin.NewTopic(topic, 1, 1, topic_configs={"cleanup.policy": "compact"})])
        admin.create_partitions({topic: kafka_admin.NewPartitions(3)})
        described = admin.describe_topics([topic])
        assert len(described[0]["partitions"]) == 3
        resource = kafka_admin.ConfigResource(kafka_admin.ConfigResourceType.TOPIC, topic)
        modified = admin.describe_configs([resource])["topic"][topic]
        assert set(modified) == {"cleanup.policy"}
        assert modified["cleanup.policy"]["value"] == "compact"
        assert modified["cleanup.policy"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        everything = admin.describe_configs([resource], config_filter="all")["topic"][topic]
        assert everything["segment.bytes"]["value"] == "1073741824"
        assert everything["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
        assert everything["retention.ms"]["value"] == "604800000"
        # IncrementalAlterConfigs (kafka-python's default) adds to the overrides ...
        admin.alter_configs([kafka_admin.ConfigResource(kafka_admin.ConfigResourceType.TOPIC, topic,
                                                        configs={"retention.ms": "7200000"})])
        modified = admin.describe_configs([resource])["topic"][topic]
        assert {k: v["value"] for k, v in modified.items()} == {"cleanup.policy": "compact",
                                                                "retention.ms": "7200000"}
        # ... AlterConfigs (incremental=False) replaces them; kafka-python re-sends the other overrides itself
        admin.alter_configs([kafka_admin.ConfigResource(kafka_admin.ConfigResourceType.TOPIC, topic,
                                                        configs={"segment.ms": "60000"})], incremental=False)
        modified = admin.describe_configs([resource])["topic"][topic]
        assert {k: v["value"] for k, v in modified.items()} == {"cleanup.policy": "compact",
                                                                "retention.ms": "7200000", "segment.ms": "60000"}
    finally:
        admin.close()
