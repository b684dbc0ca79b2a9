"""``__transaction_state``: the transaction coordinator's internal log (Kafka: ``TransactionLog`` and the
log half of ``TransactionStateManager``).

Every state change of a transactional id is appended (and fsynced) by the coordinator runtime before the
coordinator acts on it or answers the client (the coordinator returns the records:
:func:`transaction_state_records`); the log is replayed when the broker starts, the last record per key winning and a null
value (a Dead id's tombstone) deleting. A transactional id's records go to partition
``partition_for(transactional_id, n)`` (Kafka's ``partitionFor``, :mod:`mini_broker.coordinator.partitioning`), ``n``
being ``transaction.state.log.num.partitions`` (50 by default) when the topic was created. A single broker keeps
the partitions in ``<data dir>/__transaction_coordinator/__transaction_state-<p>`` (:class:`mini_broker.log.Log` s
outside the topic registry, so the topic is never in Metadata; ``partition.count`` keeps the count, and a
directory an older version wrote with ``__transaction_state-0`` alone keeps one partition); a partition's log is
created at its first record. The logs are compacted. On a cluster broker there is no local log: the coordinator
runtime attaches each replicated ``__transaction_state`` partition while this broker leads it
(:mod:`mini_broker.coordinator.runtime`, driven by ``mini_broker.cluster.coordinator_partitions``).

Record format. The vendored protocol specs have no TransactionLogKey/TransactionLogValue schema, so this is
a small versioned format shaped after Kafka's TransactionLogKey v0 / TransactionLogValue v0 (classic
non-flexible primitives, big-endian; strings int16-length-prefixed UTF-8):

* key   ``int16 0 (key version), string transactional_id``
* value ``int16 0 (value version), int64 producer_id, int64 previous_producer_id, int16 producer_epoch,
  int16 last_producer_epoch, int32 transaction_timeout_ms, int8 state id, int32 n topics x (string topic,
  int32 m x int32 partition), int64 last_update_timestamp_ms, int64 start_timestamp_ms``
* a null value: the transactional id is Dead and removed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Final

from mini_broker.coordinator.partition import CoordinatorPartition, local_partitions
from mini_broker.log.log_config import LogConfig
from mini_broker.log.unified_log import Log
from mini_broker.transaction.transaction_metadata import TxnTransitMetadata
from mini_broker.transaction.transaction_state import TransactionState
from pykafka_client.errors import MessageDecodeError
from pykafka_client.protocol.records import MemoryRecordsBuilder
from pykafka_client.protocol.types import Reader, Writer
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC_NAME: Final = "__transaction_state"
COORDINATOR_DIR: Final = "__transaction_coordinator"
KEY_VERSION: Final = 0
VALUE_VERSION: Final = 0
_MAX_BATCH_BYTES: Final = 1 << 30


# -- codec ------------------------------------------------------------------------------------------------
def transaction_log_key(transactional_id: str) -> bytes:
    w = Writer()
    w.write_int16(KEY_VERSION)
    w.write_string(transactional_id)
    return w.to_bytes()


def transaction_log_value(t: TxnTransitMetadata) -> bytes | None:
    """The record value of ``t``: None (a tombstone) for Dead."""
    if t.state is TransactionState.DEAD:
        return None
    w = Writer()
    w.write_int16(VALUE_VERSION)
    w.write_int64(t.producer_id)
    w.write_int64(t.previous_producer_id)
    w.write_int16(t.producer_epoch)
    w.write_int16(t.last_producer_epoch)
    w.write_int32(t.txn_timeout_ms)
    w.write_int8(t.state.id)
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(t.partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    w.write_int32(len(by_topic))
    for topic, parts in by_topic.items():
        w.write_string(topic)
        w.write_int32(len(parts))
        for p in parts:
            w.write_int32(p)
    w.write_int64(t.txn_last_update_timestamp)
    w.write_int64(t.txn_start_timestamp)
    return w.to_bytes()


def read_transaction_log_key(key: bytes) -> str:
    r = Reader(key)
    version = r.read_int16()
    if version != KEY_VERSION:
        raise MessageDecodeError(f"unknown {TRANSACTION_STATE_TOPIC_NAME} key version {version}")
    return r.read_string()


def read_transaction_log_value(value: bytes) -> TxnTransitMetadata:
    r = Reader(value)
    version = r.read_int16()
    if version != VALUE_VERSION:
        raise MessageDecodeError(f"unknown {TRANSACTION_STATE_TOPIC_NAME} value version {version}")
    producer_id, previous_producer_id = r.read_int64(), r.read_int64()
    producer_epoch, last_producer_epoch = r.read_int16(), r.read_int16()
    timeout = r.read_int32()
    try:
        state = TransactionState.from_id(r.read_int8())
    except ValueError as e:
        raise MessageDecodeError(str(e)) from None
    partitions: set[TopicPartition] = set()
    for _ in range(r.read_array_length(6)):
        topic = r.read_string()
        partitions.update(TopicPartition(topic, r.read_int32()) for _ in range(r.read_array_length(4)))
    last_update, start = r.read_int64(), r.read_int64()
    return TxnTransitMetadata(producer_id, previous_producer_id, producer_epoch, last_producer_epoch, timeout, state,
                              frozenset(partitions), start, last_update)


def transaction_state_records(entries: Mapping[str, TxnTransitMetadata], now_ms: int) -> bytes:
    """One batch with a record per transactional id (a tombstone for Dead): what the transaction coordinator
    returns for the runtime to append (and fsync) before it completes the transitions."""
    builder = MemoryRecordsBuilder(write_limit=_MAX_BATCH_BYTES)
    for transactional_id, transit in entries.items():
        builder.append(now_ms, transaction_log_key(transactional_id), transaction_log_value(transit))
    return builder.build()


def apply_record(loaded: dict[str, TxnTransitMetadata], key: bytes, value: bytes | None) -> None:
    """Replay one record into ``loaded``. Raises ``MessageDecodeError`` for bytes that do not parse."""
    transactional_id = read_transaction_log_key(key)
    if value is None:
        loaded.pop(transactional_id, None)
    else:
        loaded[transactional_id] = read_transaction_log_value(value)


class TransactionLog:
    """Replays transaction state records from the coordinator's
    :class:`~mini_broker.coordinator.partition.CoordinatorPartition` (the runtime attaches a cluster's
    replicated partition on election, and appends what the coordinator's transitions return:
    :func:`transaction_state_records`). ``data_dir`` None keeps nothing (unit tests). ``num_partitions``:
    ``transaction.state.log.num.partitions`` (a single broker's existing directory keeps its own count)."""

    def __init__(self, data_dir: str | None, time: Time = SYSTEM_TIME, segment_bytes: int = 104857600,
                 num_partitions: int = 1) -> None:
        config = LogConfig(segment_bytes=segment_bytes, max_message_bytes=_MAX_BATCH_BYTES,
                           other={"cleanup.policy": "compact"})  # as Kafka's __transaction_state
        #: by partition
        self.partitions: list[CoordinatorPartition] = local_partitions(
            None if data_dir is None else os.path.join(data_dir, COORDINATOR_DIR), TRANSACTION_STATE_TOPIC_NAME,
            num_partitions, config, lambda path, cfg: Log(path, cfg, time=time))

    @property
    def partition(self) -> CoordinatorPartition:
        """Partition 0 (the only one of a one-partition topic)."""
        return self.partitions[0]

    @property
    def log(self) -> Log | None:
        return self.partition.log

    def load(self, partition: CoordinatorPartition | None = None) -> dict[str, TxnTransitMetadata]:
        """Replay the whole log of ``partition`` (None: partition 0): transactional id -> its last state (Dead ids
        are absent)."""
        loaded: dict[str, TxnTransitMetadata] = {}
        part = self.partition if partition is None else partition
        log = part.opened_log
        if log is None:
            return loaded
        end = log.log_end_offset
        for offset, key, value in part.keyed_records():
            try:
                apply_record(loaded, key, value)
            except MessageDecodeError as e:
                _log.warning("skipping an unreadable %s record at offset %d: %s", TRANSACTION_STATE_TOPIC_NAME,
                             offset, e)
        _log.info("loaded %d transactional ids from %s (offsets %d..%d)", len(loaded), log.dir_path,
                  log.log_start_offset, end)
        return loaded

    def close(self) -> None:
        """Close the local logs (a cluster's replicated partitions are the LogManager's)."""
        for part in self.partitions:
            part.close()
