"""Broker-side batch operations: validation, in-place patches, log-recovery iteration."""

from __future__ import annotations

import struct

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from crc32c import crc32c

from pykafka_client.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageDecodeError,
    UnsupportedCompressionTypeError,
)
from pykafka_client.protocol.records import (
    BatchIterator,
    TimestampType,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batch,
)
from pykafka_client.protocol.records.batch_ops import check_batch
from pykafka_client.protocol.records.default_record_batch import ATTRIBUTES_OFFSET, CRC_OFFSET


def independent_batch(n: int = 3, codec: int = 0, transactional: bool = False) -> bytearray:
    """A v2 batch written by aiokafka's builder (an independent encoder)."""
    b = AioBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=transactional,
        producer_id=42,
        producer_epoch=3,
        base_sequence=10,
        batch_size=1 << 20,
    )
    for i in range(n):
        b.append(i, timestamp=1_000 + i, key=b"k%d" % i, value=b"value-%d" % i, headers=[("h", b"x")])
    return bytearray(b.build())


def test_validate_returns_header_view() -> None:
    buf = independent_batch(3, transactional=True)
    batch = validate_batch(buf, 0, from_client=True)
    assert (batch.base_offset, batch.last_offset_delta, batch.records_count) == (0, 2, 3)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, 10)
    assert batch.is_transactional and not batch.is_control
    assert batch.size_in_bytes == len(buf)
    assert batch.max_timestamp == 1_002 and batch.first_timestamp == 1_000
    assert [r.offset for r in batch.records()] == [0, 1, 2]


def test_set_base_offset_and_epoch_keep_crc_valid() -> None:
    buf = independent_batch()
    crc_before = bytes(buf[CRC_OFFSET : CRC_OFFSET + 4])
    set_base_offset(buf, 0, 1_000_000)
    set_partition_leader_epoch(buf, 0, 17)
    assert bytes(buf[CRC_OFFSET : CRC_OFFSET + 4]) == crc_before
    batch = validate_batch(buf, 0)
    assert batch.base_offset == 1_000_000 and batch.partition_leader_epoch == 17
    assert [r.offset for r in batch.records()] == [1_000_000, 1_000_001, 1_000_002]


def test_set_log_append_time_recomputes_crc() -> None:
    buf = independent_batch()
    set_log_append_time(buf, 0, 5_555)
    batch = validate_batch(buf, 0)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 5_555
    assert all(r.timestamp == 5_555 and r.timestamp_type == TimestampType.LOG_APPEND_TIME for r in batch.records())


def test_set_ops_work_at_a_position_inside_a_larger_buffer() -> None:
    first = independent_batch(2)
    buf = first + independent_batch(4)
    set_base_offset(buf, len(first), 10)
    set_log_append_time(buf, len(first), 9)
    assert validate_batch(buf, len(first)).base_offset == 10
    validate_batch(buf, 0)


def _rewrite_crc(buf: bytearray) -> None:
    from crc32c import crc32c

    struct.pack_into(">I", buf, CRC_OFFSET, crc32c(bytes(buf[ATTRIBUTES_OFFSET:])))


#: (struct format, byte position, value written, CRC rewritten, error, message fragment) of a batch header corrupted
HEADER_CORRUPTIONS = [
    (">i", 8, -1, False, CorruptRecordError, "below the minimum"),
    (">i", 8, 10, False, CorruptRecordError, "below the minimum"),
    (">i", 8, 0x7FFFFFFF, False, CorruptRecordError, "exceeds"),
    (">b", 16, 1, False, CorruptRecordError, "magic"),
    (">B", -1, 0xEE, False, CorruptRecordError, "CRC"),
    (">h", 21, 5, True, UnsupportedCompressionTypeError, "5"),
    (">i", 57, 1 << 30, True, CorruptRecordError, "cannot fit"),
    (">i", 57, -2, True, InvalidRecordError, "negative"),
    (">i", 23, 7, True, InvalidRecordError, "inconsistent"),
    (">h", 21, 0x20, True, InvalidRecordError, "control"),
]


@pytest.mark.parametrize(("fmt", "pos", "value", "fix_crc", "error", "fragment"), HEADER_CORRUPTIONS)
def test_validate_rejects_each_corruption(
    fmt: str, pos: int, value: int, fix_crc: bool, error: type[Exception], fragment: str
) -> None:
    buf = independent_batch()
    struct.pack_into(fmt, buf, pos if pos >= 0 else len(buf) + pos, value)
    if fix_crc:
        _rewrite_crc(buf)
    with pytest.raises(error, match=fragment):
        validate_batch(buf, 0, from_client=True)


@pytest.mark.parametrize(
    ("fmt", "pos", "value", "fix_crc", "error", "fragment"),
    [*HEADER_CORRUPTIONS, (">B", 61, 0x7E, True, MessageDecodeError, "record 0 .* is truncated")],  # a record's length
)
def test_check_batch_rejects_what_validate_batch_and_check_records_reject(
    fmt: str, pos: int, value: int, fix_crc: bool, error: type[Exception], fragment: str
) -> None:
    """check_batch (one kernel call on the compiled kernel) raises the reference's errors, header or records."""
    buf = bytearray(b"\x00" * 5) + independent_batch()
    struct.pack_into(fmt, buf, 5 + pos if pos >= 0 else len(buf) + pos, value)
    if fix_crc:
        struct.pack_into(">I", buf, 5 + CRC_OFFSET, crc32c(bytes(buf[5 + ATTRIBUTES_OFFSET:])))
    with pytest.raises(error, match=fragment):
        check_batch(buf, 5, from_client=True)


def test_check_batch_returns_the_batch_and_applies_the_record_rules() -> None:
    buf = bytearray(b"\x00" * 3) + independent_batch(3)
    batch = check_batch(buf, 3, from_client=True, now=1_001, before_max_ms=1, after_max_ms=1, require_keys=True)
    assert (batch.position, batch.size_in_bytes, batch.records_count) == (3, len(buf) - 3, 3)
    with pytest.raises(InvalidTimestampError, match="timestamp 1000 of record 0"):
        check_batch(buf, 3, now=1_002, before_max_ms=1)
    with pytest.raises(InvalidTimestampError, match="timestamp 1002 of record 2"):
        check_batch(buf, 3, now=1_000, after_max_ms=1)
    # without deep (replication) the records are not looked at
    assert check_batch(buf, 3, deep=False, now=10**12, before_max_ms=1).size_in_bytes == len(buf) - 3
    keyless = AioBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1, producer_epoch=-1,
                         base_sequence=-1, batch_size=1 << 20)
    keyless.append(0, timestamp=5, key=None, value=b"v", headers=[])
    with pytest.raises(InvalidRecordError, match="no key"):
        check_batch(bytearray(keyless.build()), require_keys=True)
    assert check_batch(bytearray(keyless.build())).records_count == 1


def test_check_batch_leaves_compressed_records_to_the_reference() -> None:
    buf = independent_batch(4, codec=1)
    assert check_batch(buf, from_client=True, now=1_001, before_max_ms=10, after_max_ms=10).records_count == 4
    with pytest.raises(InvalidTimestampError):
        check_batch(buf, now=10**9, before_max_ms=10)


def test_validate_rejects_short_buffer() -> None:
    with pytest.raises(CorruptRecordError):
        validate_batch(b"\x00" * 11, 0)
    with pytest.raises(CorruptRecordError):
        validate_batch(independent_batch()[:-1], 0)


def test_iterator_reports_valid_bytes_before_a_torn_tail() -> None:
    a, b, c = independent_batch(1), independent_batch(2), independent_batch(3)
    log = a + b + c
    for cut in range(len(a) + len(b), len(log)):
        it = BatchIterator(log[:cut], validate=True)
        assert len(list(it)) == 2
        assert it.valid_bytes == len(a) + len(b)
        assert it.truncated == (cut > len(a) + len(b))
        assert it.error is None
    it = BatchIterator(log, validate=True)
    assert [x.records_count for x in it] == [1, 2, 3]
    assert (it.valid_bytes, it.truncated, it.error) == (len(log), False, None)


def test_iterator_stops_at_a_corrupt_batch_with_the_error() -> None:
    a, b = independent_batch(1), independent_batch(2)
    log = a + b
    log[-3] ^= 0xFF
    it = BatchIterator(log, validate=True)
    assert len(list(it)) == 1
    assert it.valid_bytes == len(a) and it.truncated
    assert isinstance(it.error, CorruptRecordError)
    # without validation the CRC is not looked at
    assert len(list(BatchIterator(log))) == 2


def test_deep_validation_checks_record_offsets() -> None:
    from pykafka_client.protocol.records import MemoryRecordsBuilder, validate_records

    builder = MemoryRecordsBuilder()
    for i in range(3):
        builder.append(i, None, b"x")
    raw = bytearray(builder.build())
    assert [r.offset for r in validate_records(validate_batch(raw, deep=True))] == [0, 1, 2]
    # record 1's offset delta (the byte after its length, attributes and timestamp delta) set to 5
    second = 61 + raw[61] // 2 + 1
    assert raw[second + 3] == 2  # zig-zag 1
    raw[second + 3] = 10
    _rewrite_crc(raw)
    validate_batch(raw)  # the header alone is fine
    with pytest.raises(InvalidRecordError, match="offset delta 5, expected 1"):
        validate_batch(raw, deep=True)
    # an independent encoder's compressed batch passes the deep check
    validate_batch(independent_batch(4, codec=2), deep=True)
