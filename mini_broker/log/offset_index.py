"""Sparse offset index of one segment (Java OffsetIndex): ``<base offset>.index``.

Each 8-byte entry is (offset relative to the segment's base offset: int32, byte position of a batch in
the ``.log`` file: int32), big-endian, in increasing order of both. The log appends an entry for a batch
(its *last* offset -> its start position) once ``index.interval.bytes`` have been written since the
previous entry, so a lookup gives a batch to start scanning from, never one past the target.

The entries live in memory (two ``array``s, searched with ``bisect``) and are appended to the file as
they are added; the file is the durable copy read back on open. The index is full when it holds
``max_index_size // 8`` entries (the log then rolls). An index that fails :meth:`sanity_check` is rebuilt
by the log from the segment's batches.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from typing import Final

from pykafka_client.errors_base import KafkaError

ENTRY_SIZE: Final = 8
_ENTRY = struct.Struct(">ii")


class CorruptIndexError(KafkaError):
    """An index file that cannot be trusted (its segment's index is rebuilt)."""


class OffsetIndex:
    """In-memory entries backed by an append-only file."""

    entry_size: Final = ENTRY_SIZE

    def __init__(self, path: str, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size // ENTRY_SIZE)
        self._relative_offsets = array("i")
        self._positions = array("i")
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._load()

    def _load(self) -> None:
        data = _read_all(self._fd)
        usable = len(data) - len(data) % ENTRY_SIZE
        for rel, pos in _ENTRY.iter_unpack(data[:usable]):
            self._relative_offsets.append(rel)
            self._positions.append(pos)
        self._torn = len(data) != usable

    # -- queries --------------------------------------------------------------------------------------
    def entries(self) -> int:
        return len(self._relative_offsets)

    def is_full(self) -> bool:
        return len(self._relative_offsets) >= self.max_entries

    def last_offset(self) -> int:
        """The largest indexed offset, or the base offset when empty."""
        return self.base_offset + self._relative_offsets[-1] if self._relative_offsets else self.base_offset

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with offset <= target, or (base offset, 0)."""
        i = bisect_right(self._relative_offsets, target_offset - self.base_offset)
        if i == 0:
            return self.base_offset, 0
        return self.base_offset + self._relative_offsets[i - 1], self._positions[i - 1]

    def entry(self, n: int) -> tuple[int, int]:
        return self.base_offset + self._relative_offsets[n], self._positions[n]

    def sanity_check(self, log_size: int) -> None:
        """Raise :class:`CorruptIndexError` if the file is torn, out of order or points past the log."""
        if self._torn:
            raise CorruptIndexError(f"{self.path}: size is not a multiple of {ENTRY_SIZE}")
        prev_rel, prev_pos = -1, -1
        for rel, pos in zip(self._relative_offsets, self._positions, strict=True):
            if rel <= prev_rel or pos <= prev_pos or rel < 0 or pos >= log_size:
                raise CorruptIndexError(f"{self.path}: bad entry ({rel}, {pos}) after ({prev_rel}, {prev_pos})")
            prev_rel, prev_pos = rel, pos

    # -- updates (under the log lock) -----------------------------------------------------------------
    def append(self, offset: int, position: int) -> None:
        """Add (offset -> position). Offsets must increase; ignored when the index is full."""
        rel = offset - self.base_offset
        if self._relative_offsets and rel <= self._relative_offsets[-1]:
            raise CorruptIndexError(f"{self.path}: offset {offset} is not larger than {self.last_offset()}")
        if self.is_full():
            return
        os.pwrite(self._fd, _ENTRY.pack(rel, position), len(self._relative_offsets) * ENTRY_SIZE)
        self._relative_offsets.append(rel)
        self._positions.append(position)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        os.ftruncate(self._fd, 0)
        del self._relative_offsets[:]
        del self._positions[:]
        self._torn = False

    def truncate_to(self, offset: int) -> None:
        """Drop entries with offset >= ``offset``."""
        keep = bisect_right(self._relative_offsets, offset - self.base_offset - 1)
        del self._relative_offsets[keep:]
        del self._positions[keep:]
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

    def rename(self, path: str) -> None:
        os.rename(self.path, path)
        self.path = path


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
