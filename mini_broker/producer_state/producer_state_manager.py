"""Per-partition producer state: duplicate detection, sequence/epoch checks, snapshots, expiry
(Kafka ``ProducerStateManager`` + the producer part of ``UnifiedLog.analyzeAndValidateProducerState``).

Integration with the partition log (see docs/ARCHITECTURE.md, "Producer state"):

* on append (client origin), under the log lock, call :meth:`ProducerStateManager.prepare_append` with the
  validated batches and the offset the first one will get (the log end offset). It either returns the
  :class:`BatchMetadata` of a duplicate (skip the write, answer with those offsets, error NONE), raises
  ``OutOfOrderSequenceError`` / ``InvalidProducerEpochError`` / ``InvalidTxnStateError`` (reject the whole
  append), or returns the pending updates, applied with :meth:`complete_append` only after the segment write
  succeeded (the partition Log does this).
* at segment roll and at clean shutdown call :meth:`take_snapshot` with the log end offset;
* on log load call :meth:`load` with the log end offset, then :meth:`replay` every batch from
  :attr:`map_end_offset` to the end (no sequence checks), so the in-memory state matches the log;
* periodically (``producer.id.expiration.check.interval.ms``, default 10 min) call
  :meth:`remove_expired_producers` with the wall clock.

Nothing changes until :meth:`complete_append`, so a failed write leaves the state as it was.

Snapshot file ``<20-digit offset>.snapshot`` (offset = first offset NOT covered), big-endian::

    version int16 (=1) | crc uint32 (CRC-32C of everything after it) | count int32 |
    count x (producer_id int64, epoch int16, last_seq int32, last_offset int64, offset_delta int32,
             timestamp int64, coordinator_epoch int32, current_txn_first_offset int64 (-1 = none))

As in Kafka only the last batch of each producer is in a snapshot; replaying the log tail restores more.

Transactions (broker contract 1.11): ongoing transactions are kept by first offset in an ordered map
(``SortedDict``, Kafka's TreeMap), filled when a producer's first transactional batch on the partition is
appended and emptied by its COMMIT/ABORT marker. A completed transaction stays *unreplicated* until the high
watermark passes its marker (:meth:`on_high_watermark_updated`; on one broker the HW follows the log end at
once). :meth:`first_unstable_offset` is the smallest first offset of both maps; the Log derives the last
stable offset from it. The snapshot keeps each producer's ``current_txn_first_offset``, so loading it
rebuilds the ongoing transactions, and replaying the log after it rebuilds the rest (markers included).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from crc32c import crc32c
from sortedcontainers import SortedDict

from mini_broker.producer_state.producer_append_info import AppendOrigin, BatchInfo, ProducerAppendInfo, in_sequence
from mini_broker.producer_state.producer_state_entry import (
    LAST_SEQ,
    BatchMetadata,
    ProducerStateEntry,
    new_batch_metadata,
)
from mini_broker.producer_state.txn_metadata import CompletedTxn, TxnMetadata
from mini_broker.utils.atomic_file import atomic_write
from mini_broker.utils.positional_tuple import positional_tuple
from pykafka_client.errors import CorruptRecordError
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.control import ControlRecordType, EndTransactionMarker
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch

if TYPE_CHECKING:  # (the log imports this module)
    from mini_broker.log.log_end import LogEndApi

_log = logging.getLogger(__name__)
#: read once (an Enum class attribute read goes through EnumType.__getattr__ on Python 3.11)
_CLIENT = AppendOrigin.CLIENT

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000


class CorruptSnapshotError(CorruptRecordError):
    """A producer snapshot file is truncated, has a bad CRC or an unknown version."""


class ProducerBatchView(Protocol):
    """What the manager reads from a record batch (``DefaultRecordBatch`` satisfies it)."""

    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset_delta(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...


class PendingAppend(NamedTuple):
    """Producer entries updated by an append not yet written, and the offset after its last batch (a named tuple:
    one per append)."""

    updated: dict[int, ProducerStateEntry]
    end_offset: int
    #: (producer id, first offset) of the transactions the append starts.
    started_txns: list[tuple[int, int]]
    #: Transactions with data the append's markers end, in offset order.
    completed_txns: list[CompletedTxn]


def next_last_sequence(first_seq: int, delta: int) -> int:
    """The last sequence of a batch from its base sequence and last offset delta (``DefaultRecordBatch.last_sequence``:
    -1 without a sequence, wrapping past Int.MAX_VALUE)."""
    return -1 if first_seq < 0 else (first_seq + delta) & 0x7FFFFFFF


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def end_txn_marker_of(batch: object) -> tuple[bool, int] | None:
    """(is_abort, coordinator_epoch) of a control batch's COMMIT/ABORT marker; None for other control
    records. Views that are not record batches (test doubles) carry it as a ``marker`` attribute."""
    if not isinstance(batch, DefaultRecordBatch):
        marker = getattr(batch, "marker", None)
        return marker if isinstance(marker, tuple) else None
    for record in batch.records():
        if ControlRecordType.parse(record.key) not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return None
        m = EndTransactionMarker.deserialize(record)
        return m.control_type is ControlRecordType.ABORT, m.coordinator_epoch
    return None


def _batch_info(batch: ProducerBatchView, first_offset: int) -> BatchInfo:
    is_control = batch.is_control
    return BatchInfo(
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.last_sequence,
        first_offset,
        first_offset + batch.last_offset_delta,
        batch.max_timestamp,
        batch.is_transactional,
        is_control,
        end_txn_marker_of(batch) if is_control else None,
    )


class ProducerStateManager:
    """The producers of one partition; thread-safe (one lock, held briefly)."""

    def __init__(
        self,
        topic_partition: str,
        log_dir: str,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.topic_partition = topic_partition
        self.log_dir = log_dir
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self._lock = threading.RLock()
        #: The offset up to which (exclusive) the state reflects the log.
        self.map_end_offset = 0
        #: first offset -> TxnMetadata of the transactions without a marker yet.
        self._ongoing_txns: SortedDict = SortedDict()
        #: first offset -> TxnMetadata of completed transactions whose marker is not below the HW yet.
        self._unreplicated_txns: SortedDict = SortedDict()

    def lend_to(self, log_end: LogEndApi) -> None:
        """Lend the log's end (:mod:`mini_broker.log.log_end`) what its common append reads and moves: this manager
        (its :attr:`map_end_offset` and :meth:`update_map_end_offset`), the producers map (checked as
        :meth:`next_append_entry` does and completed as :meth:`complete_next_append` does, under this manager's lock),
        the lock, and the unreplicated transactions (the append declines while any is left for
        :meth:`on_high_watermark_updated` to forget). The map and the lock are never replaced."""
        log_end.bind_producer_state(self, self._producers, self._lock, self._unreplicated_txns)

    # --- queries -------------------------------------------------------------------------------------

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    @property
    def active_producers(self) -> dict[int, ProducerStateEntry]:
        with self._lock:
            return {pid: e.copy() for pid, e in self._producers.items()}

    def is_empty(self) -> bool:
        return not self._producers

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction that is ongoing or completed above the HW."""
        with self._lock:
            firsts = [int(m.peekitem(0)[0]) for m in (self._ongoing_txns, self._unreplicated_txns) if m]
            return min(firsts) if firsts else None

    def ongoing_txns(self) -> list[TxnMetadata]:
        """The ongoing transactions, oldest first (copies)."""
        with self._lock:
            return [TxnMetadata(t.producer_id, t.first_offset, t.last_offset) for t in self._ongoing_txns.values()]

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO recorded with an aborted transaction in the index: the first offset of the oldest other
        producer's ongoing transaction, else the offset after the marker (Kafka ``lastStableOffset``)."""
        with self._lock:
            for txn in self._ongoing_txns.values():
                if txn.producer_id != completed.producer_id:
                    return int(txn.first_offset)
            return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """Move the transaction from ongoing to unreplicated (its marker is written)."""
        with self._lock:
            txn = self._ongoing_txns.pop(completed.first_offset, None)
            if txn is None:
                _log.warning("%s: completed transaction %s was not ongoing", self.topic_partition, completed)
                return
            txn.last_offset = completed.last_offset
            self._unreplicated_txns[completed.first_offset] = txn

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below the high watermark."""
        if not self._unreplicated_txns:
            return  # (read without the lock: only the log's appends, under the log lock, add to it)
        with self._lock:
            while self._unreplicated_txns:
                first, txn = self._unreplicated_txns.peekitem(0)
                if txn.last_offset >= high_watermark:
                    break
                del self._unreplicated_txns[first]

    # --- appends -------------------------------------------------------------------------------------

    def prepare_append(
        self, batches: Sequence[ProducerBatchView], first_offset: int, origin: AppendOrigin = AppendOrigin.CLIENT
    ) -> BatchMetadata | PendingAppend:
        """Check the producer batches of one append (Kafka ``analyzeAndValidateProducerState``) without
        changing any state: returns a duplicate's metadata, or the updates to apply with
        :meth:`complete_append` once the batches are written. Raises on a sequence, epoch or
        transaction-state violation. The caller serialises prepare/complete per partition (the log lock)."""
        producers = self._producers
        if origin is _CLIENT and len(batches) == 1:
            # (without the lock: one read of the map and of an entry, changed in place only by complete_next_append,
            # which the caller serialises with this call; the general path does not hold the lock from prepare to
            # complete either)
            appended = self._prepare_next_batch(batches[0], first_offset)
            if appended is not None:
                return appended
        with self._lock:
            infos: dict[int, ProducerAppendInfo] = {}
            offset = first_offset
            for batch in batches:
                info = _batch_info(batch, offset)
                offset = info.last_offset + 1
                producer_id = info.producer_id
                if producer_id < 0:
                    continue
                if origin is _CLIENT and not info.is_control:
                    entry = producers.get(producer_id)
                    if entry is not None:
                        dup = entry.find_duplicate_batch(info.producer_epoch, info.first_seq, info.last_seq)
                        if dup is not None:
                            return dup
                pai = infos.get(producer_id)
                if pai is None:
                    current = producers.get(producer_id) or ProducerStateEntry.empty(producer_id)
                    pai = infos[producer_id] = ProducerAppendInfo(self.topic_partition, producer_id, current, origin)
                pai.append(info)
            updated: dict[int, ProducerStateEntry] = {}
            started: list[tuple[int, int]] = []
            completed: list[CompletedTxn] = []
            for pid, pai in infos.items():
                updated[pid] = pai.updated
                if pai.started_txns:
                    started += [(pid, first) for first in pai.started_txns]
                if pai.completed_txns:
                    completed += pai.completed_txns
            if len(started) > 1:
                started.sort()
            if len(completed) > 1:
                completed.sort(key=lambda c: c.last_offset)
            return PendingAppend(updated, offset, started, completed)

    def _prepare_next_batch(self, batch: ProducerBatchView, first_offset: int) -> PendingAppend | None:
        """:meth:`prepare_next_append` on ``batch``'s fields."""
        return self.prepare_next_append(batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                        batch.last_offset_delta, batch.max_timestamp, batch.is_transactional,
                                        batch.is_control, first_offset)

    def prepare_next_append(self, producer_id: int, epoch: int, first_seq: int, delta: int, max_timestamp: int,
                            is_transactional: bool, is_control: bool, first_offset: int) -> PendingAppend | None:
        """:meth:`prepare_append`'s answer for a client append of one data batch (its producer id, epoch, base
        sequence, last offset delta, max timestamp and flags) when :meth:`next_append_entry` accepts it; None for every
        other case, which the general path judges (it finds the duplicates and raises the errors). The same result as
        the general path, without its per-batch objects (BatchInfo, ProducerAppendInfo)."""
        entry = self.next_append_entry(producer_id, epoch, first_seq, delta, is_transactional, is_control)
        if entry is None:
            return None
        updated = entry.copy()  # (same epoch: the cached batches stay)
        updated.add_batch(epoch, next_last_sequence(first_seq, delta), first_offset + delta, delta, max_timestamp)
        return _new_pending_append({producer_id: updated}, first_offset + delta + 1, [], [])

    def next_append_entry(self, producer_id: int, epoch: int, first_seq: int, delta: int, is_transactional: bool,
                          is_control: bool) -> ProducerStateEntry | None:
        """The entry of the producer of a client's data batch (its producer id, epoch, base sequence, last offset
        delta and flags) when the batch is the next one of that known producer (same epoch, the sequence right after
        its last batch, not a duplicate of a cached one, the transaction state unchanged: inside its open transaction
        or outside any): the append is then :meth:`complete_next_append` once written. None for every other case
        (:meth:`prepare_append` judges those). Changes nothing. (The log's common append calls it with the fields
        the kernel read, without a batch view; the caller serialises it with the appends, as prepare/complete.) The
        compiled kernel's ``producer_next_entry`` answers when it is loaded; the code below is its reference."""
        kernel = _native.kernel
        if kernel is not None:
            found: ProducerStateEntry | None = kernel.producer_next_entry(self._producers, producer_id, epoch, first_seq,
                                                                         delta, is_transactional, is_control)
            return found
        entry = self._producers.get(producer_id)
        if entry is None or producer_id < 0:
            return None
        cached = entry.batch_metadata
        if epoch != entry.producer_epoch or not cached or is_control:
            return None
        if (entry.current_txn_first_offset is not None) != bool(is_transactional):
            return None  # starts a transaction, or a non-transactional batch inside one
        if not in_sequence(cached[-1][LAST_SEQ], first_seq):
            return None
        if entry.find_duplicate_batch(epoch, first_seq, next_last_sequence(first_seq, delta)) is not None:
            return None
        return entry

    def complete_next_append(self, entry: ProducerStateEntry, first_seq: int, delta: int, max_timestamp: int,
                             first_offset: int) -> None:
        """Apply the batch :meth:`next_append_entry` accepted with ``entry`` (its base sequence, last offset delta and
        max timestamp), written at ``first_offset``: what :meth:`complete_append` does with
        :meth:`prepare_next_append`'s answer, with the batch added to the entry itself (under the lock; the entry
        is put back if expiry removed it meanwhile) rather than to a copy that replaces it."""
        end_offset = first_offset + delta + 1
        with self._lock:
            kernel = _native.kernel
            if kernel is not None:  # (the two statements below in one call)
                kernel.producer_add_next(self._producers, entry, first_seq, delta, max_timestamp, end_offset - 1,
                                         new_batch_metadata)
            else:
                entry.add_batch(entry.producer_epoch, next_last_sequence(first_seq, delta), end_offset - 1, delta,
                                max_timestamp)
                self._producers[entry.producer_id] = entry
            if end_offset > self.map_end_offset:
                self.map_end_offset = end_offset

    def complete_append(self, pending: PendingAppend) -> list[tuple[CompletedTxn, int]]:
        """Apply what :meth:`prepare_append` computed (after the write succeeded). Returns each completed
        transaction with the last stable offset to record for it in the aborted-transaction index."""
        with self._lock:
            self._producers.update(pending.updated)
            for pid, first in pending.started_txns:
                self._ongoing_txns[first] = TxnMetadata(pid, first)
            if pending.end_offset > self.map_end_offset:
                self.map_end_offset = pending.end_offset
            return self._complete_txns(pending.completed_txns) if pending.completed_txns else []

    def _complete_txns(self, completed: Sequence[CompletedTxn]) -> list[tuple[CompletedTxn, int]]:
        out: list[tuple[CompletedTxn, int]] = []
        for txn in completed:
            out.append((txn, self.last_stable_offset(txn)))
            self.complete_txn(txn)
        return out

    def update_map_end_offset(self, end_offset: int) -> None:
        """Batches without a producer id up to ``end_offset`` (exclusive) were appended."""
        with self._lock:
            self.map_end_offset = max(self.map_end_offset, end_offset)

    def replay(self, batches: Iterable[ProducerBatchView]) -> list[tuple[CompletedTxn, int]]:
        """Rebuild state from batches already in the log (offsets as stored; no sequence checks). Returns
        the transactions its markers completed, each with its index LSO (as :meth:`complete_append`)."""
        completed: list[tuple[CompletedTxn, int]] = []
        with self._lock:
            for batch in batches:
                end = batch.base_offset + batch.last_offset_delta + 1
                if batch.producer_id >= 0 and end > self.map_end_offset:
                    current = self._producers.get(batch.producer_id) or ProducerStateEntry.empty(batch.producer_id)
                    pai = ProducerAppendInfo(self.topic_partition, batch.producer_id, current, AppendOrigin.REPLICATION)
                    try:
                        pai.append(_batch_info(batch, batch.base_offset))
                    except Exception as e:  # the log is the truth: keep going with what we can
                        _log.warning("skipping producer state of batch at %d in %s: %s", batch.base_offset, self.topic_partition, e)
                        continue
                    self._producers[batch.producer_id] = pai.updated
                    for first in pai.started_txns:
                        self._ongoing_txns[first] = TxnMetadata(batch.producer_id, first)
                    completed += self._complete_txns(pai.completed_txns)
                self.map_end_offset = max(self.map_end_offset, end)
            # replayed data is below the high watermark (which starts at the log end after a load)
            self._unreplicated_txns.clear()
        return completed

    # --- expiry --------------------------------------------------------------------------------------

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """Forget producers idle for ``producer.id.expiration.ms`` without an open transaction."""
        with self._lock:
            expired = [
                pid for pid, e in self._producers.items()
                if e.current_txn_first_offset is None and now_ms - e.last_timestamp >= self.producer_id_expiration_ms
            ]
            for pid in expired:
                del self._producers[pid]
            return expired

    # --- snapshots -----------------------------------------------------------------------------------

    def take_snapshot(self, offset: int | None = None) -> str:
        """Write ``<offset>.snapshot`` (default: :attr:`map_end_offset`) atomically; returns its path."""
        with self._lock:
            end = self.map_end_offset if offset is None else offset
            entries = [
                e for e in self._producers.values()
                if not e.is_empty() or e.current_txn_first_offset is not None or e.coordinator_epoch >= 0
            ]
            body = bytearray(struct.pack(">i", len(entries)))
            for e in entries:
                last = e.batch_metadata[-1] if e.batch_metadata else BatchMetadata(-1, -1, 0, e.last_timestamp)
                body += _ENTRY.pack(
                    e.producer_id, e.producer_epoch, last.last_seq, last.last_offset, last.offset_delta,
                    last.timestamp, e.coordinator_epoch,
                    -1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
                )
        data = struct.pack(">hI", SNAPSHOT_VERSION, crc32c(bytes(body))) + bytes(body)
        os.makedirs(self.log_dir, exist_ok=True)
        path = os.path.join(self.log_dir, snapshot_file_name(end))
        atomic_write(path, data)
        return path

    def snapshot_offsets(self) -> list[int]:
        out: list[int] = []
        try:
            names = os.listdir(self.log_dir)
        except FileNotFoundError:
            return out
        for name in names:
            stem = name[: -len(SNAPSHOT_SUFFIX)]
            if name.endswith(SNAPSHOT_SUFFIX) and stem.isdigit():
                out.append(int(stem))
        return sorted(out)

    @staticmethod
    def read_snapshot(path: str) -> list[ProducerStateEntry]:
        """Parse a snapshot file; a truncated, corrupt or unknown-version file raises CorruptSnapshotError."""
        with open(path, "rb") as fh:
            data = fh.read()
        if len(data) < _HEADER.size:
            raise CorruptSnapshotError(f"snapshot {path} is truncated ({len(data)} bytes)")
        version, crc, count = _HEADER.unpack_from(data, 0)
        if version != SNAPSHOT_VERSION:
            raise CorruptSnapshotError(f"snapshot {path} has unknown version {version}")
        if crc32c(data[6:]) != crc:
            raise CorruptSnapshotError(f"snapshot {path} has a bad CRC")
        if count < 0 or len(data) != _HEADER.size + count * _ENTRY.size:
            raise CorruptSnapshotError(f"snapshot {path}: {count} entries do not match its size {len(data)}")
        entries: list[ProducerStateEntry] = []
        pos = _HEADER.size
        for _ in range(count):
            pid, epoch, last_seq, last_offset, delta, ts, coord_epoch, txn_first = _ENTRY.unpack_from(data, pos)
            pos += _ENTRY.size
            batches = [BatchMetadata(last_seq, last_offset, delta, ts)] if last_offset >= 0 else []
            entries.append(
                ProducerStateEntry(pid, epoch, coord_epoch, ts, None if txn_first < 0 else txn_first, batches)
            )
        return entries

    def load(self, log_end_offset: int, now_ms: int) -> None:
        """Load the newest readable snapshot at or below ``log_end_offset`` (deleting newer and corrupt ones)
        and drop expired producers. Afterwards replay the log from :attr:`map_end_offset`."""
        with self._lock:
            self._producers.clear()
            self._ongoing_txns.clear()
            self._unreplicated_txns.clear()
            self.map_end_offset = 0
            for off in reversed(self.snapshot_offsets()):
                path = os.path.join(self.log_dir, snapshot_file_name(off))
                if off > log_end_offset:
                    os.remove(path)
                    continue
                try:
                    entries = self.read_snapshot(path)
                except (OSError, CorruptSnapshotError) as err:
                    _log.warning("deleting unreadable producer snapshot %s: %s", path, err)
                    os.remove(path)
                    continue
                for e in entries:
                    if e.current_txn_first_offset is not None or now_ms - e.last_timestamp < self.producer_id_expiration_ms:
                        self._producers[e.producer_id] = e
                    if e.current_txn_first_offset is not None:
                        self._ongoing_txns[e.current_txn_first_offset] = TxnMetadata(e.producer_id, e.current_txn_first_offset)
                self.map_end_offset = off
                return

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> None:
        """After the log was truncated: drop snapshots outside ``[log_start_offset, log_end_offset]`` and reload."""
        for off in self.snapshot_offsets():
            if off < log_start_offset or off > log_end_offset:
                os.remove(os.path.join(self.log_dir, snapshot_file_name(off)))
        self.load(log_end_offset, now_ms)

    def delete_snapshots_before(self, offset: int) -> None:
        for off in self.snapshot_offsets():
            if off < offset:
                os.remove(os.path.join(self.log_dir, snapshot_file_name(off)))


class _ReadableLog(Protocol):
    @property
    def log_end_offset(self) -> int: ...
    @property
    def log_start_offset(self) -> int: ...

    def read(self, start_offset: int, max_bytes: int) -> Any: ...


def rebuild_from_log(
    manager: ProducerStateManager, log: _ReadableLog, now_ms: int, chunk_bytes: int = 8 << 20
) -> list[tuple[CompletedTxn, int]]:
    """On log load: the newest snapshot, then every batch after it (``log.read(...).to_bytes()``), so the state
    matches the log. Reads in chunks of ``chunk_bytes`` (at least one batch each). Returns the transactions
    the replayed markers completed, with their index LSO (the log re-adds missing aborted-index entries)."""
    from pykafka_client.protocol.records.memory_records import MemoryRecords

    end = log.log_end_offset
    manager.load(end, now_ms)
    offset = max(manager.map_end_offset, log.log_start_offset)
    completed: list[tuple[CompletedTxn, int]] = []
    while offset < end:
        info = log.read(offset, chunk_bytes)
        data = info.to_bytes() if info.records is not None else b""
        views = [b for b in MemoryRecords(data).batches() if isinstance(b, DefaultRecordBatch)]
        if not views:
            break
        completed += manager.replay(v for v in views if v.base_offset + v.last_offset_delta >= offset)
        offset = views[-1].base_offset + views[-1].last_offset_delta + 1
    return completed


#: PendingAppend made without its Python-level __new__ (one per append)
_new_pending_append = positional_tuple(PendingAppend)
