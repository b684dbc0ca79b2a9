"""Ends channel throttles on time (Kafka: ``ClientQuotaManager.ThrottledChannelReaper`` over a DelayQueue).

:meth:`ThrottledChannelReaper.add` schedules a callback (the ``EndThrottlingResponse`` of one request) for
when its throttle ends; one daemon thread runs them in time order.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)


class ThrottledChannelReaper:
    def __init__(self, name: str = "ThrottledChannelReaper") -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._running = True
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def add(self, delay_ms: int, callback: Callable[[], None]) -> None:
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + delay_ms / 1000, next(self._seq), callback))
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._running and (not self._heap or self._heap[0][0] > time.monotonic()):
                    self._cond.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                if not self._running:
                    return
                _, _, callback = heapq.heappop(self._heap)
            try:
                callback()
            except Exception:
                log.exception("event=end_throttling_failed")

    def shutdown(self) -> None:
        """Stop; pending throttles are dropped (their connections are being closed)."""
        with self._cond:
            self._running = False
            self._cond.notify()
        self._thread.join(5)
