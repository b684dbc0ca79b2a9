"""What the offset and the time index of a segment share (Java ``AbstractIndex``).

An index is a file of fixed-size big-endian entries of two columns, kept in memory as an
:class:`~mini_broker.log.index_columns.IndexColumnsApi` (on the compiled kernel, C memory; else an ``array`` per column) and
appended to the file as entries are added; the file is the durable copy read back on open.
This base owns the file (open, load, append, truncate, reset, flush, close, delete), the entry size and the
capacity (``max_index_size // entry_size`` entries: the log rolls the segment when an index is full), the
binary search on a column, truncation by offset and the torn-file part of the sanity check. Subclasses say
what the columns are (:attr:`ENTRY`, :attr:`TYPECODES`, :attr:`OFFSET_COLUMN`) and add their own lookup,
append rule and ordering check.

Unlike Kafka the files are not memory-mapped nor preallocated to the maximum size, so there is no
``resize`` / ``trimToValidSize``: a file is exactly its entries once written. New entries are written together
(one ``pwrite`` per :data:`PENDING_BYTES` of entries, and at :meth:`AbstractIndex.flush`, ``close`` and
``truncate_to``) rather than one ``pwrite`` each: an append of 4 KiB or more adds an entry to both indexes, two
system calls per Produce otherwise. As with Kafka's memory-mapped files (whose pages the OS writes when it
likes), a crash can lose the newest entries; the index of the active segment is rebuilt on load anyway, and a
rolled segment's were flushed at the roll.
"""

from __future__ import annotations

import os
import struct
from typing import ClassVar

from mini_broker.log.index_columns import IndexColumnsApi, new_index_columns
from pykafka_client.errors_base import KafkaError

#: bytes of new entries kept before they are written (one ``pwrite``): 341 offset index entries, 256 time index ones
PENDING_BYTES = 4096


class CorruptIndexError(KafkaError):
    """An index file that cannot be trusted (its segment's index is rebuilt)."""


class AbstractIndex:
    """Two columns of entries backed by an append-only file."""

    #: The on-disk entry (two fields, big-endian).
    ENTRY: ClassVar[struct.Struct]
    #: byte widths (4 or 8) of the two columns, in entry order.
    WIDTHS: ClassVar[tuple[int, int]]
    #: Which column holds the offset relative to the segment's base offset (non-decreasing).
    OFFSET_COLUMN: ClassVar[int]

    def __init__(self, path: str, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size // self.entry_size)
        self._columns = new_index_columns(*self.WIDTHS)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        data = _read_all(self._fd)
        usable = len(data) - len(data) % self.entry_size
        self._columns.load(data[:usable])
        self._torn = len(data) != usable
        #: how many pending entries are written together (PENDING_BYTES of them, rounded up)
        self._pending_limit = -(-PENDING_BYTES // self.ENTRY.size)
        self._set_written(len(self._columns))

    @property
    def entry_size(self) -> int:
        return self.ENTRY.size

    @property
    def columns(self) -> IndexColumnsApi:
        """The entries (the same object for the index's life: truncations and resets change it in place); a segment's
        compiled append state (:mod:`mini_broker.log.segment_tail`) appends to it as :meth:`write_pending` and the
        subclasses' append rules say."""
        return self._columns

    # -- queries --------------------------------------------------------------------------------------
    def entries(self) -> int:
        return len(self._columns)

    def room(self) -> int:
        """How many more entries fit (0 or less: full)."""
        return self.max_entries - len(self._columns)

    def is_full(self) -> bool:
        return self.room() <= 0

    def _largest_at_most(self, column: int, key: int) -> int:
        """Index of the last entry whose ``column`` value is <= ``key`` (the column is sorted), or -1."""
        return self._columns.bisect(column, key, True) - 1

    def _check_not_torn(self) -> None:
        if self._torn:
            raise CorruptIndexError(f"{self.path}: size is not a multiple of {self.entry_size}")

    # -- updates (under the log lock) -----------------------------------------------------------------
    def _set_written(self, entries: int) -> None:
        """The first ``entries`` are in the file (those after them are appended and not written yet): the pending ones
        are written once there are :attr:`write_at` entries (the subclasses' appends pass it to the columns' rule,
        which says when it is reached; public: a segment's compiled append state reads it)."""
        self._written = entries
        self.write_at = entries + self._pending_limit

    def write_pending(self) -> None:
        """Write the entries appended since the last write."""
        written = self._written
        columns = self._columns
        if len(columns) > written:
            os.pwrite(self._fd, columns.encode(written), written * self.ENTRY.size)
            self._set_written(len(columns))

    def truncate_to(self, offset: int) -> None:
        """Drop entries with offset >= ``offset``."""
        self.write_pending()
        keep = self._columns.bisect(self.OFFSET_COLUMN, offset - self.base_offset, False)
        self._columns.truncate(keep)
        self._set_written(min(self._written, keep))
        os.ftruncate(self._fd, keep * self.entry_size)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._columns.truncate(0)
        self._set_written(0)
        os.ftruncate(self._fd, 0)
        self._torn = False

    def flush(self) -> None:
        self.write_pending()
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            self.write_pending()
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self._set_written(len(self._columns))  # nothing to write to a file about to go
        self.close()
        unlink_if_exists(self.path)


def unlink_if_exists(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks: list[bytes] = []
    pos = 0
    while pos < size:
        chunk = os.pread(fd, min(size - pos, 1 << 20), pos)
        if not chunk:
            break
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks)
