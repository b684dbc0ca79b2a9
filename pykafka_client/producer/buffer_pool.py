"""Accounting of ``buffer.memory`` (Java ``BufferPool``, without the pooled ByteBuffers).

Each open or in-flight batch holds ``allocate``-d bytes until the batch is completed and
``deallocate``-d. When memory is short, ``allocate`` blocks up to ``max_time_to_block_ms``; waiters are
served first come, first served (a later, smaller request never overtakes an earlier one), then it
raises :class:`~pykafka_client.errors.BufferExhaustedError`.

Waiting uses the injected :class:`~pykafka_client.utils.time.Time`: the deadline is computed on its
monotonic clock. With a ``MockTime``, a waiter is woken whenever the mock clock moves (its listener
hook, as Java's ``Time.waitObject``), so tests advance time instead of sleeping.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Protocol

from pykafka_client.errors import (
    BufferExhaustedError,
    IllegalArgumentError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import Time

#: Real-time cap on one condition wait, so a waiter re-reads the injected clock now and then.
_MAX_WAIT_SLICE_S = 0.5


class MemoryAccountApi(Protocol):
    """A pool's free bytes and the queue of the threads waiting for them: :class:`MemoryAccount` (the reference) or
    the kernel's ``MemoryAccount`` (a type that owns the same state; each step one compiled call)."""

    @property
    def lock(self) -> threading.Lock: ...

    @property
    def waiters(self) -> deque[threading.Condition]: ...

    @property
    def total(self) -> int: ...

    def take(self, size: int, /) -> bool: ...

    def take_first(self, waiter: threading.Condition, size: int, /) -> bool: ...

    def give(self, size: int, /) -> None: ...

    def available(self) -> int: ...


class MemoryAccount:
    """The free bytes of ``buffer.memory`` and the queue of the threads waiting for them (``waiters``: their
    Conditions over ``lock``, first come first served). :meth:`take` and :meth:`take_first` are called with ``lock``
    held (the pool's allocations), :meth:`give` without it (the pool's deallocate)."""

    __slots__ = ("_available", "lock", "total", "waiters")

    def __init__(self, total: int, lock: threading.Lock, waiters: deque[threading.Condition]) -> None:
        self.total = total
        self.lock = lock
        self.waiters = waiters
        self._available = total

    def take(self, size: int) -> bool:
        """Take ``size`` bytes when no thread waits and that many are free; False, having taken nothing, otherwise."""
        if self.waiters or self._available < size:
            return False
        self._available -= size
        return True

    def take_first(self, waiter: threading.Condition, size: int) -> bool:
        """Take ``size`` bytes for ``waiter`` when it is the first waiter and that many are free; False, having taken
        nothing, otherwise."""
        if not self.waiters or self.waiters[0] is not waiter or self._available < size:
            return False
        self._available -= size
        return True

    def give(self, size: int) -> None:
        """Return ``size`` bytes (the total at most) and wake the first waiter."""
        with self.lock:
            available = self._available + size
            # (a comparison, not min(): once per completed batch)
            self._available = available if available < self.total else self.total
            if self.waiters:
                self.waiters[0].notify()

    def available(self) -> int:
        return self._available


def new_memory_account(total: int, lock: threading.Lock, waiters: deque[threading.Condition]) -> MemoryAccountApi:
    """The kernel's ``MemoryAccount`` when the kernel is on, else the reference :class:`MemoryAccount`."""
    kernel = _native.kernel
    if kernel is None:
        return MemoryAccount(total, lock, waiters)
    compiled: MemoryAccountApi = kernel.MemoryAccount(total, lock, waiters)
    return compiled


class BufferPool:
    """Bounded byte accounting shared by all partitions of one producer."""

    def __init__(self, total_memory: int, time: Time) -> None:
        self.total_memory = total_memory
        self._time = time
        self._lock = threading.Lock()
        self._waiters: deque[threading.Condition] = deque()
        #: the free bytes and the waiters' queue (the kernel's MemoryAccount with the kernel): what deallocate changes,
        #: in one compiled call without the lock but to wake a waiter
        self.account = new_memory_account(total_memory, self._lock, self._waiters)
        #: senders waiting for memory outside :meth:`allocate` (the async producer's ``send``, which waits in its
        #: event loop and allocates once :meth:`can_allocate_now`): counted by :meth:`queued` as blocked threads
        self._external_waiters = 0
        #: Called (the pool's lock held) when a sender begins waiting for memory: the producer's Sender wake-up.
        #: The waiter makes every batch sendable (:meth:`queued`), but a Sender waiting out a long ``linger.ms``
        #: would not look before it ended, and the waiter would time out with memory still held by lingering batches.
        self.on_wait: Callable[[], None] | None = None
        #: set by :meth:`close` under the pool's lock (``account.lock``), read under it (the kernel's BatchOpener reads it
        #: as :meth:`try_allocate` does)
        self.closed = False
        add_listener = getattr(time, "add_listener", None)
        if callable(add_listener):
            add_listener(self._on_time_change)

    def _on_time_change(self) -> None:
        with self._lock:
            for w in self._waiters:
                w.notify()

    def allocate(self, size: int, max_time_to_block_ms: int) -> None:
        """Reserve ``size`` bytes, blocking up to ``max_time_to_block_ms`` for others to release memory."""
        if size > self.total_memory:
            raise IllegalArgumentError(
                f"Attempt to allocate {size} bytes, but there is a hard limit of {self.total_memory} on memory allocations."
            )
        with self._lock:
            if self.closed:
                raise KafkaError("Producer closed while allocating memory")
            if self.account.take(size):  # no waiter ahead and enough memory: = can_allocate_now()
                return
            cond = threading.Condition(self._lock)
            self._waiters.append(cond)
            if self.on_wait is not None:
                self.on_wait()
            deadline = self._time.hi_res_clock_ms() + max_time_to_block_ms
            try:
                while True:
                    if self.closed:
                        raise KafkaError("Producer closed while allocating memory")
                    if self.account.take_first(cond, size):
                        return
                    remaining = deadline - self._time.hi_res_clock_ms()
                    if remaining <= 0:
                        raise BufferExhaustedError(
                            f"Failed to allocate {size} bytes within the configured max blocking time "
                            f"{max_time_to_block_ms} ms. Total memory: {self.total_memory} bytes. "
                            f"Available memory: {self.account.available()} bytes."
                        )
                    cond.wait(min(remaining / 1000.0, _MAX_WAIT_SLICE_S))
            finally:
                self._waiters.remove(cond)
                if self._waiters:
                    self._waiters[0].notify()

    def try_allocate(self, size: int) -> bool:
        """Reserve ``size`` bytes if :meth:`allocate` would at once (no waiter ahead, enough memory, not closed);
        False, having reserved nothing, when it would block or raise. Never waits: the accumulator calls it under
        a deque lock, and :meth:`allocate` (outside the lock) only when this says False."""
        with self._lock:
            return not self.closed and self.account.take(size)

    def deallocate(self, size: int) -> None:
        """Return ``size`` bytes and wake the first waiter."""
        self.account.give(size)

    def can_allocate_now(self, size: int) -> bool:
        """Whether ``allocate(size, ...)`` would return at once (no waiter ahead, enough memory): the async
        producer's ``send`` waits asynchronously while this is False instead of blocking its event loop."""
        with self._lock:
            return not self._waiters and self.account.available() >= size

    def may_allocate_now(self, size: int) -> bool:
        """:meth:`can_allocate_now` read without the lock: a hint for a fast path that rechecks under the
        lock (the append does), never a promise (another thread may take the memory in between)."""
        return not self._waiters and self.account.available() >= size

    def available_memory(self) -> int:
        with self._lock:
            return self.account.available()

    def queued(self) -> int:
        """Number of senders waiting for memory (the accumulator's "memory exhausted" signal): threads blocked in
        :meth:`allocate` and waits announced by :meth:`begin_external_wait`."""
        with self._lock:
            return len(self._waiters) + self._external_waiters

    def begin_external_wait(self) -> None:
        """A sender begins waiting for memory without :meth:`allocate` (the async producer's ``send``): memory is
        exhausted for the accumulator (every batch sendable, as while a thread is blocked in :meth:`allocate`)
        until the matching :meth:`end_external_wait`."""
        with self._lock:
            self._external_waiters += 1
            if self.on_wait is not None:
                self.on_wait()

    def end_external_wait(self) -> None:
        with self._lock:
            self._external_waiters -= 1

    def close(self) -> None:
        """Fail current and future waiters (the producer is closing)."""
        with self._lock:
            self.closed = True
            for w in self._waiters:
                w.notify()
