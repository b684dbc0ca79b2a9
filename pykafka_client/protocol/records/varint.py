"""Zig-zag varints (Kafka ``ByteUtils`` varint/varlong), the length encoding inside v2 records.

Decoders check the bytes available and the maximum encoded length (5 bytes for a varint, 10 for a
varlong), raising :class:`~pykafka_client.errors.MessageDecodeError` on truncation and
:class:`~pykafka_client.errors.CorruptRecordError` on an over-long encoding.
"""

from __future__ import annotations

from pykafka_client.errors import CorruptRecordError, MessageDecodeError

Buffer = bytes | bytearray | memoryview

# Single-byte zig-zag encodings for -64..63, the fast path when writing small lengths and deltas.
_SMALL = {v: bytes([((v << 1) ^ (v >> 63)) & 0xFF]) for v in range(-64, 64)}


def encode_varint(value: int) -> bytes:
    """Zig-zag + base-128 encoding of a signed 32/64-bit value."""
    small = _SMALL.get(value)
    if small is not None:
        return small
    v = (value << 1) ^ (value >> 63)
    v &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


encode_varlong = encode_varint


def size_of_varint(value: int) -> int:
    """The number of bytes :func:`encode_varint` produces for ``value``."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


size_of_varlong = size_of_varint


def read_varint(buf: Buffer, pos: int, max_bytes: int = 10) -> tuple[int, int]:
    """Decode a zig-zag varint at ``pos``; returns ``(value, position after it)``."""
    result = 0
    shift = 0
    end = len(buf)
    limit = pos + max_bytes
    while True:
        if pos >= end:
            raise MessageDecodeError("truncated varint", pos)
        if pos >= limit:
            raise CorruptRecordError(f"varint longer than {max_bytes} bytes at byte {pos}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
