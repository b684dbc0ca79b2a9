"""An operation whose response waits for a condition or a timeout (Java DelayedOperation).

Life cycle: the purgatory calls :meth:`try_complete` (under :attr:`lock`) when something the operation
waits on may have changed; the operation checks its condition and, if met, calls :meth:`force_complete`.
:meth:`force_complete` wins exactly once (an atomic test-and-set), cancels the timer entry and calls
:meth:`on_complete`. If the delay passes first, the timer calls :meth:`run`, which force-completes and,
only if that call won, also calls :meth:`on_expiration`.

Subclasses implement ``try_complete``, ``on_complete`` and ``on_expiration``. ``on_complete`` runs
exactly once, either on the thread that saw the condition met (under the op lock) or on the timer's
executor; it must not block and must not take locks that a caller of ``check_and_complete`` may hold.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from mini_broker.timer.timer_task import TimerTask


class OperationLock(Protocol):
    """Any lock usable in a ``with`` statement (threading.Lock / RLock)."""

    def __enter__(self) -> object: ...
    def __exit__(self, *args: Any) -> object: ...


class DelayedOperation(TimerTask):
    """Base of every delayed operation. ``lock`` may be shared (e.g. a group's RLock); the default is a
    plain Lock: ``try_complete``/``on_complete`` must not re-enter this op's ``safe_try_complete``."""

    __slots__ = ("completion_lock", "lock")

    def __init__(self, delay_ms: int, lock: OperationLock | None = None) -> None:
        # TimerTask.__init__, inlined (one op per request: the call is a measurable part of its cost).
        self.delay_ms = delay_ms
        self.entry = None
        # A plain Lock costs ~50 ns to create: cheaper than any shared or lazily created scheme, and it keeps
        # Kafka's one-lock-per-operation semantics (no false sharing, no cross-op deadlock).
        self.lock: OperationLock = lock if lock is not None else threading.Lock()
        # Held <=> completed. acquire(blocking=False) is the atomic compare-and-set of Java's AtomicBoolean.
        self.completion_lock = threading.Lock()

    # -- to implement -------------------------------------------------------------------------------
    def try_complete(self) -> bool:
        """Check the condition; if met, call :meth:`force_complete` and return its result. Called under :attr:`lock`."""
        raise NotImplementedError

    def on_complete(self) -> None:
        """Send the response. Called exactly once."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Called after :meth:`on_complete` when the operation completed because its delay passed."""

    # -- final ----------------------------------------------------------------------------------------
    def force_complete(self) -> bool:
        """Complete now. True only for the one caller that completed the operation."""
        if self.completion_lock.acquire(False):
            self.cancel()
            self.on_complete()
            return True
        return False

    def is_completed(self) -> bool:
        return self.completion_lock.locked()

    def safe_try_complete(self) -> bool:
        """:meth:`try_complete` under the op lock."""
        with self.lock:
            if self.completion_lock.locked():
                return False
            return self.try_complete()

    def safe_try_complete_or_else(self, f: Callable[[], None]) -> bool:
        """Under the op lock: try to complete; if that fails run ``f`` (e.g. watch the keys) and try again.

        Holding the lock across both checks means a concurrent ``check_and_complete`` that runs between
        them waits for the lock and then sees the op watched: no wakeup is lost.
        """
        with self.lock:
            if self.try_complete():
                return True
            f()
            if self.completion_lock.locked():
                return False
            return self.try_complete()

    def run(self) -> None:
        """Timer callback: the delay has passed."""
        if self.force_complete():
            self.on_expiration()
