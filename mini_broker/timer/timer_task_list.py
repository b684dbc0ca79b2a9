"""A bucket of the timing wheel (Java TimerTaskList): a doubly linked cyclic list with a sentinel root.

All entries of a bucket expire within the same tick of their wheel, so the bucket has one
``expiration``. :meth:`set_expiration` returns whether the value changed: that is the moment the bucket
must be (re-)offered to the timer's delay queue. :meth:`flush` empties the bucket and resets the
expiration to -1, so a re-used bucket is offered again.

Invariant: an entry is inserted by one thread at a time (the thread that created it, or the thread that
flushes a bucket under the timer's lock); removals may race with anything.

Counting: each bucket keeps its own entry count under its own lock (no second lock per add/remove); the
timer-wide ``task_counter`` (Java's shared AtomicInteger) adds up the counts of the buckets that
registered with it, so ``task_counter.get()`` is what Java's counter would read.

Hot paths use ``lock.acquire()`` + ``try/finally`` rather than ``with`` (measurably cheaper on CPython).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from mini_broker.timer.timer_task import TimerTask, TimerTaskEntry


class AtomicCounter:
    """A thread-safe integer counter (the shared task count of one timer).

    Buckets created with this counter register with it (:meth:`track`); :meth:`get` is the counter's own
    value plus the sizes of those buckets."""

    __slots__ = ("_lock", "_sources", "_value")

    def __init__(self, value: int = 0) -> None:
        self._value = value
        self._lock = threading.Lock()
        self._sources: list[TimerTaskList] = []

    def track(self, bucket: TimerTaskList) -> None:
        """Count the entries of ``bucket`` in :meth:`get` (called by ``TimerTaskList.__init__``)."""
        self._sources.append(bucket)

    def _tracked(self) -> int:
        return sum([bucket.entry_count for bucket in self._sources])

    def add(self, delta: int) -> int:
        with self._lock:
            self._value += delta
            return self._value + self._tracked()

    def get(self) -> int:
        return self._value + self._tracked()

    def get_and_set(self, value: int) -> int:
        with self._lock:
            tracked = self._tracked()
            old = self._value + tracked
            self._value = value - tracked
            return old


class TimerTaskList:
    """One bucket. ``task_counter`` is shared by every bucket of a timer and counts the entries in them."""

    __slots__ = ("_expiration", "_lock", "_root", "_size", "_task_counter")

    def __init__(self, task_counter: AtomicCounter) -> None:
        self._task_counter = task_counter
        self._lock = threading.Lock()
        self._expiration = -1
        self._size = 0  # entries linked in; changed only under _lock
        root = TimerTaskEntry(None, -1)
        root.next = root
        root.prev = root
        self._root = root
        task_counter.track(self)

    def set_expiration(self, expiration_ms: int) -> bool:
        """Set the bucket's expiration; True iff it changed."""
        with self._lock:
            old = self._expiration
            self._expiration = expiration_ms
        return old != expiration_ms

    def get_expiration(self) -> int:
        return self._expiration

    @property
    def entry_count(self) -> int:
        """The running count of entries linked in, read without the lock (a moment's value, as an atomic
        counter's read is; :meth:`size` walks the list instead)."""
        return self._size

    def add(self, entry: TimerTaskEntry) -> None:
        """Append ``entry``, first removing it from any other list."""
        self.add_and_set_expiration(entry, None)

    def add_and_set_expiration(self, entry: TimerTaskEntry, expiration_ms: int | None) -> bool:
        """:meth:`add` then (unless ``expiration_ms`` is None) :meth:`set_expiration`, under one lock
        acquisition (the wheel's hot path). Returns whether the expiration changed."""
        lock = self._lock
        while True:
            if entry.list is not None:
                entry.remove()
            lock.acquire()
            try:
                if entry.list is None:
                    root = self._root
                    tail = root.prev
                    assert tail is not None
                    entry.next = root
                    entry.prev = tail
                    entry.list = self
                    tail.next = entry
                    root.prev = entry
                    self._size += 1
                    task = entry.timer_task
                    if task is not None and task.entry is not entry:
                        # Cancelled (or re-bound) while being added: TimerTask.cancel() clears the binding
                        # before it reads ``entry.list``, so either it sees this list and unlinks the entry,
                        # or we see the cleared binding here. No cancelled entry stays counted until a flush.
                        self._unlink(entry)
                    if expiration_ms is None:
                        return False
                    old = self._expiration
                    self._expiration = expiration_ms
                    return old != expiration_ms
            finally:
                lock.release()

    def remove(self, entry: TimerTaskEntry) -> None:
        """Unlink ``entry`` if this list holds it (O(1))."""
        lock = self._lock
        lock.acquire()
        try:
            if entry.list is self:
                nxt, prev = entry.next, entry.prev  # _unlink, inlined (the completion path)
                assert nxt is not None and prev is not None
                nxt.prev = prev
                prev.next = nxt
                entry.next = None
                entry.prev = None
                entry.list = None
                self._size -= 1
        finally:
            lock.release()

    def _unlink(self, entry: TimerTaskEntry) -> None:
        """Unlink ``entry``, which this list holds. Caller holds ``_lock``."""
        nxt, prev = entry.next, entry.prev
        assert nxt is not None and prev is not None
        nxt.prev = prev
        prev.next = nxt
        entry.next = None
        entry.prev = None
        entry.list = None
        self._size -= 1

    def drain(self) -> list[TimerTaskEntry]:
        """Remove every entry, reset the expiration to -1 and return the entries in insertion order."""
        with self._lock:
            entries: list[TimerTaskEntry] = []
            root = self._root
            head = root.next
            while head is not None and head is not root:
                entries.append(head)
                nxt = head.next
                head.next = None
                head.prev = None
                head.list = None
                head = nxt
            root.next = root
            root.prev = root
            self._size = 0
            self._expiration = -1
        return entries

    def flush(self, f: Callable[[TimerTaskEntry], None]) -> None:
        """Remove every entry, apply ``f`` to each (in insertion order), and reset the expiration to -1."""
        for entry in self.drain():
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
        """Number of entries in this bucket (O(n) walk, independent of the running count; for tests)."""
        with self._lock:
            n = 0
            entry = self._root.next
            while entry is not None and entry is not self._root:
                n += 1
                entry = entry.next
            return n

    def __lt__(self, other: TimerTaskList) -> bool:
        return self._expiration < other._expiration
