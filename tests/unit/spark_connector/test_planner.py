"""Offset range planning (Spark's KafkaOffsetRangeCalculator and the maxOffsetsPerTrigger / minOffsetsPerTrigger
admission), pure."""

from __future__ import annotations

from pykafka_client.structs import TopicPartition
from spark_connector.planner import OffsetRange, rate_limit, should_delay, split_ranges

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


def r(partition: int, start: int, end: int) -> OffsetRange:
    return OffsetRange("t", partition, start, end)


def test_no_options_one_task_per_non_empty_range() -> None:
    assert split_ranges([r(0, 1, 2), r(1, 5, 5)], None, None) == [r(0, 1, 2)]
    assert split_ranges([r(0, 1, 2), r(1, 3, 4)], 2, None) == [r(0, 1, 2), r(1, 3, 4)]


def test_min_partitions_splits_one_range() -> None:
    assert split_ranges([r(0, 1, 5)], 3, None) == [r(0, 1, 2), r(0, 2, 3), r(0, 3, 5)]


def test_min_partitions_splits_skewed_ranges_in_proportion() -> None:
    # the small range's share rounds to one part: it stays whole, the large one takes the other three
    assert split_ranges([r(0, 1, 5), r(1, 1, 21)], 4, None) == [r(0, 1, 5), r(1, 1, 7), r(1, 7, 14), r(1, 14, 21)]


def test_half_rounds_up_as_on_the_jvm() -> None:
    # 10 / 20 * 5 = 2.5 parts each: Java's Math.round gives 3, Python's round would give 2
    assert len(split_ranges([r(0, 0, 10), r(1, 0, 10)], 5, None)) == 6


def test_max_records_per_partition() -> None:
    assert split_ranges([r(0, 1, 5), r(1, 0, 1)], None, 2) == [r(0, 1, 3), r(0, 3, 5), r(1, 0, 1)]
    parts = split_ranges([r(0, 0, 1000)], None, 300)
    assert [p.size for p in parts] == [250, 250, 250, 250]
    # combined: the cap first, then minPartitions on what it produced
    combined = split_ranges([r(0, 0, 100)], 8, 50)
    assert len(combined) == 8 and sum(p.size for p in combined) == 100 and max(p.size for p in combined) <= 50


def test_rate_limit_splits_in_proportion_to_backlog() -> None:
    assert rate_limit(10, {A: 0, B: 0}, {A: 80, B: 20}) == {A: 8, B: 2}
    # a share below one record rounds up: small partitions are not starved
    assert rate_limit(10, {A: 0, B: 0}, {A: 1000, B: 1}) == {A: 9, B: 1}
    # never past the latest offset; nothing to read leaves the latest offsets
    assert rate_limit(1000, {A: 5, B: 0}, {A: 10, B: 3}) == {A: 10, B: 3}
    assert rate_limit(5, {A: 10}, {A: 10}) == {A: 10}
    # a partition without a start admits nothing from it (the caller gives new partitions their earliest)
    assert rate_limit(5, {A: 0}, {A: 100, B: 50}) == {A: 5, B: 50}


def test_min_offsets_per_trigger_delay() -> None:
    start, latest = {A: 0, B: 0}, {A: 3, B: 4}
    # the first trigger (last 0) always fires
    assert not should_delay(10, start, latest, max_trigger_delay_ms=60_000, now_ms=1_000_000, last_trigger_ms=0)
    # fewer than 10 new records and the delay not passed: skip
    assert should_delay(10, start, latest, max_trigger_delay_ms=60_000, now_ms=1_000_000, last_trigger_ms=990_000)
    # enough records: fire
    assert not should_delay(7, start, latest, max_trigger_delay_ms=60_000, now_ms=1_000_000, last_trigger_ms=990_000)
    # the delay passed: fire anyway
    assert not should_delay(10, start, latest, max_trigger_delay_ms=5_000, now_ms=1_000_000, last_trigger_ms=990_000)
