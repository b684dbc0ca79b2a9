"""aiokafka against mini_broker: admin, produce with every codec and acks, consume back by assign()."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from mini_broker.broker import MiniBroker
from tests.interop.records import ACKS, CODECS, Rec, make_records

aiokafka = pytest.importorskip("aiokafka")
aiokafka_admin = pytest.importorskip("aiokafka.admin")
config_resource = pytest.importorskip("aiokafka.admin.config_resource")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

N = 30
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 60))


async def _create(broker: MiniBroker, topic: str, partitions: int) -> None:
    admin = aiokafka_admin.AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([aiokafka_admin.NewTopic(topic, partitions, 1)])
    finally:
        await admin.close()


async def _produce(broker: MiniBroker, topic: str, partition: int, recs: list[Rec], **conf: Any) -> list[int]:
    conf.setdefault("linger_ms", 5)
    p = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, **conf)
    await p.start()
    try:
        futures = [await p.send(topic, value=r.value, key=r.key, partition=partition, timestamp_ms=r.timestamp,
                                headers=list(r.headers)) for r in recs]
        await p.flush()
        results = [await f for f in futures]
        return [md.offset if md is not None else -1 for md in results]  # acks=0: no metadata
    finally:
        await p.stop()


def _as_rec(m: Any) -> Rec:
    assert m.timestamp_type == 0
    return Rec(m.key, m.value, tuple((k, v) for k, v in m.headers), m.timestamp)


async def _consume(broker: MiniBroker, topic: str, partition: int, start: int | None, count: int) -> list[Any]:
    c = aiokafka.AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
    await c.start()
    try:
        tp = aiokafka.TopicPartition(topic, partition)
        c.assign([tp])
        if start is None:
            await c.seek_to_beginning(tp)
        else:
            c.seek(tp, start)
        out: list[Any] = []
        while len(out) < count:
            batch = await c.getmany(tp, timeout_ms=1000)
            out.extend(batch.get(tp, []))
        return out
    finally:
        await c.stop()


@pytest.mark.parametrize("codec", CODECS)
def test_produce_every_codec_and_acks_consume_from_earliest(mini_broker: MiniBroker, codec: str) -> None:
    async def main() -> None:
        topic = f"ak-{codec}"
        await _create(mini_broker, topic, len(ACKS))
        expected: dict[int, list[Rec]] = {}
        for partition, acks in enumerate(ACKS):
            recs = make_records(N, f"{codec}{acks}")
            offsets = await _produce(mini_broker, topic, partition, recs, acks="all" if acks == -1 else acks,
                                     compression_type=codec)
            if acks != 0:
                assert offsets == list(range(N))
            expected[partition] = recs
        for partition, recs in expected.items():
            got = await _consume(mini_broker, topic, partition, None, N)
            assert [m.offset for m in got] == list(range(N))
            assert [_as_rec(m) for m in got] == recs

    run(main())


def test_latest_timestamp_and_list_offsets(mini_broker: MiniBroker) -> None:
    async def main() -> None:
        topic = "ak-positions"
        await _create(mini_broker, topic, 1)
        first = make_records(100, "a")
        await _produce(mini_broker, topic, 0, first, acks="all", linger_ms=200)
        c = aiokafka.AIOKafkaConsumer(bootstrap_servers=mini_broker.bootstrap_servers, enable_auto_commit=False)
        await c.start()
        try:
            tp = aiokafka.TopicPartition(topic, 0)
            c.assign([tp])
            assert await c.end_offsets([tp]) == {tp: 100}
            assert await c.beginning_offsets([tp]) == {tp: 0}
            found = await c.offsets_for_times({tp: first[42].timestamp})
            assert found[tp].offset == 42
            assert (await c.offsets_for_times({tp: 2**62}))[tp] is None
            await c.seek_to_end(tp)
            assert await c.position(tp) == 100
            second = make_records(5, "b")
            await _produce(mini_broker, topic, 0, second, acks=1)
            got: list[Any] = []
            while len(got) < 5:
                batch = await c.getmany(tp, timeout_ms=1000)
                got.extend(batch.get(tp, []))
            assert [m.offset for m in got] == list(range(100, 105))
            assert [_as_rec(m) for m in got] == second
            # consume from a timestamp: seek to what offsets_for_times found
            c.seek(tp, found[tp].offset)
            again: list[Any] = []
            while len(again) < 3:
                batch = await c.getmany(tp, timeout_ms=1000, max_records=3 - len(again))
                again.extend(batch.get(tp, []))
            assert [_as_rec(m) for m in again] == first[42:45]
        finally:
            await c.stop()

    run(main())


def test_create_partitions_and_describe_configs(mini_broker: MiniBroker) -> None:
    async def main() -> None:
        topic = "ak-admin"
        admin = aiokafka_admin.AIOKafkaAdminClient(bootstrap_servers=mini_broker.bootstrap_servers)
        await admin.start()
        try:
            await admin.create_topics([aiokafka_admin.NewTopic(topic, 1, 1, topic_configs={"retention.ms": "1000"})])
            await admin.create_partitions({topic: aiokafka_admin.NewPartitions(4)})
            described = await admin.describe_topics([topic])
            assert len(described[0]["partitions"]) == 4
            res = await admin.describe_configs([config_resource.ConfigResource(
                config_resource.ConfigResourceType.TOPIC, topic)])
            entries = {e[0]: e for e in res[0].resources[0][4]}
            assert entries["retention.ms"][1] == "1000"
            assert entries["segment.bytes"][1] == "1073741824"
            # AlterConfigs replaces the topic's overrides
            await admin.alter_configs([config_resource.ConfigResource(
                config_resource.ConfigResourceType.TOPIC, topic, {"segment.bytes": "1048576"})])
            res = await admin.describe_configs([config_resource.ConfigResource(
                config_resource.ConfigResourceType.TOPIC, topic)])
            entries = {e[0]: e for e in res[0].resources[0][4]}
            assert entries["segment.bytes"][1] == "1048576"
            assert entries["retention.ms"][1] == "604800000"
        finally:
            await admin.close()

    run(main())
