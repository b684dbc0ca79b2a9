"""Where delayed operations wait (Java DelayedOperationPurgatory).

An operation is watched under one or more keys (e.g. the partitions of a fetch) and sits in the timer.
``check_and_complete(key)`` re-checks the ops watching ``key``; the timer expires the rest.

Structure: 512 shards (``WatcherList``), chosen by ``hash(key)``; each holds a dict key -> ``Watchers``
(a list of ops) guarded by the shard lock. Every mutation of a watchers list happens under its shard
lock; op checks happen outside it, under each op's own lock.

Stale entries: completing an op through one key (or by timeout) leaves it on the lists of its other
keys. ``check_and_complete`` drops completed ops from the list it walks; besides, when the estimated
number of watched ops exceeds the number of ops still in the timer by more than ``purge_interval``,
:meth:`advance_clock` purges every list.

Lock order: op lock -> shard lock (``try_complete_else_watch`` watches under the op lock). The shard
lock is never held while an op is checked. Callers must not hold a lock that an op's
``try_complete``/``on_complete`` takes when calling ``check_and_complete`` (deadlock rule, as Kafka).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Hashable, Iterable
from typing import Final, Generic, TypeVar

from mini_broker.purgatory.delayed_operation import DelayedOperation
from mini_broker.timer.system_timer import REAPER_POLL_MS, SystemTimer
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

SHARDS: Final = 512
DEFAULT_PURGE_INTERVAL: Final = 1000

T = TypeVar("T", bound=DelayedOperation)


class _Watchers(Generic[T]):
    """The ops watching one key. Mutated only under the owning shard's lock."""

    __slots__ = ("key", "ops")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self.ops: list[T] = []

    def purge_completed(self) -> int:
        before = len(self.ops)
        # ``completion_lock.locked()`` is ``is_completed()`` without a method call (this loop is hot).
        self.ops = [op for op in self.ops if not op.completion_lock.locked()]
        return before - len(self.ops)


class _WatchCounter:
    """Java's ``estimatedTotalOperations`` (an AtomicInteger), without a lock on the hot path.

    :attr:`increment` is ``next`` of an ``itertools.count``: one C call, atomic under the GIL. Readers
    (the reaper) also advance the count by one per read, which :attr:`_offset` absorbs.
    """

    __slots__ = ("_count", "_lock", "_offset", "increment")

    def __init__(self) -> None:
        self._count = itertools.count()
        self.increment = self._count.__next__
        self._offset = 0
        self._lock = threading.Lock()

    def get(self) -> int:
        with self._lock:
            value = next(self._count) - self._offset
            self._offset += 1
            return value

    def get_and_set(self, value: int) -> int:
        with self._lock:
            old = next(self._count) - self._offset
            self._offset += 1 + old - value
            return old


class _WatcherList(Generic[T]):
    __slots__ = ("lock", "watchers_by_key")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.watchers_by_key: dict[Hashable, _Watchers[T]] = {}


class DelayedOperationPurgatory(Generic[T]):
    """Holds delayed operations of one kind (``purgatory_name``: Produce, Fetch, Rebalance, ...).

    ``timer``: a :class:`SystemTimer` to use (default: a new one with an executor thread).
    ``reaper_enabled``: start an ``ExpirationReaper-<name>`` thread driving :meth:`advance_clock`;
    tests pass False and call ``advance_clock(0)`` themselves with a ``MockTime``.
    ``timer_enabled``: when False, ops are never added to the timer (they only complete by check).
    """

    def __init__(
        self,
        purgatory_name: str,
        timer: SystemTimer | None = None,
        broker_id: int = 0,
        purge_interval: int = DEFAULT_PURGE_INTERVAL,
        reaper_enabled: bool = True,
        timer_enabled: bool = True,
        time: Time = SYSTEM_TIME,
    ) -> None:
        self.purgatory_name = purgatory_name
        self.broker_id = broker_id
        self.purge_interval = purge_interval
        self.timer_enabled = timer_enabled
        self.timeout_timer = timer if timer is not None else SystemTimer(purgatory_name, time)
        self._shards: list[_WatcherList[T]] = [_WatcherList() for _ in range(SHARDS)]
        self._estimated_total_operations = _WatchCounter()
        #: whether an operation was ever watched here: until one is, :meth:`check_and_complete` has nothing to check,
        #: and a caller may skip it (a broker's appends ask this once per partition: a producer-only broker never
        #: parks a fetch, nor, on one broker, a produce). Set before the op is watched and checked again, so an
        #: append that reads it False was made before that second check, which sees it.
        self.has_watched = False
        self._shutdown = False
        self._reaper: threading.Thread | None = None
        self._reaper_running = False
        if reaper_enabled:
            self._reaper_running = True
            self._reaper = threading.Thread(
                target=self._reap, name=f"ExpirationReaper-{broker_id}-{purgatory_name}", daemon=True
            )
            self._reaper.start()

    def _shard(self, key: Hashable) -> _WatcherList[T]:
        return self._shards[hash(key) % SHARDS]

    # -- the two entry points -------------------------------------------------------------------------
    def try_complete_else_watch(self, operation: T, watch_keys: Iterable[Hashable]) -> bool:
        """Complete ``operation`` now if it can; otherwise watch it under every key and start its timer.

        Returns True only if this call completed the operation. ``watch_keys`` must not be empty.

        This is ``operation.safe_try_complete_or_else(watch every key)`` inlined (no closure per call):
        under the op lock, check; watch; if not completed meanwhile, check again. A ``check_and_complete``
        that runs between the two checks waits for the op lock and then finds the op watched.
        """
        keys = watch_keys if isinstance(watch_keys, (list, tuple)) else list(watch_keys)
        if not keys:
            raise ValueError("the key list cannot be empty")
        completed = operation.completion_lock  # held <=> completed (is_completed() without the method call)
        with operation.lock:
            if operation.try_complete():
                return True
            self.has_watched = True
            shards = self._shards
            for key in keys:
                shard = shards[hash(key) % SHARDS]
                shard_lock = shard.lock
                shard_lock.acquire()
                try:
                    watchers = shard.watchers_by_key.get(key)
                    if watchers is None:
                        watchers = shard.watchers_by_key[key] = _Watchers(key)
                    watchers.ops.append(operation)
                finally:
                    shard_lock.release()
            self._estimated_total_operations.increment()
            if completed.locked():
                return False
            if operation.try_complete():
                return True
        if not completed.locked():
            if self.timer_enabled:
                self.timeout_timer.add(operation)
            if completed.locked():
                # Completed by another thread between the check and the timer add.
                operation.cancel()
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Re-check the ops watching ``key``; return how many this call completed."""
        shard = self._shards[hash(key) % SHARDS]
        watchers = shard.watchers_by_key.get(key)  # a dict read is atomic; re-read under the lock below
        if watchers is None:
            return 0  # nothing watches the key (a watcher added meanwhile is checked by its own second check)
        shard_lock = shard.lock
        shard_lock.acquire()
        try:
            watchers = shard.watchers_by_key.get(key)
            if watchers is None:
                return 0
            snapshot = list(watchers.ops)
        finally:
            shard_lock.release()
        completed = 0
        for op in snapshot:
            if not op.completion_lock.locked() and op.safe_try_complete():
                completed += 1
        shard_lock.acquire()
        try:
            if shard.watchers_by_key.get(key) is watchers:
                watchers.purge_completed()
                if not watchers.ops:
                    del shard.watchers_by_key[key]
        finally:
            shard_lock.release()
        return completed

    # -- cancellation, metrics, housekeeping ----------------------------------------------------------
    def cancel_for_key(self, key: Hashable) -> list[T]:
        """Stop watching ``key``: its ops are removed and their timers cancelled, without completing them."""
        shard = self._shard(key)
        with shard.lock:
            watchers = shard.watchers_by_key.pop(key, None)
        if watchers is None:
            return []
        for op in watchers.ops:
            op.cancel()
        return watchers.ops

    @property
    def watched(self) -> int:
        """Entries in all watcher lists, including stale (completed) ones."""
        total = 0
        for shard in self._shards:
            with shard.lock:
                total += sum(len(w.ops) for w in shard.watchers_by_key.values())
        return total

    @property
    def num_delayed(self) -> int:
        """Operations still in the timer."""
        return self.timeout_timer.size()

    def watch_keys_count(self) -> int:
        return sum(len(shard.watchers_by_key) for shard in self._shards)

    def advance_clock(self, timeout_ms: int) -> None:
        """Expire due operations (waiting up to ``timeout_ms`` for the first), then purge if it is time."""
        self.timeout_timer.advance_clock(timeout_ms)
        num_delayed = self.num_delayed
        if self._estimated_total_operations.get() - num_delayed > self.purge_interval:
            # Reset the estimate first: ops watched meanwhile are counted again by the next purge check.
            self._estimated_total_operations.get_and_set(num_delayed)
            purged = self.purge_completed()
            _log.debug("%s purgatory: purged %d completed watcher entries", self.purgatory_name, purged)

    def purge_completed(self) -> int:
        """Drop completed ops from every watcher list (and empty lists); return how many entries went."""
        purged = 0
        for shard in self._shards:
            if not shard.watchers_by_key:
                continue  # most shards hold no key; a key added meanwhile holds only fresh ops
            with shard.lock:
                for key in list(shard.watchers_by_key):
                    watchers = shard.watchers_by_key[key]
                    purged += watchers.purge_completed()
                    if not watchers.ops:
                        del shard.watchers_by_key[key]
        return purged

    def _reap(self) -> None:
        while self._reaper_running:
            try:
                self.advance_clock(REAPER_POLL_MS)
            except Exception:
                _log.exception("%s purgatory reaper failed", self.purgatory_name)

    def shutdown(self) -> None:
        """Stop the reaper thread and the timer. Ops still waiting are neither completed nor expired."""
        if self._shutdown:
            return
        self._shutdown = True
        self._reaper_running = False
        self.timeout_timer.wakeup()
        if self._reaper is not None and self._reaper is not threading.current_thread():
            self._reaper.join()
        self.timeout_timer.close()
