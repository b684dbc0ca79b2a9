"""A long ``linger.ms`` never holds a producer up: ``flush`` sends every lingering batch at once, and a send
waiting for buffer memory makes every batch sendable (Java's "memory exhausted") and wakes the Sender, so the
memory it needs is freed; a ``batch.size`` above ``buffer.memory`` fails the send at once, as the sync send.
Each wait is bounded by ``fail_after``, so a hang fails the test instead of stalling the run."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.aio import AsyncKafkaProducer
from pykafka_client.errors import IllegalArgumentError
from pykafka_client.producer.kafka_producer import KafkaProducer
from tests.integration.aio.conftest import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

LONG_LINGER_MS = 600_000  # batches never linger out during a test
MIB = 1 << 20


def _config(broker: MiniBroker, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": LONG_LINGER_MS}
    cfg.update({k.replace("_", "."): v for k, v in extra.items()})
    return cfg


@pytest.mark.anyio
@pytest.mark.parametrize("idempotent", [False, True])
async def test_flush_sends_batches_that_never_fill_nor_linger_out(broker: MiniBroker, idempotent: bool) -> None:
    topic = topic_name()
    config = _config(broker, batch_size=64 * MIB, buffer_memory=128 * MIB, enable_idempotence=idempotent)
    async with AsyncKafkaProducer(config) as producer:
        for round_ in range(20):
            deliveries = [await producer.send(topic, b"r%d-%d" % (round_, i)) for i in range(50)]
            with anyio.fail_after(10):
                await producer.flush()
            assert all(d.done() for d in deliveries)
            assert [(await d).offset for d in deliveries] == list(range(round_ * 50, round_ * 50 + 50))


@pytest.mark.anyio
async def test_a_send_waiting_for_memory_gets_it_from_lingering_batches(broker: MiniBroker) -> None:
    # three partitions (the module's broker), room for two 12 MiB batches: the third partition's first record
    # waits for memory that only the lingering batches hold (before: for max.block.ms, then BufferExhaustedError)
    topic = topic_name()
    config = _config(broker, batch_size=12 * MIB, buffer_memory=32 * MIB, max_block_ms=60_000)
    async with AsyncKafkaProducer(config) as producer:
        with anyio.fail_after(20):
            deliveries = [await producer.send(topic, b"m%d" % i, partition=i % 3) for i in range(9)]
            await producer.flush()
        metas = [await d for d in deliveries]
    assert [m.partition for m in metas] == [i % 3 for i in range(9)]
    assert producer.metrics()["waiting-threads"] == 0


def test_a_sync_send_waiting_for_memory_wakes_the_sender(broker: MiniBroker) -> None:
    topic = topic_name()
    producer = KafkaProducer(_config(broker, batch_size=12 * MIB, buffer_memory=32 * MIB, max_block_ms=20_000))
    try:
        futures = [producer.send(topic, b"m%d" % i, partition=i % 3) for i in range(9)]
        producer.flush(20)
        assert [f.result(0).partition for f in futures] == [i % 3 for i in range(9)]
    finally:
        producer.close(10)


@pytest.mark.anyio
async def test_a_batch_size_above_buffer_memory_fails_the_send_at_once(broker: MiniBroker) -> None:
    # as the sync send (Java's BufferPool.allocate); before, the async send waited max.block.ms for memory
    # that can never be free, then failed the record with BufferExhaustedError
    topic = topic_name()
    config = _config(broker, batch_size=64 * MIB, buffer_memory=32 * MIB, max_block_ms=60_000)
    async with AsyncKafkaProducer(config) as producer:
        with anyio.fail_after(20):
            with pytest.raises(IllegalArgumentError, match="hard limit"):
                await producer.send(topic, b"too big a batch")
            with pytest.raises(IllegalArgumentError, match="hard limit"):
                producer.sync_producer.send(topic, b"too big a batch")
