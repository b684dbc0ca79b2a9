"""A batch of records for one partition (Java ``ProducerBatch``).

With the compiled kernel, each record is encoded into the batch's records section as it is appended (Java
``MemoryRecordsBuilder``: the kernel's ``PendingRecords``, see
:class:`~pykafka_client.producer.batch_append.PendingList`), keeping besides its bytes only its delivery callback,
if any; :meth:`ProducerBatch.records` then writes the batch header (producer id, epoch, base sequence, CRC) around
them, the first time it is asked and whenever the producer state changes, e.g. after an epoch bump, and compresses
them when a codec is set. The pure-Python reference keeps the records as tuples (:data:`PendingRecord`) and
encodes them there; both give the same bytes. Record sizes are computed exactly at append time; without
compression ``batch.size`` bounds the encoded batch exactly, with compression it bounds the estimated compressed
size (uncompressed size x the topic's estimated ratio x 1.05, as Java), so a compressed batch may come out larger
and be split if the broker rejects it.

Invariants:

* A batch reaches a final state once (SUCCEEDED, FAILED or ABORTED); a later ``done`` returns False and does
  not touch the record futures (a batch that expired and then got a late response stays failed). A batch
  that was split has no final state of its own: its records (and futures) moved to the new batches.
* The first record always fits, even when it alone exceeds ``batch.size`` (the accumulator sizes such a
  batch for it).
* Sequence numbers are assigned at drain (``set_producer_state``), never at append.
* Completion order (Java): the records' delivery callbacks run first, then all futures complete at once.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

from pykafka_client.producer import batch_append as _batch_append
from pykafka_client.producer.batch_append import PendingList
from pykafka_client.producer.batch_encoder import encode_batch
from pykafka_client.producer.future_record_metadata import BatchOutcome, Column, FutureRecordMetadata, column_at
from pykafka_client.producer.record_metadata import RecordMetadata
from pykafka_client.producer.record_size import (
    COMPRESSION_RATE_ESTIMATION_FACTOR,
    RECORD_BATCH_OVERHEAD,
    Callback,
    Header,
    record_size_in_bytes,
)
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
INT_MAX = 2**31 - 1
def increment_sequence(sequence: int, increment: int) -> int:
    """Add to a sequence number, wrapping from Int.MAX_VALUE to 0 (Java ``DefaultRecordBatch.incrementSequence``)."""
    if sequence > INT_MAX - increment:
        return increment - (INT_MAX - sequence) - 1
    return sequence + increment


class FinalState(enum.Enum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    ABORTED = "ABORTED"


#: One appended record (Java ``Thunk`` plus the record's bytes): ``(timestamp, key, value, headers, callback)``, as
#: the reference keeps it (the kernel's ``PendingRecords`` keeps its bytes and rebuilds the tuple when read).
#:
#: An exact tuple, so that an append costs no Python-level constructor and, above all, so that the garbage
#: collector stops tracking it at its first pass when it holds only untracked objects (a record without
#: headers or callback): CPython untracks only *exact* tuples, never instances of a tuple subclass such as a
#: NamedTuple. A tracked record stays alive while its batch waits in the accumulator or in flight, is promoted
#: to the oldest generation and, tens of thousands at a time, triggers full collections (13-28 ms pauses of
#: the producing thread, measured by ``bench/async.py``'s gen2 column). It does not hold the record's future:
#: a future the caller drops is freed at once (the batch's futures reach their outcome through
#: :class:`BatchOutcome`, never through the batch). Fields by index: 0 timestamp, 1 key, 2 value, 3 headers,
#: 4 callback.
PendingRecord = tuple[int, bytes | None, bytes | None, Sequence[Header], Callback | None]


_tuple_new = tuple.__new__
_object_new = object.__new__


def pending_columns_reference(
    pending: PendingList, with_timestamps: bool
) -> tuple[Column | None, Column, Column]:
    """Per record of a batch: its timestamp (None when not asked for), key size and value size (-1 for None). A
    column whose records all have the same value (a batch of at least one record) is that int, not a list: the
    usual send_batch batch (no keys, one value size, one millisecond) keeps three ints, not three lists."""
    timestamps = [rec[0] for rec in pending] if with_timestamps else None
    key_sizes = [-1 if (k := rec[1]) is None else len(k) for rec in pending]
    value_sizes = [-1 if (v := rec[2]) is None else len(v) for rec in pending]
    return None if timestamps is None else _one_value(timestamps), _one_value(key_sizes), _one_value(value_sizes)


def _one_value(column: list[int]) -> Column:
    """``column``'s one value when every item is that same int of 64 bits (and there is one), else the list."""
    if column and type(first := column[0]) is int and -(2**63) <= first < 2**63 and all(type(x) is int and x == first for x in column):
        return first
    return column


_NO_COMPRESSION = CompressionType.NONE


def is_compression(compression_type: Any) -> bool:
    """Whether batches of ``compression_type`` (a CompressionType, a codec name, or None) are compressed. The
    producer's batches hold the enum: NONE is told by identity, without the enum's ``name`` property."""
    if compression_type is None or compression_type is _NO_COMPRESSION:
        return False
    return str(getattr(compression_type, "name", compression_type)).lower() != "none"


class ProducerBatch:
    """Records for one partition, sent together in one produce request."""

    #: Slots: the compiled send path (records/kernel/producer_try_append.c.h) reads and writes the append state at
    #: fixed offsets instead of by name; also a smaller, faster object for the I/O thread.
    __slots__ = (
        "_condition", "actual_compression_ratio", "allocated_bytes", "attempts", "encoded", "encoded_state",
        "attempts_when_leader_last_changed", "base_sequence", "base_timestamp", "closed", "compression_level",
        "compression_ratio", "compression_type", "created_ms", "current_leader_epoch", "drained_ms", "final_state",
        "has_callbacks", "is_compressed", "is_splitting", "is_transactional", "last_append_ms", "last_attempt_ms",
        "max_record_size", "max_timestamp", "outcome", "pending", "producer_epoch", "producer_id", "reopened",
        "retry", "sent_stamp", "size_bytes", "size_limit", "split", "topic_partition", "write_limit",
    )

    def __init__(
        self,
        tp: TopicPartition,
        write_limit: int,
        created_ms: int,
        compression_type: Any = None,
        compression_level: int | None = None,
        is_splitting: bool = False,
        compression_ratio: float = 1.0,
        condition: threading.Condition | None = None,
    ) -> None:
        self.topic_partition = tp
        self.write_limit = write_limit
        # Compressed batches are filled by estimated compressed size (Java CompressionRatioEstimator): the
        # uncompressed bytes allowed are precomputed so appends compare integers only.
        compressed = compression_type is not None and compression_type is not _NO_COMPRESSION and is_compression(compression_type)
        self.is_compressed = compressed
        self.compression_ratio = compression_ratio * COMPRESSION_RATE_ESTIMATION_FACTOR if compressed else 1.0
        self.size_limit = (
            write_limit
            if self.compression_ratio == 1.0
            else RECORD_BATCH_OVERHEAD + int((write_limit - RECORD_BATCH_OVERHEAD) / max(self.compression_ratio, 0.01))
        )
        #: compressed / uncompressed size of the records once encoded (1.0 before, or without compression)
        self.actual_compression_ratio = 1.0
        self.created_ms = created_ms
        self.last_attempt_ms = created_ms
        self.drained_ms = created_ms
        self.attempts = 0
        self.retry = False
        self.reopened = False
        # (producer id, epoch, base sequence) of the last send: a response for an older stamp is stale.
        self.sent_stamp: tuple[int, int, int] | None = None
        self.is_splitting = is_splitting
        self.compression_type = compression_type
        self.compression_level = compression_level
        self.final_state: FinalState | None = None
        self.split = False
        self.closed = False  # no more appends
        kernel = _native.kernel
        # (the kernel's records buffer is allocated once for a batch's worth of records, as Java's batch buffer)
        self.pending: PendingList = [] if kernel is None else kernel.PendingRecords(self.size_limit - RECORD_BATCH_OVERHEAD)
        #: some record has a delivery callback (completion skips the callback pass otherwise)
        self.has_callbacks = False
        # The futures' condition; the batches split from one batch share it, as their futures move between them.
        self._condition = condition if condition is not None else threading.Condition()
        #: the outcome every record future of this batch reads (Java ProduceRequestResult)
        self.outcome = BatchOutcome(self._condition, tp[0], tp[1])
        self.base_timestamp = NO_TIMESTAMP
        self.max_timestamp = NO_TIMESTAMP
        self.size_bytes = RECORD_BATCH_OVERHEAD
        self.max_record_size = 0
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.base_sequence = NO_SEQUENCE
        self.is_transactional = False
        #: the encoded batch that records() built, and the producer state (id, epoch, base sequence, transactional)
        #: it was built for: records()' cache, which the kernel's drained_request reads and fills as records() does
        self.encoded: bytes | None = None
        self.encoded_state: tuple[int, int, int, bool] | None = None
        # Leader epoch seen for this batch and the attempt count when it last changed (KIP-951: skip backoff).
        self.current_leader_epoch: int | None = None
        self.attempts_when_leader_last_changed = 0
        self.last_append_ms = created_ms
        # Memory accounted for this batch in the BufferPool (released when the batch is deallocated).
        self.allocated_bytes = 0

    # --- appending ---------------------------------------------------------------------------------

    @property
    def record_count(self) -> int:
        return len(self.pending)

    def estimated_size_in_bytes(self) -> int:
        """Exact once encoded; before, the uncompressed size scaled by the estimated compression ratio."""
        if self.encoded is not None:
            return len(self.encoded)
        if self.compression_ratio == 1.0:
            return self.size_bytes
        return RECORD_BATCH_OVERHEAD + int((self.size_bytes - RECORD_BATCH_OVERHEAD) * self.compression_ratio)

    def uncompressed_size_in_bytes(self) -> int:
        return self.size_bytes

    def is_full(self) -> bool:
        return self.closed or self.size_bytes >= self.size_limit

    def has_room_for(self, timestamp: int, key: bytes | None, value: bytes | None, headers: Sequence[Header]) -> bool:
        if self.closed:
            return False
        if not self.pending:
            return True
        size = record_size_in_bytes(len(self.pending), timestamp - self.base_timestamp, key, value, headers)
        return self.size_bytes + size <= self.size_limit

    def try_append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header],
        callback: Callback | None,
        now_ms: int,
    ) -> FutureRecordMetadata | None:
        """Append a record if it fits; the record's future, or None when the batch is full or closed."""
        kernel = _native.kernel
        if kernel is not None:
            out = kernel.batch_try_append(self, timestamp, key, value, headers, callback, now_ms)
            if out is not NotImplemented:
                return out  # type: ignore[no-any-return]
        return self.try_append_reference(timestamp, key, value, headers, callback, now_ms)

    def try_append_reference(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header],
        callback: Callback | None,
        now_ms: int,
    ) -> FutureRecordMetadata | None:
        """:meth:`try_append` in Python (the compiled one, ``_kernel.batch_try_append``, does the same)."""
        if self.closed:
            return None
        pending = self.pending
        if pending:
            n = len(pending)
            td = timestamp - self.base_timestamp
            if headers or n >= 8192 or not -64 <= td < 64 or (key is not None and len(key) >= 64) or value is None or len(value) >= 8192:
                size = record_size_in_bytes(n, td, key, value, headers)
            else:
                # record_size_in_bytes inlined for the common record (runs once per send): offset delta under
                # 8192, 1-byte timestamp delta, a null or short key, a value under 8 KiB, no headers (whose body
                # may still reach 8192 bytes: a three-byte length varint).
                nv = len(value)
                body = (5 if n < 64 else 6) + (0 if key is None else len(key)) + nv + (1 if nv < 64 else 2)
                size = body + (1 if body < 64 else 2 if body < 8192 else 3)
            if self.size_bytes + size > self.size_limit:
                return None
            prev_ts = pending[-1][0]
            if prev_ts == timestamp:
                timestamp = prev_ts  # one int object per millisecond, not per pending record (as the kernel)
        else:
            self.base_timestamp = timestamp
            size = record_size_in_bytes(0, 0, key, value, headers)
        # FutureRecordMetadata without a Python-level __init__ (as future_record_metadata.new_future)
        future = _object_new(FutureRecordMetadata)
        future.outcome = self.outcome
        future.index = len(pending)
        pending.append((timestamp, key, value, headers, callback))
        self.size_bytes += size
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        if size > self.max_record_size:
            self.max_record_size = size
        self.last_append_ms = now_ms
        if callback is not None:
            self.has_callbacks = True
        return future

    def append_many(
        self,
        keys: Sequence[Any] | None,
        values: Sequence[Any],
        start: int,
        stop: int,
        timestamps: Sequence[Any] | None,
        timestamp: int,
        headers: Sequence[Header],
        callback: Callback | None,
        sticky: tuple[int, int, int] | None = None,
    ) -> tuple[int, int, bool]:
        """Append records ``start..stop`` of the lists (checked by ``batch_append.scan_records``) while they fit,
        as many :meth:`try_append` calls would (same pending tuples and sizes; no futures are made: the caller
        reads them from :attr:`outcome`). ``sticky`` is (produced bytes, switch bytes, sticky batch size) of the
        topic's sticky partitioner when this is its partition: the appended bytes are added to the produced bytes
        and appending stops after the record making a switch due. Returns (next index, produced bytes, switch due)."""
        if self.closed:
            return start, 0 if sticky is None else sticky[0], False
        produced, switch_bytes, sticky_bytes = (0, 0, 0) if sticky is None else sticky
        args = (
            self.pending, keys, values, start, stop, timestamps, timestamp, headers, callback, self.size_bytes, self.size_limit,
            self.base_timestamp, self.max_timestamp, self.max_record_size, self.compression_ratio, produced,
            switch_bytes, sticky_bytes,
        )
        # the kernel's append_pending, else (or declined) its reference
        kernel = _native.kernel
        out = None if kernel is None else kernel.append_pending(*args)
        if out is None:
            out = _batch_append.append_pending_reference(*args)
        nxt, self.size_bytes, self.base_timestamp, self.max_timestamp, self.max_record_size, produced, due = out
        if nxt > start:
            self.last_append_ms = 0  # as the accumulator's fast path (try_append with now 0)
            if callback is not None:
                self.has_callbacks = True
        return nxt, produced, due

    def _append_existing(self, rec: PendingRecord) -> bool:
        """Move a record (with its future) into this batch; used by :meth:`split_into`."""
        timestamp, key, value, headers, callback = rec
        if self.pending:
            size = record_size_in_bytes(len(self.pending), timestamp - self.base_timestamp, key, value, headers)
            if self.size_bytes + size > self.size_limit:
                return False
        else:
            self.base_timestamp = timestamp
            size = record_size_in_bytes(0, 0, key, value, headers)
        self.pending.append(rec)
        if callback is not None:
            self.has_callbacks = True
        self.size_bytes += size
        self.max_record_size = max(self.max_record_size, size)
        self.max_timestamp = max(self.max_timestamp, timestamp)
        return True

    def close_for_appends(self) -> None:
        self.closed = True

    # --- producer state and encoding -----------------------------------------------------------------

    def set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional

    def reset_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        """Re-stamp a batch (e.g. after an epoch bump); its bytes are rebuilt on the next :meth:`records`."""
        self.reopened = True
        self.set_producer_state(producer_id, producer_epoch, base_sequence, self.is_transactional)

    def mark_sent(self) -> None:
        self.sent_stamp = (self.producer_id, self.producer_epoch, self.base_sequence)

    def response_is_for_current_stamp(self) -> bool:
        """False when the batch was re-stamped (epoch bump, new producer id) after the send answered now."""
        return self.sent_stamp == (self.producer_id, self.producer_epoch, self.base_sequence)

    def has_sequence(self) -> bool:
        return self.base_sequence != NO_SEQUENCE

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, len(self.pending) - 1)

    def records(self) -> bytes:
        """The encoded batch (base offset 0), built on first use and rebuilt if the producer state changed."""
        state = (self.producer_id, self.producer_epoch, self.base_sequence, self.is_transactional)
        if self.encoded is None or self.encoded_state != state:
            self.encoded, self.actual_compression_ratio = encode_batch(self, self.compression_type, self.compression_level)
            self.encoded_state = state
        return self.encoded

    # --- retries and expiry --------------------------------------------------------------------------

    def reenqueued(self, now_ms: int) -> None:
        self.attempts += 1
        self.last_attempt_ms = max(self.last_attempt_ms, now_ms)
        self.retry = True

    def maybe_update_leader_epoch(self, leader_epoch: int | None) -> bool:
        """Record the partition's current leader epoch on this batch; True when the leader changed after the
        batch's last attempt (Java ``ProducerBatch.maybeUpdateLeaderEpoch`` / ``hasLeaderChangedForTheOngoingRetry``)."""
        if leader_epoch is not None and (self.current_leader_epoch is None or self.current_leader_epoch < leader_epoch):
            self.attempts_when_leader_last_changed = self.attempts
            self.current_leader_epoch = leader_epoch
        return self.attempts >= 1 and self.attempts == self.attempts_when_leader_last_changed

    def drained(self, now_ms: int) -> None:
        self.drained_ms = max(self.drained_ms, now_ms)

    def in_retry(self) -> bool:
        return self.retry

    def has_reached_delivery_timeout(self, delivery_timeout_ms: int, now_ms: int) -> bool:
        return delivery_timeout_ms <= now_ms - self.created_ms

    def is_done(self) -> bool:
        return self.final_state is not None

    # --- completion ----------------------------------------------------------------------------------

    def done(
        self,
        base_offset: int,
        log_append_time: int,
        top_level_exception: BaseException | None,
        record_exceptions: Callable[[int], BaseException] | None = None,
    ) -> bool:
        """Complete every record future. False (and nothing happens) if the batch was already completed."""
        if self.final_state is not None or self.split:
            return False
        self.final_state = FinalState.SUCCEEDED if top_level_exception is None else FinalState.FAILED
        self.complete_records(base_offset, log_append_time, top_level_exception, record_exceptions)
        return True

    def abort(self, exception: BaseException) -> None:
        """Fail every record future with ``exception`` (producer closing, fatal error)."""
        if self.final_state is not None or self.split:
            return
        self.final_state = FinalState.ABORTED
        self.complete_records(-1, NO_TIMESTAMP, exception, None)

    def complete_records(
        self,
        base_offset: int,
        log_append_time: int,
        exception: BaseException | None,
        record_exceptions: Callable[[int], BaseException] | None,
    ) -> None:
        """Complete the batch's outcome, which all its futures read: per record only the timestamps and the
        key/value sizes are collected (three columns, see pending_columns_reference); a RecordMetadata is built for a record with
        a delivery callback, else only when its future is read."""
        pending = self.pending
        outcome = self.outcome
        if exception is None:
            la = log_append_time != NO_TIMESTAMP
            kernel = _native.kernel
            columns = kernel.pending_columns(pending, not la) if kernel is not None else None
            timestamps, key_sizes, value_sizes = columns or pending_columns_reference(pending, not la)
            errs: list[BaseException] | None = None
        else:
            errs = [record_exceptions(i) for i in range(len(pending))] if record_exceptions is not None else None
        # As Java: the delivery callbacks run before the futures complete, so a thread woken by result() sees
        # the effects of the batch's callbacks.
        if self.has_callbacks:
            topic, partition = self.topic_partition
            callbacks = ([rec[4] for rec in pending] if type(pending) is list
                         else cast(_native.PendingRecordsApi, pending).callbacks())
            for i, cb in enumerate(callbacks):
                if cb is None:
                    continue
                if exception is None:
                    md: RecordMetadata | None = _tuple_new(RecordMetadata, (
                        topic, partition, -1 if base_offset < 0 else base_offset + i,
                        log_append_time if la else column_at(timestamps, i),  # type: ignore[arg-type]
                        column_at(key_sizes, i), column_at(value_sizes, i),
                    ))
                    err: BaseException | None = None
                else:
                    md = None
                    err = exception if errs is None else errs[i]
                try:
                    cb(md, err)
                except Exception:  # a user callback must not break the I/O thread
                    import logging

                    logging.getLogger(__name__).exception("error in producer delivery callback for %s", self.topic_partition)
        if exception is None:
            with_callbacks = outcome.complete_success(base_offset, log_append_time, timestamps, key_sizes, value_sizes)
        else:
            with_callbacks = outcome.complete_failure(exception, errs)
        for f in with_callbacks:  # done-callbacks of the futures, outside the lock
            f._invoke_callbacks()

    # --- splitting (MESSAGE_TOO_LARGE) ---------------------------------------------------------------

    def split_into(self, split_batch_size: int, now_ms: int) -> list[ProducerBatch]:
        """Move the records into new batches of at most ``split_batch_size`` bytes each (at least one record
        per batch), keeping their futures; this batch is then empty-handed (``split`` is True).

        The new batches keep the creation time (for the delivery timeout) and carry no sequence: an
        idempotent producer assigns fresh sequences when they are drained.
        """
        out: list[ProducerBatch] = []
        current: ProducerBatch | None = None
        for rec in self.pending:
            if current is None or not current._append_existing(rec):
                current = ProducerBatch(
                    self.topic_partition, split_batch_size, self.created_ms, self.compression_type,
                    self.compression_level, is_splitting=True, condition=self._condition,
                )
                current._append_existing(rec)
                out.append(current)
        for b in out:
            b.close_for_appends()
        self.outcome.move_to([(b.outcome, i) for b in out for i in range(len(b.pending))])
        self.split = True
        self.pending = []
        return out

    def __repr__(self) -> str:
        return (
            f"ProducerBatch({self.topic_partition}, records={len(self.pending)}, bytes={self.size_bytes}, "
            f"attempts={self.attempts}, seq={self.base_sequence}, state={self.final_state})"
        )



_loaded_kernel = _native.loaded_kernel()
if _loaded_kernel is not None:
    _loaded_kernel.producer_setup(FutureRecordMetadata)
