"""Bounds-checked decoding of Kafka primitives (Java: ``Readable`` / ``ByteBufferAccessor``); the
invariants are in the package doc (``pykafka_client.protocol.types``)."""

from __future__ import annotations

import struct
import uuid
from typing import Any

from pykafka_client.errors import IllegalArgumentError, MessageDecodeError
from pykafka_client.protocol.types.primitives import _F64, _I8, _I16, _I32, _I64, _U16, _U32, Buffer


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
