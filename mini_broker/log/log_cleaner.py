"""The log cleaner (Java ``LogCleaner``, its ``Cleaner`` and ``CleanerThread``s): compaction of the logs whose
``cleanup.policy`` holds ``compact``.

One clean of a log (:meth:`Cleaner.clean`), on a log chosen by
:class:`~mini_broker.log.log_cleaner_manager.LogCleanerManager`:

1. **Offset map.** The dirty section (first dirty offset up to the first uncleanable offset) is read batch by
   batch and the latest offset of every key is kept (:class:`OffsetMap`). Control batches and the batches of
   aborted transactions are skipped. The map holds at most ``log.cleaner.dedupe.buffer.size`` / threads x
   0.9 / 24 entries (24 bytes per entry, as Kafka's hashed map); when it would overflow, the map stops before
   that batch and the clean ends there (the rest stays dirty for the next clean).
2. **Rewrite.** Every segment from the log start up to where the map ends (below the active segment), in
   groups whose total fits one segment (``segment.bytes``, the index size and int32 offsets), is rewritten
   into ``<first base>.log.cleaned``, keeping per batch (base offset, partition leader epoch, producer id,
   epoch, base sequence, last offset delta, attributes and codec unchanged; offsets are never renumbered):

   * a keyed record whose offset is the latest of its key in the map, or past the map's last offset;
     keyless records are dropped;
   * a tombstone (null value) only until its batch's *delete horizon*: the first clean that sees a batch
     with a tombstone writes it with the delete-horizon flag and base timestamp = now +
     ``delete.retention.ms`` (KIP-534; record timestamps are unchanged); a later clean past that time drops
     the tombstone;
   * nothing of an aborted transaction (from the transaction index: a transactional batch of a producer
     inside an aborted transaction's range before its marker);
   * a COMMIT/ABORT marker until it is safe to remove: once a clean saw none of its transaction's batches
     (they were all removed before), the marker gets a delete horizon like a tombstone, and a later clean
     past it drops it. While an aborted transaction's batches are still seen, its index entry is copied to
     the cleaned segment's ``.txnindex``;
   * the batch holding a producer's last data offset (per the producer state) always, emptied of records if
     none survives (a header with no records), so that the producer's last sequence and epoch stay in the
     log and the producer state rebuilt from it after a restart still accepts the producer's next sequence.

   A batch keeping all its records and needing no horizon is copied as is; otherwise it is re-encoded with
   its codec. The cleaned segment keeps the modification time of the last segment of its group.
3. **Swap.** :meth:`~mini_broker.log.unified_log.Log.replace_segments` renames the ``.cleaned`` files to
   ``.swap``, swaps the segment into the log and drops the suffix; recovery at load finishes an interrupted
   swap. The cleaner checkpoint then moves to the end of the map.

Threads (:class:`LogCleaner`): ``log.cleaner.threads`` threads ``kafka-log-cleaner-thread-<n>``, each taking
the filthiest log, cleaning it, and otherwise sleeping ``log.cleaner.backoff.ms``. All of them share one
:class:`Throttler` of ``log.cleaner.io.max.bytes.per.second`` (bytes read plus written). Off when
``log.cleaner.enable`` is false.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from crc32c import crc32c

from mini_broker.log.abstract_index import unlink_if_exists
from mini_broker.log.log_cleaner_manager import LogCleanerManager, LogToClean
from mini_broker.log.log_loader import CLEANED_FILE_SUFFIX
from mini_broker.log.log_segment import (
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    AppendedBatch,
    LogSegment,
    file_name_prefix,
)
from mini_broker.log.transaction_index import TXN_INDEX_FILE_SUFFIX, AbortedTxn
from mini_broker.log.unified_log import Log
from mini_broker.metrics import BrokerMetrics
from pykafka_client.protocol.compression import CompressionType, compress
from pykafka_client.protocol.records.control import ControlRecordType
from pykafka_client.protocol.records.default_record_batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_FLAG_MASK,
    HEADER_STRUCT,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    DefaultRecordBatch,
)
from pykafka_client.protocol.records.record import Record
from pykafka_client.protocol.records.varint import encode_varint
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

#: Kafka's bytes per entry of its offset map (a 16-byte key hash and an 8-byte offset).
BYTES_PER_MAP_ENTRY: Final = 24
DEFAULT_DEDUPE_BUFFER_SIZE: Final = 128 * 1024 * 1024
DEFAULT_BACKOFF_MS: Final = 15000
DEFAULT_IO_MAX_BYTES_PER_SECOND: Final = 1.7976931348623157e308
DEFAULT_IO_BUFFER_LOAD_FACTOR: Final = 0.9
_MAGIC_V2: Final = 2
_INT32_MAX: Final = 2**31 - 1


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The broker's ``log.cleaner.*`` settings (Java ``CleanerConfig``)."""

    num_threads: int = 1
    dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER_SIZE
    dedupe_buffer_load_factor: float = DEFAULT_IO_BUFFER_LOAD_FACTOR
    max_io_bytes_per_second: float = DEFAULT_IO_MAX_BYTES_PER_SECOND
    backoff_ms: int = DEFAULT_BACKOFF_MS
    enable_cleaner: bool = True

    @classmethod
    def from_broker(cls, get: Callable[[str], object]) -> CleanerConfig:
        """From broker configs (``get(name)``: the value, or None when unset)."""

        def value(name: str, default: float) -> float:
            raw = get(name)
            return default if raw is None else float(str(raw))

        enable = get("log.cleaner.enable")
        return cls(
            num_threads=int(value("log.cleaner.threads", 1)),
            dedupe_buffer_size=int(value("log.cleaner.dedupe.buffer.size", DEFAULT_DEDUPE_BUFFER_SIZE)),
            dedupe_buffer_load_factor=value("log.cleaner.io.buffer.load.factor", DEFAULT_IO_BUFFER_LOAD_FACTOR),
            max_io_bytes_per_second=value("log.cleaner.io.max.bytes.per.second", DEFAULT_IO_MAX_BYTES_PER_SECOND),
            backoff_ms=int(value("log.cleaner.backoff.ms", DEFAULT_BACKOFF_MS)),
            enable_cleaner=enable is None or str(enable).lower() == "true",
        )

    def max_map_entries(self) -> int:
        per_thread = self.dedupe_buffer_size // max(1, self.num_threads)
        return max(1, int(per_thread * self.dedupe_buffer_load_factor) // BYTES_PER_MAP_ENTRY)


class OffsetMap:
    """The latest offset of each key of the dirty section, bounded in entries (Kafka's ``SkimpyOffsetMap``,
    here a dict on the key bytes, so without hash collisions)."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._map: dict[bytes, int] = {}
        #: the last offset put (-1: none)
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._map)

    def has_room_for(self, new_keys: int) -> bool:
        return len(self._map) + new_keys <= self.max_entries

    def put(self, key: bytes, offset: int) -> None:
        self._map[key] = offset
        self.latest_offset = offset

    def put_all(self, records: Sequence[Record], from_offset: int) -> None:
        """Put every keyed record at or after ``from_offset`` (the map's hot loop)."""
        m = self._map
        for record in records:
            key = record.key
            if key is not None and record.offset >= from_offset:
                m[key] = record.offset
        if records:
            self.latest_offset = max(self.latest_offset, records[-1].offset)

    def get(self, key: bytes) -> int:
        return self._map.get(key, -1)

    def retained(self, records: Sequence[Record], horizon: int | None, now: int) -> list[Record]:
        """The records of a data batch a clean keeps: past the map's last offset all of them; else the keyed
        ones that are their key's latest, tombstones only before the batch's delete horizon ``horizon``."""
        latest = self.latest_offset
        get = self._map.get
        keep_tombstones = horizon is None or now < horizon
        out: list[Record] = []
        for record in records:
            offset = record.offset
            if offset > latest:
                out.append(record)
                continue
            key = record.key
            if key is None or offset < get(key, -1):
                continue
            if record.value is not None or keep_tombstones:
                out.append(record)
        return out

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)


class Throttler:
    """Keeps the cleaners' I/O at ``bytes_per_second`` on average (Java ``Throttler``): after each check
    interval, sleeps as long as the bytes done ahead of the rate need."""

    def __init__(self, bytes_per_second: float, time: Time, check_interval_ms: int = 300) -> None:
        self.bytes_per_second = bytes_per_second
        self._time = time
        self._check_interval_ms = check_interval_ms
        self._lock = threading.Lock()
        self._period_start_ms = time.milliseconds()
        self._observed = 0.0
        #: total ms slept (a test and the bench read it)
        self.throttled_ms = 0.0
        self._stopped = threading.Event()

    def stop(self) -> None:
        """End a sleep in progress and never sleep again (the cleaner is shutting down)."""
        self._stopped.set()

    def maybe_throttle(self, observed: int) -> None:
        if self.bytes_per_second >= DEFAULT_IO_MAX_BYTES_PER_SECOND:
            return
        with self._lock:
            self._observed += observed
            now = self._time.milliseconds()
            elapsed = now - self._period_start_ms
            if elapsed < self._check_interval_ms and self._observed < self.bytes_per_second:
                return
            wanted_ms = self._observed * 1000.0 / self.bytes_per_second
            sleep_ms = wanted_ms - elapsed
            if sleep_ms > 0:
                slept = 0.0
                while slept < sleep_ms and not self._stopped.is_set():  # in steps: shutdown does not wait
                    step = min(100.0, sleep_ms - slept)
                    self._time.sleep(step)
                    slept += step
                self.throttled_ms += slept
            self._period_start_ms = self._time.milliseconds()
            self._observed = 0.0


class _AbortedTxnMetadata:
    __slots__ = ("aborted_txn", "last_observed_batch_offset")

    def __init__(self, aborted_txn: AbortedTxn) -> None:
        self.aborted_txn = aborted_txn
        self.last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """The aborted and committed transactions a rewrite walks through, in offset order (Java's class of the
    same name): which batches are aborted data, and which markers no batch of their transaction remains for."""

    def __init__(self, aborted: Sequence[AbortedTxn]) -> None:
        self._aborted = sorted(aborted, key=lambda t: t.first_offset)
        self._next = 0
        self._ongoing_aborted: dict[int, _AbortedTxnMetadata] = {}
        self._ongoing_committed: set[int] = set()
        #: index entries the cleaned segment must keep (their aborted batches were still seen)
        self.kept_aborted: list[AbortedTxn] = []

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._next < len(self._aborted) and self._aborted[self._next].first_offset <= offset:
            txn = self._aborted[self._next]
            self._ongoing_aborted[txn.producer_id] = _AbortedTxnMetadata(txn)
            self._next += 1

    def on_batch_read(self, batch: DefaultRecordBatch) -> bool:
        """True when ``batch`` (not a control batch) belongs to an aborted transaction."""
        self._consume_aborted_up_to(batch.base_offset + batch.last_offset_delta)
        if not batch.is_transactional:
            return False
        meta = self._ongoing_aborted.get(batch.producer_id)
        if meta is not None:
            meta.last_observed_batch_offset = batch.base_offset + batch.last_offset_delta
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False

    def on_control_batch_read(self, batch: DefaultRecordBatch, control_type: ControlRecordType) -> bool:
        """True when the marker ends a transaction none of whose batches this rewrite saw (it may go)."""
        self._consume_aborted_up_to(batch.base_offset + batch.last_offset_delta)
        pid = batch.producer_id
        if control_type is ControlRecordType.ABORT:
            meta = self._ongoing_aborted.pop(pid, None)
            if meta is not None and meta.last_observed_batch_offset is not None:
                self.kept_aborted.append(meta.aborted_txn)
                return False
            return True
        if control_type is ControlRecordType.COMMIT:
            if pid in self._ongoing_committed:
                self._ongoing_committed.discard(pid)
                return False
            return True
        return False


@dataclass(slots=True)
class CleanerStats:
    """What one clean did (Java ``CleanerStats``)."""

    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_records: int = 0
    records_read: int = 0
    records_retained: int = 0
    batches_emptied_kept: int = 0
    segments_cleaned: int = 0
    #: the latest delete horizon of a batch the clean kept (-1: none): the log needs a clean once it passes
    latest_delete_horizon_ms: int = -1
    start_ms: int = 0
    end_ms: int = 0

    def elapsed_seconds(self) -> float:
        return max(self.end_ms - self.start_ms, 1) / 1000.0


@dataclass(frozen=True, slots=True)
class CleanResult:
    """Where the clean ended (the new first dirty offset), and what it did."""

    end_offset: int
    stats: CleanerStats = field(default_factory=CleanerStats)


class CleanAbortedError(Exception):
    """The log changed under a clean (closed, truncated, segments deleted): nothing was swapped in."""


def _iter_batches(segment: LogSegment) -> Iterator[DefaultRecordBatch]:
    for header in segment.iter_headers():
        yield DefaultRecordBatch(segment.read_bytes(header.position, header.size), 0)


def _control_type(batch: DefaultRecordBatch) -> ControlRecordType:
    records = batch.records()
    return ControlRecordType.parse(records[0].key) if records else ControlRecordType.UNKNOWN


def _encode_record(record: Record, base_offset: int, base_timestamp: int) -> bytes:
    ts_delta = record.timestamp - base_timestamp
    parts = [b"\x00", encode_varint(ts_delta), encode_varint(record.offset - base_offset)]
    for blob in (record.key, record.value):
        if blob is None:
            parts.append(encode_varint(-1))
        else:
            parts += [encode_varint(len(blob)), blob]
    parts.append(encode_varint(len(record.headers)))
    for hkey, hvalue in record.headers:
        raw = hkey.encode("utf-8")
        parts += [encode_varint(len(raw)), raw]
        parts += [encode_varint(-1)] if hvalue is None else [encode_varint(len(hvalue)), hvalue]
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def rebuild_batch(
    batch: DefaultRecordBatch, retained: Sequence[Record], delete_horizon_ms: int | None
) -> bytes:
    """``batch`` with only ``retained`` (possibly none), every header field kept (its last offset too, so that
    the producer's last sequence stays), re-encoded with its codec; with ``delete_horizon_ms`` the horizon flag
    is set and the base timestamp holds it (record timestamps stay the same)."""
    attributes = batch.attributes
    horizon = delete_horizon_ms
    if horizon is None and attributes & DELETE_HORIZON_FLAG_MASK:
        horizon = batch.base_timestamp
    if horizon is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK
        base_timestamp = horizon
    else:
        base_timestamp = retained[0].timestamp if retained else batch.base_timestamp
    log_append = bool(attributes & TIMESTAMP_TYPE_MASK)
    if log_append:
        max_timestamp = batch.max_timestamp
    else:
        max_timestamp = max((r.timestamp for r in retained), default=batch.max_timestamp)
    if log_append and horizon is None:
        base_timestamp = batch.base_timestamp  # record timestamps come from the max timestamp anyway
    payload = b"".join(_encode_record(r, batch.base_offset, base_timestamp) for r in retained)
    codec = attributes & COMPRESSION_CODEC_MASK
    if codec and payload:
        payload = compress(CompressionType.for_id(codec), payload)
    out = bytearray(RECORD_BATCH_OVERHEAD)
    out += payload
    HEADER_STRUCT.pack_into(
        out, 0, batch.base_offset, len(out) - 12, batch.partition_leader_epoch, _MAGIC_V2, 0, attributes,
        batch.last_offset_delta, base_timestamp, max_timestamp, batch.producer_id, batch.producer_epoch,
        batch.base_sequence, len(retained),
    )
    out[CRC_OFFSET : CRC_OFFSET + 4] = crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]).to_bytes(4, "big")
    return bytes(out)


class Cleaner:
    """Cleans one log at a time (see the module docstring). Used by one cleaner thread, or by a test."""

    def __init__(self, config: CleanerConfig, time: Time, throttler: Throttler | None = None) -> None:
        self.config = config
        self._time = time
        self.throttler = throttler if throttler is not None else Throttler(config.max_io_bytes_per_second, time)
        self.map = OffsetMap(config.max_map_entries())
        self._abort = threading.Event()

    def abort(self) -> None:
        """Ask a running clean to stop at the next batch (shutdown)."""
        self._abort.set()

    def _check_abort(self, log: Log) -> None:
        if self._abort.is_set():
            raise CleanAbortedError(f"clean of {log.topic}-{log.partition} aborted: the cleaner is stopping")

    # -- one clean ------------------------------------------------------------------------------------
    def clean(self, to_clean: LogToClean) -> CleanResult:
        """Dedupe ``to_clean.log`` from its first dirty offset; raises :class:`CleanAbortedError` when the log
        changed under the clean (nothing was swapped in)."""
        log = to_clean.log
        stats = CleanerStats(start_ms=self._time.milliseconds())
        self.map = OffsetMap(self.config.max_map_entries())
        segments = log.segments
        upper_of = {id(s): (segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset)
                    for i, s in enumerate(segments)}
        uncleanable = to_clean.first_uncleanable_offset
        end_offset = self._build_offset_map(log, segments[:-1], to_clean.first_dirty_offset, uncleanable, upper_of,
                                            stats)
        now = self._time.milliseconds()
        horizon_ms = now + log.config.delete_retention_ms
        cleanable = [s for s in segments[:-1] if s.base_offset < end_offset and upper_of[id(s)] > log.log_start_offset]
        active_producers = {pid: (entry.last_data_offset, entry.producer_epoch)
                            for pid, entry in log.producer_state.active_producers.items()}
        for group in self._group_segments_by_size(cleanable, log, upper_of):
            self._clean_segments(log, group, upper_of[id(group[-1])], now, horizon_ms, active_producers, stats)
        stats.end_ms = self._time.milliseconds()
        _log.info(
            "%s-%d: cleaned %d segments up to offset %d: %.1f MB read, %.1f MB written, %d of %d records kept "
            "in %.2f s", log.topic, log.partition, stats.segments_cleaned, end_offset, stats.bytes_read / 1e6,
            stats.bytes_written / 1e6, stats.records_retained, stats.records_read, stats.elapsed_seconds(),
        )
        return CleanResult(end_offset, stats)

    def _build_offset_map(
        self, log: Log, segments: list[LogSegment], first_dirty: int, uncleanable: int,
        upper_of: Mapping[int, int], stats: CleanerStats,
    ) -> int:
        """Fill the map from ``first_dirty`` up to the last whole segment below ``uncleanable``; returns the
        offset the clean ends at (the next first dirty offset)."""
        dirty = [s for s in segments if upper_of[id(s)] > first_dirty and upper_of[id(s)] <= uncleanable]
        if not dirty:  # no dirty data (a clean for expired tombstones): the rules apply to the whole clean part
            self.map.update_latest_offset(first_dirty - 1)
            return first_dirty
        aborted = log.collect_aborted_transactions(dirty[0].base_offset, upper_of[id(dirty[-1])])
        txns = CleanedTransactionMetadata(aborted)
        end = first_dirty
        for segment in dirty:
            for batch in _iter_batches(segment):
                self._check_abort(log)
                last = batch.base_offset + batch.last_offset_delta
                if batch.is_control:
                    txns.on_control_batch_read(batch, _control_type(batch))
                    end = last + 1
                    continue
                if txns.on_batch_read(batch) or last < first_dirty:
                    end = max(end, last + 1)
                    continue
                records = batch.records()
                if not self.map.has_room_for(len(records)):
                    if len(self.map) == 0:
                        raise CleanAbortedError(
                            f"{log.topic}-{log.partition}: a batch of {len(records)} records does not fit the "
                            f"offset map of {self.map.max_entries} entries; raise log.cleaner.dedupe.buffer.size"
                        )
                    self.map.update_latest_offset(end - 1)
                    return end
                self.map.put_all(records, first_dirty)
                stats.map_records += len(records)
                stats.map_bytes_read += batch.size_in_bytes
                self.throttler.maybe_throttle(batch.size_in_bytes)
                end = last + 1
            end = max(end, upper_of[id(segment)])
        self.map.update_latest_offset(end - 1)
        return end

    @staticmethod
    def _group_segments_by_size(
        segments: list[LogSegment], log: Log, upper_of: Mapping[int, int]
    ) -> list[list[LogSegment]]:
        """Consecutive segments whose total size, index size and offset span fit one segment."""
        groups: list[list[LogSegment]] = []
        config = log.config
        for segment in segments:
            if groups:
                group = groups[-1]
                size = sum(s.size for s in group) + segment.size
                index = sum(s.offset_index.entries() for s in group) + segment.offset_index.entries()
                span = upper_of[id(segment)] - 1 - group[0].base_offset
                if size <= config.segment_bytes and index * 8 < config.max_index_size and span <= _INT32_MAX:
                    group.append(segment)
                    continue
            groups.append([segment])
        return groups

    def _clean_segments(
        self, log: Log, group: list[LogSegment], upper: int, now: int, horizon_ms: int,
        active_producers: Mapping[int, tuple[int, int]], stats: CleanerStats,
    ) -> None:
        """Rewrite ``group`` into one ``.cleaned`` segment and swap it in."""
        txns = CleanedTransactionMetadata(log.collect_aborted_transactions(group[0].base_offset, upper))
        for suffix in (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX):
            # a leftover of a clean that stopped without cleaning up (its files are opened for appending)
            unlink_if_exists(os.path.join(log.dir_path, file_name_prefix(group[0].base_offset) + suffix
                                          + CLEANED_FILE_SUFFIX))
        cleaned = LogSegment(log.dir_path, group[0].base_offset, log.config, self._time, CLEANED_FILE_SUFFIX)
        try:
            for segment in group:
                try:
                    self._clean_into(log, segment, cleaned, txns, now, horizon_ms, active_producers, stats)
                except (OSError, ValueError) as e:
                    raise CleanAbortedError(
                        f"{log.topic}-{log.partition}: segment {segment.base_offset} could not be read ({e}); it "
                        "was probably deleted by retention or truncation meanwhile"
                    ) from e
            for txn in txns.kept_aborted:
                if txn.last_offset >= cleaned.base_offset:
                    cleaned.txn_index.append(txn)
            cleaned.on_become_inactive()
            cleaned.set_last_modified_ms(group[-1].last_modified_ms())
            if not log.replace_segments(cleaned, group):
                raise CleanAbortedError(
                    f"{log.topic}-{log.partition}: the log changed during the clean (closed, truncated or "
                    "segments deleted); the cleaned segment was dropped and the next clean starts over"
                )
            stats.segments_cleaned += len(group)
        except Exception:  # a failed clean leaves no files (a crash leaves .cleaned/.swap files to the loader)
            cleaned.delete()
            cleaned.close()
            raise

    def _clean_into(
        self, log: Log, source: LogSegment, dest: LogSegment, txns: CleanedTransactionMetadata, now: int,
        horizon_ms: int, active_producers: Mapping[int, tuple[int, int]], stats: CleanerStats,
    ) -> None:
        out = bytearray()
        appended: list[AppendedBatch] = []
        for batch in _iter_batches(source):
            self._check_abort(log)
            stats.bytes_read += batch.size_in_bytes
            last = batch.base_offset + batch.last_offset_delta
            horizon = batch.base_timestamp if batch.has_delete_horizon_ms else None
            producer = active_producers.get(batch.producer_id) if batch.producer_id >= 0 else None
            records = batch.records()
            stats.records_read += len(records)
            marker_for_empty_txn = False
            if batch.is_control:
                marker_for_empty_txn = txns.on_control_batch_read(batch, _control_type(batch))
                discard = marker_for_empty_txn and horizon is not None and horizon <= now
            else:
                discard = txns.on_batch_read(batch)
            if producer is not None:
                last_data_offset, epoch = producer
                retain_empty = (last == last_data_offset) if last_data_offset >= 0 else (
                    batch.is_control and batch.producer_epoch == epoch
                )
            else:
                retain_empty = False
            if discard and not retain_empty:
                continue
            if discard:
                retained: list[Record] = []
            elif batch.is_control:
                retained = records
            else:
                retained = self.map.retained(records, horizon, now)
            has_tombstone = any(r.value is None for r in retained) and not batch.is_control
            set_horizon = (has_tombstone or marker_for_empty_txn) and horizon is None
            if retained and len(retained) == len(records) and not set_horizon:
                data = batch.buffer[batch.position : batch.position + batch.size_in_bytes]
            elif retained or retain_empty:
                data = rebuild_batch(batch, retained, horizon_ms if set_horizon else None)
                if not retained:
                    stats.batches_emptied_kept += 1
            else:
                continue
            stats.records_retained += len(retained)
            if set_horizon or horizon is not None:
                stats.latest_delete_horizon_ms = max(stats.latest_delete_horizon_ms,
                                                     horizon_ms if set_horizon else horizon or -1)
            appended.append(AppendedBatch(len(out), last, batch.max_timestamp, len(data)))
            out += data
            if len(out) >= 1 << 20:
                self._write(dest, out, appended, stats)
                out, appended = bytearray(), []
        self._write(dest, out, appended, stats)
        self.throttler.maybe_throttle(source.size)

    def _write(self, dest: LogSegment, out: bytearray, appended: list[AppendedBatch], stats: CleanerStats) -> None:
        if out:
            dest.append(out, appended)
            stats.bytes_written += len(out)
            self.throttler.maybe_throttle(len(out))


class LogCleaner:
    """The cleaner threads of a broker (see the module docstring). ``logs`` gives the broker's logs by
    partition (the log manager's table)."""

    def __init__(
        self, config: CleanerConfig, log_dirs: list[str], logs: Callable[[], Mapping[tuple[str, int], Log]],
        time: Time = SYSTEM_TIME,
    ) -> None:
        self.config = config
        self._time = time
        self.manager = LogCleanerManager(log_dirs, logs)
        self.throttler = Throttler(config.max_io_bytes_per_second, time)
        self._stop = threading.Event()
        self._cleaners: list[Cleaner] = []
        self._threads: list[threading.Thread] = []
        #: totals over every clean since startup (the bench reads them)
        self.total_bytes_read = 0
        self.total_bytes_written = 0
        self.total_clean_seconds = 0.0
        self.cleans_done = 0
        self.last_clean_seconds = 0.0
        self._totals_lock = threading.Lock()

    def register_metrics(self, metrics: BrokerMetrics) -> None:
        """Kafka's cleaner gauges (MBean names flattened): the dirtiest log's dirty percentage when last chosen,
        the uncleanable partitions, the last clean's time, and the totals since startup."""
        metrics.gauge("kafka_log_LogCleanerManager_max_dirty_percent", lambda: float(self.manager.max_dirty_percent))
        metrics.gauge("kafka_log_LogCleanerManager_uncleanable_partitions_count",
                      lambda: float(self.manager.uncleanable_count()))
        metrics.gauge("kafka_log_LogCleaner_max_clean_time_secs", lambda: self.last_clean_seconds)
        metrics.gauge("kafka_log_LogCleaner_cleaner_bytes_read_total", lambda: float(self.total_bytes_read))
        metrics.gauge("kafka_log_LogCleaner_cleaner_bytes_written_total", lambda: float(self.total_bytes_written))

    def startup(self) -> None:
        if not self.config.enable_cleaner:
            _log.info("log cleaner disabled (log.cleaner.enable=false): compacted topics are not compacted")
            return
        for i in range(self.config.num_threads):
            cleaner = Cleaner(self.config, self._time, self.throttler)
            thread = threading.Thread(
                target=self._run, args=(cleaner,), name=f"kafka-log-cleaner-thread-{i}", daemon=True
            )
            self._cleaners.append(cleaner)
            self._threads.append(thread)
            thread.start()

    def shutdown(self) -> None:
        """Stop the threads, aborting a clean in progress (its ``.cleaned`` files are removed)."""
        self._stop.set()
        self.throttler.stop()
        for cleaner in self._cleaners:
            cleaner.abort()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()
        self._threads = []

    def _run(self, cleaner: Cleaner) -> None:
        while not self._stop.is_set():
            cleaned = False
            try:
                cleaned = self.clean_filthiest_log(cleaner)
            except Exception:
                _log.exception("log cleaner thread failed a round; backing off")
            if not cleaned:
                self._stop.wait(self.config.backoff_ms / 1000.0)

    def clean_filthiest_log(self, cleaner: Cleaner | None = None) -> bool:
        """One round: clean the filthiest log, if any qualifies. True when a log was cleaned (a test calls this
        with a ``MockTime`` instead of starting threads)."""
        cleaner = cleaner if cleaner is not None else Cleaner(self.config, self._time, self.throttler)
        to_clean = self.manager.grab_filthiest_log(self._time.milliseconds())
        if to_clean is None:
            return False
        end: int | None = None
        result = CleanResult(-1)
        try:
            result = cleaner.clean(to_clean)
            end = result.end_offset
            with self._totals_lock:
                self.total_bytes_read += result.stats.bytes_read
                self.total_bytes_written += result.stats.bytes_written
                self.total_clean_seconds += result.stats.elapsed_seconds()
                self.last_clean_seconds = result.stats.elapsed_seconds()
                self.cleans_done += 1
        except CleanAbortedError as e:
            _log.info("%s", e)
        except Exception:
            if self.manager.is_current(to_clean.log):
                # Kafka's uncleanable partitions: not retried until the log is truncated, deleted or reloaded
                _log.exception("cleaning %s-%d failed; it is not cleaned again until it is truncated, deleted or the "
                               "broker restarts", to_clean.log.topic, to_clean.log.partition)
                self.manager.mark_uncleanable(to_clean.log)
            else:  # the log was replaced (truncation, deletion) under the clean
                _log.info("clean of %s-%d stopped: the log was replaced meanwhile", to_clean.log.topic,
                          to_clean.log.partition)
        finally:
            self.manager.done_cleaning(to_clean.log, end, result.stats.latest_delete_horizon_ms if end is not None
                                       else -1)
        return end is not None
