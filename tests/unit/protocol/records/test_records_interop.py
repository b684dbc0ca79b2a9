"""Both-ways interop with independent encoders/decoders built at runtime: kafka-python and aiokafka."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioLegacyBuilder
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpLegacyBuilder
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import DefaultRecordBatch, MemoryRecords, MemoryRecordsBuilder, TimestampType

BUILDERS = {"kafka-python": KpBuilder, "aiokafka": AioBuilder}
LEGACY_BUILDERS = {"kafka-python": KpLegacyBuilder, "aiokafka": AioLegacyBuilder}
READERS = {"kafka-python": KpMemoryRecords, "aiokafka": AioMemoryRecords}


def sample_records(n: int = 40) -> list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else b"key-%d" % i
        value = None if i % 9 == 4 else bytes([i % 251]) * (i * 13 % 300)
        headers: list[tuple[str, bytes | None]] = [(f"trace-{j}", None if j == 2 else b"h%d" % i) for j in range(i % 4)]
        out.append((1_600_000_000_000 + (i * 37) % 1000, key, value, headers))
    return out


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize("lib", sorted(BUILDERS))
@pytest.mark.parametrize("transactional", [False, True])
def test_their_v2_batches_decode_with_ours(lib: str, codec: CompressionType, transactional: bool) -> None:
    builder = BUILDERS[lib](
        magic=2,
        compression_type=int(codec),
        is_transactional=transactional,
        producer_id=77 if transactional else -1,
        producer_epoch=5 if transactional else -1,
        base_sequence=1_000 if transactional else -1,
        batch_size=1 << 20,
    )
    sample = sample_records()
    for i, (ts, key, value, headers) in enumerate(sample):
        builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    raw = bytes(builder.build())
    (batch,) = list(MemoryRecords(raw, check_crcs=True).batches())
    assert isinstance(batch, DefaultRecordBatch)
    assert batch.compression_type == codec
    assert batch.is_transactional == transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        (77, 5, 1_000) if transactional else (-1, -1, -1)
    )
    assert batch.last_offset_delta == len(sample) - 1
    assert batch.max_timestamp == max(s[0] for s in sample)
    records = batch.records()
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == [
        (i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(sample)
    ]


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize("lib", sorted(READERS))
def test_our_v2_batches_decode_with_theirs(lib: str, codec: CompressionType) -> None:
    builder = MemoryRecordsBuilder(
        codec, write_limit=1 << 20, base_offset=500, producer_id=9, producer_epoch=1, base_sequence=3
    )
    sample = sample_records()
    for ts, key, value, headers in sample:
        assert builder.append(ts, key, value, headers)
    raw = builder.build()
    reader: Any = READERS[lib](raw)
    batch = reader.next_batch()
    assert batch.validate_crc()
    assert batch.compression_type == int(codec)
    assert batch.base_offset == 500
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 1, 3)
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    assert got == [(500 + i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(sample)]
    assert reader.next_batch() is None


@pytest.mark.parametrize("lib", sorted(READERS))
def test_our_log_append_time_batch_decodes_with_theirs(lib: str) -> None:
    builder = MemoryRecordsBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=123_456)
    builder.append(1, b"k", b"v")
    builder.append(2, b"k", b"v")
    batch: Any = READERS[lib](builder.build()).next_batch()
    assert batch.timestamp_type == 1
    assert [r.timestamp for r in batch] == [123_456, 123_456]


LEGACY_CASES = [
    (lib, magic, codec)
    for lib in sorted(LEGACY_BUILDERS)
    for magic in (0, 1)
    for codec in (CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4)
    # aiokafka refuses to write the pre-0.10 (magic 0) LZ4 framing
    if not (lib == "aiokafka" and magic == 0 and codec == CompressionType.LZ4)
]


@pytest.mark.parametrize(("lib", "magic", "codec"), LEGACY_CASES)
def test_their_legacy_message_sets_decode_with_ours(lib: str, magic: int, codec: CompressionType) -> None:
    builder = LEGACY_BUILDERS[lib](magic=magic, compression_type=int(codec), batch_size=1 << 20)
    sample = sample_records(12)
    for i, (ts, key, value, _headers) in enumerate(sample):
        builder.append(i, timestamp=ts if magic else None, key=key, value=value)
    raw = bytes(builder.build())
    base = 1_000
    if codec != CompressionType.NONE and magic == 1:
        # as stored by a broker: the wrapper holds the absolute offset of the last inner message
        raw = struct.pack(">q", base + len(sample) - 1) + raw[8:]
    elif codec != CompressionType.NONE:
        raw = struct.pack(">q", base) + raw[8:]  # v0 inner offsets are absolute; the wrapper's is unused
        base = 0
    records = list(MemoryRecords(raw, check_crcs=True).records())
    if codec == CompressionType.NONE:
        base = 0
    expected_type = TimestampType.CREATE_TIME if magic else TimestampType.NO_TIMESTAMP_TYPE
    assert [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers) for r in records] == [
        (base + i, ts if magic else -1, expected_type, key, value, [])
        for i, (ts, key, value, _headers) in enumerate(sample)
    ]


def test_legacy_v1_wrapper_with_log_append_time_stamps_inner_records() -> None:
    builder = KpLegacyBuilder(magic=1, compression_type=1, batch_size=1 << 20)
    for i in range(3):
        builder.append(i, timestamp=10 + i, key=None, value=b"x")
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, 2)
    # set the timestamp-type bit and the wrapper timestamp, then fix the wrapper's CRC-32
    import zlib

    raw[17] |= 0x08
    struct.pack_into(">q", raw, 18, 999)
    struct.pack_into(">I", raw, 12, zlib.crc32(bytes(raw[16:])))
    records = list(MemoryRecords(bytes(raw), check_crcs=True).records())
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in records] == [
        (i, 999, TimestampType.LOG_APPEND_TIME) for i in range(3)
    ]
