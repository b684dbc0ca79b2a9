"""The aborted-transaction index of a segment (Kafka ``TransactionIndex``, ``AbortedTxn``,
``TxnIndexSearchResult``): ``<base offset>.txnindex``, one entry per transaction whose ABORT marker is in the
segment, appended when the marker is written.

Entry (34 bytes, big-endian): ``version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 |
lastStableOffset int64``. ``lastOffset`` is the marker's offset and increases from entry to entry;
``lastStableOffset`` is the partition's LSO right after the abort, so a search can stop at the first entry
whose LSO reaches the upper bound (no later entry can start below it).

Not an :class:`~mini_broker.log.abstract_index.AbstractIndex` (nor is Kafka's): entries are not keyed by a
relative offset with a position, the index has no capacity (it never makes the segment roll) and lookups
scan rather than binary-search. Entries are kept in memory; the file is created with the first entry and
is append-only (truncation rewrites it).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from mini_broker.log.abstract_index import CorruptIndexError, unlink_if_exists
from mini_broker.utils.atomic_file import atomic_write

TXN_INDEX_FILE_SUFFIX: Final = ".txnindex"
ABORTED_TXN_VERSION: Final = 0
_ENTRY: Final = struct.Struct(">hqqqq")
ENTRY_SIZE: Final = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(ABORTED_TXN_VERSION, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)

    @classmethod
    def from_bytes(cls, data: bytes | memoryview, offset: int = 0) -> AbortedTxn:
        version, pid, first, last, lso = _ENTRY.unpack_from(data, offset)
        if version != ABORTED_TXN_VERSION:
            raise CorruptIndexError(f"aborted transaction entry of unknown version {version}")
        return cls(pid, first, last, lso)


@dataclass(frozen=True, slots=True)
class TxnIndexSearchResult:
    """The aborted transactions overlapping a range, and whether no later segment can hold more."""

    aborted_transactions: list[AbortedTxn]
    is_complete: bool


class TransactionIndex:
    """One segment's aborted transactions (see the module docstring)."""

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] = []
        self._fd = -1
        self._torn = False
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return
        usable = len(data) - len(data) % ENTRY_SIZE
        self._torn = usable != len(data)
        for pos in range(0, usable, ENTRY_SIZE):
            try:
                self._entries.append(AbortedTxn.from_bytes(data, pos))
            except CorruptIndexError:
                self._torn = True
                break

    def __iter__(self) -> Iterator[AbortedTxn]:
        return iter(list(self._entries))

    def entries(self) -> int:
        return len(self._entries)

    def last_offset(self) -> int | None:
        return self._entries[-1].last_offset if self._entries else None

    def _open(self) -> int:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry; its last offset must be above the previous one's (else ``ValueError``)."""
        last = self.last_offset()
        if last is not None and txn.last_offset <= last:
            raise ValueError(
                f"the last offset of appended aborted transaction {txn} must be above {last} in {self.path}"
            )
        os.write(self._open(), txn.to_bytes())
        self._entries.append(txn)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """Entries overlapping ``[fetch_offset, upper_bound_offset)``; complete once an entry's LSO reaches the
        upper bound."""
        out: list[AbortedTxn] = []
        for txn in self._entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(out, True)
        return TxnIndexSearchResult(out, False)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset`` (the segment was cut there)."""
        keep = [t for t in self._entries if t.last_offset < offset]
        if len(keep) != len(self._entries) or self._torn:
            self._rewrite(keep)

    def reset(self) -> None:
        self._rewrite([])

    def _rewrite(self, entries: list[AbortedTxn]) -> None:
        self.close()
        if entries:
            atomic_write(self.path, b"".join(t.to_bytes() for t in entries))
        else:
            unlink_if_exists(self.path)
        self._entries = entries
        self._torn = False

    def sanity_check(self) -> None:
        """``CorruptIndexError`` for a torn file, an entry before the segment or last offsets not increasing."""
        if self._torn:
            raise CorruptIndexError(f"{self.path} is torn or holds an entry of an unknown version")
        previous = -1
        for txn in self._entries:
            if txn.last_offset < self.base_offset or txn.last_offset <= previous:
                raise CorruptIndexError(f"{self.path}: entry {txn} is out of order (previous last offset {previous})")
            previous = txn.last_offset

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def delete(self) -> None:
        self.close()
        unlink_if_exists(self.path)
