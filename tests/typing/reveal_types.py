"""``reveal_type`` of what a user writes; test_user_program_types.py compares mypy's answer with the
comment after each ``reveal_type`` call.

The rule pinned here: a static type never contradicts the records' run-time type. A deserializer object
types its side; without one, a side is ``bytes | None`` only when no config mapping is given (a mapping may
name a deserializer, "value.deserializer": "str", that mypy cannot see), ``Any`` otherwise, and the user
states the types with an annotation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykafka_client import AdminClient, KafkaConsumer, KafkaShareConsumer, TopicPartition
from pykafka_client.admin import OffsetSpec
from pykafka_client.aio import AsyncKafkaConsumer
from pykafka_client.serialization import Headers, IntegerDeserializer, StringDeserializer

if TYPE_CHECKING:  # typing.reveal_type is 3.11+; mypy knows this one on 3.10
    from typing_extensions import reveal_type


class Text:
    """Maps a null to an empty string, so its output is ``str`` (not ``str | None``)."""

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> str:
        return "" if data is None else data.decode()


cfg = {"bootstrap.servers": "localhost:9092"}
string_cfg = {"bootstrap.servers": "localhost:9092", "key.deserializer": "str", "value.deserializer": "str"}
no_config = KafkaConsumer(bootstrap_servers="localhost:9092")
plain = KafkaConsumer(cfg)
by_config = KafkaConsumer(string_cfg)
by_literal = KafkaConsumer({"bootstrap.servers": "localhost:9092", "value.deserializer": "str"})
stated: KafkaConsumer[str | None, str | None] = KafkaConsumer(string_cfg)
stated_plain: KafkaConsumer[str, str] = KafkaConsumer(string_cfg)
strings = KafkaConsumer(cfg, key_deserializer=Text(), value_deserializer=Text())
mixed = KafkaConsumer(cfg, value_deserializer=StringDeserializer())
keyed = KafkaConsumer(cfg, key_deserializer=IntegerDeserializer())
keyed_no_config = KafkaConsumer(key_deserializer=IntegerDeserializer(), bootstrap_servers="localhost:9092")
valued_no_config = KafkaConsumer(value_deserializer=StringDeserializer(), bootstrap_servers="localhost:9092")
by_name = KafkaConsumer(cfg, value_deserializer="str")

reveal_type(no_config)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[bytes | None, bytes | None]
reveal_type(plain)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[Any, Any]
reveal_type(by_config)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[Any, Any]
reveal_type(by_literal)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[Any, Any]
reveal_type(stated)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[str | None, str | None]
reveal_type(stated_plain)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[str, str]
reveal_type(strings)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[str, str]
reveal_type(mixed)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[Any, str | None]
reveal_type(keyed)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[int | None, Any]
reveal_type(keyed_no_config)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[int | None, bytes | None]
reveal_type(valued_no_config)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[bytes | None, str | None]
reveal_type(by_name)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[Any, Any]
for record in strings:
    reveal_type(record)  # revealed: pykafka_client.consumer.consumer_record.ConsumerRecord[str, str]
    reveal_type(record.value)  # revealed: str
for polled in mixed.poll(1.0):
    reveal_type(polled.key)  # revealed: Any
    reveal_type(polled.value)  # revealed: str | None
for stated_record in stated.poll(1.0):
    reveal_type(stated_record.value)  # revealed: str | None

async_plain = AsyncKafkaConsumer(string_cfg)
async_stated: AsyncKafkaConsumer[str | None, str | None] = AsyncKafkaConsumer(string_cfg)
async_no_config = AsyncKafkaConsumer(bootstrap_servers="localhost:9092")
async_mixed = AsyncKafkaConsumer(cfg, value_deserializer=StringDeserializer())
reveal_type(async_plain)  # revealed: pykafka_client.aio.consumer.AsyncKafkaConsumer[Any, Any]
reveal_type(async_stated)  # revealed: pykafka_client.aio.consumer.AsyncKafkaConsumer[str | None, str | None]
reveal_type(async_no_config)  # revealed: pykafka_client.aio.consumer.AsyncKafkaConsumer[bytes | None, bytes | None]
reveal_type(async_mixed)  # revealed: pykafka_client.aio.consumer.AsyncKafkaConsumer[Any, str | None]

share_no_config = KafkaShareConsumer(bootstrap_servers="localhost:9092", group_id="g")
share_mixed = KafkaShareConsumer(cfg, value_deserializer=StringDeserializer())
share_strings = KafkaShareConsumer(cfg, key_deserializer=Text(), value_deserializer=Text())
reveal_type(share_no_config)  # revealed: pykafka_client.consumer.kafka_share_consumer.KafkaShareConsumer[bytes | None, bytes | None]
reveal_type(share_mixed)  # revealed: pykafka_client.consumer.kafka_share_consumer.KafkaShareConsumer[Any, str | None]
for shared in share_strings.poll(1.0):
    reveal_type(shared)  # revealed: pykafka_client.consumer.share_consumer_record.ShareConsumerRecord[str, str]
    reveal_type(shared.delivery_count)  # revealed: int

# The admin takes plain (topic, partition) tuples and keys its results by TopicPartition (also at run time).
admin = AdminClient(cfg)
reveal_type(admin.list_offsets({("t", 0): OffsetSpec.latest()}))  # revealed: dict[tuple[str, int, fallback=pykafka_client.structs.TopicPartition], pykafka_client.admin.types.ListOffsetsResultInfo]
reveal_type(admin.describe_log_dirs()[0]["/data"].replica_infos)  # revealed: typing.Mapping[tuple[str, int, fallback=pykafka_client.structs.TopicPartition], pykafka_client.admin.types.ReplicaInfo]
reveal_type(admin.describe_transactions(["tx"])["tx"].topic_partitions)  # revealed: frozenset[tuple[str, int, fallback=pykafka_client.structs.TopicPartition]]
reveal_type(admin.delete_consumer_group_offsets("g", [TopicPartition("t", 0)]))  # revealed: dict[tuple[str, int, fallback=pykafka_client.structs.TopicPartition], BaseException | None]
reveal_type(admin.list_share_group_offsets("g"))  # revealed: dict[tuple[str, int, fallback=pykafka_client.structs.TopicPartition], pykafka_client.admin.group_types.SharePartitionOffsetInfo | None]
