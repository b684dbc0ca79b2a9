"""The entries of a segment index (:class:`~mini_broker.log.abstract_index.AbstractIndex`): two columns of signed
integers, each 4 or 8 bytes wide in the index file's big-endian entries.

:class:`IndexColumns` is the reference, on two ``array``\\ s; :func:`new_index_columns` gives the compiled kernel's
``IndexColumns`` (the same methods, the values in C memory: an index append is one call of a C method, without the
arrays' per-value argument parsing) when the kernel is loaded. Both raise ``OverflowError`` for a value outside its
column's width (the reference may then have appended the first column's value: the log never gives such values, the
roll keeps them in range).
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right
from typing import Protocol

from pykafka_client.protocol.records import _native

_TYPECODES = {4: "i", 8: "q"}
_FORMATS = {4: "i", 8: "q"}


class IndexColumnsApi(Protocol):
    """What an index reads and changes of its entries."""

    def __len__(self) -> int: ...

    def load(self, data: bytes, /) -> None:
        """Append the whole entries of ``data`` (big-endian, as in the file)."""

    def entry(self, n: int, /) -> tuple[int, int]:
        """Entry ``n`` (negative: from the end); IndexError outside."""

    def bisect(self, column: int, key: int, right: bool, /) -> int:
        """``bisect_right`` (``right``) or ``bisect_left`` of ``key`` in ``column`` (0 or 1, sorted)."""

    def truncate(self, keep: int, /) -> None:
        """Drop the entries from ``keep`` on."""

    def encode(self, start: int, /) -> bytes:
        """The entries from ``start`` on, big-endian, as in the file."""

    def pairs(self) -> list[tuple[int, int]]:
        """Every entry."""

    def append_increasing(self, first: int, second: int, max_entries: int, write_at: int, /) -> int:
        """The offset index's rule: -1 (nothing appended) when ``first`` is not above the last entry's, 0 when there
        are ``max_entries`` entries already, else the entry is appended: then 1 when there are ``write_at`` entries
        or more (the index writes its pending ones), else 0."""

    def append_newer(self, first: int, second: int, max_entries: int, check_full: bool, write_at: int, /) -> int:
        """The time index's rule: 0 when ``first`` is not above the last entry's (-1, no timestamp, when empty) or,
        with ``check_full``, there are ``max_entries`` entries already; -1 (nothing appended) when ``second`` is
        below the last entry's; else the entry is appended: then 1 when there are ``write_at`` entries or more, else
        0."""


class IndexColumns:
    """The reference :class:`IndexColumnsApi`: an ``array`` per column."""

    def __init__(self, first_width: int, second_width: int) -> None:
        self._first = array(_TYPECODES[first_width])
        self._second = array(_TYPECODES[second_width])
        self._entry = struct.Struct(">" + _FORMATS[first_width] + _FORMATS[second_width])

    def __len__(self) -> int:
        return len(self._first)

    def load(self, data: bytes) -> None:
        usable = len(data) - len(data) % self._entry.size
        for a, b in self._entry.iter_unpack(data[:usable]):
            self._first.append(a)
            self._second.append(b)

    def entry(self, n: int) -> tuple[int, int]:
        return self._first[n], self._second[n]

    def bisect(self, column: int, key: int, right: bool) -> int:
        values = self._second if column else self._first
        return bisect_right(values, key) if right else bisect_left(values, key)

    def truncate(self, keep: int) -> None:
        keep = max(keep, 0)
        del self._first[keep:]
        del self._second[keep:]

    def encode(self, start: int) -> bytes:
        start = max(start, 0)
        return b"".join(map(self._entry.pack, self._first[start:], self._second[start:]))

    def pairs(self) -> list[tuple[int, int]]:
        return list(zip(self._first, self._second, strict=True))

    def _append(self, first: int, second: int, write_at: int) -> int:
        self._first.append(first)
        self._second.append(second)
        return 1 if len(self._first) >= write_at else 0

    def append_increasing(self, first: int, second: int, max_entries: int, write_at: int) -> int:
        firsts = self._first
        if firsts and first <= firsts[-1]:
            return -1
        if len(firsts) >= max_entries:
            return 0
        return self._append(first, second, write_at)

    def append_newer(self, first: int, second: int, max_entries: int, check_full: bool, write_at: int) -> int:
        firsts, seconds = self._first, self._second
        if first <= (firsts[-1] if firsts else -1) or (check_full and len(firsts) >= max_entries):
            return 0
        if seconds and second < seconds[-1]:
            return -1
        return self._append(first, second, write_at)


def new_index_columns(first_width: int, second_width: int) -> IndexColumnsApi:
    """Empty entries with columns of these widths (4 or 8 bytes): the kernel's when it is loaded, else the
    reference's."""
    kernel = _native.kernel
    if kernel is not None:
        made: IndexColumnsApi = kernel.index_columns(first_width, second_width)
        return made
    return IndexColumns(first_width, second_width)
