"""Broker-side operations on v2 batches in place, without re-encoding records.

* :func:`validate_batch` checks a batch received from a client or read from a log segment
  (:func:`validate_records` additionally decodes it and checks the record offsets).
* :func:`check_batch` is the broker's check of a batch to append: :func:`validate_batch` and
  :func:`check_records` in one call (one kernel call on the compiled kernel).
* :func:`set_base_offset` / :func:`set_partition_leader_epoch` patch fields outside the CRC range.
* :func:`set_producer_state` rewrites producer id/epoch/sequence (a re-sent batch), recomputing the CRC.
* :func:`set_log_append_time` switches a batch to LOG_APPEND_TIME and recomputes the CRC.
* :class:`BatchIterator` walks consecutive batches, stopping cleanly at a torn or invalid tail and
  reporting how many bytes were good (log recovery truncates the rest).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from pykafka_client.errors import CorruptRecordError, InvalidRecordError, InvalidTimestampError
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.crc import crc32c
from pykafka_client.protocol.records.default_record_batch import (
    ATTRIBUTES_OFFSET,
    BASE_OFFSET_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    MIN_BATCH_LENGTH,
    MIN_RECORD_SIZE,
    PARTITION_LEADER_EPOCH_OFFSET,
    PRODUCER_ID_OFFSET,
    RECORDS_OFFSET,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    DefaultRecordBatch,
)
from pykafka_client.protocol.records.record import Record
from pykafka_client.protocol.records.record_batch import LOG_OVERHEAD, MAGIC_VALUE_V2

Buffer = bytes | bytearray | memoryview
WritableBuffer = bytearray | memoryview

_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")

#: Codec ids 0-4 are defined; 5-7 are rejected.
_MAX_CODEC_ID = 4


def validate_batch(
    buf: Buffer,
    pos: int = 0,
    *,
    from_client: bool = False,
    max_batch_size: int | None = None,
    deep: bool = False,
) -> DefaultRecordBatch:
    """Check the v2 batch at ``pos`` and return a view of it.

    Checks, in order: the 12-byte prefix is there; ``batchLength`` is at least the header size and
    fits the bytes available (and ``max_batch_size`` if given); magic is 2; the CRC-32C matches; the
    codec is known; the records count is non-negative and, when uncompressed, could fit in the
    records section. With ``from_client`` (a produce request) also, as Java's LogValidator does: the
    batch is not a control batch, holds at least one record and ``lastOffsetDelta + 1 == count``.

    Raises ``CorruptRecordError`` (sizes, magic, CRC), ``UnsupportedCompressionTypeError`` (codec
    bits 5-7) or ``InvalidRecordError`` (count/offset inconsistencies, client control batches).
    Records themselves are decoded only with ``deep`` (see :func:`validate_records`).
    """
    available = len(buf) - pos
    if pos < 0 or available < LOG_OVERHEAD:
        raise CorruptRecordError(
            f"batch at byte {pos}: {max(available, 0)} bytes available, need {LOG_OVERHEAD} for offset and length"
        )
    (batch_length,) = _INT32.unpack_from(buf, pos + 8)
    if batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(
            f"batch at byte {pos}: batch length {batch_length} is below the minimum {MIN_BATCH_LENGTH}"
        )
    if batch_length > available - LOG_OVERHEAD:
        raise CorruptRecordError(
            f"batch at byte {pos}: batch length {batch_length} exceeds the {available - LOG_OVERHEAD} bytes available"
        )
    if max_batch_size is not None and batch_length + LOG_OVERHEAD > max_batch_size:
        raise CorruptRecordError(
            f"batch at byte {pos}: size {batch_length + LOG_OVERHEAD} exceeds the maximum {max_batch_size}"
        )
    magic = buf[pos + MAGIC_OFFSET]
    if magic != MAGIC_VALUE_V2:
        raise CorruptRecordError(f"batch at byte {pos}: magic {magic}, expected {MAGIC_VALUE_V2}")
    batch = DefaultRecordBatch(buf, pos)
    computed = batch.compute_checksum()
    if computed != batch.crc:
        raise CorruptRecordError(
            f"batch at offset {batch.base_offset}: CRC mismatch, stored {batch.crc:#010x}, computed {computed:#010x}"
        )
    attributes = batch.attributes
    if attributes & COMPRESSION_CODEC_MASK > _MAX_CODEC_ID:
        batch.compression_type  # noqa: B018 - raises UnsupportedCompressionTypeError for ids 5-7
    count = batch.records_count
    if count < 0:
        raise InvalidRecordError(f"batch at offset {batch.base_offset}: negative records count {count}")
    records_bytes = batch_length + LOG_OVERHEAD - RECORDS_OFFSET
    if attributes & COMPRESSION_CODEC_MASK == 0 and count > records_bytes // MIN_RECORD_SIZE:
        raise CorruptRecordError(
            f"batch at offset {batch.base_offset}: records count {count} cannot fit in {records_bytes} bytes"
        )
    if batch.last_offset_delta < 0:
        raise InvalidRecordError(
            f"batch at offset {batch.base_offset}: negative last offset delta {batch.last_offset_delta}"
        )
    if from_client:
        if attributes & CONTROL_FLAG_MASK:
            raise InvalidRecordError("control batches must not be appended by clients")
        if count == 0:
            raise InvalidRecordError(f"batch at offset {batch.base_offset}: client batch has no records")
        if batch.last_offset_delta + 1 != count:
            raise InvalidRecordError(
                f"batch at offset {batch.base_offset}: last offset delta {batch.last_offset_delta} is "
                f"inconsistent with records count {count}"
            )
    if deep:
        validate_records(batch)
    return batch


def validate_records(batch: DefaultRecordBatch, max_decompressed_size: int | None = None) -> list[Record]:
    """Decode every record (decompressing, bounded) and check that the i-th has offset delta i.

    Java's LogValidator rejects a batch whose inner offsets are not consecutive from the base offset
    (``InvalidRecordError``); malformed records raise ``CorruptRecordError`` / ``MessageDecodeError``.
    """
    records = batch.records(max_decompressed_size)
    base = batch.base_offset
    for i, record in enumerate(records):
        if record.offset != base + i:
            raise InvalidRecordError(
                f"batch at offset {base}: record {i} has offset delta {record.offset - base}, expected {i}"
            )
    if records and len(records) - 1 != batch.last_offset_delta:
        raise InvalidRecordError(
            f"batch at offset {base}: last offset delta {batch.last_offset_delta} but {len(records)} records"
        )
    return records


#: Java's Long.MAX_VALUE: no bound on record timestamps.
LONG_MAX = 2**63 - 1


def check_records(
    batch: DefaultRecordBatch,
    *,
    now: int = 0,
    before_max_ms: int = LONG_MAX,
    after_max_ms: int = LONG_MAX,
    require_keys: bool = False,
) -> None:
    """The broker's per-record checks of an append (Java ``LogValidator``): every record decodes and has offset
    delta i (:func:`validate_records`); on a CreateTime batch a record timestamp ``ts >= 0`` is at most
    ``before_max_ms`` before and ``after_max_ms`` after ``now`` (``InvalidTimestampError``); with
    ``require_keys`` (a compacted topic) every record has a key (``InvalidRecordError``).

    On the compiled kernel the records are scanned without building any Python object; the pure-Python path
    below is the reference, and it runs (and raises) whenever the kernel does not accept the batch.
    """
    check_ts = not batch.attributes & TIMESTAMP_TYPE_MASK and (before_max_ms < LONG_MAX or after_max_ms < LONG_MAX)
    kernel = _native.kernel
    if kernel is not None and batch.last_offset_delta == batch.records_count - 1:
        data = batch.records_data()
        if data is None:
            return
        if kernel.validate_records(
            data, batch.records_count, batch.base_offset, batch.base_timestamp, check_ts, now,
            min(before_max_ms, LONG_MAX), min(after_max_ms, LONG_MAX), require_keys,
        ):
            return
    records = validate_records(batch)
    base = batch.base_offset
    for i, record in enumerate(records):
        if require_keys and record.key is None:
            raise InvalidRecordError(
                f"batch at offset {base}: record {i} has no key, and a compacted topic accepts only keyed records"
            )
        ts = record.timestamp
        if check_ts and ts >= 0 and (now - ts > before_max_ms or ts - now > after_max_ms):
            raise InvalidTimestampError(
                f"timestamp {ts} of record {i} is out of range "
                f"(now {now}, before.max.ms {before_max_ms}, after.max.ms {after_max_ms})"
            )


def check_batch(
    buf: Buffer,
    pos: int = 0,
    *,
    from_client: bool = False,
    deep: bool = True,
    now: int = 0,
    before_max_ms: int = LONG_MAX,
    after_max_ms: int = LONG_MAX,
    require_keys: bool = False,
) -> DefaultRecordBatch:
    """The broker's checks of one batch of an append in one call: :func:`validate_batch` (``from_client``) and,
    with ``deep``, :func:`check_records` on it (``now``, the timestamp bounds, ``require_keys``); returns the
    batch, raises what they raise.

    On the compiled kernel the header, the CRC and the records are checked in one call without building any
    Python object but the returned view; the two functions above are the reference, and they run (and raise)
    whenever the kernel does not accept the batch (a bad batch, or a compressed one when ``deep``).
    """
    kernel = _native.kernel
    if kernel is not None and kernel.check_batch(
        buf, pos, from_client, deep, now, before_max_ms, after_max_ms, require_keys, crc32c
    ) is not None:
        return DefaultRecordBatch(buf, pos)
    batch = validate_batch(buf, pos, from_client=from_client)
    if deep:
        check_records(batch, now=now, before_max_ms=before_max_ms, after_max_ms=after_max_ms,
                      require_keys=require_keys)
    return batch


def set_base_offset(buf: WritableBuffer, pos: int, base_offset: int) -> None:
    """Overwrite ``baseOffset`` (outside the CRC range: the CRC stays valid)."""
    _INT64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)


def set_partition_leader_epoch(buf: WritableBuffer, pos: int, epoch: int) -> None:
    """Overwrite ``partitionLeaderEpoch`` (outside the CRC range: the CRC stays valid)."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf: WritableBuffer, pos: int, timestamp_ms: int) -> None:
    """Mark the batch LOG_APPEND_TIME with ``maxTimestamp = timestamp_ms`` and recompute the CRC.

    Record timestamp deltas are left alone: readers report the batch's max timestamp for every record
    of a LOG_APPEND_TIME batch. The batch must be complete in ``buf``.
    """
    (attributes,) = _INT16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    _rewrite_crc(buf, pos)


def _rewrite_crc(buf: WritableBuffer, pos: int) -> None:
    (batch_length,) = _INT32.unpack_from(buf, pos + 8)
    end = pos + batch_length + LOG_OVERHEAD
    if batch_length < MIN_BATCH_LENGTH or end > len(buf):
        raise CorruptRecordError(f"batch at byte {pos}: batch length {batch_length} does not fit the buffer")
    view = memoryview(buf)
    _UINT32.pack_into(buf, pos + CRC_OFFSET, crc32c(view[pos + ATTRIBUTES_OFFSET : end]))


class BatchIterator:
    """Iterate the v2 batches laid end to end in ``buf[start:end]``.

    Stops without raising at the first batch that is incomplete (a torn tail: fewer bytes than its
    header declares, or fewer than 12/61 bytes left) or, with ``validate=True``, that fails
    :func:`validate_batch`. Afterwards:

    * ``valid_bytes``: absolute position just past the last batch yielded (``start`` if none);
    * ``truncated``: True when bytes were left over (partial or invalid batch);
    * ``error``: the validation error for an invalid batch (``None`` for a clean end or a torn tail).

    A batch whose length field is below the minimum, or whose magic is not 2, always ends the
    iteration with ``error`` set (the bytes cannot be framed further).
    """

    def __init__(
        self,
        buf: Buffer,
        start: int = 0,
        end: int | None = None,
        *,
        validate: bool = False,
        max_batch_size: int | None = None,
    ) -> None:
        self._buf = buf
        self._end = len(buf) if end is None else min(end, len(buf))
        self._pos = start
        self._validate = validate
        self._max_batch_size = max_batch_size
        self.valid_bytes = start
        self.truncated = False
        self.error: KafkaError | None = None
        self._done = False

    def __iter__(self) -> Iterator[DefaultRecordBatch]:
        return self

    def __next__(self) -> DefaultRecordBatch:
        if self._done:
            raise StopIteration
        pos = self._pos
        remaining = self._end - pos
        if remaining <= 0:
            return self._stop(False, None)
        if remaining < LOG_OVERHEAD:
            return self._stop(True, None)
        (batch_length,) = _INT32.unpack_from(self._buf, pos + 8)
        if batch_length < MIN_BATCH_LENGTH:
            return self._stop(
                True, CorruptRecordError(f"batch at byte {pos}: batch length {batch_length} is below the minimum")
            )
        size = batch_length + LOG_OVERHEAD
        if remaining < RECORDS_OFFSET or size > remaining:
            if remaining > MAGIC_OFFSET and self._buf[pos + MAGIC_OFFSET] != MAGIC_VALUE_V2:
                return self._stop(True, CorruptRecordError(f"batch at byte {pos}: magic is not {MAGIC_VALUE_V2}"))
            return self._stop(True, None)
        view = memoryview(self._buf)[: self._end] if self._end != len(self._buf) else self._buf
        try:
            if self._validate:
                batch = validate_batch(view, pos, max_batch_size=self._max_batch_size)
            else:
                if self._buf[pos + MAGIC_OFFSET] != MAGIC_VALUE_V2:
                    raise CorruptRecordError(f"batch at byte {pos}: magic is not {MAGIC_VALUE_V2}")
                batch = DefaultRecordBatch(view, pos)
        except KafkaError as e:
            return self._stop(True, e)
        self._pos = pos + size
        self.valid_bytes = self._pos
        return batch

    def _stop(self, truncated: bool, error: KafkaError | None) -> DefaultRecordBatch:
        self._done = True
        self.truncated = truncated
        self.error = error
        raise StopIteration


def set_producer_state(
    buf: WritableBuffer, pos: int, producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool
) -> None:
    """Rewrite producer id, epoch, base sequence and the transactional bit, then recompute the CRC.

    For a producer re-sending a built batch under a new epoch/sequence (Java
    ``MemoryRecordsBuilder.reopenAndRewriteProducerState``).
    """
    struct.pack_into(">qhi", buf, pos + PRODUCER_ID_OFFSET, producer_id, producer_epoch, base_sequence)
    (attributes,) = _INT16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    else:
        attributes &= ~TRANSACTIONAL_FLAG_MASK
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes)
    _rewrite_crc(buf, pos)
