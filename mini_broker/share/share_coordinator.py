"""The share coordinator (KIP-932): share-partition state kept in the internal compacted topic
``__share_group_state``, so that a restarted broker hands out what it had not finished and never again what was
acknowledged. Hosted by a :class:`~mini_broker.coordinator.runtime.CoordinatorRuntime` like the group and the
transaction coordinators; a single broker keeps the partition in its data dir (a cluster's failover of this
state is not built: a cluster broker keeps share-partition state in memory only).

One record per share partition, keyed ``(group id, topic id, partition)``: a *snapshot* (Kafka's ShareSnapshot
semantics, WriteShareGroupState writing a whole snapshot each time) of the start offset, the state epoch and the
in-flight records as runs ``(first offset, last offset, state, delivery count)``. An acquired record is written
as available with its delivery count: its acquisition lock does not outlive the broker. A deleted share
partition (its group deleted) gets a tombstone. Compaction keeps the last snapshot of each key.

Layouts (big-endian, as the protocol's primitive types):

* key: ``int16 0`` (snapshot), ``string group``, ``uuid topic``, ``int32 partition``
* value: ``int16 0`` (value version), ``int32 state epoch``, ``int64 start offset``, ``int32 n`` x
  (``int64 first``, ``int64 last``, ``int8 state``, ``int16 delivery count``)
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterable
from typing import Final

from mini_broker.coordinator.partition import CoordinatorPartition
from mini_broker.coordinator.result import CoordinatorResult
from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.log.log_config import LogConfig
from mini_broker.log.unified_log import Log
from mini_broker.share.share_partition import InFlightRecord, RecordState, ShareState
from mini_broker.timer.system_timer import SystemTimer
from pykafka_client.errors import MessageDecodeError
from pykafka_client.protocol.records import MemoryRecordsBuilder
from pykafka_client.protocol.types import Reader, Writer
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

SHARE_GROUP_STATE_TOPIC_NAME: Final = "__share_group_state"
COORDINATOR_DIR: Final = "__share_coordinator"
SNAPSHOT_KEY_TYPE: Final = 0
VALUE_VERSION: Final = 0
_MAX_BATCH_BYTES: Final = 1 << 30

#: (group id, topic id, partition)
SharePartitionKey = tuple[str, uuid.UUID, int]


# -- codec ---------------------------------------------------------------------------------------------------
def state_key(key: SharePartitionKey) -> bytes:
    w = Writer()
    w.write_int16(SNAPSHOT_KEY_TYPE)
    w.write_string(key[0])
    w.write_uuid(key[1])
    w.write_int32(key[2])
    return w.to_bytes()


def read_state_key(data: bytes) -> SharePartitionKey:
    r = Reader(data)
    key_type = r.read_int16()
    if key_type != SNAPSHOT_KEY_TYPE:
        raise MessageDecodeError(f"unknown {SHARE_GROUP_STATE_TOPIC_NAME} key type {key_type}")
    return r.read_string(), r.read_uuid(), r.read_int32()


def _persisted(record: InFlightRecord) -> tuple[RecordState, int]:
    """What survives the broker: an acquired record is available again, with its delivery count."""
    state = RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
    return state, record.delivery_count


def state_batches(state: ShareState) -> list[tuple[int, int, RecordState, int]]:
    """The in-flight records of ``state`` as runs (first, last, persisted state, delivery count)."""
    runs: list[tuple[int, int, RecordState, int]] = []
    for offset in range(state.start_offset, state.end_offset):
        kind, count = _persisted(state.records[offset])
        if runs and runs[-1][1] == offset - 1 and runs[-1][2:] == (kind, count):
            runs[-1] = (runs[-1][0], offset, kind, count)
        else:
            runs.append((offset, offset, kind, count))
    return runs


def snapshot_value(state: ShareState, state_epoch: int = 0) -> bytes:
    w = Writer()
    w.write_int16(VALUE_VERSION)
    w.write_int32(state_epoch)
    w.write_int64(state.start_offset)
    runs = state_batches(state)
    w.write_int32(len(runs))
    for first, last, kind, count in runs:
        w.write_int64(first)
        w.write_int64(last)
        w.write_int8(int(kind))
        w.write_int16(count)
    return w.to_bytes()


def read_snapshot_value(data: bytes) -> ShareState:
    """The state a snapshot describes (no record acquired). Raises ``MessageDecodeError``."""
    r = Reader(data)
    version = r.read_int16()
    if version != VALUE_VERSION:
        raise MessageDecodeError(f"unknown {SHARE_GROUP_STATE_TOPIC_NAME} value version {version}: this broker "
                                 f"reads version {VALUE_VERSION}")
    r.read_int32()  # state epoch
    start = r.read_int64()
    state = ShareState(start, start, {})
    for _ in range(r.read_array_length(4)):
        first, last, kind, count = r.read_int64(), r.read_int64(), r.read_int8(), r.read_int16()
        if first != state.end_offset or last < first:
            raise MessageDecodeError(f"share state batch {first}-{last} does not follow offset {state.end_offset}")
        try:
            record_state = RecordState(kind)
        except ValueError:
            raise MessageDecodeError(f"unknown share record state {kind}") from None
        for offset in range(first, last + 1):
            state.records[offset] = InFlightRecord(record_state, count)
        state.end_offset = last + 1
    return state


def replay(records: Iterable[tuple[bytes, bytes | None]]) -> dict[SharePartitionKey, ShareState]:
    """The share partitions' states the records leave (the last snapshot of each key; a tombstone removes it)."""
    out: dict[SharePartitionKey, ShareState] = {}
    for key, value in records:
        apply_record(out, key, value)
    return out


def apply_record(states: dict[SharePartitionKey, ShareState], key: bytes, value: bytes | None) -> None:
    """Replay one record into ``states``. Raises ``MessageDecodeError`` for bytes that do not parse."""
    k = read_state_key(key)
    if value is None:
        states.pop(k, None)
    else:
        states[k] = read_snapshot_value(value)


# -- the hosted coordinator ----------------------------------------------------------------------------------
class ShareCoordinator:
    """Keeps share-partition state in ``__share_group_state`` under ``data_dir`` (None keeps nothing: unit tests).
    :meth:`startup` replays it; :meth:`states` is what was loaded; :meth:`write_state` / :meth:`delete_state`
    append (on the caller's thread; the append is in the log when they return)."""

    def __init__(self, data_dir: str | None, time: Time = SYSTEM_TIME, segment_bytes: int = 104857600) -> None:
        local: Log | None = None
        if data_dir is not None:
            config = LogConfig(segment_bytes=segment_bytes, max_message_bytes=_MAX_BATCH_BYTES,
                               other={"cleanup.policy": "compact"})
            local = Log(os.path.join(data_dir, COORDINATOR_DIR, f"{SHARE_GROUP_STATE_TOPIC_NAME}-0"), config,
                        time=time)
        self.time = time
        self.partition = CoordinatorPartition(local)
        self.timer = SystemTimer("share-coordinator", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
        self.runtime = CoordinatorRuntime(SHARE_GROUP_STATE_TOPIC_NAME, self.partition, self, self.timer)
        self._loaded: dict[SharePartitionKey, ShareState] = {}

    # -- HostedCoordinator ---------------------------------------------------------------------------------
    def load(self, coordinator_epoch: int | None, partition: int = 0) -> int:
        """Replay ``__share_group_state`` (one partition here)."""
        loaded: dict[SharePartitionKey, ShareState] = {}
        for offset, key, value in self.partition.keyed_records():
            try:
                apply_record(loaded, key, value)
            except MessageDecodeError as e:
                _log.warning("event=share_state_record_skipped topic=%s offset=%d error=%s",
                             SHARE_GROUP_STATE_TOPIC_NAME, offset, e)
        self._loaded = loaded
        return len(loaded)

    def on_loaded(self, partition: int = 0) -> None:
        """Nothing to start: the partition manager takes the loaded states when the broker builds it."""

    def unload(self, partition: int = 0) -> None:
        self._loaded = {}

    # -- lifecycle -----------------------------------------------------------------------------------------
    def startup(self) -> None:
        self.runtime.startup()
        _log.info("event=share_states_loaded partitions=%d", len(self._loaded))

    def shutdown(self) -> None:
        self.runtime.shutdown()
        self.timer.close()
        self.partition.close()

    @property
    def log(self) -> Log | None:
        return self.partition.log

    # -- state ---------------------------------------------------------------------------------------------
    def states(self) -> dict[SharePartitionKey, ShareState]:
        """The share partitions' states loaded at startup."""
        return dict(self._loaded)

    def write_state(self, key: SharePartitionKey, state: ShareState) -> None:
        """Append the share partition's snapshot (raises as the log does)."""
        self._append(state_key(key), snapshot_value(state))

    def delete_state(self, key: SharePartitionKey) -> None:
        self._append(state_key(key), None)

    def _append(self, key: bytes, value: bytes | None) -> None:
        builder = MemoryRecordsBuilder(write_limit=_MAX_BATCH_BYTES)
        builder.append(self.time.milliseconds(), key, value)
        self.runtime.write(CoordinatorResult(builder.build(), None))
