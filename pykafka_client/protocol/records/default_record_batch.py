"""Magic v2 record batches (Java ``DefaultRecordBatch``): a header view over a buffer and the record decoder.

Layout (big-endian), positions relative to the batch start::

    0  baseOffset int64          27 baseTimestamp int64
    8  batchLength int32         35 maxTimestamp int64
    12 partitionLeaderEpoch int32 43 producerId int64
    16 magic int8                 51 producerEpoch int16
    17 crc uint32                 53 baseSequence int32
    21 attributes int16           57 records count int32
    23 lastOffsetDelta int32      61 records...

``batchLength`` counts the bytes after itself, so the batch occupies ``batchLength + 12`` bytes. The
CRC is CRC-32C over ``attributes`` .. end, so ``baseOffset`` and ``partitionLeaderEpoch`` can be
rewritten by the broker without recomputing it. Attributes: bits 0-2 codec, 3 timestamp type,
4 transactional, 5 control, 6 delete horizon set.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from pykafka_client.errors import CorruptRecordError, MessageDecodeError
from pykafka_client.protocol.compression import CompressionType, decompress
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.crc import crc32c
from pykafka_client.protocol.records.record import Header, Record
from pykafka_client.protocol.records.record_batch import TimestampType
from pykafka_client.protocol.records.varint import read_varint

Buffer = bytes | bytearray | memoryview

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61
#: Size of the v2 batch header, i.e. of an empty batch.
RECORD_BATCH_OVERHEAD = RECORDS_OFFSET
#: The smallest valid ``batchLength`` value.
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - 12
#: The smallest possible encoded record (length, attributes, 2 deltas, 2 null lengths, 0 headers).
MIN_RECORD_SIZE = 7

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

#: The whole header in one unpack: baseOffset .. records count.
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
#: The CRC-covered part of the header: attributes .. records count.
CRC_COVERED_HEADER_STRUCT = struct.Struct(">hiqqqhii")


class DefaultRecordBatch:
    """A read-only view of one v2 batch at ``pos`` in ``buf``.

    The constructor reads the header only; it expects the caller (``MemoryRecords``,
    :func:`~pykafka_client.protocol.records.batch_ops.validate_batch`) to have checked that
    ``size_in_bytes`` bytes are present. The CRC is checked only by :meth:`is_valid` /
    :meth:`ensure_valid`; :meth:`records` decodes (and decompresses) the records on each call.
    """

    __slots__ = (
        "_attributes",
        "_buf",
        "_pos",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "crc",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "records_count",
    )

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    _attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    def __init__(self, buf: Buffer, pos: int = 0) -> None:
        if len(buf) - pos < RECORD_BATCH_OVERHEAD:
            raise MessageDecodeError(f"v2 batch header needs {RECORD_BATCH_OVERHEAD} bytes", pos)
        self._buf = buf
        self._pos = pos
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self._attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = HEADER_STRUCT.unpack_from(buf, pos)

    # --- header -----------------------------------------------------------------------------

    @property
    def position(self) -> int:
        """Where this batch starts in its buffer."""
        return self._pos

    @property
    def buffer(self) -> Buffer:
        return self._buf

    @property
    def attributes(self) -> int:
        return self._attributes

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + 12

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def first_timestamp(self) -> int:
        """``baseTimestamp`` (the delete horizon when :attr:`has_delete_horizon_ms`)."""
        return self.base_timestamp

    @property
    def compression_type(self) -> CompressionType:
        return CompressionType.for_id(self._attributes & COMPRESSION_CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self._attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self._attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self._attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon_ms(self) -> bool:
        return bool(self._attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """The sequence of the last record (wrapping at 2^31 like Java), or -1 without a base sequence."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    # --- CRC --------------------------------------------------------------------------------

    def compute_checksum(self) -> int:
        """CRC-32C over attributes .. end of batch."""
        view = memoryview(self._buf)
        return int(crc32c(view[self._pos + ATTRIBUTES_OFFSET : self._pos + self.batch_length + 12]))

    def is_valid(self) -> bool:
        """True when the batch is complete and its stored CRC matches."""
        if self.batch_length < MIN_BATCH_LENGTH or self._pos + self.size_in_bytes > len(self._buf):
            return False
        return self.compute_checksum() == self.crc

    def ensure_valid(self) -> None:
        """Raise ``CorruptRecordError`` unless :meth:`is_valid`."""
        if self.batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"batch at offset {self.base_offset}: batch length {self.batch_length} is below the minimum "
                f"{MIN_BATCH_LENGTH}"
            )
        if self._pos + self.size_in_bytes > len(self._buf):
            raise CorruptRecordError(
                f"batch at offset {self.base_offset}: batch length {self.batch_length} exceeds the "
                f"{len(self._buf) - self._pos - 12} bytes available"
            )
        computed = self.compute_checksum()
        if computed != self.crc:
            raise CorruptRecordError(
                f"batch at offset {self.base_offset}: CRC mismatch, stored {self.crc:#010x}, computed {computed:#010x}"
            )

    # --- records ----------------------------------------------------------------------------

    def raw_records(self) -> memoryview:
        """The (possibly compressed) records section, without copying."""
        view = memoryview(self._buf)
        return view[self._pos + RECORDS_OFFSET : self._pos + self.batch_length + 12]

    def records(self, max_decompressed_size: int | None = None) -> list[Record]:
        """Decode every record. Raises ``CorruptRecordError`` / ``MessageDecodeError`` on bad bytes."""
        data = self.records_data(max_decompressed_size)
        if data is None:
            return []
        log_append = self.max_timestamp if self._attributes & TIMESTAMP_TYPE_MASK else None
        return decode_records(data, self.records_count, self.base_offset, self.base_timestamp, log_append)

    def records_data(self, max_decompressed_size: int | None = None) -> Buffer | None:
        """The records section, decompressed (bounded by ``max_decompressed_size``), after checking that
        ``records_count`` could fit in it; None for an empty batch (as Java, its records section is not looked
        at). Uncompressed, a view of the buffer without copying."""
        count = self.records_count
        codec = self._attributes & COMPRESSION_CODEC_MASK
        raw = self.raw_records()
        if count < 0:
            raise CorruptRecordError(f"batch at offset {self.base_offset}: negative records count {count}")
        if count == 0:
            return None
        if codec == 0:
            if count > len(raw) // MIN_RECORD_SIZE:
                raise CorruptRecordError(
                    f"batch at offset {self.base_offset}: records count {count} cannot fit in {len(raw)} bytes"
                )
            return raw
        data = decompress(CompressionType.for_id(codec), raw, max_decompressed_size)
        if count > len(data) // MIN_RECORD_SIZE:
            raise CorruptRecordError(
                f"batch at offset {self.base_offset}: records count {count} cannot fit in "
                f"{len(data)} decompressed bytes"
            )
        return data

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def __repr__(self) -> str:
        return (
            f"DefaultRecordBatch(base_offset={self.base_offset}, last_offset_delta={self.last_offset_delta}, "
            f"records_count={self.records_count}, size={self.size_in_bytes}, "
            f"compression={self.compression_type.name}, producer_id={self.producer_id}, "
            f"producer_epoch={self.producer_epoch}, base_sequence={self.base_sequence}, "
            f"transactional={self.is_transactional}, control={self.is_control})"
        )


def decode_records(
    data: Buffer, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None
) -> list[Record]:
    """Decode ``count`` v2 records filling ``data`` exactly: on the compiled kernel when it is active and
    accepts the bytes, else (and for every error) on :func:`decode_records_reference`."""
    kernel = _native.kernel
    if kernel is not None:
        records = kernel.decode_records(data, count, base_offset, base_timestamp, log_append_time)
        if records is not None:
            return records
    return decode_records_reference(bytes(data), count, base_offset, base_timestamp, log_append_time)


def decode_records_reference(
    data: bytes, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None
) -> list[Record]:
    """Decode ``count`` v2 records filling ``data`` exactly, in one tight loop (the reference of the kernel).

    Every length is checked against the record's own declared size before it is used, so a lying
    length never causes an allocation or a read outside ``data``.
    """
    records: list[Record] = []
    append = records.append
    new = tuple.__new__
    rv = read_varint
    end = len(data)
    pos = 0
    ts_type = TimestampType.CREATE_TIME
    i = 0
    try:
        for i in range(count):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                length, pos = rv(data, pos, 5)
            rec_end = pos + length
            if length < 6 or rec_end > end:  # 6 == MIN_RECORD_SIZE - 1 (the length varint)
                if rec_end > end and length >= 0:
                    raise MessageDecodeError(f"record {i} of batch at offset {base_offset} is truncated", pos)
                raise CorruptRecordError(f"batch at offset {base_offset}: record {i} has invalid size {length}")
            # attributes (one byte, unused), then the timestamp delta
            b = data[pos + 1]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            elif data[pos + 2] < 0x80:
                b = (b & 0x7F) | (data[pos + 2] << 7)
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 3
            else:
                ts_delta, pos = rv(data, pos + 1, 10)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                offset_delta, pos = rv(data, pos, 5)
            # Key and value: one- and two-byte lengths are decoded inline. Slices never reach past ``data``
            # and an overrun of the record is caught by the ``pos != rec_end`` check below.
            b = data[pos]
            if b < 0x80:
                pos += 1
                if not b & 1:
                    b >>= 1
                    key: bytes | None = data[pos : pos + b]
                    pos += b
                elif b == 1:
                    key = None
                else:
                    raise CorruptRecordError(
                        f"batch at offset {base_offset}: record {i} has key length {(b >> 1) ^ -1}"
                    )
            else:
                key, pos = _read_bytes(data, pos, rec_end, base_offset, i, "key")
            b = data[pos]
            if b < 0x80:
                pos += 1
                if not b & 1:
                    b >>= 1
                    value: bytes | None = data[pos : pos + b]
                    pos += b
                elif b == 1:
                    value = None
                else:
                    raise CorruptRecordError(
                        f"batch at offset {base_offset}: record {i} has value length {(b >> 1) ^ -1}"
                    )
            else:
                b2 = data[pos + 1]
                if b2 < 0x80 and not b & 1:
                    b = ((b & 0x7F) | (b2 << 7)) >> 1
                    pos += 2
                    value = data[pos : pos + b]
                    pos += b
                else:
                    value, pos = _read_bytes(data, pos, rec_end, base_offset, i, "value")
            b = data[pos]
            if b < 0x80:
                hcount = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                hcount = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                hcount, pos = rv(data, pos, 5)
            headers: list[Header] = []
            if hcount:
                if hcount < 0 or hcount > (rec_end - pos) // 2:
                    raise CorruptRecordError(
                        f"batch at offset {base_offset}: record {i} has invalid header count {hcount}"
                    )
                pos = _decode_headers(data, pos, rec_end, hcount, headers, base_offset, i)
            if pos != rec_end:
                raise CorruptRecordError(
                    f"batch at offset {base_offset}: record {i} declared {length} bytes but used "
                    f"{length + pos - rec_end}"
                )
            append(
                new(
                    Record,
                    (
                        base_offset + offset_delta,
                        base_timestamp + ts_delta,
                        ts_type,
                        key,
                        value,
                        headers,
                    ),
                )
            )
    except IndexError:
        raise MessageDecodeError(f"record {i} of batch at offset {base_offset} is truncated", pos) from None
    if pos != end:
        raise CorruptRecordError(
            f"batch at offset {base_offset}: {end - pos} bytes left after the {count} declared records"
        )
    if log_append_time is not None:
        # Rare (broker-stamped batches): rewrite instead of branching per record in the loop above.
        return [r._replace(timestamp=log_append_time, timestamp_type=TimestampType.LOG_APPEND_TIME) for r in records]
    return records


def _read_bytes(
    data: bytes, pos: int, rec_end: int, base_offset: int, index: int, what: str
) -> tuple[bytes | None, int]:
    """A varint-length-prefixed nullable byte string (the general case of the inline fast paths)."""
    length, pos = read_varint(data, pos, 5)
    if length >= 0:
        if pos + length > rec_end:
            raise CorruptRecordError(f"batch at offset {base_offset}: record {index} {what} length {length} too long")
        return data[pos : pos + length], pos + length
    if length == -1:
        return None, pos
    raise CorruptRecordError(f"batch at offset {base_offset}: record {index} has {what} length {length}")


def _decode_headers(
    data: bytes, pos: int, rec_end: int, hcount: int, headers: list[Header], base_offset: int, index: int
) -> int:
    for _ in range(hcount):
        klen, pos = read_varint(data, pos, 5)
        if klen < 0 or pos + klen > rec_end:
            raise CorruptRecordError(f"batch at offset {base_offset}: record {index} has header key length {klen}")
        hkey = data[pos : pos + klen].decode("utf-8", "surrogateescape")
        pos += klen
        vlen, pos = read_varint(data, pos, 5)
        if vlen >= 0:
            if pos + vlen > rec_end:
                raise CorruptRecordError(
                    f"batch at offset {base_offset}: record {index} has header value length {vlen}"
                )
            headers.append((hkey, data[pos : pos + vlen]))
            pos += vlen
        elif vlen == -1:
            headers.append((hkey, None))
        else:
            raise CorruptRecordError(f"batch at offset {base_offset}: record {index} has header value length {vlen}")
    return pos
