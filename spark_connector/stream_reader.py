"""Streaming reads (``spark.readStream.format("pykafka")``): Spark's ``KafkaMicroBatchStream`` on the Python
stream reader API, with admission control and ``Trigger.AvailableNow``.

Offsets are Kafka-format dicts ``{topic: {"<partition>": next offset}}`` (what Spark's Kafka source writes
in its checkpoint). Spark builds this reader twice: one instance lives in the query's long-lived source
runner process (``initialOffset``, ``latestOffset``, ``partitions``, ``commit``, ``getDefaultReadLimit``), the
other is pickled to the executors for ``read()``. So everything the runner must remember lives in ``self``
and is picklable (the AdminClient is created lazily and dropped when pickled), and ``read()`` needs only the
options and the partition.

* ``initialOffset`` resolves ``startingOffsets`` / timestamps once and caches them: Spark calls it more than
  once at start and never on restart (then it resumes from the checkpoint, reading only new records).
* ``latestOffset(start, limit)``: the subscription's partitions are listed again on every trigger, so new
  partitions and newly matching topics are picked up (read from their earliest offset);
  ``ReadAllAvailable`` reads everything; otherwise ``minOffsetsPerTrigger`` + ``maxTriggerDelay`` may skip the
  trigger (returning ``start``) and ``maxOffsetsPerTrigger`` caps the batch, split in proportion to backlog.
* ``prepareForTriggerAvailableNow`` fixes the latest offsets once; the query ends when they are read
  (``minOffsetsPerTrigger`` is ignored then: skipping a trigger would end the query early).
* ``partitions(start, end)`` reports data loss (deleted partitions or topics, offsets gone backwards, new
  partitions not starting at 0) by ``failOnDataLoss``, then plans ranges as a batch read does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from pykafka_client.errors import KafkaError
from pykafka_client.structs import TopicPartition
from spark_connector.batch_reader import checked_read_options, read_partition, to_input_partitions
from spark_connector.offset_json import OffsetDict, from_offset_dict, to_offset_dict
from spark_connector.offset_reader import OffsetReader
from spark_connector.options import ReadOptions, scala_set
from spark_connector.partition_reader import report_data_loss
from spark_connector.planner import OffsetRange, rate_limit, should_delay, split_ranges

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.offset_reader = OffsetReader(options)
        self._initial: OffsetDict | None = None
        self._available_now: dict[TopicPartition, int] | None = None
        self._latest: dict[TopicPartition, int] | None = None
        self._last_trigger_ms = 0
        #: the wall clock in ms (a module-level function, so the reader stays picklable; tests replace it)
        self.clock = _now_ms

    # -- runner side -------------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        if self._initial is None:
            tps = self.offset_reader.topic_partitions()
            self._initial = to_offset_dict(self.offset_reader.resolve(self.options.starting, tps, is_start=True))
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self.offset_reader.latest_of_subscription()

    def _fetch_latest(self) -> dict[TopicPartition, int]:
        if self._available_now is not None:
            return dict(self._available_now)
        return self.offset_reader.latest_of_subscription()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = from_offset_dict(start)
        latest = self._fetch_latest()
        self._latest = latest
        if isinstance(limit, ReadAllAvailable):
            return to_offset_dict(latest)
        min_rows = limit.min_rows if isinstance(limit, ReadMinRows) else self.options.min_offsets_per_trigger
        if min_rows is not None and self._available_now is None:
            now = self.clock()
            if should_delay(min_rows, begin, latest, self.options.max_trigger_delay_ms, now, self._last_trigger_ms):
                log.debug("fewer than minOffsetsPerTrigger=%d new records: skipping this trigger", min_rows)
                return start
            self._last_trigger_ms = now
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if max_rows is None:
            return to_offset_dict(latest)
        new = [tp for tp in latest if tp not in begin]
        from_new = self._earliest_or_missing(new)
        return to_offset_dict(rate_limit(max_rows, {**from_new, **begin}, latest))

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None if self._latest is None else to_offset_dict(self._latest)

    def _earliest_or_missing(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Earliest offsets of ``tps``; a partition that vanished meanwhile is left out."""
        if not tps:
            return {}
        try:
            return self.offset_reader.earliest(tps)
        except KafkaError:
            found: dict[TopicPartition, int] = {}
            for tp in tps:
                try:
                    found.update(self.offset_reader.earliest([tp]))
                except KafkaError as e:
                    log.info("no earliest offset for %s: %s", tp, e)
            return found

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return to_input_partitions(self.plan(from_offset_dict(start), from_offset_dict(end)))

    def plan(self, begin: Mapping[TopicPartition, int], until: Mapping[TopicPartition, int]) -> list[OffsetRange]:
        """Spark's ``getOffsetRangesFromResolvedOffsets``: ranges for the partitions of ``until``, data loss
        reported by ``failOnDataLoss``."""
        fail = self.options.fail_on_data_loss
        new = sorted(tp for tp in until if tp not in begin)
        from_new = self._earliest_or_missing(new)
        lost_new = [tp for tp in new if tp not in from_new]
        if lost_new:
            report_data_loss(fail, "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS",
                             f"Cannot find initial offsets for partitions {scala_set(lost_new)}. They may have "
                             "been deleted.")
        for tp, offset in sorted(from_new.items()):
            if offset != 0:
                report_data_loss(fail, "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO",
                                 f"Added partition {tp} starts from {offset} instead of 0.")
        deleted = set(begin) - set(until)
        if deleted:
            report_data_loss(fail, "PARTITIONS_DELETED", f"Partitions {scala_set(deleted)} have been deleted.")
        ranges = []
        for tp in sorted(until):
            first = begin.get(tp, from_new.get(tp))
            if first is None:
                continue
            if until[tp] < first:
                report_data_loss(fail, "PARTITION_OFFSET_CHANGED",
                                 f"Partition {tp} offset was changed from {first} to {until[tp]}. This could either "
                                 "be a user error that the start offset is set too high and this is the first "
                                 "batch, or the kafka topic-partition is broken, and some data may have been "
                                 "missed.")
            ranges.append(OffsetRange(tp.topic, tp.partition, first, until[tp]))
        return split_ranges(ranges, self.options.min_partitions, self.options.max_records_per_partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: as in Spark, no offsets are committed to Kafka (the checkpoint holds them)."""

    def stop(self) -> None:
        self.offset_reader.close()

    # -- executor side ---------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_partition(partition, self.options)


def create_stream_reader(options: Mapping[str, Any], schema: StructType) -> KafkaStreamReader:
    return KafkaStreamReader(checked_read_options(options, schema, streaming=True))
