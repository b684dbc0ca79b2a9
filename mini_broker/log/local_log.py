"""What a partition log does over its directory name and over a snapshot of its segments, with no lock and
no state of its own (Java ``LocalLog``'s static helpers and its segment reads): the ``<topic>-<partition>``
directory name, reading from the segment holding an offset up to a bound, and the timestamp searches of
ListOffsets. :class:`mini_broker.log.unified_log.Log` calls these on the segment list it snapshots."""

from __future__ import annotations

from bisect import bisect_right

from mini_broker.log.fetch_data_info import FetchDataInfo, TimestampAndOffset
from mini_broker.log.log_offset_metadata import LogOffsetMetadata
from mini_broker.log.log_segment import LogSegment


def parse_topic_partition(dir_name: str) -> tuple[str, int]:
    """``"my-topic-3"`` -> ``("my-topic", 3)``; ValueError when the name is not ``<topic>-<partition>``."""
    topic, sep, partition = dir_name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"{dir_name!r} is not a <topic>-<partition> directory name")
    return topic, int(partition)


def log_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def read_segments(
    segments: list[LogSegment],
    start_offset: int,
    max_bytes: int,
    bound: LogOffsetMetadata,
    min_one_message: bool,
    end: LogOffsetMetadata,
) -> FetchDataInfo:
    """Read from the segment holding ``start_offset`` onwards, never past ``bound``; ``end`` (the LEO) when
    nothing is there."""
    bases = [s.base_offset for s in segments]
    i = max(0, bisect_right(bases, start_offset) - 1)
    while i < len(segments):
        segment = segments[i]
        if segment.base_offset > bound.segment_base_offset:
            break
        max_position = (
            bound.relative_position_in_segment if segment.base_offset == bound.segment_base_offset else segment.size
        )
        result = segment.read(start_offset, max_bytes, max_position, min_one_message)
        if result is not None:
            return FetchDataInfo(result.fetch_offset_metadata, result.region)
        i += 1
    return FetchDataInfo(end)


def offset_of_max_timestamp(segments: list[LogSegment], log_start: int) -> TimestampAndOffset | None:
    """The first record with the largest timestamp of the log (ListOffsets -3), None when it has none."""
    best: LogSegment | None = None
    for segment in segments:
        if segment.max_timestamp_so_far >= 0 and (
            best is None or segment.max_timestamp_so_far > best.max_timestamp_so_far
        ):
            best = segment
    if best is None:
        return None
    found = best.find_offset_by_timestamp(best.max_timestamp_so_far, max(log_start, best.base_offset))
    return TimestampAndOffset(*found) if found is not None else None


def offset_of_timestamp(segments: list[LogSegment], log_start: int, target_timestamp: int) -> TimestampAndOffset | None:
    """The first record with a timestamp >= ``target_timestamp``, None when there is none."""
    for segment in segments:
        if segment.size and segment.largest_timestamp() >= target_timestamp:
            found = segment.find_offset_by_timestamp(target_timestamp, max(log_start, segment.base_offset))
            if found is not None:
                return TimestampAndOffset(*found)
    return None
