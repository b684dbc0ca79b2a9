"""The producer (Java ``clients.producer``): :class:`KafkaProducer` and its internals.

Layers: ``config`` (ProducerConfig) -> ``partitioner`` -> ``record_accumulator`` (``producer_batch``,
``buffer_pool``) -> ``sender`` (``transaction_manager`` for idempotence) -> ``kafka_producer``.
"""

from __future__ import annotations

from pykafka_client.producer.future_record_metadata import FutureRecordMetadata
from pykafka_client.producer.kafka_producer import KafkaProducer
from pykafka_client.producer.partitioner import Partitioner, RoundRobinPartitioner, murmur2
from pykafka_client.producer.record_metadata import RecordMetadata
from pykafka_client.structs import TopicPartition

__all__ = ["FutureRecordMetadata", "KafkaProducer", "Partitioner", "RecordMetadata", "RoundRobinPartitioner", "TopicPartition", "murmur2"]
