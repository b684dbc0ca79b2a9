"""Sparse time index of one segment (Java TimeIndex): ``<base offset>.timeindex``.

Each 12-byte entry is (timestamp: int64, offset relative to the base offset: int32), big-endian. An entry
(T, O) means: the largest timestamp among batches up to the batch holding offset O is T, and O's batch
is the first to reach it. Timestamps and offsets strictly increase along the file, so a lookup for a
target timestamp gives an offset from which scanning forward finds the first record with timestamp >=
target. Entries are added next to offset-index entries and, when the segment becomes inactive (roll,
close), once more for the segment's max timestamp, so the last entry is the segment's max.

File handling, capacity and truncation are :class:`~mini_broker.log.abstract_index.AbstractIndex`'s.
"""

from __future__ import annotations

import struct
from typing import Final

from mini_broker.log.abstract_index import AbstractIndex, CorruptIndexError

NO_TIMESTAMP: Final = -1

_TIMESTAMP, _RELATIVE_OFFSET = 0, 1


class TimeIndex(AbstractIndex):
    """(timestamp, relative offset) entries."""

    ENTRY = struct.Struct(">qi")
    WIDTHS = (8, 4)
    OFFSET_COLUMN = _RELATIVE_OFFSET

    def _entry(self, n: int) -> tuple[int, int]:
        timestamp, rel = self._columns.entry(n)
        return timestamp, self.base_offset + rel

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base offset) when empty."""
        if not self.entries():
            return NO_TIMESTAMP, self.base_offset
        return self._entry(-1)

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp <= target, or (-1, base offset)."""
        i = self._largest_at_most(_TIMESTAMP, target_timestamp)
        if i < 0:
            return NO_TIMESTAMP, self.base_offset
        return self._entry(i)

    def sanity_check(self, max_offset: int) -> None:
        """Raise :class:`CorruptIndexError` if torn, out of order, or pointing past ``max_offset``."""
        self._check_not_torn()
        prev_ts, prev_rel = NO_TIMESTAMP - 1, -1
        for ts, rel in self._columns.pairs():
            if ts <= prev_ts or rel < prev_rel or rel < 0 or self.base_offset + rel > max_offset:
                raise CorruptIndexError(f"{self.path}: bad entry ({ts}, {rel}) after ({prev_ts}, {prev_rel})")
            prev_ts, prev_rel = ts, rel

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if the timestamp is larger than the last entry's (and there is room)."""
        # (the columns' rule: a timestamp above the last entry's, or NO_TIMESTAMP when empty; room unless skipped)
        appended = self._columns.append_newer(timestamp, offset - self.base_offset, self.max_entries,
                                              not skip_full_check, self.write_at)
        if appended:
            if appended < 0:
                raise CorruptIndexError(f"{self.path}: offset {offset} is smaller than the last entry's")
            self.write_pending()
