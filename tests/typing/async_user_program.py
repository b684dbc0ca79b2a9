"""The async twin of user_program.py: the same small application on ``pykafka_client.aio``, runnable under
asyncio or trio, type-checked with ``mypy --strict`` by test_user_program_types.py (never executed: it needs a
broker). It must pass with no ignores."""

from __future__ import annotations

import json
import sys
from collections.abc import Collection
from dataclasses import dataclass

import anyio

from pykafka_client import ConsumerRecord, OffsetAndMetadata, RecordMetadata, TopicPartition
from pykafka_client.admin import NewTopic, OffsetSpec
from pykafka_client.aio import (
    AsyncAdminClient,
    AsyncConsumerRebalanceListener,
    AsyncKafkaConsumer,
    AsyncKafkaProducer,
    DeliveryFuture,
)
from pykafka_client.errors import KafkaError, KafkaTimeoutError, UnknownTopicOrPartitionError
from pykafka_client.serialization import Headers, StringDeserializer, StringSerializer

BOOTSTRAP = {"bootstrap.servers": "localhost:9092"}


@dataclass
class Order:
    order_id: int
    amount: float


class OrderDeserializer:
    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Order | None:
        if data is None:
            return None
        raw = json.loads(data)
        return Order(int(raw["order_id"]), float(raw["amount"]))


async def create_topic(name: str) -> dict[TopicPartition, int]:
    async with AsyncAdminClient(BOOTSTRAP) as admin:
        await admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)], timeout=10)
        offsets = await admin.list_offsets({TopicPartition(name, p): OffsetSpec.latest() for p in range(3)})
        await admin.describe_producers([(name, p) for p in range(3)])  # plain tuples are accepted too
        return {tp: info.offset for tp, info in offsets.items()}


def on_delivery(metadata: RecordMetadata | None, error: BaseException | None) -> None:
    if error is not None:
        print("delivery failed:", error)


async def copy_group_offsets(source: str, target: str) -> dict[TopicPartition, int]:
    """Partition-keyed arguments built ahead as ``dict[TopicPartition, ...]``, as in user_program.py."""
    async with AsyncAdminClient(BOOTSTRAP) as admin:
        committed: dict[TopicPartition, OffsetAndMetadata] = await admin.list_consumer_group_offsets(source)
        await admin.alter_consumer_group_offsets(target, committed)
        specs: dict[TopicPartition, OffsetSpec] = {tp: OffsetSpec.earliest() for tp in committed}
        before: dict[TopicPartition, int] = {tp: info.offset for tp, info in (await admin.list_offsets(specs)).items()}
        return await admin.delete_records(before)


async def produce(topic: str) -> RecordMetadata:
    async with AsyncKafkaProducer({**BOOTSTRAP, "acks": "all"}, key_serializer=StringSerializer()) as producer:
        pending: list[DeliveryFuture] = [
            await producer.send(topic, value=b"order %d" % i, key=f"k{i}", on_delivery=on_delivery) for i in range(10)
        ]
        await producer.flush(10)
        first: RecordMetadata = await pending[0]
        print("first record at", first.offset)
        return await producer.send_and_wait(topic, value=b"last", headers=[("src", b"app")])


class CommitOnRevoke(AsyncConsumerRebalanceListener):
    def __init__(self, consumer: AsyncKafkaConsumer[str | None, Order | None]) -> None:
        self.consumer = consumer

    async def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        await self.consumer.commit()

    async def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        print("assigned", sorted(assigned))


def handle(record: ConsumerRecord[str | None, Order | None]) -> float:
    order = record.value
    return order.amount if order is not None else 0.0


async def consume_group(topic: str) -> float:
    total = 0.0
    consumer = AsyncKafkaConsumer(
        {**BOOTSTRAP, "group.id": "orders", "enable.auto.commit": False},
        key_deserializer=StringDeserializer(),
        value_deserializer=OrderDeserializer(),
    )
    async with consumer:
        await consumer.subscribe([topic], listener=CommitOnRevoke(consumer))
        records = await consumer.poll(1.0)
        for record in records:
            total += handle(record)
        await consumer.commit()
        async for record in consumer:  # ConsumerRecord[str | None, Order | None]; ends when closed
            total += handle(record)
            break
    return total


async def transfer(src: str, dst: str) -> None:
    """Consume-transform-produce in transactions."""
    async with AsyncKafkaProducer({**BOOTSTRAP, "transactional.id": "transfer"}) as producer, AsyncKafkaConsumer(
        {**BOOTSTRAP, "group.id": "transfer", "isolation.level": "read_committed"}
    ) as consumer:
        await producer.init_transactions()
        await consumer.subscribe([src])
        records = await consumer.poll(1.0)
        async with producer.transaction():
            for record in records:
                await producer.send(dst, record.value, key=record.key)
            offsets = {tp: OffsetAndMetadata(off.offset) for tp, off in records.next_offsets().items()}
            await producer.send_offsets_to_transaction(offsets, await consumer.group_metadata())


async def replay_from(metadata: RecordMetadata) -> list[bytes]:
    out: list[bytes] = []
    async with AsyncKafkaConsumer(bootstrap_servers=BOOTSTRAP["bootstrap.servers"]) as consumer:
        await consumer.assign([metadata.topic_partition])
        await consumer.seek(metadata.topic_partition, metadata.offset)
        ends: dict[TopicPartition, int] = await consumer.end_offsets([metadata.topic_partition], timeout=5)
        position: int = await consumer.position(metadata.topic_partition)
        print(position, ends)
        with anyio.move_on_after(5):
            for record in await consumer.poll(1.0):
                if record.value is not None:
                    out.append(record.value)
    return out


async def shout(src: str, dst: str) -> int:
    """The config-dict style with the (de)serializers named in the config: the user states the types."""
    text_config = {**BOOTSTRAP, "group.id": "shout", "key.deserializer": "str", "value.deserializer": "str"}
    consumer: AsyncKafkaConsumer[str | None, str | None] = AsyncKafkaConsumer(text_config)
    copied = 0
    async with consumer, AsyncKafkaProducer(
        {**BOOTSTRAP, "key.serializer": "str", "value.serializer": "str"}
    ) as producer:
        await consumer.subscribe([src])
        for record in await consumer.poll(1.0):
            text: str = record.value.upper() if record.value is not None else ""
            await producer.send(dst, value=text, key=record.key)
            copied += 1
        await producer.flush(10)
    return copied


async def main() -> None:
    try:
        await create_topic("orders")
        metadata = await produce("orders")
        print(await consume_group("orders"), await replay_from(metadata))
        await transfer("orders", "orders-copy")
        print(await shout("orders", "shouted"))
    except UnknownTopicOrPartitionError as e:
        print("no such topic:", e)
    except KafkaTimeoutError as e:
        print("timed out; is the broker up?", e)
    except KafkaError as e:
        print("kafka error, retriable:", e.retriable, e)


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
