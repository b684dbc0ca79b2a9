"""pykafka_client: a Kafka client for Python, faithful to the Java client's internals.

The public entry points (``KafkaProducer``, ``KafkaConsumer``, ``AdminClient``) are exported here
as they land; see README.md for what works today.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"
