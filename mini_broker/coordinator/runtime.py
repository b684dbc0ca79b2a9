"""One runtime for every coordinator of an internal partition (Kafka: ``CoordinatorRuntime``).

The runtime owns what the group and the transaction coordinators used to carry each: the coordinator's
lifecycle around its internal partition, the partition's appends, the wait for the ISR and the coordinator's
timers. The coordinator it hosts (a :class:`HostedCoordinator`) keeps only its state and its decisions, and
reads (replays) its partition on load but never writes it.

Lifecycle (:class:`CoordinatorStatus`):

* :meth:`CoordinatorRuntime.startup`: a single broker loads at once from its local partition and serves until
  shutdown; a cluster broker (``follow_partition_leadership``) serves nothing (NOT_COORDINATOR) until elected.
* :meth:`~CoordinatorRuntime.expect_election`: the broker saw the election and queued the load: requests get
  COORDINATOR_LOAD_IN_PROGRESS (clients retry here rather than look the coordinator up again).
* :meth:`~CoordinatorRuntime.on_election`: the hosted coordinator is unloaded (if it was serving), the
  partition attached, the coordinator's state replayed from the partition's log (``load``, LOAD_IN_PROGRESS
  meanwhile), then it serves (``on_loaded``: timers armed, pending work resumed).
* :meth:`~CoordinatorRuntime.on_resignation`: the coordinator stops serving (NOT_COORDINATOR), drops its state
  (``unload``) and every later append to the partition fails with NOT_LEADER_OR_FOLLOWER.
* :meth:`~CoordinatorRuntime.shutdown`: COORDINATOR_NOT_AVAILABLE from then on.

Writes (:meth:`~CoordinatorRuntime.write`): a hosted coordinator never appends to its partition. Its write
operations return a :class:`~mini_broker.coordinator.result.CoordinatorResult` (the records, the answer, what the
append makes visible at once, what to run once the records are durable, the answer when the append fails) and
the runtime appends it through the :class:`CoordinatorPartition`, the one place that does. On a cluster broker a
:class:`ReplicationBarrier` (``replication_barrier``) says when the ISR has everything appended so far; the
``on_durable`` continuations (answers, markers, commits made visible) run only then (Kafka's acks=-1 append),
with the barrier's error (NOT_COORDINATOR after a resignation) when the ISR never got the records. With no
barrier (a single broker) an append is durable when it returns and ``on_durable(0)`` runs at once.

Locks: elections and resignations are serialised by the runtime's election lock; the hosted coordinator's own
locks are taken inside its hooks, never while the runtime holds its election lock for anything else.
:meth:`~CoordinatorRuntime.write` takes no lock of its own: it runs on the caller's thread under the locks the
hosted coordinator holds for the operation (the group coordinator's group lock, the transaction coordinator's
lock), so the order stays the coordinator's lock -> the partition's log lock, as when the coordinators appended
themselves. ``on_appended`` runs there too. A deferred ``on_durable`` runs on the runtime's timer thread with no
lock held and takes the coordinator's locks itself (a barrier may call back under a purgatory operation's lock).
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from mini_broker.coordinator.partition import CoordinatorPartition, ReplicatedAppend
from mini_broker.coordinator.result import CoordinatorResult
from mini_broker.log.unified_log import Log
from mini_broker.timer.deferred_task import DeferredTask
from mini_broker.timer.system_timer import SystemTimer
from mini_broker.timer.timer_task import TimerTask
from pykafka_client.errors import CoordinatorLoadInProgressError, CoordinatorNotAvailableError, NotCoordinatorError
from pykafka_client.protocol.records import MemoryRecordsBuilder

_log = logging.getLogger(__name__)

T = TypeVar("T")
#: one append of :meth:`CoordinatorRuntime.write_records` carries all its records, whatever their size
_MAX_BATCH_BYTES = 1 << 30


class CoordinatorStatus(enum.Enum):
    """Where a coordinator is in its lifecycle (see the module docstring)."""

    NOT_STARTED = "NotStarted"
    #: running, but this broker does not lead the partition (a cluster broker): NOT_COORDINATOR
    INACTIVE = "Inactive"
    #: the election was seen or the replay runs: COORDINATOR_LOAD_IN_PROGRESS
    LOADING = "Loading"
    ACTIVE = "Active"
    SHUT_DOWN = "ShutDown"


class HostedCoordinator(Protocol):
    """A coordinator hosted by the runtime: its state, rebuilt from the partition and dropped with it. Every
    further coordinator (KIP-848 consumer groups, share groups) implements these hooks."""

    def load(self, coordinator_epoch: int | None) -> int:
        """Replay the runtime's partition into a fresh state (the runtime is not serving yet); returns how many
        entries (groups, transactional ids, ...) were loaded. ``coordinator_epoch``: the partition's leader epoch
        on an election, None for a single broker's load at startup."""
        ...

    def on_loaded(self) -> None:
        """The runtime serves the loaded state from now on: arm its timers, resume its pending work."""
        ...

    def unload(self) -> None:
        """Drop the state (parked requests are answered NOT_COORDINATOR); the runtime no longer serves it."""
        ...


class ReplicationBarrier(Protocol):
    """``when_replicated(callback)``: ``callback(0)`` once the ISR has every record appended to the coordinator's
    partition so far, else ``callback(error)`` with the coordinator's error for the failed wait. May call back at
    once, or later from another thread."""

    def __call__(self, callback: Callable[[int], None], /) -> None: ...


class _Periodic(TimerTask):
    """Runs ``action`` every ``delay_ms`` while the runtime serves; re-arms itself until it shuts down."""

    def __init__(self, runtime: CoordinatorRuntime, action: Callable[[], object], delay_ms: int, what: str) -> None:
        super().__init__(delay_ms)
        self._runtime = runtime
        self._action = action
        self._what = what

    def run(self) -> None:
        runtime = self._runtime
        if not runtime.is_running:
            return
        try:
            if runtime.is_active:
                self._action()
        except Exception:
            _log.exception("event=coordinator_periodic_task_failed coordinator=%s task=%r", runtime.name, self._what)
        if runtime.is_running:
            runtime.timer.add(_Periodic(runtime, self._action, self.delay_ms, self._what))


class CoordinatorRuntime:
    """Hosts one coordinator on one internal partition (see the module docstring). ``timer`` runs the
    coordinator's periodic tasks and deferred continuations."""

    def __init__(self, name: str, partition: CoordinatorPartition, coordinator: HostedCoordinator,
                 timer: SystemTimer) -> None:
        self.name = name
        self.partition = partition
        self.coordinator = coordinator
        self.timer = timer
        #: serving requests (a single broker: startup to shutdown; a cluster broker: while it leads the partition
        #: and the state is loaded)
        self._active = False
        #: between startup and shutdown
        self._running = False
        self._loading = False
        self._shut_down = False
        self._follows_partition_leadership = False
        #: serializes elections and resignations
        self._election_lock = threading.Lock()
        #: a cluster broker's wait for the ISR (see :class:`ReplicationBarrier`); None: appends are durable at once
        self.replication_barrier: ReplicationBarrier | None = None

    # -- status ---------------------------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        return self._active

    @property
    def is_running(self) -> bool:
        return self._running

    @property
    def follows_partition_leadership(self) -> bool:
        """A cluster broker's coordinator: it serves only while this broker leads the partition."""
        return self._follows_partition_leadership

    @property
    def status(self) -> CoordinatorStatus:
        if self._active:
            return CoordinatorStatus.ACTIVE
        if self._loading:
            return CoordinatorStatus.LOADING
        if self._running:
            return CoordinatorStatus.INACTIVE
        return CoordinatorStatus.SHUT_DOWN if self._shut_down else CoordinatorStatus.NOT_STARTED

    @property
    def leads_no_partition(self) -> bool:
        """A running cluster broker's coordinator that neither serves nor loads: it lists nothing, without error."""
        return self._follows_partition_leadership and self.status is CoordinatorStatus.INACTIVE

    def inactive_error(self) -> int:
        """Why a request is not served: loading, not the partition's leader (a cluster), or shut down."""
        if self._loading:
            return int(CoordinatorLoadInProgressError.code)
        if self._follows_partition_leadership and self._running:
            return int(NotCoordinatorError.code)
        return int(CoordinatorNotAvailableError.code)

    # -- lifecycle ------------------------------------------------------------------------------------------
    def startup(self, follow_partition_leadership: bool = False) -> None:
        """Serve: a single broker loads its local partition now; with ``follow_partition_leadership`` (a cluster
        broker) nothing is loaded and requests get NOT_COORDINATOR until :meth:`on_election`."""
        self._running = True
        self._follows_partition_leadership = follow_partition_leadership
        if not follow_partition_leadership:
            self._loading = True
            try:
                self._load(None)
            finally:
                self._loading = False

    def expect_election(self) -> None:
        """The election was seen and its load is queued: COORDINATOR_LOAD_IN_PROGRESS until :meth:`on_election`."""
        if self._running:
            self._loading = True

    def on_election(self, log: Log, append: ReplicatedAppend, coordinator_epoch: int) -> None:
        """This broker became the leader of the partition whose log is ``log`` (appended through ``append``) at
        leader epoch ``coordinator_epoch``: load it (COORDINATOR_LOAD_IN_PROGRESS meanwhile), then serve."""
        with self._election_lock:
            if not self._running:
                return
            self._unload()
            self._loading = True
            try:
                self.partition.attach(log, append)
                loaded = self._load(coordinator_epoch)
                _log.info("event=coordinator_elected coordinator=%s coordinator_epoch=%d loaded=%d", self.name,
                          coordinator_epoch, loaded)
            finally:
                self._loading = False

    def on_resignation(self) -> None:
        """This broker no longer leads the partition: the state is dropped, requests get NOT_COORDINATOR and
        appends NOT_LEADER_OR_FOLLOWER."""
        with self._election_lock:
            if self._active:
                _log.info("event=coordinator_resigned coordinator=%s", self.name)
            self._unload()

    def shutdown(self) -> None:
        """Stop serving (COORDINATOR_NOT_AVAILABLE from now on); the hosted coordinator then stops its timers and
        closes its partition."""
        self._active = False
        self._running = False
        self._shut_down = True

    def _load(self, coordinator_epoch: int | None) -> int:
        loaded = self.coordinator.load(coordinator_epoch)
        self._active = True
        self.coordinator.on_loaded()
        return loaded

    def _unload(self) -> None:
        self._active = False
        self.coordinator.unload()
        self.partition.detach()

    # -- writes and the ISR ---------------------------------------------------------------------------------
    def write(self, result: CoordinatorResult[T]) -> T:
        """Carry out a hosted coordinator's write (Kafka: the runtime's write operation): append
        ``result.records`` through the partition (fsynced when ``result.flush``), run ``on_appended``, arrange
        ``on_durable`` for when the ISR has the records (:meth:`when_durable`) and return ``result.response``.
        When the append raises (NOT_LEADER_OR_FOLLOWER after a resignation, or as the log does), nothing else
        runs and ``on_failed(exception)`` is returned, or the exception propagates when the result has none.
        Runs on the caller's thread, under the caller's locks (see the module docstring)."""
        if result.records is not None:
            try:
                self.partition.append(result.records, result.flush)
            except Exception as e:
                if result.on_failed is None:
                    raise
                return result.on_failed(e)
        if result.on_appended is not None:
            result.on_appended()
        if result.on_durable is not None:
            self.when_durable(result.on_durable)
        return result.response

    def write_records(self, records: Sequence[tuple[bytes, bytes | None]], timestamp_ms: int,
                      then: Callable[[int], None] = lambda error: None, what: str = "records") -> None:
        """Append keyed records (a None value: a tombstone) in one batch, then ``then(0)`` once the ISR has them
        (at once when there are none), or ``then(NOT_COORDINATOR)`` when the partition refused the append or
        lost it (this broker no longer leads it). ``what`` names them in the log line of a failure."""
        if not records:
            then(0)
            return
        builder = MemoryRecordsBuilder(write_limit=_MAX_BATCH_BYTES)
        for key, value in records:
            builder.append(timestamp_ms, key, value)

        def failed(e: Exception) -> None:  # the partition's leadership moved (or its log failed): look again
            _log.warning("event=coordinator_records_not_appended coordinator=%s what=%s error=%r", self.name, what, e)
            then(int(NotCoordinatorError.code))

        self.write(CoordinatorResult(
            builder.build(), None, on_durable=lambda error: then(int(NotCoordinatorError.code) if error else 0),
            on_failed=failed))

    def when_durable(self, then: Callable[[int], None]) -> None:
        """``then(error)`` once the ISR has every record appended so far: at once on this thread when appends
        are durable when they return (no barrier), else on the timer's thread with 0 or the barrier's error
        (e.g. NOT_COORDINATOR when this broker resigned before the ISR had the records)."""
        barrier = self.replication_barrier
        if barrier is None:
            then(0)
            return
        barrier(lambda error: self.defer(lambda: then(error), f"continuing a replicated write of {self.name}"))

    # -- timers ---------------------------------------------------------------------------------------------
    def schedule_periodic(self, action: Callable[[], object], interval_ms: int, what: str) -> None:
        """Run ``action`` every ``interval_ms`` while the coordinator serves, until shutdown."""
        self.timer.add(_Periodic(self, action, interval_ms, what))

    def schedule(self, task: TimerTask) -> None:
        self.timer.add(task)

    def defer(self, action: Callable[[], None], what: str) -> None:
        """Run ``action`` on the timer's thread at once (how a replication wait's completion, called under a
        purgatory operation's lock on another thread, continues without taking the coordinator's locks there)."""
        self.timer.add(DeferredTask(action, what))
