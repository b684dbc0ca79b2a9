"""Executor side of a read: one offset range of one partition, read with our KafkaConsumer, out as Arrow.
The consumer returns whole record batches decoded to column buffers (``column_fetch.poll_columns``), so no
Python object is made per record (``arrow_rows.py``).

The consumer is assigned the partition (no group membership, no commits: ``enable.auto.commit=false``),
seeks to the range's first offset and polls until its *position* reaches the range's end, so the read stops
exactly at the end offset and copes with gaps: transaction markers, aborted records under
``read_committed`` and compacted-away records move the position without yielding rows, and never count as
data loss. Records at or past the end offset are dropped.

Data loss (Spark's ``failOnDataLoss``): ``auto.offset.reset=none`` makes a position below the log start (records
deleted or aged out) raise; with ``failOnDataLoss=true`` the task fails with Spark's ``KAFKA_DATA_LOSS``
text, with ``false`` it logs a warning and continues from the earliest offset still there (or skips the
rest of the range). No progress for ``kafkaConsumer.pollTimeoutMs`` while the offset is still in the log is a
timeout, as in Spark.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pykafka_client.consumer.column_fetch import poll_columns
from pykafka_client.consumer.kafka_consumer import KafkaConsumer
from pykafka_client.errors import OffsetOutOfRangeClientError
from spark_connector.arrow_rows import columns_to_batch
from spark_connector.options import ReadOptions

if TYPE_CHECKING:
    import pyarrow as pa

    from spark_connector.planner import OffsetRange

log = logging.getLogger(__name__)

#: each poll waits at most this long, so a read whose last offsets are control records ends promptly
_POLL_SLICE_S = 0.5
#: records per poll (whole Kafka batches, so an Arrow batch may hold a little more) unless
#: ``kafka.max.poll.records`` says otherwise (one Arrow batch per poll)
DEFAULT_MAX_POLL_RECORDS = "10000"

_DATA_LOSS_TRUE = (
    "Some data may have been lost because they are not available in Kafka any more; either the data was aged out "
    "by Kafka or the topic may have been deleted before all the data in the topic was processed. If you don't want "
    "your streaming query to fail on such cases, set the source option failOnDataLoss to false. Reason: ")
_DATA_LOSS_FALSE = (
    "Some data may have been lost because they are not available in Kafka any more; either the data was aged out "
    "by Kafka or the topic may have been deleted before all the data in the topic was processed. If you want your "
    "streaming query to fail on such cases, set the source option \"failOnDataLoss\" to \"true\". Reason: ")


class DataLossError(RuntimeError):
    """Records the read was planned to return are gone (Spark's ``KAFKA_DATA_LOSS``)."""


def report_data_loss(fail_on_data_loss: bool, subclass: str, reason: str) -> None:
    """Raise :class:`DataLossError` (``failOnDataLoss=true``) or log a warning, with Spark's text."""
    if fail_on_data_loss:
        raise DataLossError(f"[KAFKA_DATA_LOSS.{subclass}] {_DATA_LOSS_TRUE}{reason}")
    log.warning("%s%s", _DATA_LOSS_FALSE, reason)


def executor_consumer_config(options: ReadOptions) -> dict[str, str]:
    """Spark's ``kafkaParamsForExecutors``: the ``kafka.*`` options, ``auto.offset.reset=none`` (executors do
    only what the driver planned), no auto commit, ``group.id`` ``<groupIdPrefix>-<uuid>-executor`` unless
    ``kafka.group.id`` is set; and no topic auto-creation (a deleted topic must stay deleted)."""
    config = dict(options.kafka)
    config["auto.offset.reset"] = "none"
    config["enable.auto.commit"] = "false"
    config.setdefault("group.id", f"{options.group_id}-executor")
    config.setdefault("allow.auto.create.topics", "false")
    config.setdefault("max.poll.records", DEFAULT_MAX_POLL_RECORDS)
    return config


def read_range(r: OffsetRange, options: ReadOptions) -> Iterator[pa.RecordBatch]:
    """The records of ``[r.from_offset, r.until_offset)`` as RecordBatches (see the module docstring)."""
    if r.size <= 0:
        return
    tp = r.topic_partition
    consumer: KafkaConsumer[bytes | None, bytes | None] = KafkaConsumer(executor_consumer_config(options))
    try:
        consumer.assign([tp])
        consumer.seek(tp, r.from_offset)
        position = r.from_offset
        last_progress = time.monotonic()
        while position < r.until_offset:
            try:
                polled = poll_columns(consumer, _POLL_SLICE_S)
            except OffsetOutOfRangeClientError:
                position = _after_lost_records(consumer, r, position, options, "out of range")
                consumer.seek(tp, min(position, r.until_offset))
                last_progress = time.monotonic()
                continue
            fetched = polled.get(tp)
            if fetched:
                batch = columns_to_batch(fetched, r.topic, r.partition, r.until_offset, options.include_headers)
                if batch is not None:
                    yield batch
            now_at = consumer.position(tp)
            if now_at > position:
                position = now_at
                last_progress = time.monotonic()
            elif (time.monotonic() - last_progress) * 1000 >= options.poll_timeout_ms:
                position = _after_lost_records(consumer, r, position, options, "no progress")
                consumer.seek(tp, min(position, r.until_offset))
                last_progress = time.monotonic()
    finally:
        consumer.close()


def _after_lost_records(consumer: KafkaConsumer[bytes | None, bytes | None], r: OffsetRange, position: int,
                        options: ReadOptions, why: str) -> int:
    """Where to continue when ``position`` cannot be read: data loss when the offset is no longer in the
    log (fails or warns by ``failOnDataLoss``), a timeout when it is and still could not be fetched."""
    tp = r.topic_partition
    earliest = consumer.beginning_offsets([tp])[tp]
    latest = consumer.end_offsets([tp])[tp]
    if earliest <= position < latest:
        raise TimeoutError(f"Cannot fetch record for offset {position} in {options.poll_timeout_ms} milliseconds "
                           f"(partition {tp}, available offsets [{earliest}, {latest}))")
    report_data_loss(
        options.fail_on_data_loss, "COULD_NOT_READ_OFFSET_RANGE",
        f"Could not read records in offset [{position}, {r.until_offset}) for topic partition {tp} with consumer "
        f"group {consumer_group(options)} ({why}; the log now holds [{earliest}, {latest})).")
    if position < earliest:
        return min(earliest, r.until_offset)
    return r.until_offset


def consumer_group(options: ReadOptions) -> str:
    return executor_consumer_config(options)["group.id"]
