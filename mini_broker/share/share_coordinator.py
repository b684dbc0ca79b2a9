"""The share coordinator (KIP-932): share-partition state kept in the internal compacted topic
``__share_group_state``, so that a restarted broker, or the new leader of a topic partition after a failover,
hands out what was not finished and never again what was acknowledged.

Each partition of ``__share_group_state`` is hosted by a :class:`ShareCoordinatorShard` on a
:class:`~mini_broker.coordinator.runtime.CoordinatorRuntime`, like the group and the transaction coordinators:
a single broker keeps one partition in its data dir (:class:`ShareCoordinator`); a cluster broker hosts the
partitions it leads (:mod:`mini_broker.cluster.share_state`). The share-partition leader reaches its shard
through a :class:`~mini_broker.share.partition_manager.SharePersister` (Kafka's ``Persister``): in process on a
single broker, over ReadShareGroupState / WriteShareGroupState / InitializeShareGroupState /
DeleteShareGroupState on a cluster.

Records per share partition (key ``(group id, topic id, partition)``), Kafka's ShareSnapshot / ShareUpdate:

* a *snapshot*: the whole state (state epoch, leader epoch, snapshot epoch, start offset, the in-flight records
  as runs ``(first offset, last offset, state, delivery count)``);
* an *update*: what a write changed since the state before it (start offset, leader epoch, the changed runs),
  tagged with the snapshot epoch it applies to. Every ``records_per_snapshot`` updates a write is a snapshot
  again (``share.coordinator.snapshot.update.records.per.snapshot``).

An acquired record is written as available with its delivery count: its acquisition lock does not outlive its
leader. Replay: a snapshot replaces the state; an update applies its runs over it (an update of another snapshot
epoch, or without a snapshot, is stale and skipped); a tombstone removes it. Update ``i`` of a snapshot cycle
has key index ``i``, so compaction keeps at most ``records_per_snapshot`` updates and one snapshot per share
partition and never merges two updates of one cycle (a leftover of an older cycle is older than the snapshot
that replaces it). A deleted share partition (DeleteShareGroupState) keeps a snapshot with start offset -1 at the
next state epoch, so that its leader's later writes of the old state are fenced; a read finds no state.

Fencing (Kafka's): a write or read with a leader epoch below the stored one fails with FENCED_LEADER_EPOCH (a
share-partition leader that lost its topic partition's leadership cannot overwrite its successor's state); a
write with a state epoch below the stored one with FENCED_STATE_EPOCH (the state was initialized again). A read
with a newer leader epoch records it (an update), fencing the previous leader from then on.

Layouts (big-endian, as the protocol's primitive types):

* snapshot key: ``int16 0``, ``string group``, ``uuid topic``, ``int32 partition``
* update key: ``int16 1``, ``string group``, ``uuid topic``, ``int32 partition``, ``int32 index``
* snapshot value: ``int16 1``, ``int32 snapshot epoch``, ``int32 state epoch``, ``int32 leader epoch``,
  ``int64 start offset``, runs (version 0, written before updates existed: ``int32 state epoch``,
  ``int64 start offset``, runs; read as snapshot epoch 0, leader epoch -1)
* update value: ``int16 0``, ``int32 snapshot epoch``, ``int32 leader epoch``, ``int64 start offset``, runs
* runs: ``int32 n`` x (``int64 first``, ``int64 last``, ``int8 state``, ``int16 delivery count``)
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from mini_broker.coordinator.partition import CoordinatorPartition
from mini_broker.coordinator.result import CoordinatorResult
from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.log.log_config import LogConfig
from mini_broker.log.unified_log import Log
from mini_broker.share.share_partition import InFlightRecord, RecordState, ShareState
from mini_broker.share.state_admin import StateSummary
from mini_broker.timer.system_timer import SystemTimer
from pykafka_client.errors import FencedLeaderEpochError, FencedStateEpochError, MessageDecodeError, for_code
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.records import MemoryRecordsBuilder
from pykafka_client.protocol.types import Reader, Writer
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

SHARE_GROUP_STATE_TOPIC_NAME: Final = "__share_group_state"
COORDINATOR_DIR: Final = "__share_coordinator"
SNAPSHOT_KEY_TYPE: Final = 0
UPDATE_KEY_TYPE: Final = 1
#: the snapshot value version this broker writes (0 is still read)
VALUE_VERSION: Final = 1
UPDATE_VALUE_VERSION: Final = 0
#: Kafka's ``share.coordinator.snapshot.update.records.per.snapshot`` default
DEFAULT_RECORDS_PER_SNAPSHOT: Final = 500
_MAX_BATCH_BYTES: Final = 1 << 30

#: (group id, topic id, partition)
SharePartitionKey = tuple[str, uuid.UUID, int]
#: (first offset, last offset, persisted state, delivery count)
StateBatch = tuple[int, int, RecordState, int]


# -- codec ---------------------------------------------------------------------------------------------------
def state_key(key: SharePartitionKey) -> bytes:
    """The snapshot key of a share partition."""
    w = Writer()
    w.write_int16(SNAPSHOT_KEY_TYPE)
    _write_partition_key(w, key)
    return w.to_bytes()


def update_key(key: SharePartitionKey, index: int) -> bytes:
    """The key of the ``index``-th update after a snapshot."""
    w = Writer()
    w.write_int16(UPDATE_KEY_TYPE)
    _write_partition_key(w, key)
    w.write_int32(index)
    return w.to_bytes()


def share_key(key: SharePartitionKey) -> str:
    """The coordinator key of a share partition (Kafka's ``SharePartitionKey.asCoordinatorKey``: group id, the
    topic id as Kafka prints a ``Uuid`` (URL-safe base64, unpadded) and the partition, joined by ``:``), which
    picks its ``__share_group_state`` partition (Kafka's ``partitionFor``)."""
    topic = base64.urlsafe_b64encode(key[1].bytes).rstrip(b"=").decode("ascii")
    return f"{key[0]}:{topic}:{key[2]}"


def share_key_of_record(key: bytes) -> str:
    """The coordinator key a ``__share_group_state`` record belongs to (routes it to its partition)."""
    return share_key(read_state_key(key)[1])


def _write_partition_key(w: Writer, key: SharePartitionKey) -> None:
    w.write_string(key[0])
    w.write_uuid(key[1])
    w.write_int32(key[2])


def read_state_key(data: bytes) -> tuple[int, SharePartitionKey]:
    """(key type, share partition) of a record key. Raises ``MessageDecodeError``."""
    r = Reader(data)
    key_type = r.read_int16()
    if key_type not in (SNAPSHOT_KEY_TYPE, UPDATE_KEY_TYPE):
        raise MessageDecodeError(f"unknown {SHARE_GROUP_STATE_TOPIC_NAME} key type {key_type}")
    return key_type, (r.read_string(), r.read_uuid(), r.read_int32())


def _persisted(record: InFlightRecord) -> tuple[RecordState, int]:
    """What survives the leader: an acquired record is available again, with its delivery count."""
    state = RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
    return state, record.delivery_count


def runs_of(records: Mapping[int, tuple[RecordState, int]], offsets: Iterable[int]) -> list[StateBatch]:
    """``records`` at ``offsets`` (ascending) as runs of consecutive offsets with one state and count."""
    runs: list[StateBatch] = []
    for offset in offsets:
        kind, count = records[offset]
        if runs and runs[-1][1] == offset - 1 and runs[-1][2:] == (kind, count):
            runs[-1] = (runs[-1][0], offset, kind, count)
        else:
            runs.append((offset, offset, kind, count))
    return runs


def persisted_records(state: ShareState) -> dict[int, tuple[RecordState, int]]:
    """offset -> (persisted state, delivery count) of the in-flight records of ``state``."""
    return {o: _persisted(state.records[o]) for o in range(state.start_offset, state.end_offset)}


def state_batches(state: ShareState) -> list[StateBatch]:
    """The in-flight records of ``state`` as runs (first, last, persisted state, delivery count)."""
    return runs_of(persisted_records(state), range(state.start_offset, state.end_offset))


def _write_runs(w: Writer, runs: Iterable[StateBatch]) -> None:
    runs = list(runs)
    w.write_int32(len(runs))
    for first, last, kind, count in runs:
        w.write_int64(first)
        w.write_int64(last)
        w.write_int8(int(kind))
        w.write_int16(count)


def _read_runs(r: Reader) -> list[StateBatch]:
    out: list[StateBatch] = []
    for _ in range(r.read_array_length(4)):
        first, last, kind, count = r.read_int64(), r.read_int64(), r.read_int8(), r.read_int16()
        if last < first:
            raise MessageDecodeError(f"share state batch {first}-{last} ends before it starts")
        try:
            out.append((first, last, RecordState(kind), count))
        except ValueError:
            raise MessageDecodeError(f"unknown share record state {kind}") from None
    return out


@dataclass
class PersistedState:
    """What the coordinator keeps of one share partition: its epochs, its start offset and its in-flight records
    (offset -> (state, delivery count)); ``updates``: updates written since the last snapshot."""

    state_epoch: int = 0
    leader_epoch: int = -1
    snapshot_epoch: int = 0
    start_offset: int = -1
    records: dict[int, tuple[RecordState, int]] = field(default_factory=dict)
    updates: int = 0

    def apply(self, start_offset: int, batches: Iterable[StateBatch]) -> None:
        """A write's start offset (-1: unchanged) and batches over this state; offsets below the start go."""
        if start_offset >= 0:
            self.start_offset = start_offset
        for first, last, kind, count in batches:
            for offset in range(max(first, self.start_offset), last + 1):
                self.records[offset] = (kind, count)
        for offset in [o for o in self.records if o < self.start_offset]:
            del self.records[offset]

    def copy(self) -> PersistedState:
        return PersistedState(self.state_epoch, self.leader_epoch, self.snapshot_epoch, self.start_offset,
                              dict(self.records), self.updates)

    def batches(self) -> list[StateBatch]:
        return runs_of(self.records, sorted(self.records))

    def share_state(self) -> ShareState:
        """The state a share partition starts from (no record acquired; an offset no batch named is available)."""
        end = max(self.records, default=self.start_offset - 1) + 1
        end = max(end, self.start_offset)
        records: dict[int, InFlightRecord] = {}
        for offset in range(self.start_offset, end):
            kind, count = self.records.get(offset, (RecordState.AVAILABLE, 0))
            records[offset] = InFlightRecord(kind, count)
        return ShareState(self.start_offset, end, records)


def snapshot_value(state: ShareState | PersistedState, state_epoch: int = 0) -> bytes:
    """A snapshot of ``state`` (a :class:`ShareState` is written with ``state_epoch``, leader epoch -1)."""
    if isinstance(state, ShareState):
        state = PersistedState(state_epoch, -1, 0, state.start_offset, persisted_records(state))
    w = Writer()
    w.write_int16(VALUE_VERSION)
    w.write_int32(state.snapshot_epoch)
    w.write_int32(state.state_epoch)
    w.write_int32(state.leader_epoch)
    w.write_int64(state.start_offset)
    _write_runs(w, state.batches())
    return w.to_bytes()


def read_persisted_snapshot(data: bytes) -> PersistedState:
    """A snapshot value (either version). Raises ``MessageDecodeError``."""
    r = Reader(data)
    version = r.read_int16()
    if version == 0:
        state = PersistedState(r.read_int32(), -1, 0)
    elif version == VALUE_VERSION:
        snapshot_epoch, state_epoch, leader_epoch = r.read_int32(), r.read_int32(), r.read_int32()
        state = PersistedState(state_epoch, leader_epoch, snapshot_epoch)
    else:
        raise MessageDecodeError(f"unknown {SHARE_GROUP_STATE_TOPIC_NAME} value version {version}: this broker "
                                 f"reads versions 0 and {VALUE_VERSION}")
    state.start_offset = r.read_int64()
    state.apply(-1, _read_runs(r))
    return state


def read_snapshot_value(data: bytes) -> ShareState:
    """The state a snapshot describes (no record acquired). Raises ``MessageDecodeError``."""
    return read_persisted_snapshot(data).share_state()


def update_value(snapshot_epoch: int, leader_epoch: int, start_offset: int, runs: Iterable[StateBatch]) -> bytes:
    w = Writer()
    w.write_int16(UPDATE_VALUE_VERSION)
    w.write_int32(snapshot_epoch)
    w.write_int32(leader_epoch)
    w.write_int64(start_offset)
    _write_runs(w, runs)
    return w.to_bytes()


def _apply_update(state: PersistedState | None, data: bytes) -> None:
    r = Reader(data)
    version = r.read_int16()
    if version != UPDATE_VALUE_VERSION:
        raise MessageDecodeError(f"unknown {SHARE_GROUP_STATE_TOPIC_NAME} update version {version}")
    snapshot_epoch, leader_epoch, start_offset = r.read_int32(), r.read_int32(), r.read_int64()
    runs = _read_runs(r)
    if state is None or snapshot_epoch != state.snapshot_epoch:
        return  # an update of an older snapshot cycle that compaction kept: the snapshot after it replaced it
    state.leader_epoch = max(state.leader_epoch, leader_epoch)
    state.apply(start_offset, runs)
    state.updates += 1


def replay(records: Iterable[tuple[bytes, bytes | None]]) -> dict[SharePartitionKey, ShareState]:
    """The share partitions' states the records leave (see the module docstring)."""
    out: dict[SharePartitionKey, PersistedState] = {}
    for key, value in records:
        apply_record(out, key, value)
    return {k: v.share_state() for k, v in out.items()}


def apply_record(states: dict[SharePartitionKey, PersistedState], key: bytes, value: bytes | None) -> None:
    """Replay one record into ``states``. Raises ``MessageDecodeError`` for bytes that do not parse."""
    key_type, k = read_state_key(key)
    if key_type == UPDATE_KEY_TYPE:
        if value is not None:
            _apply_update(states.get(k), value)
    elif value is None:
        states.pop(k, None)
    else:
        states[k] = read_persisted_snapshot(value)


# -- one partition of __share_group_state ---------------------------------------------------------------------
class ShareCoordinatorShard:
    """The states kept in the ``__share_group_state`` partitions this broker serves and the operations on them
    (Kafka's ``ShareCoordinatorShard``, here one object for all the partitions of :attr:`runtime`: a key is served
    by its partition's part). Each operation raises the ``KafkaError`` a client gets: the runtime's error for the
    key's partition (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, or
    the append's error. Appends run under the shard's lock, on the caller's thread; on a cluster the answer of the
    API that called waits for the ISR (the append gate)."""

    def __init__(self, runtime_name: str, partitions: CoordinatorPartition | Sequence[CoordinatorPartition],
                 timer: SystemTimer, time: Time = SYSTEM_TIME,
                 records_per_snapshot: int = DEFAULT_RECORDS_PER_SNAPSHOT) -> None:
        if records_per_snapshot <= 0:
            raise ValueError(f"share.coordinator.snapshot.update.records.per.snapshot must be positive, not "
                             f"{records_per_snapshot}")
        self.time = time
        self.records_per_snapshot = records_per_snapshot
        self.runtime = CoordinatorRuntime(runtime_name, partitions, self, timer, key_of=share_key_of_record)
        self._lock = threading.Lock()
        self._states: dict[SharePartitionKey, PersistedState] = {}
        #: share partition -> the highest update index written or replayed (tombstoned on delete)
        self._max_update_index: dict[SharePartitionKey, int] = {}
        #: records appended: (snapshots, updates, bytes of snapshots, bytes of updates)
        self.appended = [0, 0, 0, 0]

    def partition_of(self, key: SharePartitionKey) -> int:
        return self.runtime.partition_for(share_key(key))

    # -- HostedCoordinator ---------------------------------------------------------------------------------
    def load(self, coordinator_epoch: int | None, partition: int = 0) -> int:
        loaded: dict[SharePartitionKey, PersistedState] = {}
        indexes: dict[SharePartitionKey, int] = {}
        for offset, key, value in self.runtime.get_partition(partition).keyed_records():
            try:
                key_type, k = read_state_key(key)
                if key_type == UPDATE_KEY_TYPE:
                    indexes[k] = max(indexes.get(k, 0), Reader(key[len(key) - 4:]).read_int32())
                apply_record(loaded, key, value)
            except MessageDecodeError as e:
                _log.warning("event=share_state_record_skipped topic=%s partition=%d offset=%d error=%s",
                             SHARE_GROUP_STATE_TOPIC_NAME, partition, offset, e)
        with self._lock:
            self._drop(partition)
            self._states.update(loaded)
            self._max_update_index.update(indexes)
        return len(loaded)

    def on_loaded(self, partition: int = 0) -> None:
        """Nothing to start: the share-partition leaders read their states when they need them."""

    def unload(self, partition: int = 0) -> None:
        with self._lock:
            self._drop(partition)

    def _drop(self, partition: int) -> None:
        for key in [k for k in self._states if self.partition_of(k) == partition]:
            del self._states[key]
        for key in [k for k in self._max_update_index if self.partition_of(k) == partition]:
            del self._max_update_index[key]

    # -- operations ----------------------------------------------------------------------------------------
    def states(self) -> dict[SharePartitionKey, ShareState]:
        """Every share partition's state as loaded and written since (deleted ones left out)."""
        with self._lock:
            return {k: v.share_state() for k, v in self._states.items() if v.start_offset >= 0}

    def read_state(self, key: SharePartitionKey, leader_epoch: int) -> tuple[int, ShareState] | None:
        """(state epoch, state) of ``key`` (None: none kept), read by the leader at ``leader_epoch`` (-1: no
        fencing), which is recorded when newer."""
        with self._lock:
            self._check_active(key)
            current = self._states.get(key)
            if current is None:
                return None
            self._check_leader_epoch(key, current, leader_epoch)
            if leader_epoch > current.leader_epoch:
                self._write(key, current, current.copy(), leader_epoch, -1, [])
            return current.state_epoch, current.share_state()

    def write_state(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: Iterable[StateBatch]) -> None:
        """Apply a leader's write: ``start_offset`` (-1: unchanged) and the batches it changed (all of them is
        fine: only what differs is written as an update)."""
        batches = list(batches)
        with self._lock:
            self._check_active(key)
            current = self._states.get(key)
            if current is not None:
                self._check_leader_epoch(key, current, leader_epoch)
                if state_epoch < current.state_epoch:
                    raise FencedStateEpochError(
                        f"share partition {_name(key)} has state epoch {current.state_epoch}; this write has "
                        f"{state_epoch}: its state was initialized again, read it before writing")
            new = current.copy() if current is not None else PersistedState(state_epoch, leader_epoch)
            new.apply(start_offset, batches)
            self._write(key, current, new, leader_epoch, start_offset, batches)

    def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        """Start the share partition afresh at ``start_offset`` with a newer ``state_epoch`` (nothing in flight)."""
        with self._lock:
            self._check_active(key)
            current = self._states.get(key)
            if current is not None and state_epoch <= current.state_epoch:
                raise FencedStateEpochError(
                    f"share partition {_name(key)} already has state epoch {current.state_epoch}; initializing it "
                    f"needs a newer one than {state_epoch}")
            new = PersistedState(state_epoch, -1 if current is None else current.leader_epoch,
                                 0 if current is None else current.snapshot_epoch, start_offset)
            self._append([(state_key(key), self._snapshot(new))], key, new)

    def delete_state(self, key: SharePartitionKey) -> None:
        """Delete the share partition's state: its updates are tombstoned and its snapshot becomes a deleted one
        (start offset -1, nothing in flight) at the next state epoch, so that a leader still holding the old
        state has its writes fenced (FENCED_STATE_EPOCH) instead of bringing it back; a read finds no state."""
        with self._lock:
            self._check_active(key)
            current = self._states.get(key)
            if current is None or (current.start_offset < 0 and not current.records):
                return
            deleted = PersistedState(current.state_epoch + 1, current.leader_epoch, current.snapshot_epoch)
            records: list[tuple[bytes, bytes | None]] = [(state_key(key), self._snapshot(deleted))]
            records += [(update_key(key, i), None) for i in range(self._max_update_index.get(key, -1) + 1)]
            self._append(records, key, deleted)
            self._max_update_index.pop(key, None)

    def read_state_summary(self, key: SharePartitionKey) -> StateSummary | None:
        """ReadShareGroupStateSummary: the share partition's epochs, start offset (-1: its state was deleted) and
        delivery-complete count (None: it never had a state)."""
        with self._lock:
            self._check_active(key)
            current = self._states.get(key)
            if current is None:
                return None
            done = sum(1 for o, (kind, _) in current.records.items()
                       if o >= current.start_offset and kind in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))
            return StateSummary(current.state_epoch, current.leader_epoch, current.start_offset, done)

    # -- internals (the caller holds the lock) -------------------------------------------------------------
    def _check_active(self, key: SharePartitionKey) -> None:
        code = self.runtime.error_for(share_key(key))
        if code is not None:
            raise _error_of(code, f"{self.runtime.name} partition {self.partition_of(key)} is not served here now "
                                  f"(error {code}): find its coordinator again and retry")

    @staticmethod
    def _check_leader_epoch(key: SharePartitionKey, current: PersistedState, leader_epoch: int) -> None:
        if 0 <= leader_epoch < current.leader_epoch:
            raise FencedLeaderEpochError(
                f"share partition {_name(key)} is led at leader epoch {current.leader_epoch}; this request comes "
                f"from leader epoch {leader_epoch}: that leader lost the topic partition, its writes are refused")

    def _snapshot(self, new: PersistedState) -> bytes:
        new.snapshot_epoch += 1
        new.updates = 0
        return snapshot_value(new)

    def _write(self, key: SharePartitionKey, current: PersistedState | None, new: PersistedState, leader_epoch: int,
               start_offset: int, batches: list[StateBatch]) -> None:
        new.leader_epoch = max(new.leader_epoch, leader_epoch)
        if current is None or current.updates + 1 >= self.records_per_snapshot:
            self._append([(state_key(key), self._snapshot(new))], key, new)
            return
        changed = [o for o in sorted(new.records) if current.records.get(o) != new.records[o]]
        index = current.updates
        new.updates = index + 1
        value = update_value(new.snapshot_epoch, new.leader_epoch,
                             new.start_offset if new.start_offset != current.start_offset else -1,
                             runs_of(new.records, changed))
        self._append([(update_key(key, index), value)], key, new)
        self._max_update_index[key] = max(self._max_update_index.get(key, -1), index)

    def _append(self, records: list[tuple[bytes, bytes | None]], key: SharePartitionKey,
                new: PersistedState | None) -> None:
        builder = MemoryRecordsBuilder(write_limit=_MAX_BATCH_BYTES)
        now = self.time.milliseconds()
        for k, v in records:
            builder.append(now, k, v)
        self.runtime.write(CoordinatorResult(builder.build(), None), self.partition_of(key))  # raises as it does
        for k, v in records:
            if v is not None:
                snapshot = k[1] == SNAPSHOT_KEY_TYPE
                self.appended[0 if snapshot else 1] += 1
                self.appended[2 if snapshot else 3] += len(k) + len(v)
        if new is None:
            self._states.pop(key, None)
        else:
            self._states[key] = new


def _name(key: SharePartitionKey) -> str:
    return f"{key[0]}:{key[1]}:{key[2]}"


def _error_of(code: int, message: str) -> KafkaError:
    return for_code(code)(message)


class ShareStateShards(Protocol):
    """What the share state APIs reach: the shard holding a share partition's state (a single broker's one, or
    a cluster broker's shard of the key's ``__share_group_state`` partition). ``remote_writes``: the
    share-partition leaders' writes wait for other brokers (a cluster), so they are not made on a thread that
    completes a purgatory operation (it may be the one the wait depends on)."""

    remote_writes: bool

    def shard_for(self, key: SharePartitionKey) -> ShareCoordinatorShard: ...


# -- a single broker's share coordinator ----------------------------------------------------------------------
class ShareCoordinator:
    """A single broker's share coordinator: one ``__share_group_state`` partition under ``data_dir`` (None keeps
    nothing: unit tests), loaded at :meth:`startup`, and the in-process
    :class:`~mini_broker.share.partition_manager.SharePersister` of the broker's share partitions (every write
    is in the log when it returns)."""

    def __init__(self, data_dir: str | None, time: Time = SYSTEM_TIME, segment_bytes: int = 104857600,
                 records_per_snapshot: int = DEFAULT_RECORDS_PER_SNAPSHOT) -> None:
        local: Log | None = None
        if data_dir is not None:
            config = LogConfig(segment_bytes=segment_bytes, max_message_bytes=_MAX_BATCH_BYTES,
                               other={"cleanup.policy": "compact"})
            local = Log(os.path.join(data_dir, COORDINATOR_DIR, f"{SHARE_GROUP_STATE_TOPIC_NAME}-0"), config,
                        time=time)
        self.time = time
        self.partition = CoordinatorPartition(local)
        self.timer = SystemTimer("share-coordinator", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
        self.shard = ShareCoordinatorShard(SHARE_GROUP_STATE_TOPIC_NAME, self.partition, self.timer, time,
                                           records_per_snapshot)
        self.runtime = self.shard.runtime
        #: share partition -> the state epoch its leader read
        self._state_epochs: dict[SharePartitionKey, int] = {}
        self.remote_writes = False

    # -- lifecycle -----------------------------------------------------------------------------------------
    def startup(self) -> None:
        self.runtime.startup()
        _log.info("event=share_states_loaded partitions=%d", len(self.shard.states()))

    def shutdown(self) -> None:
        self.runtime.shutdown()
        self.timer.close()
        self.partition.close()

    @property
    def log(self) -> Log | None:
        return self.partition.log

    def shard_for(self, key: SharePartitionKey) -> ShareCoordinatorShard:
        return self.shard

    # -- SharePersister ------------------------------------------------------------------------------------
    def states(self) -> dict[SharePartitionKey, ShareState]:
        """Every share partition's state (what was loaded at startup and written since)."""
        return self.shard.states()

    def read_state(self, key: SharePartitionKey, leader_epoch: int = -1) -> ShareState | None:
        found = self.shard.read_state(key, leader_epoch)
        if found is None:
            return None
        self._state_epochs[key] = found[0]
        return None if found[1].start_offset < 0 else found[1]  # deleted: started afresh at its state epoch

    def write_state(self, key: SharePartitionKey, state: ShareState, leader_epoch: int = -1) -> None:
        """Write the share partition's state (raises as the log does, or FENCED_*_EPOCH)."""
        epoch = self._state_epochs.get(key)
        if epoch is None:  # loaded at startup: the state epoch it has (an admin's reset raised it)
            found = self.shard.read_state(key, -1)
            epoch = self._state_epochs[key] = 0 if found is None else found[0]
        self.shard.write_state(key, epoch, leader_epoch, state.start_offset, state_batches(state))

    def delete_state(self, key: SharePartitionKey) -> None:
        self._state_epochs.pop(key, None)
        self.shard.delete_state(key)

    # -- ShareStateAdmin (the group coordinator's calls) ---------------------------------------------------
    def read_state_summary(self, key: SharePartitionKey) -> StateSummary | None:
        return self.shard.read_state_summary(key)

    def initialize_group_state(self, key: SharePartitionKey, start_offset: int) -> None:
        self._pin_epoch(key)
        found = self.shard.read_state_summary(key)
        self.shard.initialize_state(key, 0 if found is None else found.state_epoch + 1, start_offset)

    def delete_group_state(self, key: SharePartitionKey) -> None:
        self._pin_epoch(key)
        self.shard.delete_state(key)

    def _pin_epoch(self, key: SharePartitionKey) -> None:
        """Keep the state epoch the share partition's leader writes with as it is before an admin's change (a
        leader that did not read the state since this broker started would take the new one), so that the
        leader's writes of the old state are fenced; the leader reads the state again after that."""
        if key not in self._state_epochs:
            found = self.shard.read_state_summary(key)
            if found is not None:
                self._state_epochs[key] = found.state_epoch

    def initialize_state(self, key: SharePartitionKey, start_offset: int) -> None:
        found = self.shard.read_state(key, -1)
        epoch = 0 if found is None else found[0] + 1
        self.shard.initialize_state(key, epoch, start_offset)
        self._state_epochs[key] = epoch
