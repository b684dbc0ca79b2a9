"""One runtime for every coordinator of an internal topic's partitions (Kafka: ``CoordinatorRuntime``).

The runtime serves the partitions of one internal topic (``__consumer_offsets``, ``__transaction_state``, ...):
each partition has its own lifecycle below (a cluster broker leads some of them, a single broker all), and a key
(group id, transactional id) is served by its partition's (:meth:`CoordinatorRuntime.partition_for`, Kafka's
``partitionFor``): COORDINATOR_LOAD_IN_PROGRESS only for keys of a partition still loading, NOT_COORDINATOR for
keys of a partition this broker does not lead (:meth:`~CoordinatorRuntime.error_for`). The hosted coordinator
keeps one state for all the partitions it serves, loading and dropping a partition's part of it
(``load(epoch, partition)`` / ``unload(partition)``).

The runtime owns what the group and the transaction coordinators used to carry each: the coordinator's
lifecycle around its internal partition, the partition's appends, the wait for the ISR and the coordinator's
timers. The coordinator it hosts (a :class:`HostedCoordinator`) keeps only its state and its decisions, and
reads (replays) its partition on load but never writes it.

Lifecycle of a partition (:class:`CoordinatorStatus`):

* :meth:`CoordinatorRuntime.startup`: a single broker loads every local partition at once and serves them until
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
the runtime appends it through the :class:`CoordinatorPartition` of its records' keys (a batch whose records
belong to several partitions is split, one batch per partition), the one place that does. On a cluster broker a
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
from mini_broker.coordinator.partitioning import coordinator_key_of, partition_for
from mini_broker.coordinator.result import CoordinatorResult
from mini_broker.log.unified_log import Log
from mini_broker.timer.deferred_task import DeferredTask
from mini_broker.timer.system_timer import SystemTimer
from mini_broker.timer.timer_task import TimerTask
from pykafka_client.errors import CoordinatorLoadInProgressError, CoordinatorNotAvailableError, NotCoordinatorError
from pykafka_client.protocol.records import MemoryRecords, MemoryRecordsBuilder

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

    def load(self, coordinator_epoch: int | None, partition: int) -> int:
        """Replay the runtime's ``partition`` into the state (the runtime does not serve its keys yet); returns how
        many entries (groups, transactional ids, ...) were loaded. ``coordinator_epoch``: the partition's leader
        epoch on an election, None for a single broker's load at startup."""
        ...

    def on_loaded(self, partition: int) -> None:
        """The runtime serves the loaded keys of ``partition`` from now on: arm their timers, resume their work."""
        ...

    def unload(self, partition: int) -> None:
        """Drop the state of ``partition``'s keys (their parked requests are answered NOT_COORDINATOR)."""
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
    """Hosts one coordinator on the partitions of one internal topic (see the module docstring). ``partitions``: a
    single broker's local partitions (their count is the topic's), or one that a cluster broker attaches on
    election (more are made as elections come; :meth:`set_num_partitions` gives the topic's count). ``timer`` runs
    the coordinator's periodic tasks and deferred continuations. ``key_of(record key)``: the key (group id,
    transactional id, ...) whose partition a record belongs to (default: the id the internal keys start with)."""

    def __init__(self, name: str, partitions: CoordinatorPartition | Sequence[CoordinatorPartition],
                 coordinator: HostedCoordinator, timer: SystemTimer,
                 key_of: Callable[[bytes], str] = coordinator_key_of) -> None:
        self.name = name
        self._key_of = key_of
        parts = [partitions] if isinstance(partitions, CoordinatorPartition) else list(partitions)
        self._partitions: dict[int, CoordinatorPartition] = dict(enumerate(parts))
        #: the topic's partition count: which partition a key maps to
        self.num_partitions = len(parts)
        self.coordinator = coordinator
        self.timer = timer
        #: the partitions served (a single broker: startup to shutdown; a cluster broker: while it leads the
        #: partition and its state is loaded)
        self._active: set[int] = set()
        #: between startup and shutdown
        self._running = False
        #: partitions whose election was seen or whose replay runs
        self._loading: set[int] = set()
        self._shut_down = False
        self._follows_partition_leadership = False
        #: serializes elections and resignations
        self._election_lock = threading.Lock()
        #: a cluster broker's wait for the ISR (see :class:`ReplicationBarrier`); None: appends are durable at once
        self.replication_barrier: ReplicationBarrier | None = None

    # -- partitions -----------------------------------------------------------------------------------------
    @property
    def partition(self) -> CoordinatorPartition:
        """Partition 0 (the only one of a one-partition topic)."""
        return self.get_partition(0)

    @property
    def partitions(self) -> list[CoordinatorPartition]:
        """The partitions known here, by index."""
        return [self._partitions[p] for p in sorted(self._partitions)]

    def get_partition(self, partition: int) -> CoordinatorPartition:
        """Partition ``partition`` (a cluster broker's that was never elected: one with no log yet)."""
        found = self._partitions.get(partition)
        if found is None:
            found = self._partitions.setdefault(partition, CoordinatorPartition(None))
        return found

    def set_num_partitions(self, num_partitions: int) -> None:
        """The topic's partition count (a cluster broker learns it from the metadata when the topic exists)."""
        self.num_partitions = max(1, num_partitions)

    def partition_for(self, key: str) -> int:
        """The partition of ``key`` (a group id, a transactional id): Kafka's ``partitionFor``."""
        return partition_for(key, self.num_partitions)

    # -- status ---------------------------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        """Whether some partition is served (every one, on a single broker)."""
        return bool(self._active)

    @property
    def active_partitions(self) -> frozenset[int]:
        return frozenset(self._active)

    @property
    def is_loading(self) -> bool:
        """Whether some partition is loading (its keys get COORDINATOR_LOAD_IN_PROGRESS)."""
        return bool(self._loading)

    def serves(self, key: str) -> bool:
        """Whether the partition of ``key`` is served here now."""
        return self.partition_for(key) in self._active

    def error_for(self, key: str) -> int | None:
        """None when ``key``'s partition is served here, else why not (:meth:`inactive_error` of it)."""
        partition = self.partition_for(key)
        return None if partition in self._active else self.inactive_error(partition)

    @property
    def is_running(self) -> bool:
        return self._running

    @property
    def follows_partition_leadership(self) -> bool:
        """A cluster broker's coordinator: it serves only while this broker leads the partition."""
        return self._follows_partition_leadership

    @property
    def status(self) -> CoordinatorStatus:
        """The status of partition 0 (the only one of a one-partition topic): :meth:`partition_status`."""
        return self.partition_status(0)

    def partition_status(self, partition: int) -> CoordinatorStatus:
        if partition in self._active:
            return CoordinatorStatus.ACTIVE
        if partition in self._loading:
            return CoordinatorStatus.LOADING
        if self._running:
            return CoordinatorStatus.INACTIVE
        return CoordinatorStatus.SHUT_DOWN if self._shut_down else CoordinatorStatus.NOT_STARTED

    @property
    def leads_no_partition(self) -> bool:
        """A running cluster broker's coordinator that neither serves nor loads a partition: it lists nothing,
        without error."""
        return self._follows_partition_leadership and self._running and not self._active and not self._loading

    def inactive_error(self, partition: int | None = None) -> int:
        """Why a request for ``partition`` (None: any; some partition loading counts) is not served: loading, not
        the partition's leader (a cluster), or shut down."""
        if partition in self._loading or (partition is None and self._loading):
            return int(CoordinatorLoadInProgressError.code)
        if self._follows_partition_leadership and self._running:
            return int(NotCoordinatorError.code)
        return int(CoordinatorNotAvailableError.code)

    # -- lifecycle ------------------------------------------------------------------------------------------
    def startup(self, follow_partition_leadership: bool = False) -> None:
        """Serve: a single broker loads its local partitions now; with ``follow_partition_leadership`` (a cluster
        broker) nothing is loaded and requests get NOT_COORDINATOR until the :meth:`on_election` of their
        partition."""
        self._running = True
        self._follows_partition_leadership = follow_partition_leadership
        if not follow_partition_leadership:
            for partition in sorted(self._partitions):
                self._loading.add(partition)
                try:
                    self._load(None, partition)
                finally:
                    self._loading.discard(partition)

    def expect_election(self, partition: int = 0) -> None:
        """The election of ``partition`` was seen and its load is queued: its keys get COORDINATOR_LOAD_IN_PROGRESS
        until :meth:`on_election`."""
        if self._running:
            self._loading.add(partition)

    def on_election(self, log: Log, append: ReplicatedAppend, coordinator_epoch: int, partition: int = 0) -> None:
        """This broker became the leader of ``partition``, whose log is ``log`` (appended through ``append``), at
        leader epoch ``coordinator_epoch``: load it (COORDINATOR_LOAD_IN_PROGRESS for its keys meanwhile), then
        serve its keys."""
        with self._election_lock:
            if not self._running:
                return
            self._unload(partition)
            self._loading.add(partition)
            try:
                self.get_partition(partition).attach(log, append)
                loaded = self._load(coordinator_epoch, partition)
                _log.info("event=coordinator_elected coordinator=%s partition=%d coordinator_epoch=%d loaded=%d",
                          self.name, partition, coordinator_epoch, loaded)
            finally:
                self._loading.discard(partition)

    def on_resignation(self, partition: int = 0) -> None:
        """This broker no longer leads ``partition``: its keys' state is dropped, their requests get NOT_COORDINATOR
        and appends to it NOT_LEADER_OR_FOLLOWER."""
        with self._election_lock:
            if partition in self._active:
                _log.info("event=coordinator_resigned coordinator=%s partition=%d", self.name, partition)
            self._loading.discard(partition)
            self._unload(partition)

    def shutdown(self) -> None:
        """Stop serving (COORDINATOR_NOT_AVAILABLE from now on); the hosted coordinator then stops its timers and
        closes its partitions."""
        self._active.clear()
        self._running = False
        self._shut_down = True

    def _load(self, coordinator_epoch: int | None, partition: int) -> int:
        loaded = self.coordinator.load(coordinator_epoch, partition)
        self._active.add(partition)
        self.coordinator.on_loaded(partition)
        return loaded

    def _unload(self, partition: int) -> None:
        self._active.discard(partition)
        self.coordinator.unload(partition)
        self.get_partition(partition).detach()

    def close_partitions(self) -> None:
        """Close the local logs (a replicated partition's log is the LogManager's)."""
        for part in self._partitions.values():
            part.close()

    # -- writes and the ISR ---------------------------------------------------------------------------------
    def write(self, result: CoordinatorResult[T], partition: int | None = None) -> T:
        """Carry out a hosted coordinator's write (Kafka: the runtime's write operation): append
        ``result.records`` through ``partition`` (None: the partition of the records' keys; a batch with keys of
        several partitions is split into one batch per partition; a control batch goes to ``partition``, else 0)
        (fsynced when ``result.flush``), run ``on_appended``, arrange
        ``on_durable`` for when the ISR has the records (:meth:`when_durable`) and return ``result.response``.
        When the append raises (NOT_LEADER_OR_FOLLOWER after a resignation, or as the log does), nothing else
        runs and ``on_failed(exception)`` is returned, or the exception propagates when the result has none.
        Runs on the caller's thread, under the caller's locks (see the module docstring)."""
        if result.records is not None:
            try:
                for index, records in self._route(result.records, partition):
                    self.get_partition(index).append(records, result.flush)
            except Exception as e:
                if result.on_failed is None:
                    raise
                return result.on_failed(e)
        if result.on_appended is not None:
            result.on_appended()
        if result.on_durable is not None:
            self.when_durable(result.on_durable)
        return result.response

    def _route(self, records: bytes, partition: int | None) -> list[tuple[int, bytes]]:
        """(partition, batch) to append for ``records``: see :meth:`write`."""
        if partition is not None or (self.num_partitions == 1 and len(self._partitions) <= 1):
            return [(partition or 0, records)]
        batches = list(MemoryRecords(records).batches())
        if not batches or any(b.is_control for b in batches):
            return [(0, records)]
        by_partition: dict[int, list[tuple[int, bytes | None, bytes | None]]] = {}
        for batch in batches:
            for record in batch.records():
                key = None if record.key is None else bytes(record.key)
                index = 0 if key is None else self.partition_for(self._key_of(key))
                by_partition.setdefault(index, []).append(
                    (record.timestamp, key, None if record.value is None else bytes(record.value)))
        if len(by_partition) == 1:
            return [(next(iter(by_partition)), records)]
        if any(b.is_transactional or b.producer_id >= 0 for b in batches):
            raise ValueError(f"a transactional {self.name} batch holds keys of several partitions "
                             f"({sorted(by_partition)}); write one group's records per transactional batch")
        out = []
        for index, entries in sorted(by_partition.items()):
            builder = MemoryRecordsBuilder(write_limit=_MAX_BATCH_BYTES)
            for timestamp, key, value in entries:
                builder.append(timestamp, key, value)
            out.append((index, builder.build()))
        return out

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
