"""The append state of one log segment (:class:`~mini_broker.log.log_segment.LogSegment` reads and moves it): its
size, the bytes written since its last index entry, its max timestamp and the offset that has it, the index room
left, and the timestamp its age is counted from.

:class:`SegmentTail` is the reference: plain fields, and an :meth:`SegmentTail.append_one` that always declines, so that
the segment's own methods (``should_roll``, ``append``, ``_index_batch``) do every append. :func:`new_segment_tail`
gives the compiled kernel's ``SegmentTail`` when the kernel is loaded: the same fields in C memory, and an
``append_one`` that does the common append of one batch in one call (the roll check, the write, both index entries,
exactly as those methods), declining whenever they could do anything else (a roll, a full index, an age not yet
known, a bad index entry).
"""

from __future__ import annotations

from typing import Protocol

from mini_broker.log.abstract_index import AbstractIndex
from mini_broker.log.time_index import NO_TIMESTAMP
from pykafka_client.protocol.records import _native


class SegmentTailApi(Protocol):
    """What a segment reads and moves of its append state."""

    size: int
    bytes_since_last_index_entry: int
    max_timestamp_so_far: int
    offset_of_max_timestamp_so_far: int
    index_room: int
    rolling_based_timestamp: int | None

    def configure(self, segment_bytes: int, roll_ms: int, index_interval_bytes: int, /) -> None:
        """The config's values the append reads: ``segment.bytes``, ``segment.ms`` less the segment's jitter,
        ``index.interval.bytes``."""

    def append_one(self, data: bytes | bytearray | memoryview, last_offset: int, max_timestamp: int,
                   roll_max_timestamp: int, /) -> int:
        """Write and index one batch (offsets assigned: its last offset and max timestamp; ``roll_max_timestamp``: the
        append's max timestamp, for the roll check) when the segment would neither roll nor do anything unusual; the
        new size. -1, nothing done, otherwise: the caller runs the segment's ``should_roll`` and ``append``."""

    def close(self) -> None:
        """The file is closed (:meth:`append_one` declines from now on)."""


class SegmentTail:
    """The reference :class:`SegmentTailApi`: fields only, every append left to the segment's methods."""

    __slots__ = ("bytes_since_last_index_entry", "index_room", "max_timestamp_so_far", "offset_of_max_timestamp_so_far",
                 "rolling_based_timestamp", "size")

    def __init__(self, base_offset: int) -> None:
        self.size = 0
        self.bytes_since_last_index_entry = 0
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = base_offset
        self.index_room = 0
        self.rolling_based_timestamp: int | None = None

    def configure(self, segment_bytes: int, roll_ms: int, index_interval_bytes: int) -> None:
        return None

    def append_one(self, data: bytes | bytearray | memoryview, last_offset: int, max_timestamp: int,
                   roll_max_timestamp: int) -> int:
        return -1

    def close(self) -> None:
        return None


def new_segment_tail(fd: int, base_offset: int, offset_index: AbstractIndex, time_index: AbstractIndex) -> SegmentTailApi:
    """The empty append state of the segment at ``base_offset`` whose ``.log`` file is ``fd``, with its indexes: the
    kernel's when it is loaded (and the indexes' entries are its ``IndexColumns``), else the reference's."""
    kernel = _native.kernel
    if kernel is not None:
        made: SegmentTailApi = kernel.segment_tail(fd, base_offset, offset_index, offset_index.columns, time_index,
                                                   time_index.columns)
        return made
    return SegmentTail(base_offset)
