"""The batches the producer has not completed yet (Java ``IncompleteBatches``): added when a batch is
created (or split), removed when it is completed and its memory returned; ``flush()`` waits on them."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.utils.time import Time


class IncompleteBatches:
    """A thread-safe set of batches whose condition is notified when it becomes empty."""

    def __init__(self) -> None:
        self._incomplete: set[ProducerBatch] = set()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)

    def add(self, batch: ProducerBatch) -> None:
        with self._lock:
            self._incomplete.add(batch)

    def add_all(self, batches: Iterable[ProducerBatch]) -> None:
        with self._lock:
            self._incomplete.update(batches)

    def remove(self, batch: ProducerBatch) -> None:
        with self._lock:  # the condition's own lock (no Python-level Condition.__enter__ per completed batch)
            self._incomplete.discard(batch)
            if not self._incomplete:
                self._cond.notify_all()

    def is_empty(self) -> bool:
        with self._lock:
            return not self._incomplete

    def copy_all(self) -> list[ProducerBatch]:
        with self._lock:
            return list(self._incomplete)

    def await_completion(self, pending: Iterable[ProducerBatch], timeout_s: float | None, time: Time) -> bool:
        """Wait (real time) until none of ``pending`` is incomplete. True if they all completed in time."""
        left = list(pending)
        deadline = None if timeout_s is None else time.hi_res_clock_ms() + int(timeout_s * 1000)
        with self._cond:
            while True:
                left = [b for b in left if b in self._incomplete]
                if not left:
                    return True
                if deadline is None:
                    self._cond.wait(0.5)
                    continue
                remaining = deadline - time.hi_res_clock_ms()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining / 1000.0, 0.5))
