"""The delay queue of timer buckets (Java DelayQueue<TimerTaskList>): a heap ordered by bucket expiration.

Only buckets that hold entries are ever offered (the wheel offers a bucket when its expiration changes
from -1 to a real value), so an idle timer has an empty queue and :meth:`poll` simply waits on the
condition: no busy ticking. Time is read from the injected clock; waits use the condition's timeout
(real time), so with a ``MockTime`` tests call ``poll(0)``.
"""

from __future__ import annotations

import heapq
import threading

from mini_broker.timer.timer_task_list import TimerTaskList
from pykafka_client.utils.time import Time


class DelayQueue:
    """Buckets ordered by the expiration they had when offered; a bucket is due when that time has come."""

    def __init__(self, time: Time) -> None:
        self._time = time
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[int, int, TimerTaskList]] = []
        self._seq = 0
        self._wakeups = 0

    def offer(self, bucket: TimerTaskList) -> None:
        expiration = bucket.get_expiration()
        with self._cond:
            self._seq += 1
            heapq.heappush(self._heap, (expiration, self._seq, bucket))
            if self._heap[0][2] is bucket:
                self._cond.notify()

    def poll_now(self) -> TimerTaskList | None:
        """The head bucket if it is due, else None (never waits)."""
        now = self._time.hi_res_clock_ms()
        with self._cond:
            if self._heap and self._heap[0][0] <= now:
                return heapq.heappop(self._heap)[2]
            return None

    def poll(self, timeout_ms: int) -> TimerTaskList | None:
        """Wait up to ``timeout_ms`` for a due bucket. :meth:`wakeup` makes a waiting poll return None."""
        with self._cond:
            wakeups = self._wakeups
            # The budget is spent by what we ask the condition to wait (real time), not by re-reading the
            # injected clock: with a MockTime that never moves, a poll still ends after timeout_ms.
            budget = float(timeout_ms)
            while True:
                now = self._time.hi_res_clock_ms()
                if self._heap and self._heap[0][0] <= now:
                    return heapq.heappop(self._heap)[2]
                if budget <= 0 or self._wakeups != wakeups:
                    return None
                wait_ms = min(budget, float(self._heap[0][0] - now)) if self._heap else budget
                self._cond.wait(wait_ms / 1000.0)
                budget -= wait_ms

    def wakeup(self) -> None:
        """Make the current :meth:`poll` (if any) return early."""
        with self._cond:
            self._wakeups += 1
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._heap)
