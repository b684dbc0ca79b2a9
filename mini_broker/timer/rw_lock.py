"""A small readers-writer lock (Java ReentrantReadWriteLock, minus re-entrancy).

Writers are preferred: once a writer waits, new readers wait too, so a steady stream of ``add`` calls
cannot starve ``advance_clock``. Not re-entrant: never take the read lock while holding the write lock
(the timer runs expired tasks only after releasing its locks for that reason).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    """``acquire_read``/``release_read`` and ``acquire_write``/``release_write`` (also as ``read()`` /
    ``write()`` context managers)."""

    __slots__ = ("_cond", "_mutex", "_readers", "_writer", "_writers_waiting")

    def __init__(self) -> None:
        # The condition is built on ``_mutex``; the fast paths take the mutex directly (a C-level context
        # manager), which is the same lock the condition waits with.
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def acquire_read(self) -> None:
        with self._mutex:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1

    def release_read(self) -> None:
        with self._mutex:
            self._readers -= 1
            if self._readers == 0 and self._writers_waiting:
                self._cond.notify_all()

    def acquire_write(self) -> None:
        with self._mutex:
            self._writers_waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writer = True

    def release_write(self) -> None:
        with self._mutex:
            self._writer = False
            self._cond.notify_all()

    @contextmanager
    def read(self) -> Iterator[None]:
        self.acquire_read()
        try:
            yield
        finally:
            self.release_read()

    @contextmanager
    def write(self) -> Iterator[None]:
        self.acquire_write()
        try:
            yield
        finally:
            self.release_write()
