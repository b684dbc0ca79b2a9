"""Sparse offset index of one segment (Java OffsetIndex): ``<base offset>.index``.

Each 8-byte entry is (offset relative to the segment's base offset: int32, byte position of a batch in
the ``.log`` file: int32), big-endian, in increasing order of both. The log appends an entry for a batch
(its *last* offset -> its start position) once ``index.interval.bytes`` have been written since the
previous entry, so a lookup gives a batch to start scanning from, never one past the target.

File handling, capacity and truncation are :class:`~mini_broker.log.abstract_index.AbstractIndex`'s. An
index that fails :meth:`OffsetIndex.sanity_check` is rebuilt by the log from the segment's batches.
"""

from __future__ import annotations

import struct

from mini_broker.log.abstract_index import AbstractIndex, CorruptIndexError

_RELATIVE_OFFSET, _POSITION = 0, 1


class OffsetIndex(AbstractIndex):
    """(relative offset, position) entries."""

    ENTRY = struct.Struct(">ii")
    WIDTHS = (4, 4)
    OFFSET_COLUMN = _RELATIVE_OFFSET

    def last_offset(self) -> int:
        """The largest indexed offset, or the base offset when empty."""
        columns = self._columns
        return self.base_offset + columns.entry(-1)[_RELATIVE_OFFSET] if len(columns) else self.base_offset

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with offset <= target, or (base offset, 0)."""
        i = self._largest_at_most(_RELATIVE_OFFSET, target_offset - self.base_offset)
        if i < 0:
            return self.base_offset, 0
        return self.entry(i)

    def entry(self, n: int) -> tuple[int, int]:
        rel, position = self._columns.entry(n)
        return self.base_offset + rel, position

    def sanity_check(self, log_size: int) -> None:
        """Raise :class:`CorruptIndexError` if the file is torn, out of order or points past the log."""
        self._check_not_torn()
        prev_rel, prev_pos = -1, -1
        for rel, pos in self._columns.pairs():
            if rel <= prev_rel or pos <= prev_pos or rel < 0 or pos >= log_size:
                raise CorruptIndexError(f"{self.path}: bad entry ({rel}, {pos}) after ({prev_rel}, {prev_pos})")
            prev_rel, prev_pos = rel, pos

    def append(self, offset: int, position: int) -> None:
        """Add (offset -> position). Offsets must increase; ignored when the index is full."""
        appended = self._columns.append_increasing(offset - self.base_offset, position, self.max_entries,
                                                   self.write_at)
        if appended:
            if appended < 0:
                raise CorruptIndexError(f"{self.path}: offset {offset} is not larger than {self.last_offset()}")
            self.write_pending()
