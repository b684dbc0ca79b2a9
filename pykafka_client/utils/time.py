"""Injected time (Java: org.apache.kafka.common.utils.Time, MockTime, Timer).

No module below the public API reads the clock or sleeps directly: they receive a :class:`Time`.
Production code passes :data:`SYSTEM_TIME`; unit tests pass :class:`MockTime`, which moves only when
told to (or by ``auto_tick_ms`` on every read, so busy loops make progress).

Wall-clock milliseconds (``milliseconds``) and monotonic nanoseconds (``nanoseconds``) are separate
clocks, as in Java; ``hi_res_clock_ms`` is the monotonic clock in milliseconds and is what timeouts,
backoffs and timers use.
"""

from __future__ import annotations

import threading
import time as _time
from typing import Callable, ClassVar, Protocol


class Time(Protocol):
    """A source of time and of sleeping."""

    def milliseconds(self) -> int:
        """Wall-clock time in ms since the epoch (for timestamps, never for timeouts)."""
        ...

    def nanoseconds(self) -> int:
        """A monotonic clock in ns (for measuring intervals)."""
        ...

    def hi_res_clock_ms(self) -> int:
        """The monotonic clock in ms."""
        ...

    def sleep(self, ms: float) -> None:
        """Block the calling thread for ``ms`` milliseconds."""
        ...

    def timer(self, timeout_ms: int) -> Timer:
        """A :class:`Timer` that expires ``timeout_ms`` from now (monotonic)."""
        ...


class SystemTime:
    """The real clocks."""

    #: the monotonic clock (ns) that :meth:`nanoseconds` and :meth:`hi_res_clock_ms` read, for a compiled caller that
    #: reads it itself when the injected Time is exactly SystemTime (the producer's Sender iteration)
    MONOTONIC_NS: ClassVar[Callable[[], int]] = _time.monotonic_ns

    def milliseconds(self) -> int:
        return _time.time_ns() // 1_000_000

    def nanoseconds(self) -> int:
        return _time.monotonic_ns()

    def hi_res_clock_ms(self) -> int:
        return _time.monotonic_ns() // 1_000_000

    def sleep(self, ms: float) -> None:
        if ms > 0:
            _time.sleep(ms / 1000.0)

    def timer(self, timeout_ms: int) -> Timer:
        return Timer(self, timeout_ms)


SYSTEM_TIME = SystemTime()


def nanoseconds_clock(time: Time) -> Callable[[], int]:
    """``time.nanoseconds`` as a callable, the C clock itself for :class:`SystemTime` (no Python-level call: for
    the network threads, which read it several times per request)."""
    return _time.monotonic_ns if type(time) is SystemTime else time.nanoseconds


class MockTime:
    """A clock for tests: it moves only on :meth:`sleep`, :meth:`set_current_time_ms`, or by
    ``auto_tick_ms`` on every read. It never goes backwards. Listeners are told of every move."""

    def __init__(
        self,
        auto_tick_ms: int = 0,
        current_time_ms: int = 1_700_000_000_000,
        current_high_res_time_ns: int = 10_000_000_000,
    ) -> None:
        self._lock = threading.Lock()
        self._time_ms = current_time_ms
        self._high_res_ns = current_high_res_time_ns
        self.auto_tick_ms = auto_tick_ms
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every change of time."""
        self._listeners.append(listener)

    def _maybe_tick(self) -> None:
        if self.auto_tick_ms > 0:
            self.sleep(self.auto_tick_ms)

    def milliseconds(self) -> int:
        self._maybe_tick()
        return self._time_ms

    def nanoseconds(self) -> int:
        self._maybe_tick()
        return self._high_res_ns

    def hi_res_clock_ms(self) -> int:
        self._maybe_tick()
        return self._high_res_ns // 1_000_000

    def sleep(self, ms: float) -> None:
        ms_int = int(ms)
        if ms_int <= 0:
            return
        with self._lock:
            self._time_ms += ms_int
            self._high_res_ns += ms_int * 1_000_000
        self._tick()

    def set_current_time_ms(self, new_ms: int) -> None:
        """Move both clocks forward to ``new_ms`` wall time. Moving backwards raises ValueError."""
        with self._lock:
            if new_ms < self._time_ms:
                raise ValueError(f"setting the time to {new_ms} would move it backwards from {self._time_ms}")
            delta = new_ms - self._time_ms
            self._time_ms = new_ms
            self._high_res_ns += delta * 1_000_000
        self._tick()

    def _tick(self) -> None:
        for listener in list(self._listeners):
            listener()

    def timer(self, timeout_ms: int) -> Timer:
        return Timer(self, timeout_ms)


class Timer:
    """A deadline on a :class:`Time`'s monotonic clock. Call :meth:`update` to re-read the clock;
    everything else uses the time of the last update, so one ``update`` per loop iteration is
    enough and cheap."""

    __slots__ = ("_time", "_start_ms", "_current_ms", "_deadline_ms", "_timeout_ms")

    MAX_MS = 2**63 - 1

    def __init__(self, time: Time, timeout_ms: int) -> None:
        self._time = time
        self._current_ms = time.hi_res_clock_ms()
        self._start_ms = self._current_ms
        self._timeout_ms = 0
        self._deadline_ms = 0
        self.reset(timeout_ms)

    def reset(self, timeout_ms: int) -> None:
        """Restart the timer: expire ``timeout_ms`` after the last update."""
        if timeout_ms < 0:
            raise ValueError(f"invalid negative timeout {timeout_ms}")
        self._timeout_ms = timeout_ms
        self._start_ms = self._current_ms
        self._deadline_ms = min(self.MAX_MS, self._current_ms + timeout_ms)

    def reset_deadline(self, deadline_ms: int) -> None:
        """Expire at an absolute monotonic time."""
        self._start_ms = self._current_ms
        self._timeout_ms = max(0, deadline_ms - self._current_ms)
        self._deadline_ms = deadline_ms

    def update(self, current_time_ms: int | None = None) -> None:
        """Re-read the clock (or take ``current_time_ms``); time never moves backwards."""
        now = self._time.hi_res_clock_ms() if current_time_ms is None else current_time_ms
        self._current_ms = max(self._current_ms, now)

    def is_expired(self) -> bool:
        return self._current_ms >= self._deadline_ms

    def not_expired(self) -> bool:
        return not self.is_expired()

    def remaining_ms(self) -> int:
        return max(0, self._deadline_ms - self._current_ms)

    def elapsed_ms(self) -> int:
        return self._current_ms - self._start_ms

    def current_time_ms(self) -> int:
        return self._current_ms

    def deadline_ms(self) -> int:
        return self._deadline_ms

    def timeout_ms(self) -> int:
        return self._timeout_ms

    def sleep(self, duration_ms: int) -> None:
        """Sleep for ``duration_ms`` but no longer than the time remaining, then update."""
        self._time.sleep(min(duration_ms, self.remaining_ms()))
        self.update()

    def __repr__(self) -> str:
        return f"Timer(remaining_ms={self.remaining_ms()}, timeout_ms={self._timeout_ms})"
