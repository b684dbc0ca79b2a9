"""Offset range planning, pure (no I/O): which offsets of which partition each Spark task reads.

* :func:`split_ranges` is Spark's ``KafkaOffsetRangeCalculator``: empty ranges dropped; ``maxRecordsPerPartition``
  cuts each range into ``ceil(size / max)`` equal parts; then, when ``minPartitions`` asks for more tasks than
  there are ranges, the large ranges are cut in proportion to their share of the total (a range whose share
  rounds to one part stays whole).
* :func:`rate_limit` is Spark's ``maxOffsetsPerTrigger`` admission: each partition gets a share of the limit
  in proportion to its backlog, rounded up for a share below one record (so small partitions are not
  starved), capped at its latest offset.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pykafka_client.structs import TopicPartition


@dataclass(frozen=True)
class OffsetRange:
    """``[from_offset, until_offset)`` of one partition (Spark's ``KafkaOffsetRange``)."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset


def _java_round(x: float) -> int:
    """``math.round`` of the JVM (half up), not Python's half-to-even."""
    return math.floor(x + 0.5)


def _part_count(size: int, total: int, parts: int) -> int:
    return max(_java_round(size / total * parts), 1)


def _divide(r: OffsetRange, parts: int) -> list[OffsetRange]:
    out = []
    for i in range(parts):
        start = r.from_offset + r.size * i // parts
        end = r.until_offset if i == parts - 1 else r.from_offset + r.size * (i + 1) // parts
        out.append(OffsetRange(r.topic, r.partition, start, end))
    return out


def split_ranges(ranges: Sequence[OffsetRange], min_partitions: int | None,
                 max_records_per_partition: int | None) -> list[OffsetRange]:
    """The Spark tasks for ``ranges`` (see the module docstring); never an empty range."""
    ranges = [r for r in ranges if r.size > 0]
    if max_records_per_partition is None and (min_partitions is None or len(ranges) >= min_partitions):
        return ranges
    divided = ranges
    if max_records_per_partition is not None:
        divided = [part for r in ranges for part in _divide(r, math.ceil(r.size / max_records_per_partition))]
        divided = [r for r in divided if r.size > 0]
    if min_partitions is None or min_partitions <= len(divided):
        return divided
    total = sum(r.size for r in divided)
    unsplit = [r for r in divided if _part_count(r.size, total, min_partitions) == 1]
    split_total = total - sum(r.size for r in unsplit)
    split_min_partitions = max(min_partitions - len(unsplit), 1)
    out: list[OffsetRange] = []
    for r in divided:
        if _part_count(r.size, total, min_partitions) == 1:
            out.append(r)
        else:
            out.extend(_divide(r, _part_count(r.size, split_total, split_min_partitions)))
    return [r for r in out if r.size > 0]


def rate_limit(limit: int, start: Mapping[TopicPartition, int],
               latest: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """End offsets admitting about ``limit`` records from ``start`` (Spark's ``rateLimit``). A partition
    absent from ``start`` starts at its own end (nothing admitted from it); partitions with no backlog keep
    their latest offset."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if tp in start and end - start[tp] > 0}
    total = sum(sizes.values())
    if total <= 0:
        return dict(latest)
    out: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        begin = start.get(tp)
        if begin is None or tp not in sizes:
            out[tp] = end
            continue
        share = limit * (sizes[tp] / total)
        admitted = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begin + admitted)
    return out


def should_delay(min_rows: int, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
                 max_trigger_delay_ms: int, now_ms: int, last_trigger_ms: int) -> bool:
    """Spark's ``delayBatch`` for ``minOffsetsPerTrigger``: skip this trigger while fewer than ``min_rows``
    new records are available, unless ``maxTriggerDelay`` has passed since the last batch fired (the first
    trigger, with ``last_trigger_ms`` 0, always fires)."""
    if now_ms - last_trigger_ms >= max_trigger_delay_ms:
        return False
    available = sum(end - start.get(tp, 0) for tp, end in latest.items())
    return available < min_rows
