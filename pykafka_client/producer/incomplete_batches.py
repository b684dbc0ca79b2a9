"""The batches the producer has not completed yet (Java ``IncompleteBatches``): added when a batch is
created (or split), removed when it is completed and its memory returned; ``flush()`` waits on them.

``flush()`` waits for the batches incomplete when it began, and must not keep them alive meanwhile: a
completed batch's records (and its encoded bytes) are freed as soon as the Sender forgets it, as Java's
flush holds only the batches' results, never their buffers. So each batch gets an increasing ticket when
added, and a flush keeps one number (:meth:`IncompleteBatches.mark`): it is done once no batch with a
smaller ticket is incomplete.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable
from typing import Protocol

from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import Time


class IncompleteBatchesApi(Protocol):
    """What the accumulator uses of its incomplete batches: :class:`IncompleteBatches` (the reference) or the
    kernel's ``IncompleteBatches`` (a type that owns the same state: one compiled call per step, no lock round but
    the notification's)."""

    #: notified (its lock held) when a removal leaves no batch incomplete; :func:`await_completion` waits on it
    @property
    def condition(self) -> threading.Condition: ...

    def add(self, batch: ProducerBatch, /) -> None: ...

    def add_pieces(self, big: ProducerBatch, pieces: Iterable[ProducerBatch], /) -> None: ...

    def remove(self, batch: ProducerBatch, /) -> None: ...

    def is_empty(self) -> bool: ...

    def copy_all(self) -> list[ProducerBatch]: ...

    def mark(self) -> int: ...

    def oldest_ticket(self) -> int | None:
        """The smallest ticket still incomplete, None when none is (called with :attr:`condition` held)."""
        ...


def new_incomplete_batches() -> IncompleteBatchesApi:
    """The kernel's ``IncompleteBatches`` when the kernel is on, else the reference :class:`IncompleteBatches`."""
    kernel = _native.kernel
    if kernel is None:
        return IncompleteBatches()
    compiled: IncompleteBatchesApi = kernel.IncompleteBatches(threading.Condition(threading.Lock()))
    return compiled


def await_completion(batches: IncompleteBatchesApi, mark: int, timeout_s: float | None, time: Time) -> bool:
    """Wait (real time) until no batch added to ``batches`` before ``mark`` (from its ``mark()``) is incomplete.
    True if they all completed in time."""
    deadline = None if timeout_s is None else time.hi_res_clock_ms() + int(timeout_s * 1000)
    cond = batches.condition
    with cond:
        while True:
            oldest = batches.oldest_ticket()
            if oldest is None or oldest > mark:
                return True
            if deadline is None:
                cond.wait(0.5)
                continue
            remaining = deadline - time.hi_res_clock_ms()
            if remaining <= 0:
                return False
            cond.wait(min(remaining / 1000.0, 0.5))


class IncompleteBatches:
    """A thread-safe set of batches (each with the ticket it was added with) whose condition is notified
    when it becomes empty."""

    def __init__(self) -> None:
        #: batch -> ticket (the pieces of a split batch share the split batch's ticket)
        self._incomplete: dict[ProducerBatch, int] = {}
        self._tickets = itertools.count()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)

    @property
    def condition(self) -> threading.Condition:
        """Notified (its lock held) when a removal leaves no batch incomplete."""
        return self._cond

    def add(self, batch: ProducerBatch) -> None:
        with self._lock:
            self._incomplete.setdefault(batch, next(self._tickets))

    def add_pieces(self, big: ProducerBatch, pieces: Iterable[ProducerBatch]) -> None:
        """The pieces of ``big`` split for being too large: they take its ticket, so a flush that waits for
        ``big`` waits for its records in the pieces too (as Java's flush does since KAFKA-19479: the big batch's
        result depends on its pieces')."""
        with self._lock:
            ticket = self._incomplete.get(big)
            for batch in pieces:
                self._incomplete.setdefault(batch, next(self._tickets) if ticket is None else ticket)

    def remove(self, batch: ProducerBatch) -> None:
        with self._lock:  # the condition's own lock (no Python-level Condition.__enter__ per completed batch)
            self._incomplete.pop(batch, None)
            if not self._incomplete:
                self._cond.notify_all()

    def is_empty(self) -> bool:
        with self._lock:
            return not self._incomplete

    def copy_all(self) -> list[ProducerBatch]:
        with self._lock:
            return list(self._incomplete)

    def mark(self) -> int:
        """The ticket the next added batch gets: :meth:`await_completion` of this mark waits for every batch
        incomplete now, and for none added later (e.g. the pieces of a batch split meanwhile)."""
        with self._lock:
            mark = next(self._tickets)  # unused by any batch; the next one gets mark + 1
            return mark

    def oldest_ticket(self) -> int | None:
        """The smallest ticket still incomplete (the pieces of a split batch carry its older ticket, so insertion
        order is not ticket order); None when none is. Called with :attr:`condition` held (its lock is this set's
        lock), as :func:`await_completion` does."""
        return min(self._incomplete.values(), default=None)

    def await_completion(self, mark: int, timeout_s: float | None, time: Time) -> bool:
        """:func:`await_completion` of this set."""
        return await_completion(self, mark, timeout_s, time)
