"""Wire primitives of the Kafka protocol: :class:`Reader`, :class:`Writer`, :class:`FileRegion`.

Java: ``org.apache.kafka.common.protocol.{Readable,Writable,ByteBufferAccessor}``.

Invariants
----------
* Every ``Reader.read_*`` checks the bytes available *before* reading and raises
  :class:`~pykafka_client.errors.MessageDecodeError` (with the byte offset) on truncation.
* Every length read off the wire (string, bytes, array count, compact length) is checked against the
  bytes that remain before anything is allocated; negative lengths are rejected except ``-1`` (null)
  where the caller allows null. Varints longer than 5 (int) / 10 (long) bytes are rejected.
* Strings must be valid UTF-8 on decode (invalid UTF-8 raises ``MessageDecodeError``; Java would
  substitute U+FFFD) and at most 32767 bytes long, compact or not (as Java's generated code enforces, both
  ways).
* ``Writer`` accumulates bytes in ``buf`` (a ``bytearray``); :meth:`Writer.write_records` appends large
  record payloads (and every :class:`FileRegion`) as their own chunk without copying them.
  ``chunks()`` returns the pieces in order; ``to_bytes()`` joins them and refuses ``FileRegion`` chunks
  (reading a file is I/O, and codecs do no I/O): use ``chunks()`` when a FileRegion may be present.

This module also holds :class:`Message`, the base of every generated message class, and
:class:`FieldSchema`, the machine-readable field description generated classes carry in ``_SCHEMA``.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import IO, Any, ClassVar, NamedTuple, Union

from typing_extensions import Self

from pykafka_client.errors import IllegalArgumentError, IllegalStateError, MessageDecodeError, UnsupportedVersionError

__all__ = [
    "NO_TAGS",
    "ZERO_UUID",
    "Buffer",
    "Chunk",
    "FieldSchema",
    "FileRegion",
    "Message",
    "Reader",
    "RecordsLike",
    "Writer",
    "write_checked",
]

ZERO_UUID = uuid.UUID(int=0)
"""Kafka's ``Uuid.ZERO_UUID`` (all zero bits): the default of every ``uuid`` field."""

NO_TAGS: list[tuple[int, bytes]] | None = None
"""Typed ``None`` for generated code: "no unknown tagged fields"."""

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_F64 = struct.Struct(">d")
_U8 = struct.Struct(">B")

_INLINE_RECORDS_MAX = 512
"""Records payloads shorter than this are copied into the current chunk instead of becoming a chunk."""


@dataclass(frozen=True, slots=True)
class FileRegion:
    """A byte range of a file, sent with ``socket.sendfile`` by the transport (broker Fetch responses).

    ``file`` is a binary file object or a raw file descriptor; ``offset`` and ``length`` are in bytes.
    """

    file: IO[bytes] | int
    offset: int
    length: int

    def __len__(self) -> int:
        return self.length


Buffer = Union[bytes, bytearray, memoryview]
RecordsLike = Union[bytes, bytearray, memoryview, FileRegion]
Chunk = Union[bytes, bytearray, memoryview, FileRegion]


def _nbytes(b: Buffer | FileRegion) -> int:
    """Length in bytes (a memoryview's ``len`` counts items, not bytes)."""
    return b.nbytes if isinstance(b, memoryview) else len(b)


def _zigzag32(n: int) -> int:
    return ((n << 1) ^ (n >> 31)) & 0xFFFFFFFF


def _zigzag64(n: int) -> int:
    return ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF


class Reader:
    """Reads Kafka primitives from a buffer, bounds-checked. ``pos`` is the next byte to read."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: Buffer, offset: int = 0, end: int | None = None) -> None:
        mv = buf if isinstance(buf, memoryview) else memoryview(buf)
        if mv.ndim != 1 or mv.format not in ("B", "b", "c"):
            mv = mv.cast("B")
        elif mv.format != "B":
            mv = mv.cast("B")
        size = len(mv)
        if end is None:
            end = size
        if not 0 <= offset <= end <= size:
            raise IllegalArgumentError(f"reader bounds offset={offset} end={end} outside buffer of {size} bytes")
        self.buf: memoryview = mv
        self.pos: int = offset
        self.end: int = end

    # --- bookkeeping ---------------------------------------------------------------------

    def remaining(self) -> int:
        """Bytes left between ``pos`` and ``end``."""
        return self.end - self.pos

    def error(self, message: str, pos: int | None = None) -> MessageDecodeError:
        """A MessageDecodeError at ``pos`` (default: the current position)."""
        return MessageDecodeError(message, self.pos if pos is None else pos)

    def _truncated(self, what: str, need: int) -> MessageDecodeError:
        return MessageDecodeError(
            f"truncated {what}: needs {need} bytes, {self.end - self.pos} remaining", self.pos
        )

    def unpack(self, s: struct.Struct, what: str) -> tuple[Any, ...]:
        """Unpack a precompiled struct at ``pos`` (used by generated code for runs of fixed fields)."""
        pos = self.pos
        n = s.size
        if pos + n > self.end:
            raise self._truncated(what, n)
        self.pos = pos + n
        return s.unpack_from(self.buf, pos)

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > self.end:
            raise self._truncated("skipped bytes", n)
        self.pos += n

    def read_raw(self, n: int) -> memoryview:
        """The next ``n`` bytes as a view (no copy)."""
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise self._truncated("raw bytes", n)
        self.pos = pos + n
        return self.buf[pos : pos + n]

    # --- fixed width -----------------------------------------------------------------------

    def read_int8(self) -> int:
        pos = self.pos
        if pos + 1 > self.end:
            raise self._truncated("int8", 1)
        self.pos = pos + 1
        v: int = _I8.unpack_from(self.buf, pos)[0]
        return v

    def read_bool(self) -> bool:
        return self.read_int8() != 0

    def read_int16(self) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise self._truncated("int16", 2)
        self.pos = pos + 2
        v: int = _I16.unpack_from(self.buf, pos)[0]
        return v

    def read_uint16(self) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise self._truncated("uint16", 2)
        self.pos = pos + 2
        v: int = _U16.unpack_from(self.buf, pos)[0]
        return v

    def read_int32(self) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            raise self._truncated("int32", 4)
        self.pos = pos + 4
        v: int = _I32.unpack_from(self.buf, pos)[0]
        return v

    def read_uint32(self) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            raise self._truncated("uint32", 4)
        self.pos = pos + 4
        v: int = _U32.unpack_from(self.buf, pos)[0]
        return v

    def read_int64(self) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            raise self._truncated("int64", 8)
        self.pos = pos + 8
        v: int = _I64.unpack_from(self.buf, pos)[0]
        return v

    def read_float64(self) -> float:
        pos = self.pos
        if pos + 8 > self.end:
            raise self._truncated("float64", 8)
        self.pos = pos + 8
        v: float = _F64.unpack_from(self.buf, pos)[0]
        return v

    def read_uuid(self) -> uuid.UUID:
        pos = self.pos
        if pos + 16 > self.end:
            raise self._truncated("uuid", 16)
        self.pos = pos + 16
        return uuid.UUID(bytes=bytes(self.buf[pos : pos + 16]))

    # --- varints ------------------------------------------------------------------------------

    def read_unsigned_varint(self) -> int:
        """An unsigned varint of at most 5 bytes (a 32-bit value)."""
        pos = self.pos
        if pos < self.end:
            b: int = self.buf[pos]
            if b < 0x80:
                self.pos = pos + 1
                return b
        return self._read_unsigned_varint_slow()

    def _read_unsigned_varint_slow(self) -> int:
        buf = self.buf
        pos = start = self.pos
        end = self.end
        value = 0
        shift = 0
        while True:
            if pos >= end:
                self.pos = start
                raise self._truncated("unsigned varint", pos - start + 1)
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift >= 35:
                raise MessageDecodeError("unsigned varint longer than 5 bytes", start)
        if value > 0xFFFFFFFF:
            raise MessageDecodeError(f"unsigned varint {value} does not fit 32 bits", start)
        self.pos = pos
        return value

    def read_unsigned_varlong(self) -> int:
        """An unsigned varint of at most 10 bytes (a 64-bit value)."""
        buf = self.buf
        pos = start = self.pos
        end = self.end
        value = 0
        shift = 0
        while True:
            if pos >= end:
                raise self._truncated("unsigned varlong", pos - start + 1)
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift >= 70:
                raise MessageDecodeError("unsigned varlong longer than 10 bytes", start)
        if value > 0xFFFFFFFFFFFFFFFF:
            raise MessageDecodeError(f"unsigned varlong {value} does not fit 64 bits", start)
        self.pos = pos
        return value

    def read_varint(self) -> int:
        """A zig-zag encoded signed 32-bit varint."""
        raw = self.read_unsigned_varint()
        return (raw >> 1) ^ -(raw & 1)

    def read_varlong(self) -> int:
        """A zig-zag encoded signed 64-bit varint."""
        raw = self.read_unsigned_varlong()
        return (raw >> 1) ^ -(raw & 1)

    # --- lengths ------------------------------------------------------------------------------

    def _len16(self, what: str, nullable: bool) -> int:
        start = self.pos
        n = self.read_int16()
        if n < 0:
            if n == -1 and nullable:
                return -1
            self.pos = start
            raise MessageDecodeError(
                f"{what} length {n} is invalid" + ("" if n != -1 else " (null not allowed here)"), start
            )
        if n > self.end - self.pos:
            raise MessageDecodeError(f"{what} length {n} exceeds {self.end - self.pos} remaining bytes", start)
        return n

    def _len32(self, what: str, nullable: bool) -> int:
        start = self.pos
        n = self.read_int32()
        if n < 0:
            if n == -1 and nullable:
                return -1
            self.pos = start
            raise MessageDecodeError(
                f"{what} length {n} is invalid" + ("" if n != -1 else " (null not allowed here)"), start
            )
        if n > self.end - self.pos:
            raise MessageDecodeError(f"{what} length {n} exceeds {self.end - self.pos} remaining bytes", start)
        return n

    def _len_compact(self, what: str, nullable: bool) -> int:
        start = self.pos
        n = self.read_unsigned_varint() - 1
        if n < 0:
            if nullable:
                return -1
            self.pos = start
            raise MessageDecodeError(f"{what} is null but the field is not nullable", start)
        if n > self.end - self.pos:
            raise MessageDecodeError(f"{what} length {n} exceeds {self.end - self.pos} remaining bytes", start)
        return n

    def _utf8(self, n: int, what: str) -> str:
        pos = self.pos
        if n > 0x7FFF:
            raise MessageDecodeError(f"{what} length {n} is larger than the string limit 32767", pos)
        try:
            s = str(self.buf[pos : pos + n], "utf-8")
        except UnicodeDecodeError as e:
            raise MessageDecodeError(f"{what} is not valid UTF-8 ({e.reason})", pos + e.start) from None
        self.pos = pos + n
        return s

    # --- strings ------------------------------------------------------------------------------

    def read_string(self) -> str:
        return self._utf8(self._len16("string", False), "string")

    def read_nullable_string(self) -> str | None:
        n = self._len16("string", True)
        return None if n < 0 else self._utf8(n, "string")

    def read_compact_string(self) -> str:
        return self._utf8(self._len_compact("compact string", False), "compact string")

    def read_compact_nullable_string(self) -> str | None:
        n = self._len_compact("compact string", True)
        return None if n < 0 else self._utf8(n, "compact string")

    # --- bytes --------------------------------------------------------------------------------

    def _take(self, n: int) -> memoryview:
        pos = self.pos
        self.pos = pos + n
        return self.buf[pos : pos + n]

    def read_bytes(self) -> bytes:
        return bytes(self._take(self._len32("bytes", False)))

    def read_nullable_bytes(self) -> bytes | None:
        n = self._len32("bytes", True)
        return None if n < 0 else bytes(self._take(n))

    def read_compact_bytes(self) -> bytes:
        return bytes(self._take(self._len_compact("compact bytes", False)))

    def read_compact_nullable_bytes(self) -> bytes | None:
        n = self._len_compact("compact bytes", True)
        return None if n < 0 else bytes(self._take(n))

    def read_records(self, compact: bool, nullable: bool) -> memoryview | None:
        """A records field as a view into the buffer (no copy); ``None`` for null."""
        n = self._len_compact("records", nullable) if compact else self._len32("records", nullable)
        return None if n < 0 else self._take(n)

    # --- arrays -------------------------------------------------------------------------------

    def read_array_length(self, min_element_size: int, nullable: bool = False) -> int:
        """An int32 array count (-1 = null when ``nullable``), checked against the bytes left.

        ``min_element_size`` is the fewest bytes one element can take (>= 1): a count that could not
        possibly fit in what remains is rejected before any list is allocated.
        """
        start = self.pos
        n = self.read_int32()
        if n < 0:
            if n == -1 and nullable:
                return -1
            self.pos = start
            raise MessageDecodeError(
                f"array count {n} is invalid" + ("" if n != -1 else " (null not allowed here)"), start
            )
        if n * min_element_size > self.end - self.pos:
            raise MessageDecodeError(
                f"array count {n} (>= {min_element_size} bytes each) exceeds {self.end - self.pos} remaining bytes"
                f"",
                start,
            )
        return n

    def read_compact_array_length(self, min_element_size: int, nullable: bool = False) -> int:
        """A compact (unsigned varint, N+1) array count; 0 encodes null. See :meth:`read_array_length`."""
        start = self.pos
        if start < self.end:
            b: int = self.buf[start]
            if 0 < b < 0x80 and (b - 1) * min_element_size <= self.end - start - 1:
                self.pos = start + 1
                return b - 1
        n = self.read_unsigned_varint() - 1
        if n < 0:
            if nullable:
                return -1
            self.pos = start
            raise MessageDecodeError("compact array is null but the field is not nullable", start)
        if n * min_element_size > self.end - self.pos:
            raise MessageDecodeError(
                f"compact array count {n} (>= {min_element_size} bytes each) exceeds {self.end - self.pos} remaining"
                f" bytes",
                start,
            )
        return n

    def read_fixed_array(self, code: str, size: int, n: int) -> list[Any]:
        """``n`` big-endian fixed-width values of struct ``code`` (count already validated)."""
        pos = self.pos
        if pos + n * size > self.end:
            raise self._truncated(f"array of {n} x {size}-byte values", n * size)
        self.pos = pos + n * size
        return list(struct.unpack_from(f">{n}{code}", self.buf, pos))

    def read_fixed_array_field(self, code: str, size: int, compact: bool) -> list[Any]:
        """A non-nullable array of fixed-width values: count (int32 or compact) then the values."""
        n = self.read_compact_array_length(size) if compact else self.read_array_length(size)
        pos = self.pos
        self.pos = pos + n * size
        return list(struct.unpack_from(f">{n}{code}", self.buf, pos))

    def read_nullable_fixed_array_field(self, code: str, size: int, compact: bool) -> list[Any] | None:
        """Like :meth:`read_fixed_array_field`; a null array (-1 / compact 0) reads as ``None``."""
        n = self.read_compact_array_length(size, True) if compact else self.read_array_length(size, True)
        if n < 0:
            return None
        pos = self.pos
        self.pos = pos + n * size
        return list(struct.unpack_from(f">{n}{code}", self.buf, pos))

    def read_uuid_array(self, n: int) -> list[uuid.UUID]:
        pos = self.pos
        if pos + n * 16 > self.end:
            raise self._truncated(f"array of {n} uuids", n * 16)
        buf = self.buf
        self.pos = pos + n * 16
        return [uuid.UUID(bytes=bytes(buf[p : p + 16])) for p in range(pos, pos + n * 16, 16)]

    # --- tagged fields ------------------------------------------------------------------------

    def read_tag_count(self) -> int:
        start = self.pos
        n = self.read_unsigned_varint()
        if n * 2 > self.end - self.pos:
            raise MessageDecodeError(f"tagged field count {n} exceeds {self.end - self.pos} remaining bytes", start)
        return n

    def read_tag_header(self) -> tuple[int, int]:
        """A tagged field's (tag, size); the size is checked against the bytes left."""
        tag = self.read_unsigned_varint()
        start = self.pos
        size = self.read_unsigned_varint()
        if size > self.end - self.pos:
            raise MessageDecodeError(
                f"tagged field {tag} size {size} exceeds {self.end - self.pos} remaining bytes", start
            )
        return tag, size

    def check_tag_end(self, tag: int, start: int, size: int) -> None:
        """A known tagged field must use exactly the bytes its header announced."""
        if self.pos - start != size:
            raise MessageDecodeError(f"tagged field {tag} used {self.pos - start} bytes but its size is {size}", start)

    def read_unknown_tags(self) -> list[tuple[int, bytes]] | None:
        """Read a whole tag section whose tags are all unknown (kept raw for a byte-exact re-encode)."""
        pos = self.pos
        if pos < self.end and self.buf[pos] == 0:
            self.pos = pos + 1
            return None
        n = self.read_tag_count()
        if n == 0:
            return None
        out: list[tuple[int, bytes]] = []
        for _ in range(n):
            tag, size = self.read_tag_header()
            out.append((tag, bytes(self._take(size))))
        return out


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


class FieldSchema(NamedTuple):
    """One field of a generated message or struct, as declared in the JSON spec.

    Version ranges are inclusive ``(lo, hi)`` tuples (``hi`` = 32767 for an open range ``N+``) or ``None``
    for "none". ``default`` is the raw JSON default string (``None`` when the spec gives none).
    ``flexible_versions`` is the field-level override (only RequestHeader.ClientId has one: never compact).
    """

    name: str
    json_name: str
    type: str
    versions: tuple[int, int] | None
    nullable_versions: tuple[int, int] | None
    tag: int | None
    tagged_versions: tuple[int, int] | None
    default: str | None
    ignorable: bool
    flexible_versions: tuple[int, int] | str | None
    entity_type: str | None
    map_key: bool
    zero_copy: bool


class Message:
    """Base of every generated message/struct class (they are slotted dataclasses).

    Subclasses define ``read`` and ``write`` (generated, straight-line per version range) and the
    class attributes below. ``encode``/``decode`` wrap them for a whole buffer.
    """

    __slots__ = ()

    API_KEY: ClassVar[int | None] = None
    MESSAGE_TYPE: ClassVar[str] = "data"
    VALID_VERSIONS: ClassVar[tuple[int, int]] = (0, 0)
    FLEXIBLE_VERSIONS_MIN: ClassVar[int | None] = None
    _SCHEMA: ClassVar[tuple[FieldSchema, ...]] = ()

    def write(self, w: Writer, version: int) -> None:
        raise NotImplementedError

    @classmethod
    def read(cls, r: Reader, version: int) -> Self:
        raise NotImplementedError

    def encode(self, version: int) -> bytes:
        """The message encoded at ``version`` (raises UnsupportedVersionError outside VALID_VERSIONS)."""
        w = Writer()
        write_checked(self, w, version)
        return w.to_bytes()

    @classmethod
    def decode(cls, buf: Buffer, version: int) -> Self:
        """Decode a whole buffer at ``version``; trailing bytes raise MessageDecodeError."""
        r = Reader(buf)
        obj = cls.read(r, version)
        if r.pos != r.end:
            raise MessageDecodeError(f"{r.end - r.pos} trailing bytes after {cls.__qualname__} v{version}", r.pos)
        return obj

    @classmethod
    def unsupported_version(cls, version: int) -> UnsupportedVersionError:
        lo, hi = cls.VALID_VERSIONS
        return UnsupportedVersionError(f"{cls.__qualname__} version {version} is not in the valid range {lo}-{hi}")


def write_checked(msg: Message, w: Writer, version: int) -> None:
    """``msg.write(w, version)``, turning out-of-range numbers (``struct.error``) and strings that cannot
    be encoded into ``IllegalArgumentError`` naming the message."""
    try:
        msg.write(w, version)
    except (struct.error, OverflowError, UnicodeEncodeError) as e:
        raise IllegalArgumentError(f"cannot encode {type(msg).__qualname__} v{version}: {e}") from e
