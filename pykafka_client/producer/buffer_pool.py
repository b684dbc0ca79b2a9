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

from pykafka_client.errors import (
    BufferExhaustedError,
    IllegalArgumentError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.utils.time import Time

#: Real-time cap on one condition wait, so a waiter re-reads the injected clock now and then.
_MAX_WAIT_SLICE_S = 0.5


class BufferPool:
    """Bounded byte accounting shared by all partitions of one producer."""

    def __init__(self, total_memory: int, time: Time) -> None:
        self.total_memory = total_memory
        self._available = total_memory
        self._time = time
        self._lock = threading.Lock()
        self._waiters: deque[threading.Condition] = deque()
        #: senders waiting for memory outside :meth:`allocate` (the async producer's ``send``, which waits in its
        #: event loop and allocates once :meth:`can_allocate_now`): counted by :meth:`queued` as blocked threads
        self._external_waiters = 0
        #: Called (the pool's lock held) when a sender begins waiting for memory: the producer's Sender wake-up.
        #: The waiter makes every batch sendable (:meth:`queued`), but a Sender waiting out a long ``linger.ms``
        #: would not look before it ended, and the waiter would time out with memory still held by lingering batches.
        self.on_wait: Callable[[], None] | None = None
        self._closed = False
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
            if self._closed:
                raise KafkaError("Producer closed while allocating memory")
            if not self._waiters and self._available >= size:  # = can_allocate_now()
                self._available -= size
                return
            cond = threading.Condition(self._lock)
            self._waiters.append(cond)
            if self.on_wait is not None:
                self.on_wait()
            deadline = self._time.hi_res_clock_ms() + max_time_to_block_ms
            try:
                while True:
                    if self._closed:
                        raise KafkaError("Producer closed while allocating memory")
                    if self._waiters[0] is cond and self._available >= size:
                        self._available -= size
                        return
                    remaining = deadline - self._time.hi_res_clock_ms()
                    if remaining <= 0:
                        raise BufferExhaustedError(
                            f"Failed to allocate {size} bytes within the configured max blocking time "
                            f"{max_time_to_block_ms} ms. Total memory: {self.total_memory} bytes. "
                            f"Available memory: {self._available} bytes."
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
            if self._closed or self._waiters or self._available < size:
                return False
            self._available -= size
            return True

    def deallocate(self, size: int) -> None:
        """Return ``size`` bytes and wake the first waiter."""
        with self._lock:
            available = self._available + size
            # (a comparison, not min(): once per completed batch)
            self._available = available if available < self.total_memory else self.total_memory
            if self._waiters:
                self._waiters[0].notify()

    def can_allocate_now(self, size: int) -> bool:
        """Whether ``allocate(size, ...)`` would return at once (no waiter ahead, enough memory): the async
        producer's ``send`` waits asynchronously while this is False instead of blocking its event loop."""
        with self._lock:
            return not self._waiters and self._available >= size

    def may_allocate_now(self, size: int) -> bool:
        """:meth:`can_allocate_now` read without the lock: a hint for a fast path that rechecks under the
        lock (the append does), never a promise (another thread may take the memory in between)."""
        return not self._waiters and self._available >= size

    def available_memory(self) -> int:
        with self._lock:
            return self._available

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
            self._closed = True
            for w in self._waiters:
                w.notify()
