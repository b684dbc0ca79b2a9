"""The consumer (see docs/ARCHITECTURE.md): KafkaConsumer and its parts, layered as in Java.

structs / consumer_record / config -> subscription_state -> client_adapter (the ConsumerClient
protocol) -> fetcher (+ completed_fetch), offset_fetcher, topic_metadata_fetcher -> assignors,
consumer_protocol -> abstract_coordinator (+ heartbeat) -> consumer_coordinator -> kafka_consumer
(+ single_thread_guard, api_arguments).
"""

from __future__ import annotations

from pykafka_client.consumer.consumer_record import ConsumerRecord, ConsumerRecords, TimestampType
from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
from pykafka_client.consumer.structs import ConsumerGroupMetadata
from pykafka_client.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

__all__ = [
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerRecords",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "TimestampType",
    "TopicPartition",
]
