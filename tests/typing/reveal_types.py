"""``reveal_type`` of what a user writes; test_user_program_types.py compares mypy's answer with the
comment after each ``reveal_type`` call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykafka_client import KafkaConsumer
from pykafka_client.serialization import Headers, IntegerDeserializer, StringDeserializer

if TYPE_CHECKING:  # typing.reveal_type is 3.11+; mypy knows this one on 3.10
    from typing_extensions import reveal_type


class Text:
    """Maps a null to an empty string, so its output is ``str`` (not ``str | None``)."""

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> str:
        return "" if data is None else data.decode()


cfg = {"bootstrap.servers": "localhost:9092"}
plain = KafkaConsumer(cfg)
strings = KafkaConsumer(cfg, key_deserializer=Text(), value_deserializer=Text())
mixed = KafkaConsumer(cfg, value_deserializer=StringDeserializer())
keyed = KafkaConsumer(cfg, key_deserializer=IntegerDeserializer())
by_name = KafkaConsumer(cfg, value_deserializer="str")

reveal_type(plain)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[bytes | None, bytes | None]
reveal_type(strings)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[str, str]
reveal_type(mixed)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[bytes | None, str | None]
reveal_type(keyed)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[int | None, bytes | None]
reveal_type(by_name)  # revealed: pykafka_client.consumer.kafka_consumer.KafkaConsumer[Any, Any]
for record in strings:
    reveal_type(record)  # revealed: pykafka_client.consumer.consumer_record.ConsumerRecord[str, str]
    reveal_type(record.value)  # revealed: str
for polled in mixed.poll(1.0):
    reveal_type(polled.key)  # revealed: bytes | None
    reveal_type(polled.value)  # revealed: str | None
