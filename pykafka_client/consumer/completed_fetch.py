"""One partition's data from one fetch response, turned into records on demand (Java: CompletedFetch,
FetchBuffer).

A :class:`CompletedFetch` is created in whatever thread completes the fetch response (possibly the
heartbeat thread) and holds only the response data; decoding, CRC checks, transaction filtering and
deserialization happen later in the application thread (:meth:`fetch_records`).

Invariants:
* Records are returned in offset order and only from ``next_fetch_offset`` on (a compressed batch
  may start before the fetch position; records before it are skipped).
* Control batches, and with ``read_committed`` the batches of aborted transactions, are skipped but
  the position moves past them.
* An error while reading (corrupt batch, CRC mismatch, undecodable record, deserializer failure) is
  raised with the partition and offset; records before it in the same call are returned first and
  the error is raised by the next call. The error sticks (raised again on every call) and the
  position stays at the bad record until the application seeks past it: no data is skipped silently.
"""

from __future__ import annotations

import heapq
import itertools
import operator
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, TypeVar

from pykafka_client.consumer.consumer_record import ConsumerRecord, TimestampType
from pykafka_client.errors import (
    CorruptRecordError,
    MessageDecodeError,
    RecordDeserializationError,
)
from pykafka_client.errors_base import BrokerResponseError, KafkaError
from pykafka_client.protocol.messages.fetch_response import FetchResponse
from pykafka_client.protocol.records import ControlRecordType, MemoryRecords, RecordBatch, _native
from pykafka_client.protocol.records.columns import RecordColumns, columns_of_records, decode_columns
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from pykafka_client.protocol.records.record import Record
from pykafka_client.structs import TopicPartition

#: ``f(topic, data, headers)``; None means "return the bytes as they are" (no call per record).
Deserialize = Callable[[str, "bytes | None", Any], Any] | None

_TIMESTAMP_TYPES = {int(t): t for t in TimestampType}
_T = TypeVar("_T")


def _increasing(records: list[Record]) -> bool:
    """Whether the offsets of ``records`` strictly increase (always, unless the broker sent a bad batch)."""
    offsets = [r.offset for r in records]
    return all(map(operator.lt, offsets, itertools.islice(offsets, 1, None)))


def consumer_records_reference(
    records: list[Record],
    position: int,
    topic: str,
    partition: int,
    timestamp_type: TimestampType,
    leader_epoch: int | None,
) -> list[ConsumerRecord[Any, Any]]:
    """``records`` (of one batch) as ConsumerRecords with keys and values as bytes, skipping every record behind
    the running position (from ``position``, then the last record taken + 1): a record is never returned twice
    or out of order. The reference of the kernel's ``decode_consumer_records``."""
    if not records or records[0].offset < position or not _increasing(records):
        kept = []
        for r in records:
            if r.offset >= position:
                kept.append(r)
                position = r.offset + 1
        records = kept
    cr = ConsumerRecord
    return [
        cr(topic, partition, o, ts, timestamp_type, k, v, h, leader_epoch,
           -1 if k is None else len(k), -1 if v is None else len(v))
        for o, ts, _, k, v, h in records
    ]


def _why(e: BaseException) -> str:
    """The cause's own message, without the error-code prefix of broker error classes."""
    message = e.message if isinstance(e, BrokerResponseError) else None
    return message if message else str(e)


def corrupt(tp: TopicPartition, offset: int, why: str) -> CorruptRecordError:
    """A CorruptRecordError naming the partition and offset; both are also attributes."""
    err = CorruptRecordError(f"corrupt record batch in partition {tp} at offset {offset}: {why}")
    err.topic_partition = tp  # type: ignore[attr-defined]
    err.offset = offset  # type: ignore[attr-defined]
    return err


class FetchedColumns(NamedTuple):
    """Whole record batches of one partition, each as columns, in offset order."""

    #: the position they were read from: records before it (in the first batch) are not part of the read
    start_offset: int
    columns: list[RecordColumns]


class CompletedFetch:
    """Fetched data of one partition (see module docstring)."""

    def __init__(
        self,
        tp: TopicPartition,
        fetch_offset: int,
        partition_data: FetchResponse.PartitionData,
        request_version: int,
    ) -> None:
        self.partition = tp
        self.fetch_offset = fetch_offset
        self.partition_data = partition_data
        self.request_version = request_version
        self.next_fetch_offset = fetch_offset
        self.last_epoch: int | None = None
        self.initialized = False
        self.is_consumed = False
        self.cached_exception: BaseException | None = None
        self.records_read = 0
        self.bytes_read = 0
        self._batches: Iterator[RecordBatch] | None = None
        #: the current batch's records not returned yet: ``_records[_index:]`` (decoded, for deserializers) or
        #: ``_ready[_index:]`` (already ConsumerRecords, when keys and values stay bytes); one of them is empty
        self._records: list[Record] = []
        self._ready: list[ConsumerRecord[Any, Any]] = []
        self._index = 0
        self._current_batch: RecordBatch | None = None
        self._aborted_producer_ids: set[int] = set()
        self._aborted_txns: list[tuple[int, int]] = []
        self._check_crcs = True
        self._read_committed = False

    def _open(self, check_crcs: bool, read_committed: bool) -> None:
        records = self.partition_data.records
        buf: bytes | memoryview = b"" if records is None else records  # type: ignore[assignment]
        self._batches = iter(MemoryRecords(buf).batches())
        if read_committed and self.partition_data.aborted_transactions:
            self._aborted_txns = [(a.first_offset, a.producer_id) for a in self.partition_data.aborted_transactions]
            heapq.heapify(self._aborted_txns)
        self._check_crcs = check_crcs
        self._read_committed = read_committed

    def drain(self) -> None:
        """Drop what is left (the partition was revoked, paused or seeked)."""
        self.is_consumed = True
        self._forget_batch()

    def _forget_batch(self) -> None:
        self._records = []
        self._ready = []
        self._index = 0

    def _has_pending(self) -> bool:
        """Records of the current batch not returned yet."""
        return self._index < len(self._records) or self._index < len(self._ready)
        self._batches = None

    def _next_batch(self) -> RecordBatch | None:
        assert self._batches is not None
        try:
            batch = next(self._batches, None)
        except (CorruptRecordError, MessageDecodeError) as e:
            raise corrupt(self.partition, self.next_fetch_offset, _why(e)) from e
        if batch is None:
            return None
        if self._check_crcs:
            try:
                batch.ensure_valid()
            except (CorruptRecordError, MessageDecodeError) as e:
                raise corrupt(self.partition, self._offset_of(batch), _why(e)) from e
        return batch

    def _offset_of(self, batch: RecordBatch) -> int:
        """The batch's base offset for an error message; the fetch position when the corrupt batch cannot
        even say that (a compressed legacy wrapper must be decoded to know its first offset)."""
        try:
            return batch.base_offset
        except (CorruptRecordError, MessageDecodeError):
            return self.next_fetch_offset

    def _is_aborted_control(self, batch: RecordBatch, records: list[Record]) -> bool:
        if not records:
            return False
        try:
            return ControlRecordType.parse(records[0].key) is ControlRecordType.ABORT
        except KafkaError:
            return False

    def _next_data_batch(self) -> RecordBatch | None:
        """The next batch whose records the application sees; control batches and (with ``read_committed``)
        the batches of aborted transactions are skipped, moving ``next_fetch_offset`` past them. None at the
        end of the fetched data."""
        while True:
            batch = self._next_batch()
            if batch is None:
                return None
            producer_id = batch.producer_id
            if self._read_committed and producer_id >= 0:
                while self._aborted_txns and self._aborted_txns[0][0] <= batch.last_offset:
                    self._aborted_producer_ids.add(heapq.heappop(self._aborted_txns)[1])
                if batch.is_control:
                    records = self._decode(batch)
                    if self._is_aborted_control(batch, records):
                        self._aborted_producer_ids.discard(producer_id)
                elif batch.is_transactional and producer_id in self._aborted_producer_ids:
                    self.next_fetch_offset = max(self.next_fetch_offset, batch.last_offset + 1)
                    continue
            if batch.is_control:
                self.next_fetch_offset = max(self.next_fetch_offset, batch.last_offset + 1)
                continue
            return batch

    def _fill(self, as_bytes: bool) -> bool:
        """Load the next batch with records at or after ``next_fetch_offset``; False at the end. With
        ``as_bytes`` (no deserializer) its records are made ConsumerRecords at once (:meth:`_consumer_records`)."""
        while not self._has_pending():
            batch = self._next_data_batch()
            if batch is None:
                return False
            self._current_batch = batch
            if as_bytes:
                self._records = []
                self._ready = self._consumer_records(batch)
                self._index = 0
            else:
                records = self._decode(batch)
                start = 0
                position = self.next_fetch_offset
                while start < len(records) and records[start].offset < position:
                    start += 1  # a compressed batch may start before the position
                self._ready = []
                self._records = records
                self._index = start
            if not self._has_pending():
                self.next_fetch_offset = max(self.next_fetch_offset, batch.last_offset + 1)
        return True

    def _consumer_records(self, batch: RecordBatch) -> list[ConsumerRecord[Any, Any]]:
        """The records of ``batch`` from ``next_fetch_offset`` on as ConsumerRecords with keys and values as
        bytes: decoded straight into them by the record kernel, else :func:`consumer_records_reference`."""
        topic, partition = self.partition
        epoch = batch.partition_leader_epoch
        leader_epoch = epoch if epoch >= 0 else None
        tstype = _TIMESTAMP_TYPES[int(batch.timestamp_type)]
        position = self.next_fetch_offset
        kernel = _native.kernel
        if kernel is not None and isinstance(batch, DefaultRecordBatch):
            k = kernel

            def native() -> list[ConsumerRecord[Any, Any]] | None:
                data = batch.records_data()
                if data is None:
                    return []
                log_append = batch.max_timestamp if tstype is TimestampType.LOG_APPEND_TIME else None
                return k.decode_consumer_records(
                    data, batch.records_count, batch.base_offset, batch.base_timestamp, log_append, position,
                    ConsumerRecord, topic, partition, tstype, leader_epoch,
                )

            out = self._guarded(batch, native)
            if out is not None:
                return out
        return consumer_records_reference(self._decode(batch), position, topic, partition, tstype, leader_epoch)

    def _decode(self, batch: RecordBatch) -> list[Record]:
        return self._guarded(batch, batch.records)

    def _decode_columns(self, batch: RecordBatch) -> RecordColumns:
        if isinstance(batch, DefaultRecordBatch):
            return self._guarded(batch, lambda: decode_columns(batch))
        return columns_of_records(self._decode(batch), batch.timestamp_type)

    def _guarded(self, batch: RecordBatch, decode: Callable[[], _T]) -> _T:
        """``decode()``, its failures raised as :func:`corrupt` naming the partition and the batch."""
        try:
            return decode()
        except (CorruptRecordError, MessageDecodeError, KafkaError) as e:
            raise corrupt(self.partition, self._offset_of(batch), _why(e)) from e
        except Exception as e:  # a codec library failing on garbage
            raise corrupt(self.partition, self._offset_of(batch), f"{type(e).__name__}: {e}") from e

    def fetch_columns(self, max_records: int, check_crcs: bool, read_committed: bool) -> list[RecordColumns]:
        """The next whole batches as columns (no object per record), at least one and then until they hold
        ``max_records`` records; the position moves past each batch returned. The first batch may start
        before ``next_fetch_offset`` as it was when called (a compressed batch, or the rest of a batch
        :meth:`fetch_records` started): the caller drops the records before it. Same skipping (control
        batches, aborted transactions) and the same sticky errors as :meth:`fetch_records`."""
        if self.cached_exception is not None:
            raise self.cached_exception
        if self.is_consumed:
            return []
        if self._batches is None:
            self._open(check_crcs, read_committed)
        out: list[RecordColumns] = []
        count = 0
        try:
            while count < max_records:
                if self._has_pending():
                    batch: RecordBatch | None = self._current_batch  # fetch_records stopped inside it
                else:
                    batch = self._next_data_batch()
                if batch is None:
                    self.drain()
                    break
                columns = self._decode_columns(batch)
                self._forget_batch()
                epoch = batch.partition_leader_epoch
                self.last_epoch = epoch if epoch >= 0 else None
                self.next_fetch_offset = max(self.next_fetch_offset, batch.last_offset + 1)
                if columns.num_records:
                    out.append(columns)
                    count += columns.num_records
        except KafkaError as e:
            self.cached_exception = e
            if not out:
                raise
        self.records_read += count
        return out

    def _take_one_by_one(
        self,
        chunk: list[Record],
        out: list[ConsumerRecord[Any, Any]],
        tstype: TimestampType,
        leader_epoch: int | None,
        key_deserializer: Deserialize,
        value_deserializer: Deserialize,
    ) -> None:
        """:meth:`fetch_records` for ``chunk`` (the next records of the current batch) record by record: with
        deserializers (a failure stops at its record), or offsets that do not increase."""
        tp = self.partition
        topic, partition = tp
        for record in chunk:
            if record.offset < self.next_fetch_offset:
                # behind the position (start of a compressed batch, or an offset that does not
                # increase): never returned twice or out of order
                self._index += 1
                continue
            headers = record.headers
            rkey = record.key
            rvalue = record.value
            try:
                key = rkey if key_deserializer is None else key_deserializer(topic, rkey, headers)
                value = rvalue if value_deserializer is None else value_deserializer(topic, rvalue, headers)
            except Exception as e:
                raise RecordDeserializationError(
                    f"error deserializing key/value: {type(e).__name__}: {e}", tp, record.offset
                ) from e
            self._index += 1
            out.append(
                ConsumerRecord(
                    topic,
                    partition,
                    record.offset,
                    record.timestamp,
                    tstype,
                    key,
                    value,
                    headers,
                    leader_epoch,
                    -1 if rkey is None else len(rkey),
                    -1 if rvalue is None else len(rvalue),
                )
            )
            self.next_fetch_offset = record.offset + 1

    def fetch_records(
        self,
        max_records: int,
        check_crcs: bool,
        read_committed: bool,
        key_deserializer: Deserialize,
        value_deserializer: Deserialize,
    ) -> list[ConsumerRecord[Any, Any]]:
        """Up to ``max_records`` records from ``next_fetch_offset`` on (see module docstring)."""
        if self.cached_exception is not None:
            raise self.cached_exception  # until the application seeks away (then this fetch is dropped)
        if self.is_consumed:
            return []
        if self._batches is None:
            self._open(check_crcs, read_committed)
        out: list[ConsumerRecord[Any, Any]] = []
        as_bytes = key_deserializer is None and value_deserializer is None
        try:
            while len(out) < max_records:
                if not self._has_pending() and not self._fill(as_bytes):
                    self.drain()
                    break
                batch = self._current_batch
                epoch = batch.partition_leader_epoch if batch is not None else -1
                leader_epoch = epoch if epoch >= 0 else None
                ready = self._ready
                if ready:
                    end = min(len(ready), self._index + max_records - len(out))
                    out += ready[self._index : end] if self._index or end < len(ready) else ready
                    self._index = end
                    self.next_fetch_offset = ready[end - 1].offset + 1
                else:
                    tstype = (
                        _TIMESTAMP_TYPES[int(batch.timestamp_type)]
                        if batch is not None
                        else TimestampType.NO_TIMESTAMP_TYPE
                    )
                    end = min(len(self._records), self._index + max_records - len(out))
                    chunk = self._records[self._index : end]
                    self._take_one_by_one(chunk, out, tstype, leader_epoch, key_deserializer, value_deserializer)
                self.last_epoch = leader_epoch
                if not self._has_pending() and isinstance(batch, DefaultRecordBatch):
                    # the batch may end with offsets removed by compaction
                    self.next_fetch_offset = max(self.next_fetch_offset, batch.last_offset + 1)
            if not self._has_pending() and not self.is_consumed and not self._fill(as_bytes):
                # max_records ended the loop exactly at the end of the data: consumed now, not on the next
                # call, so the fetch pipelined after this poll (KafkaConsumer.poll) includes this partition
                self.drain()
        except KafkaError as e:
            self.cached_exception = e
            if not out:
                raise
        self.records_read += len(out)
        return out


class FetchBuffer:
    """Completed fetches waiting for the application thread. Thread-safe (a leaf lock: nothing is
    called while it is held)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._completed: deque[CompletedFetch] = deque()
        self.next_in_line: CompletedFetch | None = None  # touched only by the application thread

    def add(self, fetch: CompletedFetch) -> None:
        with self._lock:
            self._completed.append(fetch)

    def poll(self) -> CompletedFetch | None:
        with self._lock:
            return self._completed.popleft() if self._completed else None

    def peek(self) -> CompletedFetch | None:
        with self._lock:
            return self._completed[0] if self._completed else None

    def is_empty(self) -> bool:
        with self._lock:
            return not self._completed and (self.next_in_line is None or self.next_in_line.is_consumed)

    def has_completed_fetches(self, predicate: Callable[[TopicPartition], bool]) -> bool:
        """Whether any buffered (or in-line) fetch is for a partition accepted by ``predicate``."""
        with self._lock:
            parts = [f.partition for f in self._completed]
        nil = self.next_in_line
        if nil is not None and not nil.is_consumed:
            parts.append(nil.partition)
        return any(predicate(tp) for tp in parts)

    def buffered_partitions(self) -> set[TopicPartition]:
        with self._lock:
            parts = {f.partition for f in self._completed}
        nil = self.next_in_line
        if nil is not None and not nil.is_consumed:
            parts.add(nil.partition)
        return parts

    def retain_all(self, partitions: set[TopicPartition]) -> None:
        """Drop buffered data of partitions no longer assigned (or now paused / seeked)."""
        with self._lock:
            self._completed = deque(f for f in self._completed if f.partition in partitions)
        nil = self.next_in_line
        if nil is not None and nil.partition not in partitions:
            nil.drain()
            self.next_in_line = None

    def clear(self) -> None:
        with self._lock:
            self._completed.clear()
        self.next_in_line = None
