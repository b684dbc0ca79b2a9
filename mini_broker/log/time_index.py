"""Sparse time index of one segment (Java TimeIndex): ``<base offset>.timeindex``.

Each 12-byte entry is (timestamp: int64, offset relative to the base offset: int32), big-endian. An entry
(T, O) means: the largest timestamp among batches up to the batch holding offset O is T, and O's batch
is the first to reach it. Timestamps and offsets strictly increase along the file, so a lookup for a
target timestamp gives an offset from which scanning forward finds the first record with timestamp >=
target. Entries are added next to offset-index entries and, when the segment becomes inactive (roll,
close), once more for the segment's max timestamp, so the last entry is the segment's max.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from typing import Final

from mini_broker.log.offset_index import CorruptIndexError, _read_all

ENTRY_SIZE: Final = 12
_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP: Final = -1


class TimeIndex:
    """In-memory entries backed by an append-only file."""

    entry_size: Final = ENTRY_SIZE

    def __init__(self, path: str, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size // ENTRY_SIZE)
        self._timestamps = array("q")
        self._relative_offsets = array("i")
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        data = _read_all(self._fd)
        usable = len(data) - len(data) % ENTRY_SIZE
        for ts, rel in _ENTRY.iter_unpack(data[:usable]):
            self._timestamps.append(ts)
            self._relative_offsets.append(rel)
        self._torn = len(data) != usable

    def entries(self) -> int:
        return len(self._timestamps)

    def is_full(self) -> bool:
        return len(self._timestamps) >= self.max_entries

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base offset) when empty."""
        if not self._timestamps:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[-1], self.base_offset + self._relative_offsets[-1]

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp <= target, or (-1, base offset)."""
        i = bisect_right(self._timestamps, target_timestamp)
        if i == 0:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[i - 1], self.base_offset + self._relative_offsets[i - 1]

    def sanity_check(self, max_offset: int) -> None:
        """Raise :class:`CorruptIndexError` if torn, out of order, or pointing past ``max_offset``."""
        if self._torn:
            raise CorruptIndexError(f"{self.path}: size is not a multiple of {ENTRY_SIZE}")
        prev_ts, prev_rel = NO_TIMESTAMP - 1, -1
        for ts, rel in zip(self._timestamps, self._relative_offsets, strict=True):
            if ts <= prev_ts or rel < prev_rel or rel < 0 or self.base_offset + rel > max_offset:
                raise CorruptIndexError(f"{self.path}: bad entry ({ts}, {rel}) after ({prev_ts}, {prev_rel})")
            prev_ts, prev_rel = ts, rel

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if the timestamp is larger than the last entry's (and there is room)."""
        if timestamp <= (self._timestamps[-1] if self._timestamps else NO_TIMESTAMP):
            return
        if not skip_full_check and self.is_full():
            return
        rel = offset - self.base_offset
        if self._relative_offsets and rel < self._relative_offsets[-1]:
            raise CorruptIndexError(f"{self.path}: offset {offset} is smaller than the last entry's")
        os.pwrite(self._fd, _ENTRY.pack(timestamp, rel), len(self._timestamps) * ENTRY_SIZE)
        self._timestamps.append(timestamp)
        self._relative_offsets.append(rel)

    def reset(self) -> None:
        os.ftruncate(self._fd, 0)
        del self._timestamps[:]
        del self._relative_offsets[:]
        self._torn = False

    def truncate_to(self, offset: int) -> None:
        """Drop entries with offset >= ``offset``."""
        keep = len(self._relative_offsets)
        while keep > 0 and self.base_offset + self._relative_offsets[keep - 1] >= offset:
            keep -= 1
        del self._timestamps[keep:]
        del self._relative_offsets[keep:]
        os.ftruncate(self._fd, keep * ENTRY_SIZE)

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
