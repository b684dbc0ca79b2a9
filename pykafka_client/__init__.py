"""pykafka_client: a Kafka client for Python, faithful to the Java client's internals.

The public entry points (``KafkaProducer``, ``KafkaConsumer``, ``AdminClient``) are exported here
as they land; see README.md for what works today.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pykafka_client._version import __version__

# A library logs but never configures logging: without a handler of the application's, our records
# go nowhere (no "No handlers could be found" and no lastResort output on stderr).
logging.getLogger("pykafka_client").addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from pykafka_client.admin import AdminClient
    from pykafka_client.consumer.consumer_record import ConsumerRecord, ConsumerRecords
    from pykafka_client.consumer.kafka_consumer import KafkaConsumer
    from pykafka_client.consumer.kafka_share_consumer import KafkaShareConsumer
    from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
    from pykafka_client.consumer.share_acknowledgements import AcknowledgeType
    from pykafka_client.consumer.share_consumer_record import ShareConsumerRecord
    from pykafka_client.producer.kafka_producer import KafkaProducer
    from pykafka_client.producer.record_metadata import RecordMetadata
    from pykafka_client.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

# Public classes are imported lazily (PEP 562) so that ``import pykafka_client.errors`` stays cheap
# and free of import cycles.
_LAZY = {
    "AdminClient": "pykafka_client.admin",
    "KafkaConsumer": "pykafka_client.consumer.kafka_consumer",
    "KafkaShareConsumer": "pykafka_client.consumer.kafka_share_consumer",
    "AcknowledgeType": "pykafka_client.consumer.share_acknowledgements",
    "ShareConsumerRecord": "pykafka_client.consumer.share_consumer_record",
    "ConsumerRecord": "pykafka_client.consumer.consumer_record",
    "ConsumerRecords": "pykafka_client.consumer.consumer_record",
    "ConsumerRebalanceListener": "pykafka_client.consumer.rebalance_listener",
    "TopicPartition": "pykafka_client.structs",
    "OffsetAndMetadata": "pykafka_client.structs",
    "OffsetAndTimestamp": "pykafka_client.structs",
    "KafkaProducer": "pykafka_client.producer.kafka_producer",
    "RecordMetadata": "pykafka_client.producer.record_metadata",
}


def native_enabled() -> bool:
    """True when the compiled record kernel is active, False on the pure-Python fallback (see
    docs/ARCHITECTURE.md "Record fast path"; ``PYKAFKA_NO_NATIVE=1`` forces the fallback)."""
    from pykafka_client.protocol.records import _native

    return _native.native_enabled()


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pykafka_client' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AcknowledgeType",
    "AdminClient",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerRecords",
    "KafkaConsumer",
    "KafkaProducer",
    "KafkaShareConsumer",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "RecordMetadata",
    "ShareConsumerRecord",
    "TopicPartition",
    "__version__",
]
