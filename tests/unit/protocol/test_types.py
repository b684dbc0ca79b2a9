"""Reader/Writer primitives: encodings, bounds checks, error messages, chunks."""

from __future__ import annotations

import struct
import uuid

import pytest

from pykafka_client.errors import IllegalArgumentError, IllegalStateError, MessageDecodeError
from pykafka_client.protocol.types import ZERO_UUID, FileRegion, Reader, Writer


def w() -> Writer:
    return Writer()


@pytest.mark.parametrize(
    ("method", "value", "encoded"),
    [
        ("int8", -2, b"\xfe"),
        ("int16", -2, b"\xff\xfe"),
        ("uint16", 65535, b"\xff\xff"),
        ("int32", 0x01020304, b"\x01\x02\x03\x04"),
        ("uint32", 0xFFFFFFFE, b"\xff\xff\xff\xfe"),
        ("int64", -1, b"\xff" * 8),
        ("float64", 1.5, struct.pack(">d", 1.5)),
        ("bool", True, b"\x01"),
        ("unsigned_varint", 300, b"\xac\x02"),
        ("unsigned_varint", 0xFFFFFFFF, b"\xff\xff\xff\xff\x0f"),
        ("varint", -1, b"\x01"),
        ("varint", 1, b"\x02"),
        ("varint", -(2**31), b"\xff\xff\xff\xff\x0f"),
        ("varlong", -(2**63), b"\xff" * 9 + b"\x01"),
        ("unsigned_varlong", 2**64 - 1, b"\xff" * 9 + b"\x01"),
        ("string", "hé", b"\x00\x03h\xc3\xa9"),
        ("nullable_string", None, b"\xff\xff"),
        ("compact_string", "ab", b"\x03ab"),
        ("compact_nullable_string", None, b"\x00"),
        ("bytes", b"xy", b"\x00\x00\x00\x02xy"),
        ("nullable_bytes", None, b"\xff\xff\xff\xff"),
        ("compact_bytes", b"", b"\x01"),
        ("compact_nullable_bytes", None, b"\x00"),
        ("uuid", uuid.UUID(int=1), b"\x00" * 15 + b"\x01"),
    ],
)
def test_primitive_round_trip(method: str, value: object, encoded: bytes) -> None:
    wr = w()
    getattr(wr, f"write_{method}")(value)
    assert wr.to_bytes() == encoded
    r = Reader(encoded)
    assert getattr(r, f"read_{method}")() == value
    assert r.remaining() == 0


@pytest.mark.parametrize(
    ("method", "size"),
    [("int8", 1), ("int16", 2), ("uint16", 2), ("int32", 4), ("uint32", 4), ("int64", 8), ("float64", 8), ("uuid", 16)],
)
def test_truncated_fixed_width(method: str, size: int) -> None:
    r = Reader(b"\x00" * (size + 11), offset=12)
    r.end = 12 + size - 1
    with pytest.raises(MessageDecodeError, match=f"truncated {method}: needs {size} bytes, {size - 1} remaining \\(at byte 12\\)") as e:
        getattr(r, f"read_{method}")()
    assert e.value.offset == 12


def test_string_length_exceeding_remaining() -> None:
    data = struct.pack(">h", 30000) + b"x" * 10
    with pytest.raises(MessageDecodeError, match="string length 30000 exceeds 10 remaining bytes"):
        Reader(data).read_string()


def test_bytes_length_2gb_on_small_buffer_fails_fast() -> None:
    data = struct.pack(">i", 2_147_483_000) + b"\x00" * 16
    with pytest.raises(MessageDecodeError, match="length 2147483000 exceeds 16 remaining"):
        Reader(data).read_bytes()
    with pytest.raises(MessageDecodeError, match="array count 2147483000"):
        Reader(data).read_array_length(1)
    with pytest.raises(MessageDecodeError):
        Reader(data).read_records(False, True)


def test_negative_lengths() -> None:
    with pytest.raises(MessageDecodeError, match="array count -5 is invalid"):
        Reader(struct.pack(">i", -5)).read_array_length(1, nullable=True)
    with pytest.raises(MessageDecodeError, match="null not allowed"):
        Reader(struct.pack(">i", -1)).read_array_length(1)
    assert Reader(struct.pack(">i", -1)).read_array_length(1, nullable=True) == -1
    with pytest.raises(MessageDecodeError, match="length -2 is invalid"):
        Reader(struct.pack(">h", -2)).read_nullable_string()
    with pytest.raises(MessageDecodeError):
        Reader(struct.pack(">h", -1)).read_string()
    with pytest.raises(MessageDecodeError):
        Reader(struct.pack(">i", -1)).read_bytes()
    with pytest.raises(MessageDecodeError, match="not nullable"):
        Reader(b"\x00").read_compact_string()
    with pytest.raises(MessageDecodeError, match="not nullable"):
        Reader(b"\x00").read_compact_array_length(1)
    assert Reader(b"\x00").read_compact_array_length(1, nullable=True) == -1


def test_array_count_uses_minimum_element_size() -> None:
    data = struct.pack(">i", 3) + b"\x00" * 11  # 3 elements of >= 4 bytes need 12
    with pytest.raises(MessageDecodeError, match=r"array count 3 \(>= 4 bytes each\) exceeds 11"):
        Reader(data).read_array_length(4)
    assert Reader(data).read_array_length(3) == 3


def test_varint_too_long_and_truncated() -> None:
    with pytest.raises(MessageDecodeError, match="longer than 5 bytes"):
        Reader(b"\x80\x80\x80\x80\x80\x01").read_unsigned_varint()
    with pytest.raises(MessageDecodeError, match="does not fit 32 bits"):
        Reader(b"\xff\xff\xff\xff\x7f").read_unsigned_varint()
    with pytest.raises(MessageDecodeError, match="truncated unsigned varint"):
        Reader(b"\x80\x80").read_unsigned_varint()
    with pytest.raises(MessageDecodeError, match="longer than 10 bytes"):
        Reader(b"\x80" * 10 + b"\x01").read_unsigned_varlong()
    with pytest.raises(MessageDecodeError, match="compact string length"):
        Reader(b"\xff\xff\xff\xff\x07abc").read_compact_string()


def test_invalid_utf8_is_a_decode_error() -> None:
    with pytest.raises(MessageDecodeError, match="UTF-8"):
        Reader(b"\x00\x02\xc3\x28").read_string()


def test_reader_bounds_and_views() -> None:
    buf = bytearray(b"\x00\x00\x00\x03abcZ")
    r = Reader(buf)
    view = r.read_records(False, False)
    assert isinstance(view, memoryview)
    assert view.obj is buf  # a view into the receive buffer, no copy
    assert bytes(view) == b"abc"
    assert r.remaining() == 1
    with pytest.raises(IllegalArgumentError):
        Reader(b"abc", offset=4)


def test_tag_section_checks() -> None:
    with pytest.raises(MessageDecodeError, match="tagged field count"):
        Reader(b"\x05\x00\x00").read_tag_count()
    with pytest.raises(MessageDecodeError, match="tagged field 1 size 9 exceeds"):
        Reader(b"\x01\x01\x09ab").read_unknown_tags()
    assert Reader(b"\x02\x01\x01a\x05\x00").read_unknown_tags() == [(1, b"a"), (5, b"")]


def test_writer_chunks_and_records() -> None:
    wr = Writer()
    wr.write_int32(1)
    small = b"tiny"
    big = b"B" * 4096
    region = FileRegion(file=3, offset=0, length=100)
    wr.write_records(small)  # copied inline
    wr.write_records(big)  # own chunk
    wr.write_int8(7)
    wr.write_records(region)
    wr.write_int8(8)
    chunks = wr.chunks()
    assert [bytes(c) if not isinstance(c, FileRegion) else c for c in chunks] == [
        b"\x00\x00\x00\x01tiny", big, b"\x07", region, b"\x08"]
    assert chunks[1] is big
    assert wr.size == 8 + 4096 + 1 + 100 + 1
    with pytest.raises(IllegalStateError, match="FileRegion"):
        wr.to_bytes()


def test_writer_to_bytes_joins_chunks() -> None:
    wr = Writer()
    wr.write_records_field(b"R" * 1000, compact=True)
    wr.write_records_field(None, compact=False)
    assert wr.to_bytes() == b"\xe9\x07" + b"R" * 1000 + b"\xff\xff\xff\xff"


def test_writer_rejects_bad_values() -> None:
    with pytest.raises(IllegalArgumentError):
        Writer().write_unsigned_varint(-1)
    with pytest.raises(IllegalArgumentError):
        Writer().write_string("x" * 40000)


def test_zero_uuid() -> None:
    assert ZERO_UUID.bytes == b"\x00" * 16


def test_strings_are_limited_to_32767_bytes_even_when_compact() -> None:
    wr = Writer()
    wr.write_compact_string("x" * 0x7FFF)
    assert Reader(wr.to_bytes()).read_compact_string() == "x" * 0x7FFF
    with pytest.raises(IllegalArgumentError):
        Writer().write_compact_string("x" * 0x8000)
    big = Writer()
    big.write_compact_bytes(b"x" * 0x8000)  # bytes fields have no such limit
    with pytest.raises(MessageDecodeError, match="larger than the string limit"):
        Reader(big.to_bytes()).read_compact_string()


def test_memoryviews_of_wider_items_count_bytes() -> None:
    import array

    words = memoryview(array.array("I", [1, 2]))  # 2 items, 8 bytes
    wr = Writer()
    wr.write_records_field(words, compact=False)
    wr.write_bytes(words)
    assert wr.to_bytes()[:4] == b"\x00\x00\x00\x08"
    assert len(wr.to_bytes()) == 24
