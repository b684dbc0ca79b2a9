"""The log of one partition (Java UnifiedLog + LocalLog): a directory ``<topic>-<partition>`` of segments.

Offsets: ``log_start_offset`` <= ``high_watermark`` <= ``log_end_offset``. The log end offset (LEO) is the
next offset to assign. The high watermark is its own field, moved by the caller
(:meth:`update_high_watermark`; on a single broker the caller raises it to the LEO after each append with
:meth:`maybe_increment_high_watermark`, which never lowers it),
so that replication can come later. On load the high watermark starts at the LEO.

Transactions (broker contract 1.11): the last stable offset (:attr:`last_stable_offset`) is the producer
state's first unstable offset (the first offset of the oldest open transaction) when that is below the
high watermark, else the high watermark, never below the log start. A COMMIT/ABORT marker appended with
the COORDINATOR origin completes its producer's transaction; an aborted one with data gets an entry in the
``.txnindex`` of the segment holding the marker. read_committed reads stop at the LSO and
:meth:`collect_aborted_transactions` gives the index entries overlapping the read. On load, entries for
markers the producer-state replay passes are re-added when missing (recovered segments cut entries past
their valid end).

Threads and locks: one lock per log serialises appends, rolls, retention, flushes and close. Reads take
no lock: they use a snapshot of the segment list (replaced, never mutated, under the lock) and of the
LEO metadata (one attribute, assigned after the bytes are written), and never read past that snapshot.

Appends (:meth:`append`): the batches are checked by :func:`~mini_broker.log.log_validator.analyze_and_validate`
before the lock is taken (the whole request is rejected before anything is written), then, under the
lock, the producer state is checked (a duplicate is not written), offsets are assigned by
:func:`~mini_broker.log.log_validator.assign_offsets` (batch headers rewritten, records never
re-encoded), the active segment is rolled if needed and the bytes are written. A client's common append of one
batch is instead one call under the lock, :meth:`~mini_broker.log.log_end.LogEndApi.append_client` of the log's end
(:mod:`mini_broker.log.log_end`: the log end offset's metadata and the high watermark live there), which does the same
steps when compiled and declines, nothing done, for anything else.

Recovery on open is :func:`~mini_broker.log.log_loader.load_segments` (stray files removed, segments from
the recovery point re-read, a torn tail cut). Retention (:meth:`delete_old_segments`) and DeleteRecords
(:meth:`delete_records_before`) drop whole segments below the log start offset, over ``retention.bytes``
or older than ``retention.ms``, never past the high watermark.

Compaction (``cleanup.policy=compact``) is the log cleaner's (:mod:`mini_broker.log.log_cleaner`): it reads
non-active segments without the lock and swaps a rewritten segment in with :meth:`Log.replace_segments`
under it. Offsets are never renumbered, so a compacted log has gaps that reads step over.
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
import threading
from bisect import bisect_right
from collections.abc import Callable
from typing import Final

from mini_broker.log.fetch_data_info import FetchDataInfo, LogAppendInfo, TimestampAndOffset
from mini_broker.log.leader_epoch_cache import LeaderEpochCache
from mini_broker.log.local_log import offset_of_max_timestamp, offset_of_timestamp, parse_topic_partition, read_segments
from mini_broker.log.log_config import LogConfig
from mini_broker.log.log_end import LogEndApi, new_log_end
from mini_broker.log.log_loader import SWAP_FILE_SUFFIX, load_segments
from mini_broker.log.log_offset_metadata import FetchIsolation, LogOffsetMetadata
from mini_broker.log.log_segment import AppendedBatch, LogSegment
from mini_broker.log.log_validator import (
    AppendChecks,
    AssignedOffsets,
    ClientBatch,
    analyze_and_validate,
    assign_client_batch,
    assign_offsets,
    single_client_batch,
)
from mini_broker.log.log_validator import AppendOrigin as AppendOrigin  # re-exported: the log's API
from mini_broker.log.transaction_index import AbortedTxn
from mini_broker.producer_state import producer_append_info as _pai
from mini_broker.producer_state.producer_state_entry import BatchMetadata, ProducerStateEntry
from mini_broker.producer_state.producer_state_manager import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    PendingAppend,
    ProducerStateManager,
    rebuild_from_log,
)
from mini_broker.producer_state.txn_metadata import CompletedTxn
from mini_broker.utils.atomic_file import fsync_dir
from mini_broker.utils.positional_tuple import positional_tuple
from pykafka_client.errors import CorruptRecordError, KafkaStorageError, OffsetOutOfRangeError
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from pykafka_client.utils.time import SYSTEM_TIME, Time

_BASE_AND_EPOCH = struct.Struct(">q4xi")  # a batch header's base offset and partition leader epoch

_log = logging.getLogger(__name__)

#: ListOffsets special timestamps.
LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
MAX_TIMESTAMP: Final = -3
EARLIEST_LOCAL_TIMESTAMP: Final = -4
LATEST_TIERED_TIMESTAMP: Final = -5

_PRODUCER_ORIGIN: Final = {
    AppendOrigin.CLIENT: _pai.AppendOrigin.CLIENT,
    AppendOrigin.COORDINATOR: _pai.AppendOrigin.COORDINATOR,
    AppendOrigin.REPLICATION: _pai.AppendOrigin.REPLICATION,
}
#: the members, read once (an Enum class attribute read goes through EnumType.__getattr__ on Python 3.11)
_CLIENT: Final = AppendOrigin.CLIENT
_REPLICATION: Final = AppendOrigin.REPLICATION
_PRODUCER_CLIENT: Final = _pai.AppendOrigin.CLIENT
#: a v2 batch's "transactional" attribute bit
_TRANSACTIONAL_FLAG: Final = 0x10
#: the places of LogOffsetMetadata.message_offset and AppendChecks.log_append_time, read by index on every append (on
#: Python 3.11 a named tuple's field read by name is a generic attribute lookup, ~50-150 instructions; by index ~10)
_MESSAGE_OFFSET: Final = LogOffsetMetadata._fields.index("message_offset")
_LOG_APPEND_TIME: Final = AppendChecks._fields.index("log_append_time")


class Log:
    """A partition log. Create with the directory; it loads (and recovers) what is there."""

    def __init__(
        self,
        dir_path: str,
        config: LogConfig,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        had_clean_shutdown: bool = False,
        time: Time = SYSTEM_TIME,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.dir_path = dir_path
        self.topic, self.partition = parse_topic_partition(os.path.basename(os.path.normpath(dir_path)))
        #: the log end offset, the high watermark and the common append (a kernel type when the kernel is loaded)
        self._end = new_log_end()
        self._set_config(config)
        self._time = time
        self._lock = threading.RLock()
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._pending_close: list[tuple[int, LogSegment]] = []
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self._last_flush_ms = time.milliseconds()
        self._closed = False
        os.makedirs(dir_path, exist_ok=True)
        self._load(had_clean_shutdown)
        self._end.high_watermark = self.log_end_offset
        self._end.hw_metadata = None
        #: Idempotent producers of this partition (Kafka: owned by UnifiedLog). Loaded from the newest
        #: ``<offset>.snapshot`` at or below the LEO (newer ones, e.g. past a truncated tail, are deleted),
        #: then rebuilt by replaying the log after it.
        self.producer_state = ProducerStateManager(
            f"{self.topic}-{self.partition}", dir_path, producer_id_expiration_ms
        )
        self.producer_state.lend_to(self._end)
        completed = rebuild_from_log(self.producer_state, self, time.milliseconds())
        self._update_txn_indexes(completed, replayed=True)
        self.producer_state.delete_snapshots_before(self._segments[0].base_offset)
        self._lso_metadata: LogOffsetMetadata | None = None
        #: built on first use (only cluster brokers ask), then kept up to date by append
        self._epoch_cache: LeaderEpochCache | None = None

    def _set_config(self, config: LogConfig) -> None:
        """The log's config, and with it :attr:`append_checks`."""
        self.config = config
        #: the config's values an append reads, computed once per config
        self.append_checks = AppendChecks.of(config)
        self._end.configure(self.append_checks)

    # -- loading --------------------------------------------------------------------------------------
    def _load(self, had_clean_shutdown: bool) -> None:
        kept = load_segments(
            self.dir_path, self.config, self._time, log_start_offset=self.log_start_offset,
            recovery_point=self.recovery_point, had_clean_shutdown=had_clean_shutdown,
        )
        self._set_segments(kept)
        active = kept[-1]
        leo = active.next_offset()
        self._end.end_metadata = LogOffsetMetadata(leo, active.base_offset, active.size)
        self.log_start_offset = min(max(self.log_start_offset, kept[0].base_offset), leo)
        self.recovery_point = leo

    def _set_segments(self, segments: list[LogSegment]) -> None:
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._end.set_tail(segments[-1].tail)

    # -- offsets --------------------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self._end.end_metadata.message_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return self._end.end_metadata

    @property
    def high_watermark(self) -> int:
        return self._end.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The LSO: the first unstable offset if below the high watermark, else the high watermark; at least
        the log start offset."""
        hw = self._end.high_watermark
        first_unstable = self.producer_state.first_unstable_offset()
        lso = first_unstable if first_unstable is not None and first_unstable < hw else hw
        return max(lso, self.log_start_offset)

    def last_stable_offset_metadata(self) -> LogOffsetMetadata:
        lso = self.last_stable_offset
        if lso == self._end.high_watermark:
            return self.high_watermark_metadata()
        self._lso_metadata = self._metadata_cached(lso, self._lso_metadata)
        return self._lso_metadata

    def _metadata_cached(self, offset: int, cached: LogOffsetMetadata | None) -> LogOffsetMetadata:
        if cached is not None and cached.message_offset == offset:
            return cached
        return self.offset_metadata(offset)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[start_offset, upper_bound_offset)``, from the index of the
        segment holding ``start_offset`` onwards, stopping at the first complete search (Kafka ``LocalLog``)."""
        segments = self._segments
        i = max(0, bisect_right([s.base_offset for s in segments], start_offset) - 1)
        out: list[AbortedTxn] = []
        for segment in segments[i:]:
            result = segment.txn_index.collect_aborted_txns(start_offset, upper_bound_offset)
            out += result.aborted_transactions
            if result.is_complete:
                break
        return out

    def _update_txn_indexes(self, completed: list[tuple[CompletedTxn, int]], replayed: bool = False) -> None:
        """Index the aborted ones in the segment holding their marker (when replaying: only if missing)."""
        for txn, lso in completed:
            if not txn.is_aborted:
                continue
            i = bisect_right(self._bases, txn.last_offset) - 1
            if i < 0:
                continue
            index = self._segments[i].txn_index
            last = index.last_offset()
            if replayed and last is not None and last >= txn.last_offset:
                continue
            index.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))

    @property
    def segments(self) -> list[LogSegment]:
        """A snapshot of the segments, oldest first."""
        return self._segments

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def size(self) -> int:
        return sum(s.size for s in self._segments)

    def leader_epoch_cache(self) -> LeaderEpochCache:
        """The partition's leader epochs, built from the batches the first time it is asked for."""
        with self._lock:
            if self._epoch_cache is None:
                cache = LeaderEpochCache()
                for segment in self._segments:
                    for base_offset, epoch in segment.iter_batch_epochs():
                        cache.assign(epoch, base_offset)
                self._epoch_cache = cache
            return self._epoch_cache

    def _cache_epochs(self, buf: bytearray | memoryview, batches: list[AppendedBatch]) -> None:
        cache = self._epoch_cache
        if cache is None:
            return
        for b in batches:
            base, epoch = _BASE_AND_EPOCH.unpack_from(buf, b.relative_position)
            cache.assign(epoch, base)

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped to [log start, LEO]; returns the value set."""
        with self._lock:
            return self._update_high_watermark_locked(offset)

    def _update_high_watermark_locked(self, offset: int) -> int:
        # (comparisons rather than min/max: the builtins cost ~700 instructions a call, and this runs on every append)
        start, leo = self.log_start_offset, self._end.end_metadata[_MESSAGE_OFFSET]
        hw = offset if offset > start else start
        if hw > leo:
            hw = leo
        if hw != self._end.high_watermark:
            self._end.high_watermark = hw
            self._end.hw_metadata = None
        self.producer_state.on_high_watermark_updated(hw)
        return hw

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """Raise the high watermark to ``offset`` (clamped to the LEO) if that is above it; never lower it.
        True if it moved. For callers that raise it concurrently with a value read before taking the log's
        lock (two appenders, each moving it to the LEO it saw after its own append): with
        :meth:`update_high_watermark` the slower one would move it back below records already acknowledged,
        and an acks=all produce of the faster one then waits for a high watermark that no append brings
        back until its request timeout (bench/spark.py's 30 s pauses)."""
        with self._lock:
            return self._increment_high_watermark_locked(offset)

    def _increment_high_watermark_locked(self, offset: int) -> bool:
        leo = self._end.end_metadata[_MESSAGE_OFFSET]
        if (offset if offset < leo else leo) <= self._end.high_watermark:
            return False
        self._update_high_watermark_locked(offset)
        return True

    def high_watermark_metadata(self) -> LogOffsetMetadata:
        hw = self._end.high_watermark
        leo = self._end.end_metadata
        if hw == leo.message_offset:
            return leo
        self._end.hw_metadata = self._metadata_cached(hw, self._end.hw_metadata)
        return self._end.hw_metadata

    def end_offset_metadata(self, isolation: FetchIsolation) -> LogOffsetMetadata:
        """Where readable data ends for ``isolation`` (LEO, high watermark or LSO)."""
        if isolation is FetchIsolation.LOG_END:
            return self._end.end_metadata
        if isolation is FetchIsolation.TXN_COMMITTED:
            return self.last_stable_offset_metadata()
        return self.high_watermark_metadata()

    def max_offset_for(self, isolation: FetchIsolation) -> int | None:
        """The ``max_offset`` to pass to :meth:`read` for ``isolation`` (None: up to the LEO)."""
        if isolation is FetchIsolation.LOG_END:
            return None
        if isolation is FetchIsolation.TXN_COMMITTED:
            return self.last_stable_offset
        return self._end.high_watermark

    # -- append ---------------------------------------------------------------------------------------
    def client_append_parts(self) -> tuple[threading.RLock, LogEndApi, int] | None:
        """What a compiled client append needs to do :meth:`append`'s common step itself, in one call: the log's lock,
        its end (whose ``append_client`` it calls under the lock, with this log's :attr:`log_start_offset` and
        :attr:`recovery_point` read under it too) and the clock's now (ms). None when a client append does not take that
        step (the log keeps a leader epoch cache): the caller calls :meth:`append`. A closed log's end declines
        (:meth:`close` closed it first, so also after a close that failed): the caller then calls :meth:`append` too,
        which raises."""
        if self._epoch_cache is not None:
            return None
        return self._lock, self._end, self._time.milliseconds()

    def append(
        self,
        records: bytes | bytearray | memoryview,
        *,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        leader_epoch: int = 0,
        raise_high_watermark: bool = False,
    ) -> LogAppendInfo:
        """Validate and append v2 batches; see the module docstring. ``raise_high_watermark`` (a single broker,
        whose high watermark follows the log end): then, under the same lock, :meth:`maybe_increment_high_watermark`
        to the log end offset (also when nothing was written).

        Raises ``CorruptRecordError`` (bad framing, CRC or record encoding), ``InvalidRecordError``
        (client rules, inner offsets), ``UnsupportedCompressionTypeError``, ``RecordTooLargeError`` (a
        batch over ``max.message.bytes``) or ``InvalidTimestampError``; nothing is written then. Batches
        with a producer id go through the producer state (under the log lock, before offsets are
        assigned): a duplicate of a recent batch is not written and its original offsets are returned; a
        sequence or epoch violation raises.

        The batch headers are rewritten in a copy of ``records``, except in a writable one-dimensional byte
        memoryview (a request frame's records, which nothing reads after the append), rewritten in place: no
        copy of the whole request per append.
        """
        checks = self.append_checks
        now = self._time.milliseconds()
        one: ClientBatch | None = None
        if origin is _CLIENT and self._epoch_cache is None:
            # the common append in one call (the log's end, when compiled), under the lock; declined: the steps below,
            # from the batch's check (or without it when the call checked the batch and read its header: ``one``)
            with self._lock:
                if not self._closed:
                    done = self._end.append_client(records, now, leader_epoch, raise_high_watermark,
                                                   self.log_start_offset, self.recovery_point)
                    if isinstance(done, LogAppendInfo):
                        return done
                    one = done
        # ``records`` itself when it is a writable, contiguous memoryview of bytes (headers are rewritten in it), else
        # a copy to rewrite (here rather than in a helper: a frame less on every append)
        buf: bytearray | memoryview
        if (isinstance(records, memoryview) and not records.readonly and records.format == "B" and records.ndim == 1
                and records.c_contiguous):
            buf = records
        else:
            buf = bytearray(records)
        if origin is _CLIENT:
            if one is None:
                one = single_client_batch(buf, checks, now)
            if one is not None:
                return self._append_client_batch(buf, one, checks, leader_epoch, raise_high_watermark)
        batches = analyze_and_validate(buf, origin, checks, now)
        if not batches:
            if raise_high_watermark:
                self.maybe_increment_high_watermark(self.log_end_offset)
            return LogAppendInfo(-1, -1, -1, -1, -1, self.log_start_offset, 0, 0, 0)
        with self._lock:
            if self._closed:
                raise KafkaStorageError(f"log {self.dir_path} is closed")
            now = self._time.milliseconds()
            log_append = checks.log_append_time
            next_offset = self._end.end_metadata.message_offset
            if origin is _REPLICATION:
                if batches[0].base_offset < next_offset:
                    raise CorruptRecordError(
                        f"replicated batch at offset {batches[0].base_offset} is below the log end {next_offset}"
                    )
                next_offset = batches[0].base_offset
            first_offset = next_offset
            pending: PendingAppend | None = None
            for b in batches:
                if b.producer_id >= 0:
                    # (the client's origin without hashing the member: Enum.__hash__ is Python code)
                    producer_origin = _PRODUCER_CLIENT if origin is _CLIENT else _PRODUCER_ORIGIN[origin]
                    checked = self.producer_state.prepare_append(batches, first_offset, producer_origin)
                    if isinstance(checked, BatchMetadata):
                        if raise_high_watermark:
                            self._increment_high_watermark_locked(self._end.end_metadata.message_offset)
                        return self._duplicate_append_info(checked)
                    pending = checked
                    break
            assigned = assign_offsets(buf, batches, origin, first_offset, leader_epoch, now if log_append else None)
            return self._write_locked(buf, assigned, first_offset, pending, checks, now, raise_high_watermark)

    def _append_client_batch(self, buf: bytearray | memoryview, batch: ClientBatch, checks: AppendChecks,
                             leader_epoch: int, raise_high_watermark: bool) -> LogAppendInfo:
        """:meth:`append`'s common case: a client's append of the one ``batch`` the kernel checked and read
        (:func:`~mini_broker.log.log_validator.single_client_batch`). The same steps and results as the general
        path, on the header's fields instead of a batch view."""
        producer_id = batch[1]
        with self._lock:
            if self._closed:
                raise KafkaStorageError(f"log {self.dir_path} is closed")
            now = self._time.milliseconds()
            log_append = checks[_LOG_APPEND_TIME]
            first_offset = self._end.end_metadata[_MESSAGE_OFFSET]
            pending: PendingAppend | None = None
            entry: ProducerStateEntry | None = None
            if producer_id >= 0:
                state = self.producer_state
                _, _, epoch, base_sequence, last_offset_delta, _, attributes, _ = batch
                entry = state.next_append_entry(producer_id, epoch, base_sequence, last_offset_delta,
                                                bool(attributes & _TRANSACTIONAL_FLAG), False)
                if entry is None:  # not the next batch of a known producer: the general check judges
                    checked = state.prepare_append([DefaultRecordBatch(buf, 0)], first_offset, _PRODUCER_CLIENT)
                    if isinstance(checked, BatchMetadata):
                        if raise_high_watermark:
                            self._increment_high_watermark_locked(first_offset)
                        return self._duplicate_append_info(checked)
                    pending = checked
            assigned = assign_client_batch(buf, batch, first_offset, leader_epoch, now if log_append else None)
            return self._write_locked(buf, assigned, first_offset, pending, checks, now, raise_high_watermark,
                                      entry, batch)

    def _write_locked(self, buf: bytearray | memoryview, assigned: AssignedOffsets, first_offset: int,
                      pending: PendingAppend | None, checks: AppendChecks, now: int,
                      raise_high_watermark: bool, next_entry: ProducerStateEntry | None = None,
                      batch: ClientBatch | None = None) -> LogAppendInfo:
        """The rest of an append once its offsets are assigned (under the lock): roll, write, the producer state (the
        ``pending`` updates, or the one ``batch`` of ``next_entry``'s producer that
        :meth:`~mini_broker.producer_state.producer_state_manager.ProducerStateManager.next_append_entry` accepted),
        the high watermark."""
        # (the named tuples unpacked, not read by field name: on Python 3.11 a field read is a generic attribute lookup
        # (~50-150 instructions); this runs on every append)
        next_offset, max_timestamp, offset_of_max_timestamp, num_records, appended = assigned
        log_append_time, _, _, _, _, flush_interval_messages = checks
        segment = self._segments[-1]
        # one batch: the segment's append state writes and indexes it in one call unless a roll (or anything else
        # unusual) may be due (-1); then the segment's reference steps
        size = -1
        if len(appended) == 1:
            _, last_offset, batch_max_timestamp, _ = appended[0]
            size = segment.tail.append_one(buf, last_offset, batch_max_timestamp, max_timestamp)
        if size < 0:
            if segment.should_roll(len(buf), max_timestamp, next_offset - 1, now):
                segment = self._roll_locked(first_offset)
            segment.append(buf, appended)
            size = segment.size
        if self._epoch_cache is not None:
            self._cache_epochs(buf, appended)
        self._end.end_metadata = _new_offset_metadata(next_offset, segment.base_offset, size)
        # the producer state moves only once the batches are in the log (Kafka: after localLog.append)
        if next_entry is not None and batch is not None:
            self.producer_state.complete_next_append(next_entry, batch[3], batch[4], batch[5], first_offset)
        elif pending is not None:
            completed = self.producer_state.complete_append(pending)
            if completed:
                self._update_txn_indexes(completed)
        else:
            self.producer_state.update_map_end_offset(next_offset)
        if next_offset - self.recovery_point >= flush_interval_messages:
            self._flush_locked()
        if raise_high_watermark:
            self._increment_high_watermark_locked(next_offset)
        # first offset, last offset, max timestamp, its offset, log append time, log start offset, records,
        # batches, bytes
        return _new_append_info(first_offset, next_offset - 1, max_timestamp, offset_of_max_timestamp,
                                now if log_append_time else -1, self.log_start_offset, num_records,
                                len(appended), len(buf))

    def _duplicate_append_info(self, dup: BatchMetadata) -> LogAppendInfo:
        """A retried batch already in the log: the original offsets and timestamp, nothing written."""
        return LogAppendInfo(
            first_offset=dup.first_offset,
            last_offset=dup.last_offset,
            max_timestamp=dup.timestamp,
            offset_of_max_timestamp=dup.last_offset,
            log_append_time=dup.timestamp if self.append_checks.log_append_time else -1,
            log_start_offset=self.log_start_offset,
            num_records=dup.offset_delta + 1,
            shallow_count=1,
            valid_bytes=0,
        )

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """Forget producers idle for ``producer.id.expiration.ms`` (the log manager's periodic task)."""
        return self.producer_state.remove_expired_producers(now_ms)

    # -- roll -----------------------------------------------------------------------------------------
    def roll(self) -> LogSegment:
        """Start a new active segment at the LEO (no-op when the active segment is empty)."""
        with self._lock:
            return self._roll_locked(self.log_end_offset)

    def _roll_locked(self, new_base: int) -> LogSegment:
        active = self._segments[-1]
        if active.size == 0:
            if active.base_offset == new_base:
                return active
            # An empty active segment at another offset (replication gap): replace it.
            active.delete()
            active.close()
            new = LogSegment(self.dir_path, new_base, self.config, self._time)
            self._set_segments([*self._segments[:-1], new])
            return new
        active.on_become_inactive()
        # the state up to the new segment's base (an append that rolls is applied after the roll)
        self.producer_state.take_snapshot(new_base)
        new = LogSegment(self.dir_path, new_base, self.config, self._time)
        if new.size:
            new.recover()  # a leftover file at that offset: keep nothing past the valid batches
        self._set_segments([*self._segments, new])
        self.recovery_point = max(self.recovery_point, new_base)
        self._last_flush_ms = self._time.milliseconds()
        _log.debug("%s: rolled new segment at offset %d", self.dir_path, new_base)
        return new

    # -- read -----------------------------------------------------------------------------------------
    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None = None, min_one_message: bool = True
    ) -> FetchDataInfo:
        """Read from the batch holding ``start_offset``: up to ``max_bytes`` (at least one whole batch when
        ``min_one_message``) and below ``max_offset`` (exclusive; e.g. the high watermark; None = LEO).

        Raises ``OffsetOutOfRangeError`` when ``start_offset`` is outside [log start, LEO].
        """
        end = self._end.end_metadata
        segments = self._segments
        log_start = self.log_start_offset
        if start_offset == end.message_offset:
            return FetchDataInfo(end)
        if start_offset > end.message_offset or start_offset < log_start:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} is out of range for {self.topic}-{self.partition}: "
                f"log start {log_start}, log end {end.message_offset}"
            )
        bound = end
        if max_offset is not None and max_offset < end.message_offset:
            if start_offset >= max_offset:
                return FetchDataInfo(
                    self.offset_metadata(start_offset)
                    if start_offset > max_offset
                    else self._bound_metadata(max_offset)
                )
            bound = self._bound_metadata(max_offset)
        return read_segments(segments, start_offset, max_bytes, bound, min_one_message, end)

    def _bound_metadata(self, offset: int) -> LogOffsetMetadata:
        if offset == self._end.high_watermark:
            return self.high_watermark_metadata()
        return self.offset_metadata(offset)

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """The position of ``offset`` (its batch's start). Raises ``OffsetOutOfRangeError`` outside the log."""
        end = self._end.end_metadata
        if offset == end.message_offset:
            return end
        info = self._read_unbounded(offset)
        return info.fetch_offset_metadata

    def _read_unbounded(self, offset: int) -> FetchDataInfo:
        end = self._end.end_metadata
        if offset > end.message_offset or offset < self.log_start_offset:
            raise OffsetOutOfRangeError(f"offset {offset} is out of range for {self.topic}-{self.partition}")
        return read_segments(self._segments, offset, 1, end, False, end)

    # -- timestamps -----------------------------------------------------------------------------------
    def fetch_offset_by_timestamp(
        self, target_timestamp: int, isolation: FetchIsolation | None = None
    ) -> TimestampAndOffset | None:
        """ListOffsets for one partition.

        Special values are handled here: -2 earliest and -4 earliest-local (the log start offset), -1
        latest (LEO, or the high watermark / LSO under ``isolation``), -3 max timestamp (the first record
        with the largest timestamp). A timestamp >= 0 gives the first record with timestamp >= target.
        The special answers carry timestamp -1. None means no such record (answer -1/-1); -5 and other
        negative values give None. The result is not capped at the high watermark: the caller does that
        for consumers.
        """
        if target_timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return TimestampAndOffset(-1, self.log_start_offset)
        if target_timestamp == LATEST_TIMESTAMP:
            if isolation is None or isolation is FetchIsolation.LOG_END:
                return TimestampAndOffset(-1, self.log_end_offset)
            return TimestampAndOffset(
                -1, self.last_stable_offset if isolation is FetchIsolation.TXN_COMMITTED else self.high_watermark
            )
        segments = self._segments
        log_start = self.log_start_offset
        if target_timestamp == MAX_TIMESTAMP:
            return offset_of_max_timestamp(segments, log_start)
        if target_timestamp < 0:
            return None
        return offset_of_timestamp(segments, log_start, target_timestamp)

    # -- retention and log start ----------------------------------------------------------------------
    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (at most the high watermark) and drop
        the segments wholly below it. Returns the new log start offset.

        Raises ``OffsetOutOfRangeError`` when ``offset`` is above the high watermark.
        """
        with self._lock:
            if offset > self._end.high_watermark:
                raise OffsetOutOfRangeError(
                    f"cannot move the log start offset of {self.topic}-{self.partition} to {offset}: "
                    f"above the high watermark {self._end.high_watermark}"
                )
            if offset > self.log_start_offset:
                self.log_start_offset = offset
            self._delete_log_start_offset_breached_segments()
            return self.log_start_offset

    def delete_old_segments(self) -> int:
        """One retention pass: segments below the log start offset, then over ``retention.bytes``, then
        older than ``retention.ms`` (the last two only for ``cleanup.policy`` with ``delete``). Returns
        the number of segments deleted. Also closes deleted segments whose delay has passed."""
        with self._lock:
            deleted = self._delete_log_start_offset_breached_segments()
            if self.config.delete:
                deleted += self._delete_retention_size_breached_segments()
                deleted += self._delete_retention_ms_breached_segments()
            self._close_deleted_segments(self._time.milliseconds())
            return deleted

    def _delete_log_start_offset_breached_segments(self) -> int:
        start = self.log_start_offset
        return self._delete_segments(lambda seg, nxt: nxt is not None and nxt.base_offset <= start, "log start offset")

    def _delete_retention_size_breached_segments(self) -> int:
        retention = self.config.retention_bytes
        if retention < 0:
            return 0
        excess = [self.size() - retention]
        if excess[0] <= 0:
            return 0

        def over(seg: LogSegment, nxt: LogSegment | None) -> bool:
            if excess[0] - seg.size >= 0:
                excess[0] -= seg.size
                return True
            return False

        return self._delete_segments(over, "retention.bytes")

    def _delete_retention_ms_breached_segments(self) -> int:
        retention = self.config.retention_ms
        if retention < 0:
            return 0
        now = self._time.milliseconds()
        return self._delete_segments(lambda seg, nxt: now - seg.largest_timestamp() > retention, "retention.ms")

    def _delete_segments(self, predicate: Callable[[LogSegment, LogSegment | None], bool], reason: str) -> int:
        segments = self._segments
        deletable: list[LogSegment] = []
        for i, segment in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if nxt is None and segment.size == 0:
                break
            if upper > self._end.high_watermark or not predicate(segment, nxt):
                break
            deletable.append(segment)
        if not deletable:
            return 0
        if len(deletable) == len(segments):
            self._roll_locked(self.log_end_offset)
        remaining = self._segments[len(deletable) :]
        self._set_segments(remaining)
        self.log_start_offset = max(self.log_start_offset, remaining[0].base_offset)
        self.producer_state.delete_snapshots_before(remaining[0].base_offset)
        deadline = self._time.milliseconds() + self.config.file_delete_delay_ms
        for segment in deletable:
            _log.info("%s: deleting %r (%s)", self.dir_path, segment, reason)
            segment.delete()
            self._pending_close.append((deadline, segment))
        return len(deletable)

    def _close_deleted_segments(self, now: int) -> None:
        still: list[tuple[int, LogSegment]] = []
        for deadline, segment in self._pending_close:
            if deadline <= now:
                segment.close()
            else:
                still.append((deadline, segment))
        self._pending_close = still

    # -- compaction -----------------------------------------------------------------------------------
    def replace_segments(self, new_segment: LogSegment, old_segments: list[LogSegment]) -> bool:
        """Swap a segment the log cleaner wrote (files suffixed ``.cleaned``) in for ``old_segments``
        (consecutive, below the active segment), crash-safely as Kafka's ``replaceSegments``: the new files
        are renamed to ``.swap``, the old segments leave the list and their files are unlinked (kept open
        for in-flight reads until ``file.delete.delay.ms``), then the ``.swap`` suffix is dropped. A crash
        between these steps is finished at load (:mod:`mini_broker.log.log_loader`).

        Returns False, changing nothing, when the log was closed or the old segments are no longer all in
        the log (retention, truncation or DeleteRecords changed it meanwhile); the caller then deletes the
        new segment."""
        with self._lock:
            current = self._segments
            ids = [id(s) for s in current]
            if self._closed or not old_segments or id(old_segments[0]) not in ids:
                return False
            first = ids.index(id(old_segments[0]))
            if first + len(old_segments) >= len(current) or any(
                current[first + i] is not seg for i, seg in enumerate(old_segments)
            ):
                return False
            new_segment.flush()
            new_segment.change_file_suffixes(SWAP_FILE_SUFFIX)
            fsync_dir(self.dir_path)
            self._set_segments([*current[:first], new_segment, *current[first + len(old_segments) :]])
            deadline = self._time.milliseconds() + self.config.file_delete_delay_ms
            for segment in old_segments:
                segment.delete()
                self._pending_close.append((deadline, segment))
            new_segment.change_file_suffixes("")
            fsync_dir(self.dir_path)
            return True

    # -- flush and life cycle -------------------------------------------------------------------------
    def flush(self) -> None:
        """fsync everything up to the LEO and move the recovery point there."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        leo = self.log_end_offset
        if leo > self.recovery_point:
            segments = self._segments
            for i, segment in enumerate(segments):
                upper = segments[i + 1].base_offset if i + 1 < len(segments) else leo
                if upper > self.recovery_point:  # holds data not yet known to be on disk
                    segment.flush()
            self.recovery_point = leo
        self._last_flush_ms = self._time.milliseconds()

    def flush_if_due(self, now_ms: int) -> bool:
        """fsync if ``flush.ms`` has passed since the last flush (the flush scheduler's hook)."""
        if now_ms - self._last_flush_ms >= self.config.flush_ms:
            self.flush()
            return True
        return False

    def update_config(self, config: LogConfig) -> None:
        with self._lock:
            self._set_config(config)
            for segment in self._segments:
                segment.config = config

    def close(self) -> None:
        """fsync the active segment, record its max timestamp, and close every file. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            # the end's common append declines from now on (Log.append then raises), even where what follows raises
            # (an fsync error) and leaves the segments' files open
            self._end.close()
            self._segments[-1].on_become_inactive()
            self.recovery_point = self.log_end_offset
            try:  # a clean shutdown leaves the state at the LEO: no replay on the next start
                self.producer_state.take_snapshot(self.log_end_offset)
            except OSError:
                _log.exception("%s: producer state snapshot at close failed", self.dir_path)
            for segment in self._segments:
                segment.close()
            for _, segment in self._pending_close:
                segment.close()
            self._pending_close = []

    def delete(self) -> None:
        """Close and remove the whole partition directory."""
        self.close()
        shutil.rmtree(self.dir_path, ignore_errors=True)

    def __repr__(self) -> str:
        return (
            f"Log({self.topic}-{self.partition}, start={self.log_start_offset}, hw={self._end.high_watermark}, "
            f"end={self.log_end_offset}, segments={len(self._segments)})"
        )


#: the named tuples of every append made without their Python-level __new__ (see positional_tuple)
_new_offset_metadata: Final = positional_tuple(LogOffsetMetadata)
_new_append_info: Final = positional_tuple(LogAppendInfo)
