"""Batch reads (``spark.read.format("pykafka")``): offset ranges planned on the driver, read on executors.

``create_batch_reader`` (called in ``DataSource.reader()``, a planner worker on the driver) checks the options
and the schema, so mistakes fail at ``load()``. ``partitions()`` (same worker) resolves the starting and ending
offsets with our AdminClient and splits the ranges (``minPartitions`` / ``maxRecordsPerPartition``); the
reader is then pickled to the executors, where ``read()`` reads one range with our consumer. The reader
holds only the parsed options (primitives); the partitions only a topic, a partition and two offsets.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark_connector.offset_reader import OffsetReader
from spark_connector.options import ReadOptions, parse_read_options, scala_set
from spark_connector.partition_reader import read_range
from spark_connector.planner import OffsetRange, split_ranges
from spark_connector.read_schema import check_schema

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class KafkaInputPartition(InputPartition):
    """One Spark task: ``[from_offset, until_offset)`` of one partition."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @classmethod
    def of(cls, r: OffsetRange) -> KafkaInputPartition:
        return cls(r.topic, r.partition, r.from_offset, r.until_offset)

    def offset_range(self) -> OffsetRange:
        return OffsetRange(self.topic, self.partition, self.from_offset, self.until_offset)


def to_input_partitions(ranges: Sequence[OffsetRange]) -> list[InputPartition]:
    return [KafkaInputPartition.of(r) for r in ranges]


def read_partition(partition: InputPartition, options: ReadOptions) -> Iterator[pa.RecordBatch]:
    """``read()`` of both readers. When there is nothing to read, ``partitions()`` returns no partition and
    Spark substitutes one ``InputPartition(None)``: it yields no rows."""
    if isinstance(partition, KafkaInputPartition):
        yield from read_range(partition.offset_range(), options)


def plan_batch(reader: OffsetReader, options: ReadOptions) -> list[OffsetRange]:
    """Spark's ``getOffsetRangesFromUnresolvedOffsets`` then ``KafkaOffsetRangeCalculator``."""
    tps = reader.topic_partitions()
    start = reader.resolve(options.starting, tps, is_start=True)
    end = reader.resolve(options.ending, tps, is_start=False)
    if set(start) != set(end):
        raise RuntimeError(f"different topic partitions for starting offsets topics[{scala_set(start)}] and "
                           f"ending offsets topics[{scala_set(end)}]")
    ranges = []
    for tp in sorted(start):
        if start[tp] > end[tp]:
            raise ValueError(
                f"[RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET] The resolved start offset {start[tp]} is greater "
                f"than the resolved end offset {end[tp]} for topic {tp.topic} partition {tp.partition}. There may "
                "be multiple reasons: 1. Start offset is set to too big a value that after resolution, end offset "
                "is smaller than it. 2. The Kafka topic partition is broken.")
        ranges.append(OffsetRange(tp.topic, tp.partition, start[tp], end[tp]))
    return split_ranges(ranges, options.min_partitions, options.max_records_per_partition)


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        reader = OffsetReader(self.options)
        try:
            return to_input_partitions(plan_batch(reader, self.options))
        finally:
            reader.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_partition(partition, self.options)


def checked_read_options(options: Mapping[str, Any], schema: StructType, *, streaming: bool) -> ReadOptions:
    """The parsed options, after rejecting a user-given schema (both at ``load()``)."""
    read_options = parse_read_options(options, streaming=streaming)
    check_schema(schema, read_options.include_headers)
    return read_options


def create_batch_reader(options: Mapping[str, Any], schema: StructType) -> KafkaBatchReader:
    return KafkaBatchReader(checked_read_options(options, schema, streaming=False))
