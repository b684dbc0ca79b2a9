"""Persistence of committed offsets and group metadata (Kafka: ``GroupMetadataManager``).

Everything the group coordinator must keep across restarts is appended to an internal log: a group's records
go to ``__consumer_offsets`` partition ``partition_for(group_id, n)`` (Kafka's ``partitionFor``,
:mod:`mini_broker.coordinator.partitioning`), ``n`` being ``offsets.topic.num.partitions`` (50 by default) when
the topic was created. A single broker keeps the partitions in ``<data dir>/__group_coordinator/
__consumer_offsets-<p>`` (:class:`mini_broker.log.Log` s outside the topic registry and the LogManager's scan, so the
topic never shows up in Metadata; ``partition.count`` keeps the count, and a directory an older version wrote
with ``__consumer_offsets-0`` alone keeps one partition); a partition's log is created at its first record. Each
partition is replayed from its start when the broker starts: the last record per key wins, a null value
deletes. On a cluster broker there is no local log: the coordinator replays each replicated ``__consumer_offsets``
partition while this broker leads it (the coordinator runtime attaches it on election and detaches it on
resignation: :mod:`mini_broker.coordinator.runtime`, driven by ``mini_broker.cluster.coordinator_partitions``),
and the runtime appends through the leader's append.
The log has ``cleanup.policy=compact``, as Kafka's ``__consumer_offsets``: the broker's log cleaner keeps the
latest record per key (a single broker registers the local log with its LogManager; a cluster's replicated
partition is compacted by each replica's broker); it is never trimmed.

Record format (v2 record batches; keys and values use Kafka's classic non-flexible primitives: int16/
int32/int64 big-endian, strings int16-length-prefixed UTF-8, nullable strings length -1, bytes
int32-length-prefixed). The shapes follow Kafka's OffsetCommitKey/Value v3 and GroupMetadataKey/Value v3:

* offset commit  key   ``int16 1, string group, string topic, int32 partition``
  value ``int16 3, int64 offset, int32 leader_epoch, string metadata, int64 commit_timestamp,
  int64 expire_timestamp`` (-1 = none); null value = offset deleted.
* group metadata key   ``int16 2, string group``
  value ``int16 3, nullable string protocol_type, int32 generation, nullable string protocol,
  nullable string leader, int64 current_state_timestamp, int32 n, n x (string member_id,
  nullable string group_instance_id, string client_id, string client_host, int32 rebalance_timeout_ms,
  int32 session_timeout_ms, bytes subscription, bytes assignment)``; null value = group deleted.
* KIP-848 consumer-group records (key versions 3-8, :mod:`mini_broker.group.consumer.records`): kept as they
  are by replay (:attr:`LoadedGroup.consumer_records`); the consumer groups replay them.

Transactional offset commits (TxnOffsetCommit) are offset commit records in a transactional batch of the
producer id and epoch; the transaction's COMMIT/ABORT marker is appended to the same log as a control batch
(``GroupCoordinator.write_txn_marker``, to the group's partition that AddOffsetsToTxn added to the
transaction), as Kafka writes both to ``__consumer_offsets``. Replay
holds a producer's transactional records until its marker: COMMIT applies them, ABORT drops them, and those
without a marker yet come back as the group's pending transactional offsets (:attr:`LoadedGroup.pending_txn_offsets`).
The cleaner drops a marker only once no record of its transaction is left, so replay stays right after a clean.

This module builds the records and replays them; it appends nothing to the coordinator's partition (the
coordinator runtime does, :mod:`mini_broker.coordinator.runtime`). Thread safety: :class:`mini_broker.log.Log`
serialises appends; the runtime appends under the group's lock, so the lock order is group lock -> log lock.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from mini_broker.coordinator.partition import CoordinatorPartition, local_partitions
from mini_broker.group.consumer.records import CONSUMER_GROUP_KEY_VERSIONS
from mini_broker.group.group_requests import CommittedOffset
from mini_broker.log.log_config import LogConfig
from mini_broker.log.unified_log import Log
from mini_broker.producer_state.producer_state_manager import end_txn_marker_of
from mini_broker.share.record_types import SHARE_GROUP_KEY_VERSIONS
from pykafka_client.errors import MessageDecodeError
from pykafka_client.protocol.records import MemoryRecordsBuilder
from pykafka_client.protocol.types import Reader, Writer
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

GROUP_METADATA_TOPIC_NAME: Final = "__consumer_offsets"
COORDINATOR_DIR: Final = "__group_coordinator"
OFFSET_KEY_VERSION: Final = 1
GROUP_KEY_VERSION: Final = 2
VALUE_VERSION: Final = 3
_MAX_BATCH_BYTES: Final = 1 << 30
#: Directories an older version's compaction on load left behind (finished or undone at open).
_COMPACTING_SUFFIX: Final = ".compacting"
_OLD_SUFFIX: Final = ".old"


@dataclass(frozen=True, slots=True)
class StoredMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class StoredGroup:
    """A group as persisted (at the end of a rebalance or when it became Empty)."""

    protocol_type: str | None
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    current_state_timestamp: int
    members: list[StoredMember] = field(default_factory=list)


@dataclass
class LoadedGroup:
    """What replay found for one group id: its metadata (None: only offsets) and its committed offsets."""

    group: StoredGroup | None = None
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    #: producer id -> offsets committed in its transaction, no marker yet.
    pending_txn_offsets: dict[int, dict[tuple[str, int], CommittedOffset]] = field(default_factory=dict)
    #: producer id -> those of its pending partitions a later plain commit superseded.
    superseded_txn_offsets: dict[int, set[tuple[str, int]]] = field(default_factory=dict)
    #: KIP-848 consumer-group records (key -> value, live ones only), replayed by mini_broker/group/consumer
    consumer_records: dict[bytes, bytes] = field(default_factory=dict)
    #: KIP-932 share-group records (key -> value, live ones only), replayed by mini_broker/share
    share_records: dict[bytes, bytes] = field(default_factory=dict)


# -- codec ------------------------------------------------------------------------------------------------
def offset_commit_key(group_id: str, topic: str, partition: int) -> bytes:
    w = Writer()
    w.write_int16(OFFSET_KEY_VERSION)
    w.write_string(group_id)
    w.write_string(topic)
    w.write_int32(partition)
    return w.to_bytes()


def offset_commit_value(om: CommittedOffset) -> bytes:
    w = Writer()
    w.write_int16(VALUE_VERSION)
    w.write_int64(om.offset)
    w.write_int32(om.leader_epoch)
    w.write_string(om.metadata)
    w.write_int64(om.commit_timestamp)
    w.write_int64(om.expire_timestamp)
    return w.to_bytes()


def group_metadata_key(group_id: str) -> bytes:
    w = Writer()
    w.write_int16(GROUP_KEY_VERSION)
    w.write_string(group_id)
    return w.to_bytes()


def group_metadata_value(group: StoredGroup) -> bytes:
    w = Writer()
    w.write_int16(VALUE_VERSION)
    w.write_nullable_string(group.protocol_type)
    w.write_int32(group.generation_id)
    w.write_nullable_string(group.protocol_name)
    w.write_nullable_string(group.leader_id)
    w.write_int64(group.current_state_timestamp)
    w.write_int32(len(group.members))
    for m in group.members:
        w.write_string(m.member_id)
        w.write_nullable_string(m.group_instance_id)
        w.write_string(m.client_id)
        w.write_string(m.client_host)
        w.write_int32(m.rebalance_timeout_ms)
        w.write_int32(m.session_timeout_ms)
        w.write_bytes(m.subscription)
        w.write_bytes(m.assignment)
    return w.to_bytes()


def _read_offset_value(r: Reader) -> CommittedOffset:
    if r.read_int16() != VALUE_VERSION:
        raise MessageDecodeError("unknown offset commit value version")
    return CommittedOffset(offset=r.read_int64(), leader_epoch=r.read_int32(), metadata=r.read_string(),
                             commit_timestamp=r.read_int64(), expire_timestamp=r.read_int64())


def _read_group_value(r: Reader) -> StoredGroup:
    if r.read_int16() != VALUE_VERSION:
        raise MessageDecodeError("unknown group metadata value version")
    protocol_type = r.read_nullable_string()
    generation = r.read_int32()
    protocol = r.read_nullable_string()
    leader = r.read_nullable_string()
    ts = r.read_int64()
    n = r.read_array_length(4 * 6)
    members = [StoredMember(r.read_string(), r.read_nullable_string(), r.read_string(), r.read_string(),
                            r.read_int32(), r.read_int32(), r.read_bytes(), r.read_bytes()) for _ in range(n)]
    return StoredGroup(protocol_type, generation, protocol, leader, ts, members)


def apply_record(groups: dict[str, LoadedGroup], key: bytes, value: bytes | None) -> None:
    """Replay one record into ``groups``. Raises ``MessageDecodeError`` for bytes that do not parse."""
    r = Reader(key)
    version = r.read_int16()
    if version == OFFSET_KEY_VERSION:
        group_id, topic, partition = r.read_string(), r.read_string(), r.read_int32()
        entry = groups.setdefault(group_id, LoadedGroup())
        if value is None:
            entry.offsets.pop((topic, partition), None)
        else:
            entry.offsets[(topic, partition)] = _read_offset_value(Reader(value))
    elif version == GROUP_KEY_VERSION:
        group_id = r.read_string()
        if value is None:
            groups.pop(group_id, None)
        else:
            groups.setdefault(group_id, LoadedGroup()).group = _read_group_value(Reader(value))
    elif version in CONSUMER_GROUP_KEY_VERSIONS or version in SHARE_GROUP_KEY_VERSIONS:
        # KIP-848 consumer groups and KIP-932 share groups: kept for mini_broker/group/consumer and mini_broker/share
        loaded = groups.setdefault(r.read_string(), LoadedGroup())
        records = loaded.consumer_records if version in CONSUMER_GROUP_KEY_VERSIONS else loaded.share_records
        if value is None:
            records.pop(key, None)
        else:
            records[key] = value
    else:
        raise MessageDecodeError(f"unknown __consumer_offsets key version {version}")


def _offset_key(key: bytes) -> tuple[str, tuple[str, int]] | None:
    """(group id, (topic, partition)) of an offset commit key; None for other keys."""
    r = Reader(key)
    if r.read_int16() != OFFSET_KEY_VERSION:
        return None
    group_id, topic = r.read_string(), r.read_string()
    return group_id, (topic, r.read_int32())


def _build(entries: Iterable[tuple[bytes, bytes | None]], now_ms: int) -> bytes | None:
    """One batch of ``entries`` (None when there are none)."""
    builder = MemoryRecordsBuilder(write_limit=_MAX_BATCH_BYTES)
    count = 0
    for key, value in entries:
        builder.append(now_ms, key, value)
        count += 1
    return builder.build() if count else None


def offset_commit_records(group_id: str, offsets: Mapping[tuple[str, int], CommittedOffset],
                          now_ms: int) -> bytes | None:
    """OffsetCommit records of ``group_id`` in one batch (None: no offsets)."""
    return _build([(offset_commit_key(group_id, t, p), offset_commit_value(om)) for (t, p), om in offsets.items()],
                  now_ms)


def txn_offset_commit_records(group_id: str, producer_id: int, producer_epoch: int,
                              offsets: Mapping[tuple[str, int], CommittedOffset], now_ms: int) -> bytes:
    """OffsetCommit records in a transactional batch of ``producer_id`` (pending until its marker)."""
    builder = MemoryRecordsBuilder(write_limit=_MAX_BATCH_BYTES, producer_id=producer_id,
                                   producer_epoch=producer_epoch, is_transactional=True)
    for (t, p), om in offsets.items():
        builder.append(now_ms, offset_commit_key(group_id, t, p), offset_commit_value(om))
    return builder.build()


def group_metadata_records(group_id: str, group: StoredGroup, now_ms: int,
                           preceding: Iterable[tuple[bytes, bytes | None]] = ()) -> bytes | None:
    """The GroupMetadata record of ``group_id``, after ``preceding`` records in the same batch."""
    return _build([*preceding, (group_metadata_key(group_id), group_metadata_value(group))], now_ms)


def tombstone_records(group_id: str, offsets: Iterable[tuple[str, int]], group_too: bool, now_ms: int) -> bytes | None:
    """Tombstones for ``offsets`` of ``group_id`` and, with ``group_too``, for the group itself (None: none)."""
    entries: list[tuple[bytes, bytes | None]] = [(offset_commit_key(group_id, t, p), None) for t, p in offsets]
    if group_too:
        entries.append((group_metadata_key(group_id), None))
    return _build(entries, now_ms)


def _apply_logged(groups: dict[str, LoadedGroup], key: bytes, value: bytes | None, offset: int) -> None:
    try:
        apply_record(groups, key, value)
    except MessageDecodeError as e:
        _log.warning("skipping an unreadable %s record at offset %d: %s", GROUP_METADATA_TOPIC_NAME, offset, e)


class GroupMetadataManager:
    """Replays the internal log (the group coordinator returns its records, built by
    :func:`offset_commit_records`, :func:`group_metadata_records`, ..., and the coordinator runtime appends them).
    ``data_dir`` None keeps nothing (unit tests).

    The local logs have ``cleanup.policy=compact`` (the broker registers them with its log cleaner); opening the
    manager finishes or undoes a compaction-by-rewrite an older version left interrupted (``.compacting`` /
    ``.old`` directories). ``num_partitions``: ``offsets.topic.num.partitions`` (a single broker's existing
    directory keeps its own count).
    """

    def __init__(self, data_dir: str | None, time: Time = SYSTEM_TIME, segment_bytes: int = 104857600,
                 num_partitions: int = 1) -> None:
        self._time = time
        self._config = LogConfig(segment_bytes=segment_bytes, max_message_bytes=_MAX_BATCH_BYTES,
                                 other={"cleanup.policy": "compact"})
        self._parent = None if data_dir is None else os.path.join(data_dir, COORDINATOR_DIR)
        if self._parent is not None:
            self._recover_interrupted_compaction(self._parent)
        #: the logs replayed here and appended to by the runtime (which attaches a cluster's replicated partitions
        #: on election), by partition
        self.partitions: list[CoordinatorPartition] = local_partitions(
            self._parent, GROUP_METADATA_TOPIC_NAME, num_partitions, self._config,
            lambda path, config: Log(path, config, time=self._time))

    @property
    def partition(self) -> CoordinatorPartition:
        """Partition 0 (the only one of a one-partition topic)."""
        return self.partitions[0]

    @staticmethod
    def _recover_interrupted_compaction(parent: str) -> None:
        old, compacting = parent + _OLD_SUFFIX, parent + _COMPACTING_SUFFIX
        if not os.path.exists(parent) and os.path.exists(old):
            # Crashed between the two renames: the compacted copy is complete, else the old one is kept.
            os.replace(compacting if os.path.exists(compacting) else old, parent)
        shutil.rmtree(compacting, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)

    @property
    def log(self) -> Log | None:
        return self.partition.log

    def load(self, partition: CoordinatorPartition | None = None) -> dict[str, LoadedGroup]:
        """Replay the whole log of ``partition`` (None: partition 0): group id -> what is stored for it (groups
        deleted since are absent)."""
        groups: dict[str, LoadedGroup] = {}
        part = self.partition if partition is None else partition
        log = part.opened_log
        if log is None:
            return groups
        end = log.log_end_offset
        #: producer id -> its transactional records not yet resolved by a marker, in log order
        in_txn: dict[int, list[tuple[bytes, bytes | None]]] = {}
        #: producer id -> keys of its transactional records a later plain record superseded
        superseded: dict[int, set[bytes]] = {}
        for batch, first in part.batches():
            if batch.is_control:
                marker = end_txn_marker_of(batch)
                resolved = in_txn.pop(batch.producer_id, [])
                newer = superseded.pop(batch.producer_id, set())
                if marker is not None and not marker[0]:
                    for key, value in resolved:
                        if key not in newer:
                            _apply_logged(groups, key, value, batch.base_offset)
                continue
            for record in batch.records():
                if record.offset < first or record.key is None:
                    continue
                key, value = bytes(record.key), None if record.value is None else bytes(record.value)
                if batch.is_transactional:
                    in_txn.setdefault(batch.producer_id, []).append((key, value))
                    superseded.get(batch.producer_id, set()).discard(key)
                else:
                    _apply_logged(groups, key, value, record.offset)
                    for pid, pending in in_txn.items():
                        if any(k == key for k, _ in pending):
                            superseded.setdefault(pid, set()).add(key)
        _log.info("loaded %d groups from %s (offsets %d..%d)", len(groups), log.dir_path, log.log_start_offset, end)
        for pid, pending in in_txn.items():
            scratch: dict[str, LoadedGroup] = {}
            for key, value in pending:
                _apply_logged(scratch, key, value, -1)
            later = [k for k in map(_offset_key, superseded.get(pid, set())) if k is not None]
            for group_id, loaded in scratch.items():
                entry = groups.setdefault(group_id, LoadedGroup())
                entry.pending_txn_offsets[pid] = loaded.offsets
                entry.superseded_txn_offsets[pid] = {tp for g, tp in later if g == group_id}
        return groups

    def close(self) -> None:
        """Close the local logs (a cluster's replicated partitions are the LogManager's)."""
        for part in self.partitions:
            part.close()
