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
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        cond = self._cond
        with cond:
            while self._writer or self._writers_waiting:
                cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with cond:
                self._readers -= 1
                if self._readers == 0:
                    cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        cond = self._cond
        with cond:
            self._writers_waiting += 1
            while self._writer or self._readers:
                cond.wait()
            self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with cond:
                self._writer = False
                cond.notify_all()
