"""The three clients built the same way, from keyword arguments, against a real MiniBroker: the admin
creates and lists a topic, the producer writes with ``acks=1`` given as an int, a consumer group reads
it back. Each goes through the one NetworkClient factory (pykafka_client.client_utils)."""

from __future__ import annotations

import time
import uuid

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer
from pykafka_client.admin import NewTopic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_admin_producer_and_consumer_from_keyword_arguments() -> None:
    topic = f"kw-{uuid.uuid4().hex[:10]}"
    with MiniBroker() as broker:
        servers = broker.bootstrap_servers
        with AdminClient(bootstrap_servers=servers, client_id="kw-admin", request_timeout_ms=10_000) as admin:
            admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)], timeout=30)
            assert topic in admin.list_topics(timeout=30)

        producer = KafkaProducer(
            bootstrap_servers=servers, acks=1, linger_ms=0, value_serializer="str", key_serializer="str"
        )
        try:
            assert producer.config["acks"] == 1 and producer.config["enable.idempotence"] is False
            for i in range(10):
                producer.send(topic, f"v{i}", key=f"k{i}").result(timeout=30)
        finally:
            producer.close(10)

        consumer: KafkaConsumer[str, str] = KafkaConsumer(
            bootstrap_servers=servers,
            group_id=f"g-{topic}",
            auto_offset_reset="earliest",
            key_deserializer="str",
            value_deserializer="str",
        )
        try:
            consumer.subscribe([topic])
            seen: set[str] = set()
            deadline = time.monotonic() + 60
            while len(seen) < 10 and time.monotonic() < deadline:
                for record in consumer.poll(0.5):
                    seen.add(record.value)
            assert seen == {f"v{i}" for i in range(10)}
            consumer.commit_sync()
        finally:
            consumer.close()
