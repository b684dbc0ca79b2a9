"""Async produce/consume round trips against MiniBroker, under asyncio and trio."""

from __future__ import annotations

import threading
from collections.abc import Collection

import anyio
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import ConsumerRebalanceListener, TopicPartition
from pykafka_client.admin import NewTopic
from pykafka_client.aio import (
    AsyncAdminClient,
    AsyncConsumerRebalanceListener,
    AsyncKafkaConsumer,
    AsyncKafkaProducer,
)
from pykafka_client.serialization import StringDeserializer
from tests.integration.aio.conftest import consumer_config, topic_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(120)]


async def test_send_batches_and_consumer_reads_every_record(broker: MiniBroker) -> None:
    topic = topic_name()
    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5}) as producer:
        deliveries = [await producer.send(topic, b"v%d" % i, key=b"k%d" % i) for i in range(300)]
        metas = [await d for d in deliveries]
        md = await producer.send_and_wait(topic, b"last", partition=1)
    assert {m.topic for m in metas} == {topic}
    assert md.partition == 1 and md.offset >= 0
    assert producer.sync_producer.metrics()["batch-total"] < 301  # sends were batched together

    async with AsyncKafkaConsumer(
        consumer_config(broker, group_id=f"g-{topic}"), value_deserializer=StringDeserializer()
    ) as consumer:
        await consumer.subscribe([topic])
        got: list[str] = []
        with anyio.fail_after(30):
            async for record in consumer:
                assert record.value is not None
                got.append(record.value)
                if len(got) == 301:
                    break
        await consumer.commit()
        parts = [TopicPartition(topic, p) for p in range(3)]
        committed = await consumer.committed(parts)
        ends = await consumer.end_offsets(parts)
    assert sorted(got) == sorted([f"v{i}" for i in range(300)] + ["last"])
    assert {tp: (om.offset if om else 0) for tp, om in committed.items()} == ends


async def test_assign_seek_pause_resume_position(broker: MiniBroker) -> None:
    topic = topic_name()
    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for i in range(10):
            await producer.send(topic, b"%d" % i, partition=0)
        await producer.flush(10)
    tp = TopicPartition(topic, 0)
    async with AsyncKafkaConsumer(consumer_config(broker)) as consumer:
        await consumer.assign([tp])
        assert await consumer.assignment() == {tp}
        await consumer.seek(tp, 7)
        assert await consumer.position(tp) == 7
        await consumer.pause([tp])
        assert await consumer.paused() == {tp}
        assert (await consumer.poll(0.2)).is_empty()
        await consumer.resume([tp])
        values: list[bytes | None] = []
        with anyio.fail_after(20):
            while len(values) < 3:
                values.extend(r.value for r in await consumer.poll(1.0))
        assert values == [b"7", b"8", b"9"]
        assert await consumer.position(tp) == 10
        assert await consumer.beginning_offsets([tp]) == {tp: 0}


async def test_admin_operations_are_coroutines(broker: MiniBroker) -> None:
    topic = topic_name()
    async with AsyncAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        await admin.create_topics([NewTopic(topic, 2, 1)])
        assert topic in await admin.list_topics()
        described = await admin.describe_topics([topic])
        assert len(described[topic].partitions) == 2
        cluster = await admin.describe_cluster()
        assert cluster.nodes
        await admin.delete_topics([topic])
        assert topic not in await admin.list_topics()


async def test_rebalance_listeners_run_in_the_event_loop_thread(broker: MiniBroker) -> None:
    """A sync listener and a coroutine listener both run in the loop's thread, inside the awaited poll."""
    topic = topic_name()
    loop_thread = threading.get_ident()
    seen: list[tuple[str, int]] = []

    class SyncListener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
            seen.append(("sync", threading.get_ident()))

    class CoroutineListener(AsyncConsumerRebalanceListener):
        async def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
            await anyio.sleep(0)
            seen.append(("async", threading.get_ident()))

    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        await producer.send_and_wait(topic, b"x")
    for kind, listener in (("sync", SyncListener()), ("async", CoroutineListener())):
        async with AsyncKafkaConsumer(consumer_config(broker, group_id=f"g-{topic}-{kind}")) as consumer:
            await consumer.subscribe([topic], listener)
            with anyio.fail_after(30):
                while not any(k == kind for k, _ in seen):
                    await consumer.poll(0.2)
    assert seen == [("sync", loop_thread), ("async", loop_thread)]
