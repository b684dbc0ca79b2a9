"""Fuzzing the decoders: random bytes and mutations of valid batches only ever raise KafkaError subclasses."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.compression import CompressionType, decompress
from pykafka_client.protocol.records import (
    BatchIterator,
    EndTransactionMarker,
    MemoryRecords,
    MemoryRecordsBuilder,
    validate_batch,
)

LIMIT = 1 << 20


def _valid_batches() -> list[bytes]:
    out = []
    for codec in CompressionType:
        builder = MemoryRecordsBuilder(codec, producer_id=1, producer_epoch=0, base_sequence=0)
        for i in range(6):
            builder.append(100 + i, None if i % 2 else b"k%d" % i, b"v" * (i * 7), [("h", b"x"), ("n", None)])
        out.append(builder.build())
    for magic in (0, 1):
        for codec_id in (0, 1, 2, 3):
            legacy = LegacyRecordBatchBuilder(magic=magic, compression_type=codec_id, batch_size=1 << 20)
            for i in range(4):
                legacy.append(i, timestamp=10 + i if magic else None, key=b"k", value=b"v%d" % i)
            raw = bytes(legacy.build())
            out.append(struct.pack(">q", 3) + raw[8:])
    return out


VALID = _valid_batches()


def exercise(data: bytes) -> None:
    """Run every decoder over ``data``; anything but a KafkaError escapes and fails the test."""
    for check_crcs in (False, True):
        try:
            for batch in MemoryRecords(data, check_crcs=check_crcs, max_decompressed_size=LIMIT).batches():
                batch.is_valid()
                for record in batch.records():
                    if batch.is_control:
                        EndTransactionMarker.deserialize(record)
        except KafkaError:
            pass
    try:
        validate_batch(data, 0, from_client=True)
    except KafkaError:
        pass
    it = BatchIterator(data, validate=True)
    for _ in it:
        pass
    assert 0 <= it.valid_bytes <= len(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    exercise(data)


#: The arguments of :func:`mutated`, for ``@given(**MUTATIONS)``.
MUTATIONS = {
    "index": st.integers(min_value=0, max_value=len(VALID) - 1),
    "mutations": st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=6),
    "cut": st.one_of(st.none(), st.integers(min_value=0)),
    "fix_lengths": st.booleans(),
}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**MUTATIONS)
def test_mutated_valid_batches(
    index: int, mutations: list[tuple[int, int]], cut: int | None, fix_lengths: bool
) -> None:
    exercise(mutated(index, mutations, cut, fix_lengths))


def mutated(index: int, mutations: list[tuple[int, int]], cut: int | None, fix_lengths: bool) -> bytes:
    """``VALID[index]`` with bytes overwritten, cut, and (``fix_lengths``) its length and CRC made to match."""
    buf = bytearray(VALID[index])
    for pos, value in mutations:
        buf[pos % len(buf)] = value
    if cut is not None:
        buf = buf[: cut % (len(buf) + 1)]
    if fix_lengths and len(buf) >= 12:
        struct.pack_into(">i", buf, 8, len(buf) - 12)
        if len(buf) > 21 and buf[16] == 2:
            from crc32c import crc32c

            struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


@settings(max_examples=200, deadline=None)
@given(codec=st.sampled_from([c for c in CompressionType if c != CompressionType.NONE]), data=st.binary(max_size=200))
def test_decompress_random_bytes(codec: CompressionType, data: bytes) -> None:
    try:
        decompress(codec, data, LIMIT)
    except KafkaError:
        pass
