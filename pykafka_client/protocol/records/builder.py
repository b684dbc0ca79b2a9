"""Building one magic v2 batch (Java ``MemoryRecordsBuilder`` + ``DefaultRecord.writeTo``).

Records are encoded straight into one ``bytearray`` that starts with room for the 61-byte header;
:meth:`MemoryRecordsBuilder.build` compresses the records section if asked, writes the header and
computes the CRC-32C once. Offsets are ``base_offset + i`` for the i-th appended record, so
``last_offset_delta == num_records - 1``; ``max_timestamp`` is the largest appended timestamp (or the
log-append time for LOG_APPEND_TIME builders).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from pykafka_client.errors import IllegalArgumentError, IllegalStateError
from pykafka_client.protocol.compression import CompressionType, compress
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.crc import crc32c
from pykafka_client.protocol.records.default_record_batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    HEADER_STRUCT,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from pykafka_client.protocol.records.record_batch import (
    MAGIC_VALUE_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TimestampType,
)
from pykafka_client.protocol.records.varint import encode_varint

Bytes = bytes | bytearray | memoryview
HeaderInput = tuple[str, "Bytes | None"]

#: Java's COMPRESSION_RATE_ESTIMATION_FACTOR: head-room on the estimated compressed size.
COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05

#: Encoded zig-zag varints for the values that dominate records (deltas, lengths, header counts): the dict for
#: -1 .. 2**14 - 1, the same for 0 .. 2**14 - 1 as a list (indexing beats a dict lookup on the per-record path).
#: Built by :func:`_varint_tables` on the first pure-Python encode: ~1.7 MiB of objects that the compiled kernel's
#: encode never reads.
_VARINT_TABLES: tuple[dict[int, bytes], list[bytes]] | None = None


def _varint_tables() -> tuple[dict[int, bytes], list[bytes]]:
    global _VARINT_TABLES
    if _VARINT_TABLES is None:
        cache = {v: encode_varint(v) for v in range(-1, 1 << 14)}
        _VARINT_TABLES = cache, [cache[v] for v in range(1 << 14)]
    return _VARINT_TABLES


_NULL_LENGTH = encode_varint(-1)
_ZERO = encode_varint(0)
_UINT32 = struct.Struct(">I")


class MemoryRecordsBuilder:
    """Accumulates records for one v2 batch.

    ``write_limit`` is the batch size target (``batch.size``): :meth:`append` returns False, without
    appending, once the estimated batch size would exceed it, except that the first record is
    always accepted (a record bigger than the limit gets a batch of its own, as in Java).
    ``estimated_compression_ratio`` scales the uncompressed size when estimating a compressed batch
    (Java ``CompressionRatioEstimator``); :attr:`compression_ratio` reports the actual ratio after
    :meth:`build`, to feed back.
    """

    __slots__ = (
        "_base_timestamp",
        "_buf",
        "_built",
        "_max_timestamp",
        "_num_records",
        "_offset_of_max_timestamp",
        "base_offset",
        "base_sequence",
        "compression_level",
        "compression_ratio",
        "_estimated_compression_ratio",
        "_max_uncompressed",
        "_write_limit",
        "compression_type",
        "is_control_batch",
        "is_transactional",
        "log_append_time",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "timestamp_type",
    )

    def __init__(
        self,
        compression_type: CompressionType = CompressionType.NONE,
        *,
        write_limit: int = 16384,
        base_offset: int = 0,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        log_append_time: int = NO_TIMESTAMP,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control_batch: bool = False,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        estimated_compression_ratio: float = 1.0,
        compression_level: int | None = None,
    ) -> None:
        if timestamp_type == TimestampType.NO_TIMESTAMP_TYPE:
            raise IllegalArgumentError("TimestampType must be set for magic v2 batches")
        if timestamp_type == TimestampType.LOG_APPEND_TIME and log_append_time < 0:
            raise IllegalArgumentError("a LOG_APPEND_TIME builder needs log_append_time")
        self.compression_type = CompressionType(compression_type)
        self.compression_level = compression_level
        self._write_limit = write_limit
        self.base_offset = base_offset
        self.timestamp_type = timestamp_type
        self.log_append_time = log_append_time
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control_batch = is_control_batch
        self.partition_leader_epoch = partition_leader_epoch
        self._estimated_compression_ratio = 1.0
        self._max_uncompressed = 0.0
        self.estimated_compression_ratio = estimated_compression_ratio
        self.compression_ratio = 1.0
        self._buf = bytearray(RECORD_BATCH_OVERHEAD)
        self._num_records = 0
        self._base_timestamp = NO_TIMESTAMP
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = -1
        self._built: bytes | None = None

    # --- appending --------------------------------------------------------------------------

    def append(
        self,
        timestamp: int,
        key: Bytes | None,
        value: Bytes | None,
        headers: Sequence[HeaderInput] | None = None,
    ) -> bool:
        """Append one record at offset ``base_offset + num_records``; False (nothing appended) when full."""
        if self._built is not None:
            raise IllegalStateError("tried to append a record, but the batch is already built")
        if timestamp < 0 and timestamp != NO_TIMESTAMP:
            raise IllegalArgumentError(f"invalid negative timestamp {timestamp}")
        count = self._num_records
        kernel = _native.kernel
        if kernel is not None:
            buf = self._buf
            old = len(buf)
            state = kernel.append_records(
                buf, [(timestamp, key, value, headers)], count, self.base_offset, self._base_timestamp,
                self._max_timestamp, self._offset_of_max_timestamp,
            )
            if state is not None:
                if count and len(buf) > self._max_uncompressed:
                    del buf[old:]
                    return False
                self._num_records, self._base_timestamp, self._max_timestamp, self._offset_of_max_timestamp = state
                return True
        if count == 0:
            self._base_timestamp = timestamp
        get = (_VARINT_TABLES or _varint_tables())[0].get
        ts_delta = timestamp - self._base_timestamp
        tsd = get(ts_delta) or encode_varint(ts_delta)
        od = get(count) or encode_varint(count)
        if key is None:
            kl = _NULL_LENGTH
            key = b""
        else:
            klen = len(key)
            kl = get(klen) or encode_varint(klen)
        if value is None:
            vl = _NULL_LENGTH
            value = b""
        else:
            vlen = len(value)
            vl = get(vlen) or encode_varint(vlen)
        body = b"".join((b"\x00", tsd, od, kl, key, vl, value, _encode_headers(headers) if headers else _ZERO))
        size = len(body)
        sl = get(size) or encode_varint(size)
        buf = self._buf
        if count and len(buf) + len(sl) + size > self._max_uncompressed:
            return False
        buf += sl
        buf += body
        self._num_records = count + 1
        if timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
            self._offset_of_max_timestamp = self.base_offset + count
        return True

    def append_all(self, records: Iterable[Sequence[object]]) -> None:
        """Append every record in order, ignoring ``write_limit`` (the caller sized the batch, e.g. a
        producer batch encoded at drain time): exactly the bytes and state that :meth:`append` one by one
        with an unlimited ``write_limit`` gives, in one loop and one buffer write. Each item's first four
        fields are ``(timestamp, key, value, headers)``; further fields are ignored. An invalid timestamp
        raises IllegalArgumentError with nothing appended."""
        if self._built is not None:
            raise IllegalStateError("tried to append a record, but the batch is already built")
        kernel = _native.kernel
        if kernel is not None and type(records) is list:
            state = kernel.append_records(
                self._buf, records, self._num_records, self.base_offset, self._base_timestamp,
                self._max_timestamp, self._offset_of_max_timestamp,
            )
            if state is not None:
                self._num_records, self._base_timestamp, self._max_timestamp, self._offset_of_max_timestamp = state
                return
        cache, small = _VARINT_TABLES or _varint_tables()
        get = cache.get
        n_small = len(small)
        count = self._num_records
        base_offset = self.base_offset
        base_ts = self._base_timestamp
        max_ts = self._max_timestamp
        offset_of_max = self._offset_of_max_timestamp
        parts: list[Bytes] = []
        extend = parts.extend
        join = b"".join
        null, zero, attrs = _NULL_LENGTH, _ZERO, b"\x00"
        for rec in records:
            timestamp: int = rec[0]  # type: ignore[assignment]
            key: Bytes | None = rec[1]  # type: ignore[assignment]
            value: Bytes | None = rec[2]  # type: ignore[assignment]
            headers: Sequence[HeaderInput] | None = rec[3]  # type: ignore[assignment]
            if timestamp < 0 and timestamp != NO_TIMESTAMP:
                raise IllegalArgumentError(f"invalid negative timestamp {timestamp}")
            if count == 0:
                base_ts = timestamp
            ts_delta = timestamp - base_ts
            if key is None:
                kl = null
                key = b""
            else:
                n = len(key)
                kl = small[n] if n < n_small else encode_varint(n)
            if value is None:
                vl = null
                value = b""
            else:
                n = len(value)
                vl = small[n] if n < n_small else encode_varint(n)
            body = join((
                attrs,
                get(ts_delta) or encode_varint(ts_delta),
                small[count] if count < n_small else encode_varint(count),
                kl, key, vl, value,
                _encode_headers(headers) if headers else zero,
            ))
            n = len(body)
            extend((small[n] if n < n_small else encode_varint(n), body))
            if timestamp > max_ts:
                max_ts = timestamp
                offset_of_max = base_offset + count
            count += 1
        self._buf += b"".join(parts)
        self._num_records = count
        self._base_timestamp = base_ts
        self._max_timestamp = max_ts
        self._offset_of_max_timestamp = offset_of_max

    def has_room_for(
        self,
        timestamp: int,
        key: Bytes | None,
        value: Bytes | None,
        headers: Sequence[HeaderInput] | None = None,
    ) -> bool:
        """Whether :meth:`append` would accept this record now (Java ``hasRoomFor``)."""
        if self._built is not None:
            return False
        if self._num_records == 0:
            return True
        size = record_size_in_bytes(self._num_records, timestamp - self._base_timestamp, key, value, headers or ())
        return len(self._buf) + size <= self._max_uncompressed

    def _update_limit(self) -> None:
        """Precompute the uncompressed buffer size at which the estimated batch reaches ``write_limit``."""
        if self.compression_type == CompressionType.NONE:
            self._max_uncompressed = float(self._write_limit)
        else:
            factor = self._estimated_compression_ratio * COMPRESSION_RATE_ESTIMATION_FACTOR
            self._max_uncompressed = RECORD_BATCH_OVERHEAD + (self._write_limit - RECORD_BATCH_OVERHEAD) / factor

    @property
    def write_limit(self) -> int:
        return self._write_limit

    @write_limit.setter
    def write_limit(self, limit: int) -> None:
        self._write_limit = limit
        self._update_limit()

    @property
    def estimated_compression_ratio(self) -> float:
        return self._estimated_compression_ratio

    @estimated_compression_ratio.setter
    def estimated_compression_ratio(self, ratio: float) -> None:
        if ratio <= 0:
            raise IllegalArgumentError(f"estimated compression ratio must be positive, got {ratio}")
        self._estimated_compression_ratio = ratio
        self._update_limit()

    def _estimate(self, total_uncompressed: int) -> int:
        if self.compression_type == CompressionType.NONE:
            return total_uncompressed
        records = total_uncompressed - RECORD_BATCH_OVERHEAD
        factor = self.estimated_compression_ratio * COMPRESSION_RATE_ESTIMATION_FACTOR
        return RECORD_BATCH_OVERHEAD + int(records * factor)

    # --- state ------------------------------------------------------------------------------

    def set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool
    ) -> None:
        """Set the idempotence/transaction fields (assigned at drain time) before :meth:`build`."""
        if self._built is not None:
            raise IllegalStateError("producer state must be set before the batch is built")
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional

    @property
    def num_records(self) -> int:
        return self._num_records

    @property
    def last_offset_delta(self) -> int:
        """``num_records - 1`` (0 for an empty builder, as in an empty batch header)."""
        return max(self._num_records - 1, 0)

    @property
    def next_offset(self) -> int:
        return self.base_offset + self._num_records

    @property
    def base_timestamp(self) -> int:
        return self._base_timestamp

    @property
    def max_timestamp(self) -> int:
        """The batch's max timestamp: the log-append time for LOG_APPEND_TIME, else the largest appended."""
        if self.timestamp_type == TimestampType.LOG_APPEND_TIME:
            return self.log_append_time
        return self._max_timestamp

    @property
    def offset_of_max_timestamp(self) -> int:
        """Offset of the first record with the max timestamp (the last offset for LOG_APPEND_TIME)."""
        if self.timestamp_type == TimestampType.LOG_APPEND_TIME:
            return self.base_offset + self.last_offset_delta
        return self._offset_of_max_timestamp

    @property
    def uncompressed_bytes_written(self) -> int:
        return len(self._buf)

    def estimated_size_in_bytes(self) -> int:
        """The batch size so far: exact when uncompressed, estimated (ratio * 1.05) when compressed."""
        if self._built is not None:
            return len(self._built)
        return self._estimate(len(self._buf))

    def is_full(self) -> bool:
        """True once built or when the estimated size reached ``write_limit`` (with at least one record)."""
        return self._built is not None or (self._num_records > 0 and self.write_limit <= self.estimated_size_in_bytes())

    @property
    def is_closed(self) -> bool:
        return self._built is not None

    # --- building ---------------------------------------------------------------------------

    def build(self) -> bytes:
        """Close the builder and return the batch bytes (idempotent: later calls return the same bytes)."""
        if self._built is not None:
            return self._built
        codec = self.compression_type
        buf = self._buf
        if codec != CompressionType.NONE and self._num_records:
            payload = compress(codec, memoryview(buf)[RECORD_BATCH_OVERHEAD:], self.compression_level)
            self.compression_ratio = len(payload) / max(len(buf) - RECORD_BATCH_OVERHEAD, 1)
            out = bytearray(RECORD_BATCH_OVERHEAD)
            out += payload
        else:
            out = buf
        attributes = codec & 0x7
        if self.timestamp_type == TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
        if self.is_transactional:
            attributes |= TRANSACTIONAL_FLAG_MASK
        if self.is_control_batch:
            attributes |= CONTROL_FLAG_MASK
        HEADER_STRUCT.pack_into(
            out,
            0,
            self.base_offset,
            len(out) - 12,
            self.partition_leader_epoch,
            MAGIC_VALUE_V2,
            0,
            attributes,
            self.last_offset_delta,
            self._base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self._num_records,
        )
        _UINT32.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
        self._built = bytes(out)
        self._buf = bytearray()
        return self._built


def _encode_headers(headers: Sequence[HeaderInput]) -> bytes:
    cache = (_VARINT_TABLES or _varint_tables())[0]
    parts = [cache.get(len(headers)) or encode_varint(len(headers))]
    for hkey, hvalue in headers:
        kb = hkey.encode("utf-8", "surrogateescape")
        parts.append(cache.get(len(kb)) or encode_varint(len(kb)))
        parts.append(kb)
        if hvalue is None:
            parts.append(_NULL_LENGTH)
        else:
            parts.append(cache.get(len(hvalue)) or encode_varint(len(hvalue)))
            parts.append(bytes(hvalue))
    return b"".join(parts)


def record_size_in_bytes(
    offset_delta: int,
    timestamp_delta: int,
    key: Bytes | None,
    value: Bytes | None,
    headers: Sequence[HeaderInput],
) -> int:
    """Encoded size of one v2 record including its length prefix (Java ``DefaultRecord.sizeInBytes``)."""
    body = 1 + len(encode_varint(timestamp_delta)) + len(encode_varint(offset_delta))
    body += 1 if key is None else len(encode_varint(len(key))) + len(key)
    body += 1 if value is None else len(encode_varint(len(value))) + len(value)
    body += len(_encode_headers(headers)) if headers else 1
    return len(encode_varint(body)) + body
