"""Transactions through the async producer: commit visible to read_committed, abort invisible,
send_offsets_to_transaction with the async consumer's group_metadata(), ``async with producer.transaction()``."""

from __future__ import annotations

import anyio
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import ConsumerRecord, OffsetAndMetadata, TopicPartition
from pykafka_client.aio import AsyncKafkaConsumer, AsyncKafkaProducer
from pykafka_client.errors import IllegalStateError
from tests.integration.aio.conftest import consumer_config, topic_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(120)]


async def read_committed(broker: MiniBroker, tp: TopicPartition, expect: int) -> list[bytes | None]:
    async with AsyncKafkaConsumer(consumer_config(broker, isolation_level="read_committed")) as c:
        await c.assign([tp])
        got: list[bytes | None] = []
        end = (await c.end_offsets([tp]))[tp]
        with anyio.fail_after(30):
            while len(got) < expect or await c.position(tp) < end:
                got.extend(r.value for r in await c.poll(0.5))
        return got


async def test_commit_abort_and_offsets_in_a_transaction(broker: MiniBroker) -> None:
    src, dst = topic_name("src"), topic_name("dst")
    group = f"g-{src}"
    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as plain:
        for i in range(5):
            await plain.send(src, b"%d" % i, partition=0)
        await plain.flush(30)

    cfg = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"tx-{src}"}
    async with AsyncKafkaProducer(cfg) as producer, AsyncKafkaConsumer(
        consumer_config(broker, group_id=group)
    ) as consumer:
        await producer.init_transactions()
        await consumer.subscribe([src])
        records: list[ConsumerRecord[bytes | None, bytes | None]] = []
        with anyio.fail_after(30):
            while len(records) < 5:
                records.extend(await consumer.poll(0.5))
        # consume-transform-produce: outputs and the group's offsets commit together
        async with producer.transaction():
            for r in records:
                await producer.send(dst, (r.value or b"") + b"!", partition=0)
            await producer.send_offsets_to_transaction(
                {TopicPartition(src, 0): OffsetAndMetadata(5)}, await consumer.group_metadata()
            )
        # an aborted transaction's records are never visible to read_committed
        await producer.begin_transaction()
        await producer.send(dst, b"aborted", partition=0)
        await producer.flush(10)
        await producer.abort_transaction()
        # the context manager aborts when its block raises
        with pytest.raises(ValueError):
            async with producer.transaction():
                await producer.send(dst, b"aborted too", partition=0)
                raise ValueError("processing failed")
        committed = await consumer.committed([TopicPartition(src, 0)])
    offset = committed[TopicPartition(src, 0)]
    assert offset is not None and offset.offset == 5
    assert await read_committed(broker, TopicPartition(dst, 0), 5) == [b"%d!" % i for i in range(5)]


async def test_transactional_calls_without_transactional_id_raise(broker: MiniBroker) -> None:
    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        with pytest.raises(IllegalStateError):
            await producer.init_transactions()
        with pytest.raises(IllegalStateError):
            await producer.begin_transaction()
