"""Rate-limits repeated identical log lines (sans-IO: the caller passes ``now_ms`` from its clock).

``should_log(key, now_ms)`` is True the first time ``key`` is seen and then at most once per
``interval_ms``; the count of suppressed repeats is returned by :meth:`take_suppressed` so the next line
that does go out can say how many were skipped. Keys are forgotten after ``interval_ms`` of silence, so
the table stays as small as the set of distinct messages in one interval.
"""

from __future__ import annotations

from collections.abc import Hashable


class LogRateLimiter:
    def __init__(self, interval_ms: int) -> None:
        self.interval_ms = interval_ms
        # key -> (last time logged, repeats suppressed since)
        self._last: dict[Hashable, tuple[int, int]] = {}
        self._pending_suppressed = 0

    def should_log(self, key: Hashable, now_ms: int) -> bool:
        self._forget_older_than(now_ms - self.interval_ms)
        entry = self._last.get(key)
        if entry is not None and now_ms - entry[0] < self.interval_ms:
            self._last[key] = (entry[0], entry[1] + 1)
            return False
        suppressed = 0 if entry is None else entry[1]
        self._last[key] = (now_ms, 0)
        self._pending_suppressed = suppressed
        return True

    def take_suppressed(self) -> int:
        """Repeats of the key just allowed by :meth:`should_log` that were suppressed before it."""
        n, self._pending_suppressed = self._pending_suppressed, 0
        return n

    def _forget_older_than(self, cutoff_ms: int) -> None:
        if len(self._last) > 64:
            self._last = {k: v for k, v in self._last.items() if v[0] >= cutoff_ms}
