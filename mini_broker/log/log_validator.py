"""Checking the batches of an append and assigning their offsets (Java ``LogValidator`` and
``UnifiedLog.analyzeAndValidateRecords``), apart from the log's files and locks.

:func:`analyze_and_validate` runs before the log lock is taken: each batch is checked with
``batch_ops.check_batch`` (one kernel call on the compiled kernel): ``validate_batch`` (CRC, framing, and the
client rules when the origin is the client), and its records decoded and checked (except for replication), its size is
checked against ``max.message.bytes`` and, for CreateTime batches, each record's timestamp against
``message.timestamp.before/after.max.ms``, and on a compacted topic each record must have a key
(``batch_ops.check_records``, on the compiled record kernel when it is active). The whole request is rejected before anything is written.

:func:`assign_offsets` runs under the log lock: it rewrites only the batch headers (base offset, partition
leader epoch and, on ``LogAppendTime`` topics, the append time). Records are never re-encoded, so a topic
``compression.type`` other than ``producer`` is not applied (deferred). Replicated batches keep their
offsets, which must not go backwards.
"""

from __future__ import annotations

import struct
from enum import Enum
from typing import NamedTuple

from crc32c import crc32c

from mini_broker.log.log_config import LONG_MAX, LogConfig
from mini_broker.log.log_segment import AppendedBatch
from mini_broker.utils.positional_tuple import positional_tuple
from pykafka_client.errors import CorruptRecordError, MessageDecodeError, RecordTooLargeError
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.batch_ops import (
    check_batch,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from pykafka_client.protocol.records.default_record_batch import PARTITION_LEADER_EPOCH_OFFSET, DefaultRecordBatch

_INT32 = struct.Struct(">i")


class AppendOrigin(Enum):
    """Who appends: a producer (offsets assigned, client rules), the coordinator (offsets assigned),
    or replication (offsets kept as they are and checked)."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


#: the members, read once (an Enum class attribute read goes through EnumType.__getattr__ on Python 3.11)
_CLIENT = AppendOrigin.CLIENT
_REPLICATION = AppendOrigin.REPLICATION


class AppendChecks(NamedTuple):
    """The values of a log config that an append reads (:meth:`of` computes them once per config, not per append):
    whether it stamps LogAppendTime, whether the topic is compacted (every record needs a key), the largest batch,
    the bounds of CreateTime record timestamps (``LONG_MAX``: not checked) and ``flush.messages``."""

    log_append_time: bool
    compacted: bool
    max_message_bytes: int
    before_max_ms: int
    after_max_ms: int
    flush_interval_messages: int

    @classmethod
    def of(cls, config: LogConfig) -> AppendChecks:
        log_append_time = config.is_log_append_time
        return cls(
            log_append_time,
            "compact" in str(config.other.get("cleanup.policy", "delete")),
            config.max_message_bytes,
            LONG_MAX if log_append_time else config.timestamp_before_max_ms,
            LONG_MAX if log_append_time else config.timestamp_after_max_ms,
            config.flush_interval_messages,
        )


def analyze_and_validate(
    buf: bytearray | memoryview, origin: AppendOrigin, checks: AppendChecks, now: int
) -> list[DefaultRecordBatch]:
    """The batches of ``buf``, each checked (see the module docstring) with the log config's ``checks``; raises
    ``CorruptRecordError``, ``InvalidRecordError``, ``UnsupportedCompressionTypeError``, ``RecordTooLargeError`` or
    ``InvalidTimestampError`` on the first bad one."""
    batches: list[DefaultRecordBatch] = []
    pos = 0
    end = len(buf)
    _, compacted, max_message_bytes, before_max_ms, after_max_ms, _ = checks
    from_client = origin is _CLIENT
    replicated = origin is _REPLICATION
    while pos < end:
        if end - pos >= 12:
            size = _INT32.unpack_from(buf, pos + 8)[0] + 12
            if size > max_message_bytes and size <= end - pos:
                raise RecordTooLargeError(
                    f"batch of {size} bytes is larger than max.message.bytes={max_message_bytes}"
                )
        # The header and CRC and, but for replication, every record decoded (as Java's LogValidator): consecutive
        # offsets, well-formed records, timestamps in bounds and, on a compacted topic, keys. (Only the record
        # checks raise MessageDecodeError.)
        try:
            batch = check_batch(
                buf,
                pos,
                from_client=from_client,
                deep=not replicated,
                now=now,
                before_max_ms=before_max_ms,
                after_max_ms=after_max_ms,
                require_keys=compacted,
            )
        except MessageDecodeError as e:
            raise CorruptRecordError(f"batch at byte {pos}: {e}") from e
        batches.append(batch)
        pos += batch.size_in_bytes
    return batches


#: the header fields of a client's append that is one batch, as :func:`single_client_batch` reads them: size, producer id,
#: producer epoch, base sequence, last offset delta, max timestamp, attributes, records count
ClientBatch = tuple[int, int, int, int, int, int, int, int]


def single_client_batch(buf: bytearray | memoryview, checks: AppendChecks, now: int) -> ClientBatch | None:
    """The common Produce append in one kernel call: when ``buf`` is exactly one batch that
    :func:`analyze_and_validate` accepts from a client with ``checks`` at ``now``, its header fields (as
    :class:`ClientBatch` values, a plain tuple); None otherwise (no kernel, several batches, a compressed one, or
    one the reference refuses: the caller runs :func:`analyze_and_validate`, which raises the error). The header
    is then the one :func:`assign_client_batch` rewrites."""
    kernel = _native.kernel
    if kernel is None:
        return None
    _, compacted, max_message_bytes, before_max_ms, after_max_ms, _ = checks
    return kernel.client_batch_header(buf, now, before_max_ms, after_max_ms, compacted, max_message_bytes, crc32c)


class AssignedOffsets(NamedTuple):
    """What :func:`assign_offsets` did: each batch's place for the segment, and the append's totals (a named tuple:
    one per append)."""

    next_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    num_records: int
    batches: list[AppendedBatch]


def assign_offsets(
    buf: bytearray | memoryview,
    batches: list[DefaultRecordBatch],
    origin: AppendOrigin,
    first_offset: int,
    leader_epoch: int,
    log_append_time: int | None,
) -> AssignedOffsets:
    """Give the batches of ``buf`` offsets from ``first_offset`` (replication: check theirs), stamp the
    leader epoch and, when ``log_append_time`` is set, the append time, rewriting headers in place."""
    replicated = origin is _REPLICATION
    next_offset, max_timestamp, offset_of_max_timestamp, num_records = first_offset, -1, -1, 0
    appended: list[AppendedBatch] = []
    for batch in batches:
        pos = batch.position
        if replicated:
            if batch.base_offset < next_offset:
                raise CorruptRecordError(f"replicated offsets go backwards at {batch.base_offset}")
            base = batch.base_offset
        else:
            base = next_offset
            set_base_offset(buf, pos, base)
            set_partition_leader_epoch(buf, pos, leader_epoch)
        batch_max_ts = batch.max_timestamp
        if log_append_time is not None and not replicated:
            set_log_append_time(buf, pos, log_append_time)
            batch_max_ts = log_append_time
        last = base + batch.last_offset_delta
        if batch_max_ts > max_timestamp:
            max_timestamp, offset_of_max_timestamp = batch_max_ts, last
        appended.append(_new_appended_batch(pos, last, batch_max_ts, batch.size_in_bytes))
        num_records += batch.records_count
        next_offset = last + 1
    return _new_assigned_offsets(next_offset, max_timestamp, offset_of_max_timestamp, num_records, appended)


_BASE_OFFSET = struct.Struct(">q")


def assign_client_batch(buf: bytearray | memoryview, batch: ClientBatch, first_offset: int, leader_epoch: int,
                        log_append_time: int | None) -> AssignedOffsets:
    """:func:`assign_offsets` for the one batch of a client's append that :func:`single_client_batch` read (at byte
    0 of ``buf``): the same header rewrites and the same result, from the fields rather than a batch view."""
    size, _, _, _, last_offset_delta, batch_max_ts, _, records_count = batch
    _BASE_OFFSET.pack_into(buf, 0, first_offset)
    _INT32.pack_into(buf, PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
    if log_append_time is not None:
        set_log_append_time(buf, 0, log_append_time)
        batch_max_ts = log_append_time
    last = first_offset + last_offset_delta
    appended = [_new_appended_batch(0, last, batch_max_ts, size)]
    if batch_max_ts > -1:
        return _new_assigned_offsets(last + 1, batch_max_ts, last, records_count, appended)
    return _new_assigned_offsets(last + 1, -1, -1, records_count, appended)


#: AppendedBatch (one per batch appended) and AssignedOffsets (one per append) made without their Python-level __new__
_new_appended_batch = positional_tuple(AppendedBatch)
_new_assigned_offsets = positional_tuple(AssignedOffsets)
