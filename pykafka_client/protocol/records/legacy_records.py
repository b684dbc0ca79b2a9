"""Legacy message sets, magic v0 and v1, read-only (Java ``AbstractLegacyRecordBatch``, ``LegacyRecord``).

One message::

    offset int64, messageSize int32, crc uint32 (CRC-32 over magic..end), magic int8, attributes int8,
    [timestamp int64, v1 only], key bytes (int32 length, -1 = null), value bytes (int32 length)

Attributes: bits 0-2 codec (0-3; zstd is not allowed before v2), bit 3 timestamp type (v1). A
compressed message is a *wrapper*: its value is a compressed message set of inner messages. In v1
the inner offsets are relative (0..n-1) and the wrapper carries the absolute offset of the last
inner message; in v0 inner offsets are absolute. With LOG_APPEND_TIME the wrapper's timestamp
applies to every inner message.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from pykafka_client.errors import CorruptRecordError, InvalidRecordError, MessageDecodeError
from pykafka_client.protocol.compression import CompressionType, decompress
from pykafka_client.protocol.records.record import Record
from pykafka_client.protocol.records.record_batch import (
    LOG_OVERHEAD,
    MAGIC_VALUE_V0,
    MAGIC_VALUE_V1,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    TimestampType,
)

Buffer = bytes | bytearray | memoryview

CRC_OFFSET = 12
MAGIC_OFFSET = 16
ATTRIBUTES_OFFSET = 17
TIMESTAMP_OFFSET = 18
KEY_OFFSET_V0 = 18
KEY_OFFSET_V1 = 26
#: crc + magic + attributes + key length + value length.
RECORD_OVERHEAD_V0 = 14
#: v0 overhead + timestamp.
RECORD_OVERHEAD_V1 = 22
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08

_PREFIX = struct.Struct(">qiIbb")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class LegacyRecordBatch:
    """One top-level v0/v1 message at ``pos``: a plain record, or a compressed wrapper of inner records.

    The caller has checked that ``size_in_bytes`` bytes are present and that ``messageSize`` is at least
    the overhead for the magic.
    """

    __slots__ = ("_attributes", "_buf", "_pos", "crc", "magic", "message_size", "offset")

    offset: int
    message_size: int
    crc: int
    magic: int
    _attributes: int

    def __init__(self, buf: Buffer, pos: int = 0) -> None:
        self._buf = buf
        self._pos = pos
        self.offset, self.message_size, self.crc, self.magic, self._attributes = _PREFIX.unpack_from(buf, pos)

    @property
    def attributes(self) -> int:
        return self._attributes

    @property
    def partition_leader_epoch(self) -> int:
        return -1  # v0/v1 messages carry no leader epoch (Java NO_PARTITION_LEADER_EPOCH)

    @property
    def size_in_bytes(self) -> int:
        return self.message_size + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def base_offset(self) -> int:
        """The first (inner) record's offset; decodes the wrapper when compressed."""
        if self._attributes & COMPRESSION_CODEC_MASK == 0:
            return self.offset
        records = self.records()
        return records[0].offset if records else self.offset

    @property
    def compression_type(self) -> CompressionType:
        codec = self._attributes & COMPRESSION_CODEC_MASK
        return CompressionType.for_id(codec)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == MAGIC_VALUE_V0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType.LOG_APPEND_TIME if self._attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def timestamp(self) -> int:
        if self.magic == MAGIC_VALUE_V0:
            return NO_TIMESTAMP
        return int(_INT64.unpack_from(self._buf, self._pos + TIMESTAMP_OFFSET)[0])

    @property
    def max_timestamp(self) -> int:
        return self.timestamp

    is_transactional = False
    is_control = False
    producer_id = NO_PRODUCER_ID

    def compute_checksum(self) -> int:
        view = memoryview(self._buf)
        return zlib.crc32(view[self._pos + MAGIC_OFFSET : self._pos + self.size_in_bytes])

    def is_valid(self) -> bool:
        return self._pos + self.size_in_bytes <= len(self._buf) and self.compute_checksum() == self.crc

    def ensure_valid(self) -> None:
        computed = self.compute_checksum()
        if computed != self.crc:
            raise CorruptRecordError(
                f"message at offset {self.offset}: CRC mismatch, stored {self.crc:#010x}, computed {computed:#010x}"
            )

    def records(self, max_decompressed_size: int | None = None, *, check_crcs: bool = False) -> list[Record]:
        """The record, or the inner records of a compressed wrapper, with absolute offsets."""
        buf = self._buf
        pos = self._pos
        end = pos + self.size_in_bytes
        magic = self.magic
        ts_type = self.timestamp_type
        timestamp = self.timestamp
        key, value = _read_key_value(buf, pos + (KEY_OFFSET_V1 if magic else KEY_OFFSET_V0), end, self.offset)
        codec = self._attributes & COMPRESSION_CODEC_MASK
        if codec == 0:
            return [Record(self.offset, timestamp, ts_type, key, value, [])]
        if codec > 3:
            raise CorruptRecordError(f"message at offset {self.offset}: codec {codec} is not allowed in magic {magic}")
        if value is None:
            raise CorruptRecordError(f"compressed message at offset {self.offset} has a null value")
        inner = decompress(CompressionType(codec), value, max_decompressed_size, legacy_v0_lz4=magic == MAGIC_VALUE_V0)
        return self._inner_records(inner, check_crcs)

    def _inner_records(self, data: bytes, check_crcs: bool) -> list[Record]:
        out: list[Record] = []
        wrapper_log_append = self.magic == MAGIC_VALUE_V1 and self._attributes & TIMESTAMP_TYPE_MASK
        pos = 0
        n = len(data)
        while pos < n:
            if n - pos < LOG_OVERHEAD + RECORD_OVERHEAD_V0:
                raise MessageDecodeError(f"truncated inner message in wrapper at offset {self.offset}", pos)
            inner = LegacyRecordBatch(data, pos)
            overhead = RECORD_OVERHEAD_V1 if inner.magic == MAGIC_VALUE_V1 else RECORD_OVERHEAD_V0
            if inner.message_size < overhead or inner.magic not in (MAGIC_VALUE_V0, MAGIC_VALUE_V1):
                raise CorruptRecordError(
                    f"inner message in wrapper at offset {self.offset}: size {inner.message_size}, magic {inner.magic}"
                )
            if inner.magic != self.magic:
                raise InvalidRecordError(f"wrapper at offset {self.offset}: inner magic {inner.magic} != {self.magic}")
            if pos + inner.size_in_bytes > n:
                raise MessageDecodeError(f"truncated inner message in wrapper at offset {self.offset}", pos)
            if inner.attributes & COMPRESSION_CODEC_MASK:
                raise InvalidRecordError(f"wrapper at offset {self.offset} holds a compressed inner message")
            if check_crcs:
                inner.ensure_valid()
            out.extend(inner.records())
            pos += inner.size_in_bytes
        if self.magic == MAGIC_VALUE_V1 and out:
            base = self.offset - out[-1].offset
            out = [r._replace(offset=r.offset + base) for r in out]
        if wrapper_log_append:
            ts = self.timestamp
            out = [r._replace(timestamp=ts, timestamp_type=TimestampType.LOG_APPEND_TIME) for r in out]
        return out

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def __repr__(self) -> str:
        return (
            f"LegacyRecordBatch(offset={self.offset}, magic={self.magic}, size={self.size_in_bytes}, "
            f"compression={self.compression_type.name})"
        )


def _read_key_value(buf: Buffer, pos: int, end: int, offset: int) -> tuple[bytes | None, bytes | None]:
    """Key and value of a message whose key length is at ``pos``; both must end exactly at ``end``."""
    out: list[bytes | None] = []
    for what in ("key", "value"):
        if pos + 4 > end:
            raise MessageDecodeError(f"message at offset {offset}: truncated {what} length", pos)
        (length,) = _INT32.unpack_from(buf, pos)
        pos += 4
        if length == -1:
            out.append(None)
        elif length < 0 or pos + length > end:
            raise CorruptRecordError(f"message at offset {offset}: invalid {what} length {length}")
        else:
            out.append(bytes(buf[pos : pos + length]))
            pos += length
    if pos != end:
        raise CorruptRecordError(f"message at offset {offset}: {end - pos} unexpected trailing bytes")
    return out[0], out[1]
