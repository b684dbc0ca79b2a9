"""confluent-kafka (librdkafka) against mini_broker: admin, produce with every codec and acks, consume back."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from tests.interop.records import ACKS, CODECS, Rec, make_records

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

N = 30


def _admin(broker: MiniBroker) -> Any:
    return admin_mod.AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _create(broker: MiniBroker, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
    admin = _admin(broker)  # keep a reference: the futures fail if the handle is destroyed
    futures = admin.create_topics([admin_mod.NewTopic(topic, partitions, 1, config=config or {})])
    futures[topic].result(15)


def _produce(broker: MiniBroker, topic: str, partition: int, recs: list[Rec], **conf: object) -> list[int]:
    offsets: list[int] = []
    errors: list[object] = []

    def on_delivery(err: object, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            offsets.append(msg.offset())

    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, **conf})
    for r in recs:
        p.produce(topic, value=r.value, key=r.key, partition=partition, timestamp=r.timestamp,
                  headers=list(r.headers) or None, on_delivery=on_delivery)
    assert p.flush(30) == 0
    assert errors == []
    return offsets


def _consumer(broker: MiniBroker) -> Any:
    return ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "interop-no-join",
                        "enable.auto.commit": False, "enable.partition.eof": False})


def _consume(broker: MiniBroker, topic: str, partition: int, offset: int, count: int) -> list[Any]:
    c = _consumer(broker)
    try:
        c.assign([ck.TopicPartition(topic, partition, offset)])
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


def _as_rec(m: Any) -> Rec:
    ts_type, ts = m.timestamp()
    assert ts_type == ck.TIMESTAMP_CREATE_TIME
    return Rec(m.key(), m.value(), tuple(m.headers() or ()), ts)


@pytest.mark.parametrize("codec", CODECS)
def test_produce_every_codec_and_acks_consume_from_earliest(mini_broker: MiniBroker, codec: str) -> None:
    topic = f"ck-{codec}"
    _create(mini_broker, topic, len(ACKS))
    expected: dict[int, list[Rec]] = {}
    for partition, acks in enumerate(ACKS):
        recs = make_records(N, f"{codec}{acks}")
        offsets = _produce(mini_broker, topic, partition, recs, **{"acks": str(acks), "compression.type": codec})
        if acks != 0:
            assert sorted(offsets) == list(range(N))
        expected[partition] = recs
    for partition, recs in expected.items():
        got = _consume(mini_broker, topic, partition, ck.OFFSET_BEGINNING, N)
        assert [m.offset() for m in got] == list(range(N))
        assert [_as_rec(m) for m in got] == recs


def test_consume_from_latest_and_from_timestamp(mini_broker: MiniBroker) -> None:
    topic = "ck-positions"
    _create(mini_broker, topic, 1)
    first = make_records(10, "a")
    _produce(mini_broker, topic, 0, first, acks="all")
    c = _consumer(mini_broker)
    try:
        c.assign([ck.TopicPartition(topic, 0, ck.OFFSET_END)])
        # wait until the consumer has resolved its position (the end) before producing more
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            c.poll(0.2)
            pos = c.position([ck.TopicPartition(topic, 0)])[0].offset
            if pos == 10:
                break
        second = make_records(5, "b")
        _produce(mini_broker, topic, 0, second, acks="all")
        got: list[Any] = []
        deadline = time.monotonic() + 20
        while len(got) < 5 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append(m)
        assert [m.offset() for m in got] == list(range(10, 15))
        assert [_as_rec(m) for m in got] == second
        # offsets_for_times: the first record whose timestamp >= target
        found = c.offsets_for_times([ck.TopicPartition(topic, 0, first[3].timestamp)], 10)
        assert found[0].offset == 3
        assert c.offsets_for_times([ck.TopicPartition(topic, 0, 2**62)], 10)[0].offset == -1
    finally:
        c.close()
    got = _consume(mini_broker, topic, 0, 7, 3)
    assert [_as_rec(m) for m in got] == first[7:10]


def test_list_offsets_latest_after_one_batch_of_100(mini_broker: MiniBroker) -> None:
    topic = "ck-hundred"
    _create(mini_broker, topic, 1)
    recs = make_records(100, "h")
    _produce(mini_broker, topic, 0, recs, acks="all", **{"linger.ms": 200, "batch.num.messages": 1000})
    c = _consumer(mini_broker)
    try:
        assert c.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=10) == (0, 100)
    finally:
        c.close()
    admin = _admin(mini_broker)
    res = admin.list_offsets({ck.TopicPartition(topic, 0): admin_mod.OffsetSpec.latest()})
    assert next(iter(res.values())).result(10).offset == 100
    res = admin.list_offsets({ck.TopicPartition(topic, 0): admin_mod.OffsetSpec.earliest()})
    assert next(iter(res.values())).result(10).offset == 0
    res = admin.list_offsets({ck.TopicPartition(topic, 0): admin_mod.OffsetSpec.max_timestamp()})
    assert next(iter(res.values())).result(10).offset == 99


def test_create_partitions_and_describe_configs(mini_broker: MiniBroker) -> None:
    topic = "ck-admin"
    _create(mini_broker, topic, 2, {"retention.ms": "3600000"})
    admin = _admin(mini_broker)
    admin.create_partitions([admin_mod.NewPartitions(topic, 5)])[topic].result(15)
    md = admin.list_topics(topic, timeout=10)
    assert len(md.topics[topic].partitions) == 5
    _produce(mini_broker, topic, 4, make_records(3, "p"), acks="all")
    with pytest.raises(ck.KafkaException):
        admin.create_partitions([admin_mod.NewPartitions(topic, 3)])[topic].result(15)
    resource = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(15)
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].source == admin_mod.ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert not entries["retention.ms"].is_default
    assert entries["segment.bytes"].value == "1073741824"
    assert entries["segment.bytes"].source == admin_mod.ConfigSource.DEFAULT_CONFIG.value
    assert entries["segment.bytes"].is_default
    assert entries["cleanup.policy"].value == "delete"
    # incremental alter, then describe again
    alter = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, topic, incremental_configs=[
        admin_mod.ConfigEntry("segment.bytes", "1048576",
                              incremental_operation=admin_mod.AlterConfigOpType.SET)])
    admin.incremental_alter_configs([alter])[alter].result(15)
    entries = admin.describe_configs([resource])[resource].result(15)
    assert entries["segment.bytes"].value == "1048576"
    assert entries["segment.bytes"].source == admin_mod.ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def test_admin_errors(mini_broker: MiniBroker) -> None:
    admin = _admin(mini_broker)
    with pytest.raises(ck.KafkaException) as e:
        admin.create_topics([admin_mod.NewTopic("ck-rf3", 1, 3)])["ck-rf3"].result(15)
    assert e.value.args[0].code() == ck.KafkaError.INVALID_REPLICATION_FACTOR
    with pytest.raises(ck.KafkaException) as e:
        admin.create_topics([admin_mod.NewTopic("bad name!", 1, 1)])["bad name!"].result(15)
    assert e.value.args[0].code() == ck.KafkaError.TOPIC_EXCEPTION
    _create(mini_broker, "ck-dup", 1)
    with pytest.raises(ck.KafkaException) as e:
        _create(mini_broker, "ck-dup", 1)
    assert e.value.args[0].code() == ck.KafkaError.TOPIC_ALREADY_EXISTS
    admin.delete_topics(["ck-dup"])["ck-dup"].result(15)
    assert "ck-dup" not in admin.list_topics(timeout=10).topics


def test_idempotent_producer(mini_broker: MiniBroker) -> None:
    topic = "ck-idempotent"
    _create(mini_broker, topic, 1)
    recs = make_records(N, "idem")
    offsets = _produce(mini_broker, topic, 0, recs, **{"enable.idempotence": True, "compression.type": "lz4"})
    assert sorted(offsets) == list(range(N))
    got = _consume(mini_broker, topic, 0, ck.OFFSET_BEGINNING, N)
    assert [_as_rec(m) for m in got] == recs
