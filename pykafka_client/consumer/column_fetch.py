"""Consuming whole record batches as column buffers instead of one ``ConsumerRecord`` per record: the read
path of the Spark connector (public to this project, not part of the client's user API).

:func:`poll_columns` is :meth:`KafkaConsumer.poll` (same fetching, pipelining, positions, group and errors)
returning, per partition, the fetched batches decoded by ``records.columns.decode_columns`` (the compiled
kernel when loaded, the Python reference otherwise). Control batches and, under ``read_committed``, the
batches of aborted transactions are skipped as ``poll`` skips them; CRCs are checked per ``check.crcs``; a
corrupt batch raises ``CorruptRecordError`` (partition and offset) after the batches before it were returned,
and the position stays at it. The position moves past every batch returned, so the first batch may hold
records before the position the read started from (``start_offset``); the caller drops them. The key and
value deserializers are not called: columns hold the bytes. ``RecordColumns`` (the buffers' layout) is
re-exported for readers that stay on the consumer's public modules (the Spark connector).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykafka_client.consumer.completed_fetch import FetchedColumns
from pykafka_client.protocol.records.columns import RecordColumns
from pykafka_client.structs import TopicPartition

if TYPE_CHECKING:
    from pykafka_client.consumer.kafka_consumer import KafkaConsumer

__all__ = ["FetchedColumns", "RecordColumns", "poll_columns"]


def poll_columns(consumer: KafkaConsumer[Any, Any], timeout: float = 0.0) -> dict[TopicPartition, list[FetchedColumns]]:
    """Like ``consumer.poll(timeout)``, as columns (see the module docstring); ``max.poll.records`` is reached by
    whole batches, at least one per partition with data."""
    return consumer.poll_with(timeout, consumer.fetcher.collect_columns)
