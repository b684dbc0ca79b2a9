"""Mistakes mypy must report (the test fails if any line marked as an error below is not reported)."""

from __future__ import annotations

from pykafka_client import KafkaConsumer, TopicPartition
from pykafka_client.serialization import StringDeserializer

consumer = KafkaConsumer({"bootstrap.servers": "localhost:9092"}, value_deserializer=StringDeserializer())
consumer.seek(TopicPartition("t", 0), "zero")  # error
for record in consumer.poll(1.0):
    size: int = record.value  # error
    record.value.upper()  # error
consumer.assign("topic-0")  # error
text_config = {"bootstrap.servers": "localhost:9092", "value.deserializer": "str"}
stated: KafkaConsumer[str | None, str | None] = KafkaConsumer(text_config)
for text_record in stated.poll(1.0):
    count: int = text_record.value  # error
bytes_only: KafkaConsumer[str, str] = KafkaConsumer(bootstrap_servers="localhost:9092")  # error
