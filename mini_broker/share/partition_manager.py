"""The share partitions and share sessions this broker serves as partition leader (Kafka's
``SharePartitionManager`` and ``ShareSessionCache``): one :class:`SharePartition` per (share group, topic id,
partition), created on the first ShareFetch that names it, and one share session per (group, member).

Thread-safe: one lock (the manager lock) guards every share partition and session (a ShareFetch's
acknowledgements and acquisitions are short); it is never held across a state write (see Durability). Acquisition locks expire on this manager's timer: each acquisition schedules a task at
its lock deadline that makes the still-acquired records of that partition available again.

Share sessions (KIP-932): epoch 0 opens one (replacing the member's previous one, whose records are released),
-1 closes it (after its acknowledgements, the member's acquired records are released), any other epoch must be
the session's next one and names the partitions to add; ``forgotten`` partitions leave it.

Waking parked fetches (Kafka: ``completeDelayedShareFetchRequest`` with a ``DelayedShareFetchGroupKey``): a
ShareFetch that found nothing to acquire waits in the fetch purgatory; whenever records of a share partition may
have become acquirable (acknowledgements, records released by a closed or replaced session or a dropped connection,
expired locks), ``on_records_available(group_id, (topic_id, partition))`` is called with no lock held.

Connections (Kafka: ``ShareSessionCache``'s connection disconnect listener, which makes ``SharePartitionManager``
release the member's session): a session remembers the connection that opened it; when that connection closes
(:meth:`on_connection_closed`), the session ends and its member's acquired records are released.

Durability (issue #25): with a :class:`SharePersister` (the share coordinator on ``__share_group_state``) the
manager starts from the states it loaded and writes a partition's state after every change that matters (an
acquisition raising delivery counts, acknowledgements, records released, archived or expired, the start offset
advanced, a deleted group) before the call returns, so a ShareFetch or ShareAcknowledge is answered only once its
acknowledgements are in the log. A change is made under the manager lock, which also marks the share partition's
state dirty (a sequence number); the write happens after the lock is released (Kafka: the share partition's
write is asynchronous and the acknowledgement completes when it completes), so a write to a remote share
coordinator never blocks the other share partitions, and writes of different share partitions are in flight
together. Writes of one share partition stay ordered: each has a write lock (:class:`_StateWrites`), held across
its persister call, and a write carries the partition's state as it is when the write starts (copied under the
manager lock), so one write covers every change made before it (a caller whose change a finished write already
carried returns at once: group commit). Lock order: a share partition's write lock, then the manager lock (taken
briefly to copy the state); never the reverse. A write whose share partition was dropped or replaced meanwhile
(another leader epoch read its state again, an admin reset it, its group was deleted) fails with
FENCED_LEADER_EPOCH rather than writing a state nobody serves. Reads (when this broker starts leading a topic
partition) and an admin's reset still call the persister under the manager lock (rare). The group coordinator may delete or reset a
share partition's state at the share coordinator behind this broker's back (issue #25): the leader's next write
of the old state is then fenced (FENCED_STATE_EPOCH: the partition is dropped and read again on its next use), and
a member opening a share session has the group's share partitions without acquired records read again.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.share_partition import (
    AcknowledgeType,
    AcquiredRange,
    InFlightRecord,
    InvalidRecordState,
    RecordState,
    SharePartition,
    ShareState,
)
from mini_broker.timer.system_timer import SystemTimer, SystemTimerReaper
from mini_broker.timer.timer_task import TimerTask
from pykafka_client.errors import (
    FencedLeaderEpochError,
    FencedStateEpochError,
    InvalidRecordStateError,
    InvalidRequestError,
    InvalidShareSessionEpochError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
)
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

#: (topic id, partition)
TopicIdPartition = tuple[uuid.UUID, int]
#: (group id, topic id, partition)
SharePartitionKey = tuple[str, uuid.UUID, int]


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    #: the epoch the member's next request carries
    epoch: int
    #: the session's partitions, in the order they joined (dict as an ordered set)
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)
    #: the connection that opened the session (None: not known); its close ends the session
    connection_id: str | None = None


@dataclass(frozen=True)
class AckBatch:
    first_offset: int
    last_offset: int
    types: tuple[int, ...]


class SessionError(Exception):
    """A share session request that cannot be served: ``code`` is the top-level error to answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class SharePersister(Protocol):
    """Where share-partition state is kept (Kafka's ``Persister``: the share coordinator, in process on a single
    broker, over ReadShareGroupState / WriteShareGroupState on a cluster): the states known at startup, the read
    of one (``key``: group id, topic id, partition; by the leader of its topic partition at ``leader_epoch``,
    -1: not fenced), the writes of its state or of its deletion. Each raises the ``KafkaError`` of a failure
    (FENCED_LEADER_EPOCH: this broker no longer leads the topic partition)."""

    def states(self) -> Mapping[tuple[str, uuid.UUID, int], ShareState]: ...

    def read_state(self, key: tuple[str, uuid.UUID, int], leader_epoch: int = -1) -> ShareState | None: ...

    def write_state(self, key: tuple[str, uuid.UUID, int], state: ShareState, leader_epoch: int = -1) -> None: ...

    def delete_state(self, key: tuple[str, uuid.UUID, int]) -> None: ...

    def initialize_state(self, key: tuple[str, uuid.UUID, int], start_offset: int) -> None:
        """Start the share partition afresh at ``start_offset`` with a new state epoch (its leader's later
        writes of the old state are fenced: FENCED_STATE_EPOCH)."""
        ...


class _StateWrites:
    """The state writes of one share partition (see Durability in the module doc): ``lock`` orders them and is
    held across the persister call; ``dirty`` counts the changes made (under the manager lock), ``written`` the
    last of them a finished write carried."""

    __slots__ = ("partition", "lock", "dirty", "written")

    def __init__(self, partition: SharePartition) -> None:
        #: the share partition whose state these writes carry (dropped or replaced: the writes fail)
        self.partition = partition
        self.lock = threading.Lock()
        self.dirty = 0
        self.written = 0


#: a state write to make once the manager lock is released: (share partition, its writes, the change to cover)
PendingWrite = tuple[SharePartitionKey, _StateWrites, int]


def _copy_state(state: ShareState) -> ShareState:
    """A copy of ``state`` that a write can read while the share partition moves on."""
    return ShareState(state.start_offset, state.end_offset,
                      {o: InFlightRecord(r.state, r.delivery_count, r.owner, r.lock_deadline_ms)
                       for o, r in state.records.items()})


class _LockTimeout(TimerTask):
    def __init__(self, delay_ms: int, action: Callable[[], None]) -> None:
        super().__init__(delay_ms)
        self._action = action

    def run(self) -> None:
        self._action()


class SharePartitionManager:
    """See the module docstring. ``reaper_enabled=False`` (tests with MockTime): the timer only moves when
    :meth:`advance_timer` is called."""

    def __init__(self, config: ShareGroupConfig, time: Time = SYSTEM_TIME, reaper_enabled: bool = True,
                 group_config: Callable[[str], ShareGroupConfig] | None = None,
                 persister: SharePersister | None = None,
                 on_records_available: Callable[[str, TopicIdPartition], object] | None = None,
                 leader_epoch: Callable[[TopicIdPartition], int] | None = None) -> None:
        self.config = config
        #: called (no lock held) with a share partition some of whose records may have become acquirable
        self.on_records_available = on_records_available
        #: the share config of a group (the broker's with the group's overrides)
        self.group_config: Callable[[str], ShareGroupConfig] = group_config or (lambda group_id: config)
        self.time = time
        self._lock = threading.Lock()
        self._partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        self._persister = persister
        #: the leader epoch of a topic partition this broker leads (None: a single broker, always the leader)
        self._leader_epoch = leader_epoch
        #: share partition -> the leader epoch its state was read at (read again when the epoch moved)
        self._read_at: dict[tuple[str, uuid.UUID, int], int] = {}
        #: share partition -> its state writes (created with its first change to write)
        self._writes: dict[SharePartitionKey, _StateWrites] = {}
        # a single broker starts from every state it loaded; a cluster broker reads one when it leads its partition
        for key, state in (persister.states() if persister is not None and leader_epoch is None else {}).items():
            sp = self._partitions[key] = self._new_partition(state)
            sp.recover()
        self._sessions: dict[tuple[str, str], ShareSession] = {}
        #: share partition -> when its pending lock-expiry task runs (one task per partition at a time)
        self._expiry_due: dict[tuple[str, uuid.UUID, int], int] = {}
        self.timer = SystemTimer("share-partition-locks", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
        self._reaper = SystemTimerReaper("share-partition-locks", self.timer) if reaper_enabled else None

    def shutdown(self) -> None:
        if self._reaper is not None:
            self._reaper.close()
        else:
            self.timer.close()

    def advance_timer(self, timeout_ms: int = 0) -> None:
        self.timer.advance_clock(timeout_ms)

    # -- sessions -------------------------------------------------------------------------------------------
    def session(self, group_id: str, member_id: str, epoch: int, added: Iterable[TopicIdPartition],
                forgotten: Iterable[TopicIdPartition] = (), connection_id: str | None = None) -> ShareSession:
        """Open, continue or (epoch -1) look up for closing the member's share session; raises
        :class:`SessionError`. ``connection_id``: the connection of the request, which an opened session is
        bound to. Returns a copy of the session as it is now."""
        key = (group_id, member_id)
        released: dict[TopicIdPartition, int] = {}
        pending: list[PendingWrite] = []
        with self._lock:
            current = self._sessions.get(key)
            if epoch == INITIAL_EPOCH:
                if current is not None:
                    released = self._release_member(group_id, member_id, pending)
                elif len(self._sessions) >= self.config.max_share_sessions:
                    raise SessionError(ShareSessionLimitReachedError.code,
                                       f"this broker holds group.share.max.share.sessions "
                                       f"({self.config.max_share_sessions}) share sessions: retry later")
                current = self._sessions[key] = ShareSession(group_id, member_id, 0, connection_id=connection_id)
                self._drop_idle(group_id)
            elif current is None:
                raise SessionError(ShareSessionNotFoundError.code,
                                   f"member {member_id} of share group {group_id} has no share session here: "
                                   f"open one with epoch 0")
            elif epoch != FINAL_EPOCH and epoch != current.epoch:
                raise SessionError(InvalidShareSessionEpochError.code,
                                   f"share session epoch {epoch} of member {member_id} is not the expected "
                                   f"{current.epoch}: open a new session with epoch 0")
            if epoch != FINAL_EPOCH:
                current.epoch += 1
                for tp in added:
                    current.partitions[tp] = None
                for tp in forgotten:
                    current.partitions.pop(tp, None)
            copy = ShareSession(current.group_id, current.member_id, current.epoch, dict(current.partitions),
                                current.connection_id)
        self._write_all(pending)
        self._records_available(group_id, released)
        return copy

    def close_session(self, group_id: str, member_id: str) -> int:
        """End the member's share session (if any) and release what it holds; returns the records released."""
        pending: list[PendingWrite] = []
        with self._lock:
            self._sessions.pop((group_id, member_id), None)
            released = self._release_member(group_id, member_id, pending)
        self._write_all(pending)
        self._records_available(group_id, released)
        return sum(released.values())

    def on_connection_closed(self, connection_id: str) -> None:
        """A client connection closed: the share sessions it opened end, releasing what their members hold. Called
        on a network processor's thread, which must not wait for the state writes (on a cluster they go to the
        share coordinator, possibly through this very processor): the work runs on the lock timer's thread."""
        self.timer.add(_LockTimeout(1, lambda: self._end_sessions_of(connection_id)))

    def _end_sessions_of(self, connection_id: str) -> None:
        ended: list[tuple[str, dict[TopicIdPartition, int]]] = []
        pending: list[PendingWrite] = []
        with self._lock:
            for group_id, member_id in [k for k, s in self._sessions.items() if s.connection_id == connection_id]:
                del self._sessions[(group_id, member_id)]
                ended.append((group_id, self._release_member(group_id, member_id, pending)))
                _log.info("event=share_session_ended reason=connection_closed connection=%s group=%s member=%s",
                          connection_id, group_id, member_id)
        self._write_all(pending)
        for group_id, released in ended:
            self._records_available(group_id, released)

    def delete_group(self, group_id: str) -> None:
        """Forget a deleted share group's share partitions and sessions (a group created again under its id
        starts its partitions afresh, at ``share.auto.offset.reset``)."""
        with self._lock:
            dropped = self._forget([k for k in self._partitions if k[0] == group_id])
            for member in [m for g, m in self._sessions if g == group_id]:
                del self._sessions[(group_id, member)]
        self._delete_states(dropped)

    def session_count(self) -> int:
        with self._lock:
            return len(self._sessions)

    # -- share partitions -----------------------------------------------------------------------------------
    def fetch_offset(self, group_id: str, tp: TopicIdPartition, start_offset: Callable[[], int],
                     log_start_offset: int) -> int | None:
        """Where the member's read of this share partition starts; the partition is created at
        ``start_offset()`` (``share.auto.offset.reset``) on first use, and offsets the log no longer has are
        done. None: nothing can be acquired now (every in-flight record is locked and their number is at
        ``group.share.partition.max.record.locks``)."""
        pending: list[PendingWrite] = []
        with self._lock:
            sp = self._partition(group_id, tp)
            before = (sp.start_offset, sp.end_offset)
            if not sp.initialized:
                sp.initialize(start_offset())
            sp.advance_start(log_start_offset)
            if (sp.start_offset, sp.end_offset) != before:
                self._persist(group_id, tp, sp, pending)
            offset = sp.next_fetch_offset() if sp.can_acquire() else None
        self._write_all(pending)
        return offset

    def acquire(self, group_id: str, member_id: str, tp: TopicIdPartition,
                batches: Iterable[tuple[int, int, bool]], max_records: int,
                deferred: list[PendingWrite] | None = None) -> list[AcquiredRange]:
        """Acquire for the member what is available among ``batches`` ((first, last, skip), in log order):
        batches to skip (control batches, aborted transactions' records) are archived, whole record batches are
        taken until ``max_records``. Written before this returns, or later by the caller as for
        :meth:`acknowledge`."""
        now = self.time.milliseconds()
        lock_ms = self.group_config(group_id).record_lock_duration_ms
        out: list[AcquiredRange] = []
        pending: list[PendingWrite] = []
        with self._lock:
            sp = self._partition(group_id, tp)
            if not sp.initialized:
                return out
            sp.record_lock_duration_ms = lock_ms
            taken = 0
            skipped = False
            for first, last, skip in batches:
                if taken >= max_records:
                    break
                if skip:
                    sp.skip(first, last)
                    skipped = True
                    continue
                ranges = sp.acquire(member_id, [(first, last)], max_records - taken, now)
                taken += sum(r.last_offset - r.first_offset + 1 for r in ranges)
                out.extend(ranges)
            if out or skipped:
                self._persist(group_id, tp, sp, pending)
            if out:
                self._schedule_expiry(group_id, tp, now, now + lock_ms)
        if deferred is None:
            self._write_all(pending)
        else:
            deferred.extend(pending)
        return out

    def write_states(self, pending: list[PendingWrite]) -> None:
        """Make the state writes :meth:`acknowledge` and :meth:`acquire` deferred (no lock held); raises the
        persister's ``KafkaError`` of the first that failed, once all were tried."""
        self._write_all(pending)

    def acknowledge(self, group_id: str, member_id: str, tp: TopicIdPartition, batches: Iterable[AckBatch],
                    deferred: list[PendingWrite] | None = None) -> tuple[int, str | None]:
        """Apply the member's acknowledgements of one partition: (0, None), or the error of the first batch
        that failed (INVALID_RECORD_STATE, INVALID_REQUEST); the batches before it stay applied. The state is
        written before this returns, or, with ``deferred``, its write is added there for the caller to make
        (:meth:`write_states`) before it answers (a ShareFetch: one write then carries its acknowledgements and
        its acquisitions)."""
        pending: list[PendingWrite] = []
        with self._lock:
            sp = self._partitions.get((group_id, *tp))
            result = self._acknowledge(sp, group_id, member_id, tp, batches)
            if sp is not None:  # what was applied is in the log before the answer
                self._persist(group_id, tp, sp, pending)
        if deferred is None:
            self._write_all(pending)
        else:
            deferred.extend(pending)
        if sp is not None:
            self._records_available(group_id, [tp])
        return result

    def _acknowledge(self, sp: SharePartition | None, group_id: str, member_id: str, tp: TopicIdPartition,
                     batches: Iterable[AckBatch]) -> tuple[int, str | None]:
        for batch in batches:
            try:
                types = [AcknowledgeType(t) for t in batch.types]
            except ValueError:
                return int(InvalidRequestError.code), (f"unknown acknowledge type among {list(batch.types)}: "
                                                       f"use 0 (gap), 1 (accept), 2 (release) or 3 (reject)")
            if sp is None:
                return int(InvalidRecordStateError.code), (f"share group {group_id} has not fetched "
                                                           f"partition {tp[1]} here: nothing to acknowledge")
            try:
                sp.acknowledge(member_id, batch.first_offset, batch.last_offset, types)
            except InvalidRecordState as e:
                return int(InvalidRecordStateError.code), str(e)
        return 0, None

    def next_fetch_offset(self, group_id: str, tp: TopicIdPartition) -> int | None:
        """Where a read of this share partition would start now (None: not created, or nothing acquirable; or
        the lock is held: the holder wakes the parked fetches afterwards if it made records acquirable). Never
        waits for the lock: a parked fetch's check runs on the thread completing purgatory operations (a follower
        fetch), and the holder may be waiting for that very follower (a state write on a cluster)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            sp = self._partitions.get((group_id, *tp))
            if sp is None or not sp.initialized or not sp.can_acquire():
                return None
            return sp.next_fetch_offset()
        finally:
            self._lock.release()

    def partition_offsets(self, group_id: str, tp: TopicIdPartition) -> tuple[int, int] | None:
        """(start offset, end offset) of the share partition (None: not created here)."""
        with self._lock:
            sp = self._partitions.get((group_id, *tp))
            return None if sp is None or not sp.initialized else (sp.start_offset, sp.end_offset)

    # -- share-group offsets (DescribeShareGroupOffsets / AlterShareGroupOffsets / DeleteShareGroupOffsets) --
    def group_offsets(self, group_id: str) -> dict[TopicIdPartition, tuple[int, int]]:
        """Per initialized share partition of the group: its start offset and how many of its in-flight records
        are done (acknowledged or archived: KIP-1226's delivery-complete count, which the lag leaves out)."""
        done = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        with self._lock:
            return {(topic_id, p): (sp.start_offset, sum(r.state in done for r in sp.state.records.values()))
                    for (g, topic_id, p), sp in self._partitions.items() if g == group_id and sp.initialized}

    def reset_start_offset(self, group_id: str, tp: TopicIdPartition, start_offset: int) -> None:
        """Set the share partition's start offset (an admin's AlterShareGroupOffsets on an empty group): its
        in-flight records are dropped, the next fetch reads from ``start_offset``; written before returning."""
        if start_offset < 0:
            raise ValueError(f"a share-partition start offset is not negative, got {start_offset}")
        key = (group_id, *tp)
        with self._lock:
            self._partitions[key] = self._new_partition(ShareState(start_offset, start_offset, {}))
            self._expiry_due.pop(key, None)
            self._writes.pop(key, None)  # the old partition's writes in flight fail (FENCED_STATE_EPOCH)
            if self._persister is not None:
                self._persister.initialize_state(key, start_offset)

    def delete_topic_state(self, group_id: str, topic_id: uuid.UUID) -> int:
        """Forget the group's share partitions of one topic (DeleteShareGroupOffsets): the next fetch starts them
        afresh at ``share.auto.offset.reset``. Returns how many there were."""
        with self._lock:
            dropped = self._forget([k for k in self._partitions if k[0] == group_id and k[1] == topic_id])
        self._delete_states(dropped)
        return len(dropped)

    def forget_share_partitions(self, group_id: str, topic_id: uuid.UUID | None = None,
                                partition: int | None = None) -> int:
        """Drop the group's share partitions held here (of one topic, or one partition of it) without writing
        anything: the group coordinator changed or deleted their state at the share coordinator, and their next
        use reads it again. Returns how many were dropped."""
        with self._lock:
            keys = [k for k in self._partitions if k[0] == group_id and topic_id in (None, k[1])
                    and partition in (None, k[2])]
            for key in keys:
                self._drop(key)
            return len(keys)

    # -- internals ------------------------------------------------------------------------------------------
    def _drop(self, key: tuple[str, uuid.UUID, int]) -> None:
        """Forget a share partition held here, nothing written (the caller holds the lock; its writes not yet
        started fail)."""
        self._partitions.pop(key, None)
        self._expiry_due.pop(key, None)
        self._read_at.pop(key, None)
        self._writes.pop(key, None)

    def _unwritten(self, key: SharePartitionKey) -> bool:
        """Whether the share partition has changes no finished write carried yet (the caller holds the lock)."""
        writes = self._writes.get(key)
        return writes is not None and writes.written < writes.dirty

    def _drop_idle(self, group_id: str) -> None:
        """A member of the group opened a share session: the group's share partitions in which no record is
        acquired are read again on their next use (the caller holds the lock), so that a state the group
        coordinator deleted or reset at the share coordinator (the group deleted and created again, its offsets
        altered or deleted) is not served from this broker's memory; the acquired records' holders keep theirs
        until their next write, which such a change fences (FENCED_STATE_EPOCH)."""
        if self._persister is None:
            return  # nothing to read again from: the state is this broker's memory
        for key in [k for k, sp in self._partitions.items()
                    if k[0] == group_id and sp.next_lock_deadline() is None and not self._unwritten(k)]:
            self._drop(key)  # (one with a write pending keeps its state: the write, or its fence, comes first)

    def _partition(self, group_id: str, tp: TopicIdPartition) -> SharePartition:
        """The share partition, its state read from the persister when this broker has none for the topic
        partition's current leader epoch (a failover made it the leader: the old leader's acquisitions died
        with it). Raises the persister's ``KafkaError``."""
        key = (group_id, *tp)
        sp = self._partitions.get(key)
        epoch = -1 if self._leader_epoch is None else self._leader_epoch(tp)
        if sp is not None and self._read_at.get(key, epoch) != epoch:
            del self._partitions[key]  # led again at another epoch: another leader may have moved the state on
            self._expiry_due.pop(key, None)
            self._writes.pop(key, None)
            sp = None
        if sp is None:
            state = None
            if self._persister is not None:
                state = self._persister.read_state(key, epoch)
            sp = self._new_partition(state)
            if state is not None:
                sp.recover()
            self._partitions[key] = sp
            self._read_at[key] = epoch
        return sp

    def _forget(self, keys: list[SharePartitionKey]) -> list[tuple[SharePartitionKey, _StateWrites | None]]:
        """Drop these share partitions (the caller holds the lock); returns them with their state writes, for
        :meth:`_delete_states` once the lock is released."""
        dropped = []
        for key in keys:
            del self._partitions[key]
            self._expiry_due.pop(key, None)
            self._read_at.pop(key, None)
            dropped.append((key, self._writes.pop(key, None)))
        return dropped

    def _delete_states(self, dropped: list[tuple[SharePartitionKey, _StateWrites | None]]) -> None:
        """Write the deletion of dropped share partitions (no lock held): after their writes in flight, so
        that none lands after the deletion."""
        if self._persister is None:
            return
        for key, writes in dropped:
            if writes is None:
                self._persister.delete_state(key)
                continue
            with writes.lock:
                self._persister.delete_state(key)

    def _new_partition(self, state: ShareState | None) -> SharePartition:
        return SharePartition(self.config.record_lock_duration_ms, self.config.delivery_count_limit,
                              self.config.partition_max_record_locks, state)

    def _persist(self, group_id: str, tp: TopicIdPartition, sp: SharePartition, pending: list[PendingWrite]) -> None:
        """Mark the share partition's state dirty and add its write to ``pending`` (the caller holds the lock,
        then makes the writes with :meth:`_write_all` once it released it)."""
        if self._persister is not None and sp.initialized:
            key = (group_id, *tp)
            writes = self._writes.get(key)
            if writes is None or writes.partition is not sp:
                writes = self._writes[key] = _StateWrites(sp)
            writes.dirty += 1
            pending.append((key, writes, writes.dirty))

    def _write_all(self, pending: list[PendingWrite]) -> None:
        """Make the state writes of ``pending`` (no lock held); raises the first failure once all were tried."""
        failure: Exception | None = None
        for key, writes, sequence in pending:
            try:
                self._write(key, writes, sequence)
            except Exception as e:
                failure = failure or e
        if failure is not None:
            raise failure

    def _write(self, key: SharePartitionKey, writes: _StateWrites, sequence: int) -> None:
        """Have the share partition's state as of its change ``sequence`` written through ``writes`` (see
        Durability in the module doc; raises the persister's ``KafkaError``)."""
        persister = self._persister
        assert persister is not None  # only a manager with a persister has writes
        with writes.lock:
            if writes.written >= sequence:
                return  # a write that started after this change carried it
            with self._lock:
                if self._writes.get(key) is not writes:
                    raise FencedLeaderEpochError(
                        f"partition {key[2]} of topic id {key[1]} in share group {key[0]} was dropped before its "
                        f"state was written (its leader epoch moved, or its state was deleted or reset): fetch it "
                        f"again")
                state = _copy_state(writes.partition.state)
                covered = writes.dirty
                leader_epoch = self._read_at.get(key, -1)
            try:
                persister.write_state(key, state, leader_epoch)
            except (FencedLeaderEpochError, FencedStateEpochError):
                # another leader, or an admin's reset, moved the state on: forget ours, read it on the next use
                with self._lock:
                    if self._writes.get(key) is writes:
                        self._drop(key)
                raise
            writes.written = covered

    def _release_member(self, group_id: str, member_id: str,
                        pending: list[PendingWrite]) -> dict[TopicIdPartition, int]:
        """Release what the member holds (the caller holds the lock; the writes go to ``pending``): the records
        released per partition."""
        released = {}
        for (g, topic_id, partition), sp in self._partitions.items():
            if g == group_id and (count := sp.release_member(member_id)):
                self._persist(g, (topic_id, partition), sp, pending)
                released[(topic_id, partition)] = count
        return released

    def _records_available(self, group_id: str, partitions: Iterable[TopicIdPartition]) -> None:
        """Tell the parked fetches of these share partitions (called with no lock held: the wake completes
        them on this thread, and completing one acquires under the lock)."""
        if self.on_records_available is not None:
            for tp in partitions:
                self.on_records_available(group_id, tp)

    def _schedule_expiry(self, group_id: str, tp: TopicIdPartition, now_ms: int, deadline_ms: int) -> None:
        """Have the partition's locks checked at ``deadline_ms`` unless a check is due before (the caller holds
        the lock: the delay is at least 10 ms, so the timer never runs the check inline, on this thread)."""
        key = (group_id, *tp)
        due = self._expiry_due.get(key)
        if due is not None and due <= deadline_ms:
            return
        self._expiry_due[key] = deadline_ms
        self.timer.add(_LockTimeout(max(10, deadline_ms - now_ms), lambda: self._expire(group_id, tp, deadline_ms)))

    def _expire(self, group_id: str, tp: TopicIdPartition, due_ms: int) -> None:
        now = self.time.milliseconds()
        key = (group_id, *tp)
        pending: list[PendingWrite] = []
        with self._lock:
            if self._expiry_due.get(key) != due_ms:
                return  # an earlier check replaced this one
            del self._expiry_due[key]
            sp = self._partitions.get(key)
            expired = 0 if sp is None else sp.expire_locks(now)
            if expired and sp is not None:
                self._persist(group_id, tp, sp, pending)
            later = None if sp is None else sp.next_lock_deadline()
            if later is not None:  # locks taken since, or a timer tick early: look again at the next deadline
                self._schedule_expiry(group_id, tp, now, later)
        try:
            self._write_all(pending)
        except Exception:
            _log.exception("event=share_state_not_written group=%s topic_id=%s partition=%d", group_id, tp[0], tp[1])
        if expired:
            self._records_available(group_id, [tp])
            _log.debug("event=share_locks_expired group=%s topic_id=%s partition=%d records=%d", group_id, tp[0],
                       tp[1], expired)
