"""A small application written as a user would, type-checked with ``mypy --strict`` by
test_user_program_types.py (never executed: it needs a broker). It must pass with no ignores."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from pykafka_client import (
    AdminClient,
    ConsumerRebalanceListener,
    ConsumerRecord,
    KafkaConsumer,
    KafkaProducer,
    OffsetAndMetadata,
    RecordMetadata,
    TopicPartition,
)
from pykafka_client.admin import NewTopic, OffsetSpec
from pykafka_client.errors import KafkaError, KafkaTimeoutError, UnknownTopicOrPartitionError
from pykafka_client.serialization import Headers, StringDeserializer, StringSerializer

BOOTSTRAP = {"bootstrap.servers": "localhost:9092"}


@dataclass
class Order:
    order_id: int
    amount: float


class OrderDeserializer:
    """A user deserializer: typed output, so the consumer's values are ``Order | None``."""

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Order | None:
        if data is None:
            return None
        raw = json.loads(data)
        return Order(int(raw["order_id"]), float(raw["amount"]))


class OrderSerializer:
    def serialize(self, topic: str, data: Order | None, headers: Headers | None = None) -> bytes | None:
        if data is None:
            return None
        return json.dumps({"order_id": data.order_id, "amount": data.amount}).encode()


def create_topic(name: str) -> dict[TopicPartition, int]:
    with AdminClient(BOOTSTRAP) as admin:
        admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)], timeout=10)
        offsets = admin.list_offsets({TopicPartition(name, p): OffsetSpec.latest() for p in range(3)})
        return {tp: info.offset for tp, info in offsets.items()}


def latest_of_active_partitions(name: str) -> dict[TopicPartition, int]:
    """Plain ``(topic, partition)`` tuples as the admin's partition arguments (as the README writes them)."""
    with AdminClient(BOOTSTRAP) as admin:
        offsets = admin.list_offsets({(name, p): OffsetSpec.latest() for p in range(3)})
        producers = admin.describe_producers([(name, p) for p in range(3)])
        return {tp: info.offset for tp, info in offsets.items() if producers.get(tp)}


def copy_group_offsets(source: str, target: str, topic: str) -> dict[TopicPartition, int]:
    """Mappings built ahead as ``dict[TopicPartition, ...]`` (not literals typed by the call): the admin's
    partition-keyed arguments take them as well as ``(topic, partition)`` tuple keys."""
    with AdminClient(BOOTSTRAP) as admin:
        committed: dict[TopicPartition, OffsetAndMetadata] = admin.list_consumer_group_offsets(source)
        admin.alter_consumer_group_offsets(target, committed)
        plain: dict[tuple[str, int], int] = {(topic, 0): 5}
        admin.alter_consumer_group_offsets(target, plain)
        specs: dict[TopicPartition, OffsetSpec] = {tp: OffsetSpec.earliest() for tp in committed}
        earliest = admin.list_offsets(specs)
        before: dict[TopicPartition, int] = {tp: info.offset for tp, info in earliest.items()}
        return admin.delete_records(before)


def on_delivery(metadata: RecordMetadata | None, error: BaseException | None) -> None:
    if error is not None:
        print("delivery failed:", error)
    elif metadata is not None:
        print("delivered to", metadata.topic_partition, "at", metadata.offset)


def produce(topic: str) -> RecordMetadata:
    with KafkaProducer({**BOOTSTRAP, "acks": "all"}, key_serializer=StringSerializer()) as producer:
        last = producer.send(topic, value=b"hello", key="k1", on_delivery=on_delivery)
        producer.send(topic, value=OrderSerializer().serialize(topic, Order(1, 9.5)), headers=[("src", b"app")])
        producer.flush(10)
        return last.result(10)


class CommitOnRevoke(ConsumerRebalanceListener):
    def __init__(self, consumer: KafkaConsumer[str | None, Order | None]) -> None:
        self.consumer = consumer

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        self.consumer.commit_sync()

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        print("assigned", sorted(assigned))


def handle(record: ConsumerRecord[str | None, Order | None]) -> float:
    key: str | None = record.key
    order = record.value
    print(key, record.topic_partition(), record.offset, record.headers)
    return order.amount if order is not None else 0.0


def on_commit(offsets: Mapping[TopicPartition, OffsetAndMetadata], error: BaseException | None) -> None:
    if error is not None:
        print("commit failed for", list(offsets), error)


def consume_group(topic: str) -> float:
    total = 0.0
    consumer = KafkaConsumer(
        {**BOOTSTRAP, "group.id": "orders", "enable.auto.commit": False},
        key_deserializer=StringDeserializer(),
        value_deserializer=OrderDeserializer(),
    )
    with consumer:
        consumer.subscribe([topic], listener=CommitOnRevoke(consumer))
        for _ in range(10):
            records = consumer.poll(1.0)
            for record in records:
                total += handle(record)
            consumer.commit_async(callback=on_commit)
        for record in consumer:  # __iter__ yields ConsumerRecord[str | None, Order | None]
            total += handle(record)
            break
    return total


def replay_from(metadata: RecordMetadata) -> list[bytes]:
    """Seek to where a producer wrote: RecordMetadata.topic_partition is the consumer's TopicPartition."""
    out: list[bytes] = []
    with KafkaConsumer(bootstrap_servers=BOOTSTRAP["bootstrap.servers"]) as consumer:
        consumer.assign([metadata.topic_partition])
        consumer.seek(metadata.topic_partition, metadata.offset)
        ends: dict[TopicPartition, int] = consumer.end_offsets([metadata.topic_partition], timeout=5)
        print(consumer.position(metadata.topic_partition), ends)
        for record in consumer.poll(1.0):
            if record.value is not None:
                out.append(record.value)  # bytes: no value deserializer configured
    return out


def shout(src: str, dst: str) -> int:
    """The config-dict style with the (de)serializers named in the config: mypy cannot see the names, so
    the user states the consumer's types, and a string value is sent through the string serializer."""
    text_config = {**BOOTSTRAP, "group.id": "shout", "key.deserializer": "str", "value.deserializer": "str"}
    consumer: KafkaConsumer[str | None, str | None] = KafkaConsumer(text_config)
    copied = 0
    with consumer, KafkaProducer({**BOOTSTRAP, "key.serializer": "str", "value.serializer": "str"}) as producer:
        consumer.subscribe([src])
        for record in consumer.poll(1.0):
            text: str = record.value.upper() if record.value is not None else ""
            producer.send(dst, value=text, key=record.key)
            copied += 1
        producer.flush(10)
    return copied


def main() -> None:
    try:
        create_topic("orders")
        metadata = produce("orders")
        print(consume_group("orders"), replay_from(metadata), shout("orders", "shouted"))
    except UnknownTopicOrPartitionError as e:
        print("no such topic:", e)
    except KafkaTimeoutError as e:
        print("timed out; is the broker up?", e)
    except KafkaError as e:
        print("kafka error, retriable:", e.retriable, e)


if __name__ == "__main__":
    main()
