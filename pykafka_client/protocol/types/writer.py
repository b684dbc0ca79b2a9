"""Encoding of Kafka primitives into chunks (Java: ``Writable``); record payloads and FileRegions become
their own chunks without copying (see the package doc, ``pykafka_client.protocol.types``)."""

from __future__ import annotations

import struct
import uuid
from typing import Any

from pykafka_client.errors import IllegalArgumentError, IllegalStateError
from pykafka_client.protocol.types.primitives import (
    _F64,
    _I8,
    _I16,
    _I32,
    _I64,
    _INLINE_RECORDS_MAX,
    _U16,
    _U32,
    Buffer,
    Chunk,
    FileRegion,
    RecordsLike,
    _nbytes,
    _zigzag32,
    _zigzag64,
)


class Writer:
    """Accumulates an encoded message. ``buf`` is the current chunk; see the module doc for chunks."""

    __slots__ = ("_chunks", "_done", "buf")

    def __init__(self) -> None:
        self.buf = bytearray()
        self._chunks: list[Chunk] = []
        self._done = 0  # bytes in _chunks

    @property
    def size(self) -> int:
        """Bytes written so far (including FileRegion lengths)."""
        return self._done + len(self.buf)

    def chunks(self) -> list[Chunk]:
        """The pieces written so far, in order (record payloads and FileRegions are separate pieces).

        Pieces are returned without copying: the writer's own buffers are ``bytearray`` objects that
        must not be written to again (don't keep writing after taking the chunks).
        """
        out = list(self._chunks)
        if self.buf:
            out.append(self.buf)
        return out

    def patch_int32(self, position: int, value: int) -> None:
        """Overwrite 4 bytes at ``position`` (which must lie in the first chunk), e.g. a size prefix."""
        first = self._chunks[0] if self._chunks else self.buf
        if not isinstance(first, bytearray) or position + 4 > len(first):
            raise IllegalStateError("patch_int32 outside the writer's first buffer")
        _I32.pack_into(first, position, value)

    def to_bytes(self) -> bytes:
        """Everything written, as one ``bytes``. Raises IllegalStateError if a FileRegion was written."""
        if not self._chunks:
            return bytes(self.buf)
        parts: list[Buffer] = []
        for c in self._chunks:
            if isinstance(c, FileRegion):
                raise IllegalStateError("Writer holds a FileRegion chunk; use chunks() instead of to_bytes()")
            parts.append(c)
        parts.append(self.buf)
        return b"".join(parts)

    # --- fixed width ---------------------------------------------------------------------

    def write_raw(self, data: Buffer) -> None:
        self.buf += data

    def write_int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def write_bool(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def write_int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def write_uint16(self, v: int) -> None:
        self.buf += _U16.pack(v)

    def write_int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def write_uint32(self, v: int) -> None:
        self.buf += _U32.pack(v)

    def write_int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def write_float64(self, v: float) -> None:
        self.buf += _F64.pack(v)

    def write_uuid(self, v: uuid.UUID) -> None:
        self.buf += v.bytes

    # --- varints ------------------------------------------------------------------------------

    def write_unsigned_varint(self, v: int) -> None:
        buf = self.buf
        if v < 0x80:
            if v < 0:
                raise IllegalArgumentError(f"unsigned varint {v} is negative")
            buf.append(v)
            return
        while v >= 0x80:
            buf.append((v & 0x7F) | 0x80)
            v >>= 7
        buf.append(v)

    def write_varint(self, v: int) -> None:
        self.write_unsigned_varint(_zigzag32(v))

    def write_unsigned_varlong(self, v: int) -> None:
        self.write_unsigned_varint(v)

    def write_varlong(self, v: int) -> None:
        self.write_unsigned_varint(_zigzag64(v))

    # --- strings and bytes --------------------------------------------------------------------

    def write_string(self, s: str) -> None:
        b = s.encode("utf-8")
        if len(b) > 0x7FFF:
            raise IllegalArgumentError(f"string of {len(b)} bytes is longer than the int16 limit 32767")
        self.buf += _I16.pack(len(b))
        self.buf += b

    def write_nullable_string(self, s: str | None) -> None:
        if s is None:
            self.buf += b"\xff\xff"
        else:
            self.write_string(s)

    def write_compact_string(self, s: str) -> None:
        b = s.encode("utf-8")
        if len(b) > 0x7FFF:
            raise IllegalArgumentError(f"string of {len(b)} bytes is longer than the limit 32767")
        self.write_unsigned_varint(len(b) + 1)
        self.buf += b

    def write_compact_nullable_string(self, s: str | None) -> None:
        if s is None:
            self.buf.append(0)
        else:
            self.write_compact_string(s)

    def write_bytes(self, b: Buffer) -> None:
        self.buf += _I32.pack(_nbytes(b))
        self.buf += b

    def write_nullable_bytes(self, b: Buffer | None) -> None:
        if b is None:
            self.buf += b"\xff\xff\xff\xff"
        else:
            self.write_bytes(b)

    def write_compact_bytes(self, b: Buffer) -> None:
        self.write_unsigned_varint(_nbytes(b) + 1)
        self.buf += b

    def write_compact_nullable_bytes(self, b: Buffer | None) -> None:
        if b is None:
            self.buf.append(0)
        else:
            self.write_compact_bytes(b)

    def write_records(self, obj: RecordsLike) -> None:
        """Append a records payload (no length prefix): small bytes-likes are copied, anything else
        (large payloads, every FileRegion) becomes its own chunk, not copied."""
        n = _nbytes(obj)
        if n < _INLINE_RECORDS_MAX and not isinstance(obj, FileRegion):
            self.buf += obj
            return
        if self.buf:
            self._chunks.append(self.buf)
            self._done += len(self.buf)
            self.buf = bytearray()
        self._chunks.append(obj)
        self._done += n

    def write_records_field(self, obj: RecordsLike | None, compact: bool) -> None:
        """A records field: length (int32 or compact, -1/0 for null) then the payload via write_records."""
        if obj is None:
            if compact:
                self.buf.append(0)
            else:
                self.buf += b"\xff\xff\xff\xff"
            return
        n = _nbytes(obj)
        if compact:
            self.write_unsigned_varint(n + 1)
        else:
            self.buf += _I32.pack(n)
        self.write_records(obj)

    # --- arrays ---------------------------------------------------------------------------------

    def write_array_length(self, n: int) -> None:
        self.buf += _I32.pack(n)

    def write_compact_array_length(self, n: int) -> None:
        self.write_unsigned_varint(n + 1)

    def write_fixed_array(self, code: str, values: list[Any]) -> None:
        self.buf += struct.pack(f">{len(values)}{code}", *values)

    # --- tagged fields --------------------------------------------------------------------------

    def write_tags(self, tags: list[tuple[int, bytes]] | None) -> None:
        """Write a tag section from (tag, payload) pairs, which must be sorted by tag."""
        if not tags:
            self.buf.append(0)
            return
        self.write_unsigned_varint(len(tags))
        for tag, data in tags:
            self.write_unsigned_varint(tag)
            self.write_unsigned_varint(len(data))
            self.buf += data
