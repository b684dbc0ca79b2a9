"""Cancelling each awaitable in the middle, and backpressure: the clients stay consistent and no record is
lost silently (a cancelled send enqueued nothing; a record whose wait was cancelled is still delivered)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import RecordMetadata, TopicPartition
from pykafka_client.aio import AsyncKafkaConsumer, AsyncKafkaProducer
from pykafka_client.errors import BufferExhaustedError
from tests.integration.aio.conftest import consumer_config, topic_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(120)]


def producer_config(broker: MiniBroker, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"bootstrap.servers": broker.bootstrap_servers}
    cfg.update({k.replace("_", "."): v for k, v in extra.items()})
    return cfg


async def end_offset(broker: MiniBroker, tp: TopicPartition) -> int:
    async with AsyncKafkaConsumer(consumer_config(broker)) as c:
        return (await c.end_offsets([tp]))[tp]


async def test_cancelled_send_and_wait_still_delivers_its_record(broker: MiniBroker) -> None:
    topic = topic_name()
    outcomes: list[tuple[RecordMetadata | None, BaseException | None]] = []
    async with AsyncKafkaProducer(producer_config(broker, linger_ms=60000, batch_size=1 << 20)) as producer:
        await producer.send(topic, b"warm-up", partition=0)  # metadata known
        await producer.flush(30)
        with anyio.move_on_after(0.3) as scope:
            await producer.send_and_wait(topic, b"lingering", partition=0)  # waits for linger: cancelled
        assert scope.cancelled_caught
        delivery = await producer.send(topic, b"next", partition=0, on_delivery=lambda m, e: outcomes.append((m, e)))
        await producer.flush(30)
        assert (await delivery).offset == 2
    assert outcomes and outcomes[0][1] is None
    assert await end_offset(broker, TopicPartition(topic, 0)) == 3  # warm-up, the cancelled one, next


async def test_send_waits_for_buffer_memory_asynchronously_and_a_cancelled_send_enqueues_nothing(
    broker: MiniBroker,
) -> None:
    topic = topic_name()
    cfg = producer_config(broker, linger_ms=60000, batch_size=1024, buffer_memory=3072, max_block_ms=500)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async with AsyncKafkaProducer(cfg) as producer:
        await producer.send(topic, b"x", partition=0)
        await producer.flush(30)
        # the whole buffer held elsewhere (as by batches in flight to a stalled broker): a waiting send makes
        # lingering batches sendable, which frees their memory, so they would not keep the send waiting
        pool = producer.sync_producer.accumulator.free
        pool.allocate(pool.total_memory, 0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(ticker)
                # no room: send waits asynchronously (the ticker keeps running) and fails after max.block.ms
                ticks_before = ticks
                delivery = await producer.send(topic, b"v" * 700, partition=1)
                assert ticks - ticks_before >= 5
                with pytest.raises(BufferExhaustedError):
                    await delivery
                # a send cancelled while waiting for memory enqueues nothing
                with anyio.move_on_after(0.1) as scope:
                    await producer.send(topic, b"c" * 700, partition=2)
                assert scope.cancelled_caught
                assert pool.queued() == 0  # neither wait is still counted as a waiter
                tg.cancel_scope.cancel()
        finally:
            pool.deallocate(pool.total_memory)
        await producer.send(topic, b"after", partition=1)
        await producer.flush(30)
    ends = [await end_offset(broker, TopicPartition(topic, p)) for p in range(3)]
    assert ends == [1, 1, 0]


async def test_cancelled_poll_leaves_the_consumer_usable_and_loses_no_record(broker: MiniBroker) -> None:
    topic = topic_name()
    tp = TopicPartition(topic, 0)
    async with AsyncKafkaProducer(producer_config(broker)) as producer:
        await producer.send_and_wait(topic, b"0", partition=0)
        async with AsyncKafkaConsumer(consumer_config(broker, group_id=f"g-{topic}")) as consumer:
            await consumer.assign([tp])
            got = [r.value for r in await consumer.poll(10)]
            with anyio.fail_after(5):  # returns as soon as it is cancelled, not after the 30 s poll
                with anyio.move_on_after(0.2):
                    await consumer.poll(30)
            for i in range(1, 20):
                await producer.send(topic, b"%d" % i, partition=0)
            await producer.flush(10)
            # cancel polls at many points: every record still arrives exactly once
            with anyio.fail_after(30):
                while len(got) < 20:
                    with anyio.move_on_after(0.005):
                        got.extend(r.value for r in await consumer.poll(1.0))
            assert got == [b"%d" % i for i in range(20)]
            # commit and committed cancelled midway, then done: the consumer is consistent
            with anyio.move_on_after(0.001):
                await consumer.commit()
            with anyio.move_on_after(0.001):
                await consumer.committed([tp])
            await consumer.commit()
            committed = await consumer.committed([tp])
            offset = committed[tp]
            assert offset is not None and offset.offset == 20
            assert await consumer.position(tp) == 20


async def test_cancelled_flush_and_position_leave_clients_usable(broker: MiniBroker) -> None:
    topic = topic_name()
    tp = TopicPartition(topic, 0)
    async with AsyncKafkaProducer(producer_config(broker)) as producer:
        for _ in range(50):
            await producer.send(topic, b"x" * 100, partition=0)
        with anyio.move_on_after(0.0001):
            await producer.flush()
        await producer.flush(30)
        assert await producer.send_and_wait(topic, b"y", partition=0)
    async with AsyncKafkaConsumer(consumer_config(broker)) as consumer:
        await consumer.assign([tp])
        with anyio.move_on_after(0.0001):
            await consumer.position(tp)
        assert await consumer.position(tp) == 0
        assert (await consumer.end_offsets([tp]))[tp] == 51
