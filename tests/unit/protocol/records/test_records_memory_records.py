"""MemoryRecords over the buffer types the client and broker hand it, and its small helpers."""

from __future__ import annotations

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import (
    BatchIterator,
    DefaultRecordBatch,
    LegacyRecordBatch,
    MemoryRecords,
    MemoryRecordsBuilder,
    RecordBatch,
)


def batch(base_offset: int, n: int, codec: CompressionType = CompressionType.NONE) -> bytes:
    builder = MemoryRecordsBuilder(codec, base_offset=base_offset)
    for i in range(n):
        builder.append(10 + i, None, b"v%d" % (base_offset + i))
    return builder.build()


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "memoryview-slice"])
def test_buffer_types(kind: str) -> None:
    data = batch(0, 2) + batch(2, 3, CompressionType.LZ4) + batch(5, 1)
    buf: bytes | bytearray | memoryview
    if kind == "bytes":
        buf = data
    elif kind == "bytearray":
        buf = bytearray(data)
    elif kind == "memoryview":
        buf = memoryview(data)
    else:
        buf = memoryview(b"junk" + data + b"tail")[4:-4]
    records = MemoryRecords(buf, check_crcs=True)
    assert [r.offset for r in records.records()] == list(range(6))
    assert [r.value for r in records.records()] == [b"v%d" % i for i in range(6)]
    assert records.valid_bytes() == len(data)
    assert records.size_in_bytes() == len(data)


def test_valid_bytes_and_first_batch_size_with_a_partial_tail() -> None:
    first, second = batch(0, 2), batch(2, 50)
    records = MemoryRecords(first + second[:-1])
    assert records.valid_bytes() == len(first)
    assert records.first_batch_size() == len(first)
    # a fetch response whose first batch does not fit: nothing complete, but the needed size is known
    alone = MemoryRecords(second[:30])
    assert list(alone.batches()) == []
    assert alone.first_batch_size() == len(second)
    assert MemoryRecords(b"\x00" * 11).first_batch_size() is None


def test_mixed_legacy_and_v2_batches() -> None:
    legacy = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    legacy.append(0, timestamp=1, key=None, value=b"old")
    data = bytes(legacy.build()) + batch(1, 1)
    batches: list[RecordBatch] = list(MemoryRecords(data).batches())
    assert isinstance(batches[0], LegacyRecordBatch) and isinstance(batches[1], DefaultRecordBatch)
    assert [b.magic for b in batches] == [1, 2]
    assert [r.value for r in MemoryRecords(data).records()] == [b"old", b"v1"]
    assert batches[0].base_offset == batches[0].last_offset == 0
    assert "magic=1" in repr(batches[0]) and "base_offset=1" in repr(batches[1])


def test_legacy_compressed_wrapper_offsets() -> None:
    import struct

    legacy = LegacyRecordBatchBuilder(magic=1, compression_type=1, batch_size=1 << 20)
    for i in range(3):
        legacy.append(i, timestamp=1, key=None, value=b"x")
    raw = bytearray(legacy.build())
    struct.pack_into(">q", raw, 0, 42)  # broker-assigned offset of the last inner message
    (wrapper,) = MemoryRecords(bytes(raw)).batches()
    assert (wrapper.base_offset, wrapper.last_offset) == (40, 42)
    assert wrapper.compression_type == CompressionType.GZIP


def test_batch_iterator_window() -> None:
    a, b, c = batch(0, 1), batch(1, 1), batch(2, 1)
    data = a + b + c
    it = BatchIterator(data, start=len(a), end=len(a) + len(b))
    assert [x.base_offset for x in it] == [1]
    assert (it.valid_bytes, it.truncated) == (len(a) + len(b), False)
    it = BatchIterator(data, start=len(a), end=len(a) + len(b) + 10)
    assert [x.base_offset for x in it] == [1]
    assert it.truncated and it.error is None
