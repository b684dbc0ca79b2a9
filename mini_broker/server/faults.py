"""TEST-ONLY fault injection for the broker (no Kafka counterpart).

Pass ``MiniBroker(..., fault_injector=FaultInjector())`` and arm it from a test, e.g.
``broker.faults.drop_produce_responses(3, topic="t")``: the next 3 Produce requests (touching ``t``) are
appended as usual, then, instead of the response, the connection is closed. That is the "written but the
ack was lost" case a retrying idempotent producer must survive without duplicates. Without an injector the
Produce path pays one ``is None`` check.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


class FaultInjector:
    """Armed faults, consumed one per matching request; thread-safe (handler threads call it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._drop_produce: list[tuple[int, str | None]] = []  # (remaining, topic or None = any)
        #: How many Produce responses were dropped so far.
        self.dropped_produce_responses = 0

    def drop_produce_responses(self, count: int = 1, topic: str | None = None) -> None:
        """Close the connection instead of answering the next ``count`` Produce requests (with
        ``topic`` among their partitions, if given), after their records were appended."""
        if count < 1:
            raise ValueError("count must be positive")
        with self._lock:
            self._drop_produce.append((count, topic))

    def pending_produce_drops(self) -> int:
        with self._lock:
            return sum(n for n, _ in self._drop_produce)

    def should_drop_produce_response(self, topics: Iterable[str]) -> bool:
        """Consume one armed drop matching ``topics``; True if the response must not be sent."""
        with self._lock:
            if not self._drop_produce:
                return False
            names = set(topics)
            for i, (remaining, topic) in enumerate(self._drop_produce):
                if topic is None or topic in names:
                    if remaining == 1:
                        del self._drop_produce[i]
                    else:
                        self._drop_produce[i] = (remaining - 1, topic)
                    self.dropped_produce_responses += 1
                    return True
            return False
