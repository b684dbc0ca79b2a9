"""Hierarchical timing wheel (Java TimingWheel).

A wheel has ``wheel_size`` buckets of ``tick_ms`` each, so it spans ``interval = tick_ms * wheel_size``
from its current time. An entry expiring within that span goes to bucket
``(expiration // tick_ms) % wheel_size``; a later one goes to the overflow wheel, whose tick is this
wheel's interval (created lazily, recursively). Insert is O(levels), delete O(1).

``current_time_ms`` is always a multiple of ``tick_ms`` and marks the start of the current bucket,
which is already expired: an entry with ``expiration < current_time_ms + tick_ms`` is not added
(:meth:`add` returns False) and the caller runs it at once.

Worked example (u=1 ms tick, n=3 buckets, clock c): at time c the buckets cover [c], [c+1], [c+2] and the
overflow wheel's buckets cover [c..c+2], [c+3..c+5], [c+6..c+8]. At time c+1 the level-1 buckets cover
[c+1], [c+2], [c+3] while the overflow wheel is unchanged (its tick, 3, has not passed). At c+3 the
level-1 buckets cover [c+3], [c+4], [c+5] and the overflow wheel [c+3..c+5], [c+6..c+8], [c+9..c+11].
(The tests use this as an oracle.)

Thread safety: :meth:`add` runs under the timer's lock, and so does :meth:`advance_clock`;
``current_time_ms`` only moves under that lock.
"""

from __future__ import annotations

import threading

from mini_broker.timer.delay_queue import DelayQueue
from mini_broker.timer.timer_task import TimerTaskEntry
from mini_broker.timer.timer_task_list import AtomicCounter, TimerTaskList


class TimingWheel:
    """One level of the hierarchy."""

    __slots__ = (
        "_buckets",
        "_overflow_lock",
        "_overflow_wheel",
        "_queue",
        "_task_counter",
        "current_time_ms",
        "interval_ms",
        "tick_ms",
        "wheel_size",
    )

    def __init__(
        self, tick_ms: int, wheel_size: int, start_ms: int, task_counter: AtomicCounter, queue: DelayQueue
    ) -> None:
        if tick_ms <= 0 or wheel_size <= 0:
            raise ValueError("tick_ms and wheel_size must be positive")
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval_ms = tick_ms * wheel_size
        self._task_counter = task_counter
        self._queue = queue
        self._buckets = [TimerTaskList(task_counter) for _ in range(wheel_size)]
        self.current_time_ms = start_ms - (start_ms % tick_ms)
        self._overflow_wheel: TimingWheel | None = None
        self._overflow_lock = threading.Lock()

    @property
    def overflow_wheel(self) -> TimingWheel | None:
        return self._overflow_wheel

    def bucket(self, index: int) -> TimerTaskList:
        """Bucket ``index`` (for tests and introspection)."""
        return self._buckets[index]

    def _add_overflow_wheel(self) -> TimingWheel:
        with self._overflow_lock:
            if self._overflow_wheel is None:
                self._overflow_wheel = TimingWheel(
                    self.interval_ms, self.wheel_size, self.current_time_ms, self._task_counter, self._queue
                )
            return self._overflow_wheel

    def add(self, entry: TimerTaskEntry) -> bool:
        """Place ``entry`` in a bucket. False when it is cancelled or already expired (caller runs it)."""
        expiration = entry.expiration_ms
        task = entry.timer_task
        # ``entry.cancelled()``, inlined (one call per add and per re-add at a flush).
        if task is None or task.entry is not entry or expiration < self.current_time_ms + self.tick_ms:
            return False
        wheel = self
        # Walk up the levels (iteratively) until the expiration falls within a wheel's interval.
        while expiration >= wheel.current_time_ms + wheel.interval_ms:
            wheel = wheel._overflow_wheel or wheel._add_overflow_wheel()
        tick = wheel.tick_ms
        virtual_id = expiration // tick
        bucket = wheel._buckets[virtual_id % wheel.wheel_size]
        # Offer the bucket only when its expiration changes: a bucket is in the queue at most once per
        # use, and an empty (flushed) bucket has expiration -1 and is not queued.
        if bucket.add_and_set_expiration(entry, virtual_id * tick):
            self._queue.offer(bucket)
        return True

    def advance_clock(self, time_ms: int) -> None:
        """Move the clock to ``time_ms`` rounded down to a tick (never backwards), cascading upwards."""
        if time_ms >= self.current_time_ms + self.tick_ms:
            self.current_time_ms = time_ms - (time_ms % self.tick_ms)
            if self._overflow_wheel is not None:
                self._overflow_wheel.advance_clock(self.current_time_ms)
