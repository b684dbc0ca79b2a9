"""``async for`` ends cleanly on close, closed-client errors, timeouts, and event-loop lag while producing and
consuming (loose bound only: no single stall of a second; the 5 ms p99 aim is measured by bench/async.py)."""

from __future__ import annotations

import time

import anyio
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import TopicPartition
from pykafka_client.aio import AsyncAdminClient, AsyncKafkaConsumer, AsyncKafkaProducer
from pykafka_client.errors import IllegalStateError, KafkaTimeoutError, ProducerClosedError
from tests.integration.aio.conftest import consumer_config, topic_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(120)]


async def test_async_for_ends_cleanly_when_the_consumer_is_closed(broker: MiniBroker) -> None:
    topic = topic_name()
    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for i in range(5):
            await producer.send(topic, b"%d" % i, partition=0)
    consumer = AsyncKafkaConsumer(consumer_config(broker, group_id=f"g-{topic}"))
    await consumer.subscribe([topic])
    got: list[bytes | None] = []

    async def read_all() -> None:
        async for record in consumer:  # ends without an error once closed
            got.append(record.value)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_all)
            while len(got) < 5:
                await anyio.sleep(0.05)
            await consumer.close()  # while read_all waits in a poll
    assert got == [b"%d" % i for i in range(5)]
    assert consumer.closed


async def test_calls_on_closed_clients_raise(broker: MiniBroker) -> None:
    producer = AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers})
    await producer.close()
    with pytest.raises(ProducerClosedError):
        await producer.send("t", b"v")
    consumer = AsyncKafkaConsumer(consumer_config(broker))
    await consumer.close()
    await consumer.close()  # a no-op
    with pytest.raises(IllegalStateError, match="closed"):
        await consumer.poll(0.1)
    with pytest.raises(IllegalStateError, match="closed"):
        await consumer.assign([TopicPartition("t", 0)])
    admin = AsyncAdminClient({"bootstrap.servers": broker.bootstrap_servers})
    await admin.close()
    with pytest.raises(IllegalStateError, match="closed"):
        await admin.list_topics()


async def test_timeouts_raise_kafka_timeout_error() -> None:
    unreachable = {"bootstrap.servers": "127.0.0.1:1"}  # nothing listens there
    async with AsyncKafkaProducer({**unreachable, "max.block.ms": 300}) as producer:
        start = time.monotonic()
        delivery = await producer.send("t", b"v")  # metadata never arrives: fails after max.block.ms
        with pytest.raises(KafkaTimeoutError):
            await delivery
        assert time.monotonic() - start < 20
    async with AsyncKafkaConsumer(unreachable) as consumer:
        tp = TopicPartition("t", 0)
        await consumer.assign([tp])
        with pytest.raises(KafkaTimeoutError):
            await consumer.position(tp, timeout=0.3)
        with pytest.raises(KafkaTimeoutError):
            await consumer.end_offsets([tp], timeout=0.3)
    async with AsyncAdminClient(unreachable) as admin:
        with pytest.raises(KafkaTimeoutError):
            await admin.list_topics(timeout=0.3)


async def test_the_event_loop_keeps_running_while_producing_and_consuming(broker: MiniBroker) -> None:
    topic = topic_name()
    tp = TopicPartition(topic, 0)
    n = 20000
    stalls: list[float] = []
    done = anyio.Event()

    async def ticker() -> None:
        while not done.is_set():
            t0 = time.perf_counter()
            await anyio.sleep(0.001)
            stalls.append(time.perf_counter() - t0)

    async def work() -> None:
        async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5}) as producer:
            for _ in range(n):
                await producer.send(topic, b"x" * 100, partition=0)
            await producer.flush(60)
        async with AsyncKafkaConsumer(consumer_config(broker)) as consumer:
            await consumer.assign([tp])
            seen = 0
            while seen < n:
                seen += (await consumer.poll(1.0)).count()
        done.set()

    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            await work()
    assert len(stalls) > 10
    assert max(stalls) < 1.0, f"the event loop stalled for {max(stalls):.3f} s"
