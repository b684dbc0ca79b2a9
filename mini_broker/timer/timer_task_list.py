"""A bucket of the timing wheel (Java TimerTaskList): a doubly linked cyclic list with a sentinel root.

All entries of a bucket expire within the same tick of their wheel, so the bucket has one
``expiration``. :meth:`set_expiration` returns whether the value changed: that is the moment the bucket
must be (re-)offered to the timer's delay queue. :meth:`flush` empties the bucket and resets the
expiration to -1, so a re-used bucket is offered again.

Invariant: an entry is inserted by one thread at a time (the thread that created it, or the thread that
flushes a bucket under the timer's write lock); removals may race with anything.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from mini_broker.timer.timer_task import TimerTask, TimerTaskEntry


class AtomicCounter:
    """A thread-safe integer counter (the shared task count of one timer)."""

    __slots__ = ("_lock", "_value")

    def __init__(self, value: int = 0) -> None:
        self._value = value
        self._lock = threading.Lock()

    def add(self, delta: int) -> int:
        with self._lock:
            self._value += delta
            return self._value

    def get(self) -> int:
        return self._value

    def get_and_set(self, value: int) -> int:
        with self._lock:
            old = self._value
            self._value = value
            return old


class TimerTaskList:
    """One bucket. ``task_counter`` is shared by every bucket of a timer and counts the entries in them."""

    __slots__ = ("_expiration", "_lock", "_root", "_task_counter")

    def __init__(self, task_counter: AtomicCounter) -> None:
        self._task_counter = task_counter
        self._lock = threading.Lock()
        self._expiration = -1
        root = TimerTaskEntry(None, -1)
        root.next = root
        root.prev = root
        self._root = root

    def set_expiration(self, expiration_ms: int) -> bool:
        """Set the bucket's expiration; True iff it changed."""
        with self._lock:
            old = self._expiration
            self._expiration = expiration_ms
        return old != expiration_ms

    def get_expiration(self) -> int:
        return self._expiration

    def add(self, entry: TimerTaskEntry) -> None:
        """Append ``entry``, first removing it from any other list."""
        while True:
            entry.remove()
            with self._lock:
                if entry.list is None:
                    tail = self._root.prev
                    assert tail is not None
                    entry.next = self._root
                    entry.prev = tail
                    entry.list = self
                    tail.next = entry
                    self._root.prev = entry
                    self._task_counter.add(1)
                    return

    def add_and_set_expiration(self, entry: TimerTaskEntry, expiration_ms: int) -> bool:
        """:meth:`add` then :meth:`set_expiration` under one lock acquisition (the wheel's hot path)."""
        while True:
            entry.remove()
            with self._lock:
                if entry.list is None:
                    tail = self._root.prev
                    assert tail is not None
                    entry.next = self._root
                    entry.prev = tail
                    entry.list = self
                    tail.next = entry
                    self._root.prev = entry
                    self._task_counter.add(1)
                    old = self._expiration
                    self._expiration = expiration_ms
                    return old != expiration_ms

    def remove(self, entry: TimerTaskEntry) -> None:
        """Unlink ``entry`` if this list holds it (O(1))."""
        with self._lock:
            if entry.list is self:
                nxt, prev = entry.next, entry.prev
                assert nxt is not None and prev is not None
                nxt.prev = prev
                prev.next = nxt
                entry.next = None
                entry.prev = None
                entry.list = None
                self._task_counter.add(-1)

    def flush(self, f: Callable[[TimerTaskEntry], None]) -> None:
        """Remove every entry, apply ``f`` to each (in insertion order), and reset the expiration to -1."""
        with self._lock:
            entries: list[TimerTaskEntry] = []
            head = self._root.next
            while head is not None and head is not self._root:
                entries.append(head)
                head = head.next
            for entry in entries:
                entry.next = None
                entry.prev = None
                entry.list = None
            self._root.next = self._root
            self._root.prev = self._root
            if entries:
                self._task_counter.add(-len(entries))
            self._expiration = -1
        for entry in entries:
            f(entry)

    def tasks(self) -> Iterator[TimerTask]:
        """A snapshot of the live (not cancelled) tasks of this bucket."""
        with self._lock:
            out: list[TimerTask] = []
            entry = self._root.next
            while entry is not None and entry is not self._root:
                if not entry.cancelled() and entry.timer_task is not None:
                    out.append(entry.timer_task)
                entry = entry.next
        return iter(out)

    def size(self) -> int:
        """Number of entries in this bucket (O(n); for tests)."""
        with self._lock:
            n = 0
            entry = self._root.next
            while entry is not None and entry is not self._root:
                n += 1
                entry = entry.next
            return n

    def __lt__(self, other: TimerTaskList) -> bool:
        return self._expiration < other._expiration
