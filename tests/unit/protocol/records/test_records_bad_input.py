"""CRC coverage and malformed input: specific exceptions, fast, no allocation sized by a lie."""

from __future__ import annotations

import struct
import zlib

import pytest
from crc32c import crc32c

from pykafka_client.errors import (
    CorruptRecordError,
    MessageDecodeError,
    UnsupportedCompressionTypeError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import DefaultRecordBatch, MemoryRecords, MemoryRecordsBuilder, validate_batch
from pykafka_client.protocol.records.default_record_batch import ATTRIBUTES_OFFSET, CRC_OFFSET, RECORDS_OFFSET


def make_batch(codec: CompressionType = CompressionType.NONE, n: int = 5) -> bytes:
    builder = MemoryRecordsBuilder(codec, producer_id=3, producer_epoch=1, base_sequence=0)
    for i in range(n):
        builder.append(1_000 + i, b"key%d" % i, b"value-%d" % i * 3, [("h", b"v"), ("n", None)])
    return builder.build()


def fix_crc(buf: bytearray) -> bytearray:
    struct.pack_into(">I", buf, CRC_OFFSET, crc32c(bytes(buf[ATTRIBUTES_OFFSET:])))
    return buf


# --- CRC ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.ZSTD])
def test_flipping_any_byte_in_the_crc_range_is_detected(codec: CompressionType) -> None:
    raw = make_batch(codec)
    for i in range(CRC_OFFSET, len(raw)):
        mutated = bytearray(raw)
        mutated[i] ^= 0x01
        batch = DefaultRecordBatch(bytes(mutated))
        assert not batch.is_valid(), i
        with pytest.raises(CorruptRecordError, match="CRC mismatch"):
            batch.ensure_valid()


def test_flipping_base_offset_or_leader_epoch_is_not_detected() -> None:
    raw = make_batch()
    for i in list(range(0, 8)) + list(range(12, 16)):
        mutated = bytearray(raw)
        mutated[i] ^= 0xFF
        batch = DefaultRecordBatch(bytes(mutated))
        assert batch.is_valid(), i
        batch.ensure_valid()


def test_check_crcs_applies_to_memory_records() -> None:
    mutated = bytearray(make_batch())
    mutated[-1] ^= 0x10
    assert len(list(MemoryRecords(bytes(mutated)).batches())) == 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        list(MemoryRecords(bytes(mutated), check_crcs=True).batches())


def test_legacy_crc_is_checked_on_demand() -> None:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    b = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    b.append(0, timestamp=5, key=b"k", value=b"v")
    raw = bytearray(b.build())
    raw[-1] ^= 1
    assert len(list(MemoryRecords(bytes(raw)).records())) == 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        list(MemoryRecords(bytes(raw), check_crcs=True).records())


# --- framing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CompressionType))
def test_truncation_at_every_position_is_a_partial_batch(codec: CompressionType) -> None:
    """A fetch response cut anywhere yields only the complete batches (Java ignores the partial tail)."""
    first = make_batch(codec, 3)
    second = make_batch(codec, 4)
    data = first + second
    for cut in range(len(data)):
        batches = list(MemoryRecords(data[:cut]).batches())
        assert len(batches) == (1 if cut >= len(first) else 0), cut


def test_truncation_inside_the_records_section_raises_message_decode_error() -> None:
    raw = make_batch(CompressionType.NONE, 3)
    for cut in range(RECORDS_OFFSET, len(raw)):
        # pretend the batch ends at `cut` (lengths and CRC consistent), so the last record is torn
        truncated = bytearray(raw[:cut])
        struct.pack_into(">i", truncated, 8, cut - 12)
        fix_crc(truncated)
        with pytest.raises((MessageDecodeError, CorruptRecordError)):
            validate_batch(truncated).records()


@pytest.mark.parametrize("length", [-1, -(1 << 31), 0, 13, 48])
def test_lying_small_or_negative_batch_length(length: int) -> None:
    raw = bytearray(make_batch())
    struct.pack_into(">i", raw, 8, length)
    with pytest.raises(CorruptRecordError):
        list(MemoryRecords(bytes(raw)).batches())
    with pytest.raises(CorruptRecordError):
        validate_batch(raw)


def test_huge_batch_length_is_a_partial_batch_for_readers_and_invalid_for_the_broker() -> None:
    raw = bytearray(make_batch())
    struct.pack_into(">i", raw, 8, 0x7FFFFFFF)
    assert list(MemoryRecords(bytes(raw)).batches()) == []
    with pytest.raises(CorruptRecordError, match="exceeds"):
        validate_batch(raw)


@pytest.mark.parametrize("magic", [3, 127, -1])
def test_bad_magic(magic: int) -> None:
    raw = bytearray(make_batch())
    struct.pack_into(">b", raw, 16, magic)
    with pytest.raises(CorruptRecordError, match="magic"):
        list(MemoryRecords(bytes(raw)).batches())


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_bits(codec_id: int) -> None:
    raw = fix_crc(bytearray(make_batch()))
    struct.pack_into(">h", raw, ATTRIBUTES_OFFSET, codec_id)
    fix_crc(raw)
    (batch,) = MemoryRecords(bytes(raw)).batches()
    with pytest.raises(UnsupportedCompressionTypeError):
        batch.records()
    with pytest.raises(UnsupportedCompressionTypeError):
        validate_batch(raw)


@pytest.mark.parametrize("count", [1 << 31 - 1, 0x7FFFFFFF, 10_000, -1, -(1 << 31)])
@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_huge_or_negative_records_count(count: int, codec: CompressionType) -> None:
    raw = bytearray(make_batch(codec))
    struct.pack_into(">i", raw, 57, count)
    fix_crc(raw)
    (batch,) = MemoryRecords(bytes(raw), check_crcs=True).batches()
    with pytest.raises(CorruptRecordError):
        batch.records()


def test_records_count_smaller_than_the_records_present() -> None:
    raw = bytearray(make_batch(CompressionType.NONE, 5))
    struct.pack_into(">i", raw, 57, 4)
    fix_crc(raw)
    with pytest.raises(CorruptRecordError, match="left after"):
        DefaultRecordBatch(bytes(raw)).records()


def test_corrupt_compressed_payload() -> None:
    raw = bytearray(make_batch(CompressionType.LZ4))
    for i in range(RECORDS_OFFSET + 7, len(raw) - 4):
        raw[i] ^= 0xA5
    fix_crc(raw)
    with pytest.raises(KafkaError):
        DefaultRecordBatch(bytes(raw)).records()
    with pytest.raises(CorruptRecordError):
        batch = bytearray(make_batch(CompressionType.GZIP))
        batch[RECORDS_OFFSET] ^= 0xFF  # gzip magic
        DefaultRecordBatch(bytes(fix_crc(batch))).records()


def test_decompression_bomb_inside_a_batch() -> None:
    builder = MemoryRecordsBuilder(CompressionType.ZSTD, write_limit=1 << 30)
    for _ in range(200):
        builder.append(0, None, b"\x00" * 50_000)
    raw = builder.build()
    assert len(raw) < 10_000
    with pytest.raises(CorruptRecordError, match="limit"):
        list(MemoryRecords(raw, max_decompressed_size=1 << 20).records())
    assert len(list(MemoryRecords(raw).records())) == 200


@pytest.mark.parametrize(
    ("record", "match"),
    [
        (b"\x01\x00\x00\x00\x00\x00\x00", "invalid size"),  # size -1
        (b"\x0e\x00\x00\x00\x03\x00\x00\x00", "key length -2"),
        (b"\x0e\x00\x00\x00\xc8\x01\x00\x00", "key length 100"),  # runs past the record
        (b"\x0e\x00\x00\x00\x01\x03\x00\x00", "value length -2"),
        (b"\x0e\x00\x00\x00\x01\x01\x03\x00", "header count -2"),
        (b"\x0e\x00\x00\x00\x01\x01\x7e\x00", "header count 63"),  # 63 headers in 1 byte
        (b"\x10\x00\x00\x00\x01\x01\x02\x03\x00", "header key length -2"),
        (b"\x0e\x00\x00\x00\x01\x01\x00\x00", "declared 7 bytes but used 6"),
        (b"\x0e\x00" + b"\xff" * 10 + b"\x01", "varint longer"),
    ],
)
def test_malformed_records(record: bytes, match: str) -> None:
    builder = MemoryRecordsBuilder()
    builder.append(0, None, None)
    raw = bytearray(builder.build()[:RECORDS_OFFSET]) + record
    struct.pack_into(">i", raw, 8, len(raw) - 12)
    fix_crc(raw)
    with pytest.raises((CorruptRecordError, MessageDecodeError), match=match):
        DefaultRecordBatch(bytes(raw)).records()


def test_legacy_garbage() -> None:
    # a v1 message whose key length lies
    body = struct.pack(">bbqi", 1, 0, 5, 1 << 30) + b"k" + struct.pack(">i", -1)
    msg = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body
    with pytest.raises(CorruptRecordError, match="key length"):
        list(MemoryRecords(msg).records())
    # a compressed v0 wrapper whose inner set is torn
    inner = struct.pack(">qi", 0, 100) + b"\x00" * 20
    value = zlib.compress(inner)
    import gzip

    value = gzip.compress(inner)
    body = struct.pack(">bbi", 0, 1, -1) + struct.pack(">i", len(value)) + value
    msg = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body
    with pytest.raises(MessageDecodeError):
        list(MemoryRecords(msg).records())
