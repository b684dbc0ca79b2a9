"""The timer behind every purgatory (Java SystemTimer + SystemTimerReaper).

* ``add(task)`` (timer lock): wraps the task in an entry expiring at ``now + delay_ms``; if the wheel
  refuses it (already expired) and it is not cancelled, the task is dispatched at once.
* ``advance_clock(timeout_ms)``: waits up to ``timeout_ms`` for the first due bucket, then under the
  timer lock advances the wheel to each due bucket's expiration and flushes it, re-adding every entry
  (which either runs it, or cascades it down a level). Drains all due buckets; True if any was handled.
* The timer lock: Java uses a read-write lock (adds share the read side, advancing takes the write
  side) so that an add never interleaves with an advance. Under the GIL concurrent adds cannot run in
  parallel anyway, so one plain mutex gives the same exclusion (adds are serialised with each other as
  well, which Java does not need) at a fraction of the cost per add.
* Execution of expired tasks: by default a single executor thread (``executor-<name>``, as Kafka), so
  a slow ``run`` never delays the clock. With ``run_inline=True`` tasks run on the thread that
  expired them (the reaper, or the caller of ``add`` / ``advance_clock``), always after the timer's
  locks are released: that is deterministic and is what unit tests use.

:class:`SystemTimerReaper` owns a thread that calls ``advance_clock(200)`` until closed.
"""

from __future__ import annotations

import queue
import threading
from typing import Final

from mini_broker.timer.delay_queue import DelayQueue
from mini_broker.timer.timer_task import TimerTask, TimerTaskEntry
from mini_broker.timer.timer_task_list import AtomicCounter
from mini_broker.timer.timing_wheel import TimingWheel
from pykafka_client.utils.time import SYSTEM_TIME, Time

DEFAULT_TICK_MS: Final = 1
DEFAULT_WHEEL_SIZE: Final = 20
REAPER_POLL_MS: Final = 200


class SystemTimer:
    """A hierarchical-timing-wheel timer with a delay queue of non-empty buckets."""

    def __init__(
        self,
        executor_name: str,
        time: Time = SYSTEM_TIME,
        tick_ms: int = DEFAULT_TICK_MS,
        wheel_size: int = DEFAULT_WHEEL_SIZE,
        start_ms: int | None = None,
        run_inline: bool = False,
    ) -> None:
        self.name = executor_name
        self._time = time
        self._delay_queue = DelayQueue(time)
        self._task_counter = AtomicCounter()
        self._wheel = TimingWheel(
            tick_ms,
            wheel_size,
            time.hi_res_clock_ms() if start_ms is None else start_ms,
            self._task_counter,
            self._delay_queue,
        )
        self._lock = threading.Lock()
        self._clock = time.hi_res_clock_ms
        self._run_inline = run_inline
        self._closed = False
        self._executor_queue: queue.SimpleQueue[TimerTask | None] = queue.SimpleQueue()
        self._executor: threading.Thread | None = None
        if not run_inline:
            self._executor = threading.Thread(target=self._executor_loop, name=f"executor-{executor_name}", daemon=True)
            self._executor.start()

    @property
    def wheel(self) -> TimingWheel:
        return self._wheel

    def add(self, task: TimerTask) -> None:
        """Schedule ``task`` to run ``task.delay_ms`` from now."""
        lock = self._lock
        lock.acquire()
        try:
            entry = TimerTaskEntry(task, task.delay_ms + self._clock())
            if self._wheel.add(entry) or task.entry is not entry:
                return  # in a bucket, or cancelled meanwhile
        finally:
            lock.release()
        # Already expired: the task leaves the timer (unbound, so a later cancel() is a no-op) and runs now.
        task.cancel()
        self._dispatch([task])

    def _add_entry(self, entry: TimerTaskEntry, expired: list[TimerTask]) -> None:
        if not self._wheel.add(entry) and not entry.cancelled():
            task = entry.timer_task
            assert task is not None
            # The task is leaving the timer: unbind it so that a later cancel() is a no-op.
            if task.entry is entry:
                task.cancel()
            expired.append(task)

    def advance_clock(self, timeout_ms: int) -> bool:
        """Expire every due bucket, waiting up to ``timeout_ms`` for the first. True if a bucket was handled."""
        bucket = self._delay_queue.poll(timeout_ms) if timeout_ms > 0 else self._delay_queue.poll_now()
        if bucket is None:
            return False
        expired: list[TimerTask] = []
        wheel = self._wheel
        with self._lock:
            while bucket is not None:
                wheel.advance_clock(bucket.get_expiration())
                for entry in bucket.drain():  # bucket.flush(f) without a closure per flush
                    self._add_entry(entry, expired)
                bucket = self._delay_queue.poll_now()
        self._dispatch(expired)
        return True

    def _dispatch(self, tasks: list[TimerTask]) -> None:
        if not tasks:
            return
        if self._run_inline:
            for task in tasks:
                task.run()
        else:
            for task in tasks:
                self._executor_queue.put(task)

    def _executor_loop(self) -> None:
        while True:
            task = self._executor_queue.get()
            if task is None:
                return
            try:
                task.run()
            except Exception:  # a failing task must not kill the executor
                import logging

                logging.getLogger(__name__).exception("timer task %r failed", task)

    def size(self) -> int:
        """Number of entries currently in the wheel's buckets (cancelled entries are unlinked at once)."""
        return self._task_counter.get()

    def wakeup(self) -> None:
        """Make a waiting :meth:`advance_clock` return early."""
        self._delay_queue.wakeup()

    def close(self) -> None:
        """Stop the executor thread (tasks already handed to it still run). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._delay_queue.wakeup()
        if self._executor is not None:
            self._executor_queue.put(None)
            if self._executor is not threading.current_thread():
                self._executor.join()


class SystemTimerReaper:
    """Drives a :class:`SystemTimer` from its own thread (``ExpirationReaper-<name>``)."""

    def __init__(self, reaper_name: str, timer: SystemTimer, poll_ms: int = REAPER_POLL_MS) -> None:
        self.timer = timer
        self._poll_ms = poll_ms
        self._running = True
        self._thread = threading.Thread(target=self._run, name=f"ExpirationReaper-{reaper_name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while self._running:
            self.timer.advance_clock(self._poll_ms)

    def close(self) -> None:
        """Stop the reaper thread, then close the timer. Idempotent; returns once the thread has ended."""
        self._running = False
        self.timer.wakeup()
        if self._thread is not threading.current_thread():
            self._thread.join()
        self.timer.close()
