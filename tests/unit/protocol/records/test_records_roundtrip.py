"""Builder -> parser round trips (hypothesis) and MemoryRecordsBuilder behaviour."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykafka_client.errors import IllegalArgumentError, IllegalStateError
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import (
    ControlRecordType,
    DefaultRecordBatch,
    EndTransactionMarker,
    MemoryRecords,
    MemoryRecordsBuilder,
    TimestampType,
    build_end_transaction_marker,
    set_producer_state,
    validate_batch,
)
from pykafka_client.protocol.records.builder import record_size_in_bytes

maybe_bytes = st.one_of(st.none(), st.binary(max_size=300))
header_st = st.tuples(st.text(max_size=12), maybe_bytes)
record_st = st.tuples(
    st.integers(min_value=0, max_value=(1 << 50)),
    maybe_bytes,
    maybe_bytes,
    st.lists(header_st, max_size=4),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(record_st, min_size=1, max_size=40),
    codec=st.sampled_from(list(CompressionType)),
    base_offset=st.integers(min_value=0, max_value=(1 << 62)),
    producer=st.tuples(
        st.integers(min_value=-1, max_value=(1 << 62)),
        st.integers(min_value=-1, max_value=32767),
        st.integers(min_value=-1, max_value=(1 << 31) - 1),
    ),
    transactional=st.booleans(),
    control=st.booleans(),
    leader_epoch=st.integers(min_value=-1, max_value=(1 << 31) - 1),
)
def test_build_then_parse_returns_the_same_records(
    records: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    codec: CompressionType,
    base_offset: int,
    producer: tuple[int, int, int],
    transactional: bool,
    control: bool,
    leader_epoch: int,
) -> None:
    builder = MemoryRecordsBuilder(
        codec,
        write_limit=1 << 30,
        base_offset=base_offset,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        is_transactional=transactional,
        is_control_batch=control,
        partition_leader_epoch=leader_epoch,
    )
    for ts, key, value, headers in records:
        assert builder.append(ts, key, value, headers)
    assert builder.num_records == len(records)
    assert builder.last_offset_delta == len(records) - 1
    assert builder.max_timestamp == max(r[0] for r in records)
    raw = builder.build()
    assert builder.estimated_size_in_bytes() == len(raw)

    batch = validate_batch(raw, 0)
    assert batch.is_valid()
    assert batch.size_in_bytes == len(raw)
    assert batch.compression_type == codec
    assert batch.base_offset == base_offset
    assert batch.last_offset_delta == len(records) - 1
    assert batch.last_offset == base_offset + len(records) - 1
    assert batch.max_timestamp == max(r[0] for r in records)
    assert batch.first_timestamp == records[0][0]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.is_transactional == transactional and batch.is_control == control
    assert batch.partition_leader_epoch == leader_epoch
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    got = list(MemoryRecords(raw, check_crcs=True).records())
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (base_offset + i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(records)
    ]


@settings(max_examples=50, deadline=None)
@given(records=st.lists(record_st, min_size=1, max_size=10), codec=st.sampled_from(list(CompressionType)))
def test_log_append_time_builder(
    records: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]], codec: CompressionType
) -> None:
    builder = MemoryRecordsBuilder(codec, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=4242)
    for ts, key, value, headers in records:
        builder.append(ts, key, value, headers)
    assert builder.offset_of_max_timestamp == len(records) - 1
    batch = DefaultRecordBatch(builder.build())
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 4242
    assert {(r.timestamp, r.timestamp_type) for r in batch.records()} == {(4242, TimestampType.LOG_APPEND_TIME)}


@settings(max_examples=60, deadline=None)
@given(record=record_st, count=st.integers(min_value=0, max_value=20000))
def test_record_size_matches_the_encoding(
    record: tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]], count: int
) -> None:
    ts, key, value, headers = record
    builder = MemoryRecordsBuilder()
    before = builder.uncompressed_bytes_written
    builder.append(ts, key, value, headers)
    assert builder.uncompressed_bytes_written - before == record_size_in_bytes(0, 0, key, value, headers)
    assert record_size_in_bytes(count, -ts, key, value, headers) >= 7


def test_negative_timestamp_deltas_round_trip() -> None:
    builder = MemoryRecordsBuilder()
    for ts in (10_000, 5, 9_999_999_999, 0):
        builder.append(ts, None, b"x")
    batch = DefaultRecordBatch(builder.build())
    assert [r.timestamp for r in batch.records()] == [10_000, 5, 9_999_999_999, 0]
    assert batch.max_timestamp == 9_999_999_999


def test_append_returns_false_when_full_but_first_record_always_fits() -> None:
    builder = MemoryRecordsBuilder(write_limit=200)
    assert builder.append(1, None, b"x" * 1000)  # first record: always accepted
    assert not builder.has_room_for(1, None, b"y")
    assert not builder.append(1, None, b"y")
    assert builder.num_records == 1
    assert builder.is_full()

    builder = MemoryRecordsBuilder(write_limit=300)
    appended = 0
    while builder.append(1, b"k", b"v" * 20):
        appended += 1
    raw = builder.build()
    assert len(raw) <= 300
    assert appended == builder.num_records == len(DefaultRecordBatch(raw).records())
    assert len(raw) + record_size_in_bytes(appended, 0, b"k", b"v" * 20, []) > 300


def test_compressed_size_estimate_uses_the_ratio() -> None:
    small = MemoryRecordsBuilder(CompressionType.GZIP, write_limit=2_000, estimated_compression_ratio=0.1)
    n = 0
    while small.append(1, None, b"a" * 100):
        n += 1
    assert n > 100  # with a 10:1 ratio estimate the batch holds ~10x what fits uncompressed
    small.build()
    assert 0 < small.compression_ratio < 0.1
    with pytest.raises(IllegalArgumentError):
        small.estimated_compression_ratio = 0


def test_builder_is_closed_after_build() -> None:
    builder = MemoryRecordsBuilder()
    builder.append(1, b"k", b"v")
    raw = builder.build()
    assert builder.build() is raw
    assert builder.is_closed and builder.is_full()
    with pytest.raises(IllegalStateError):
        builder.append(1, b"k", b"v")
    with pytest.raises(IllegalStateError):
        builder.set_producer_state(1, 1, 1, False)


def test_invalid_arguments() -> None:
    with pytest.raises(IllegalArgumentError):
        MemoryRecordsBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME)
    with pytest.raises(IllegalArgumentError):
        MemoryRecordsBuilder(timestamp_type=TimestampType.NO_TIMESTAMP_TYPE)
    with pytest.raises(IllegalArgumentError):
        MemoryRecordsBuilder().append(-2, None, None)


def test_set_producer_state_before_build_and_rewrite_after() -> None:
    builder = MemoryRecordsBuilder()
    builder.append(1, None, b"a")
    builder.append(2, None, b"b")
    builder.set_producer_state(11, 2, 40, True)
    raw = bytearray(builder.build())
    batch = validate_batch(raw)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional) == (11, 2, 40, True)
    assert batch.last_sequence == 41
    set_producer_state(raw, 0, 12, 3, 0, False)
    batch = validate_batch(raw)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional) == (12, 3, 0, False)


def test_last_sequence_wraps_like_java() -> None:
    builder = MemoryRecordsBuilder(producer_id=1, producer_epoch=0, base_sequence=(1 << 31) - 1)
    builder.append(1, None, b"a")
    builder.append(1, None, b"b")
    assert DefaultRecordBatch(builder.build()).last_sequence == 0


@pytest.mark.parametrize("control_type", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_end_transaction_marker_batch(control_type: ControlRecordType) -> None:
    raw = build_end_transaction_marker(
        EndTransactionMarker(control_type, 17), producer_id=5, producer_epoch=3, timestamp=99, base_offset=40
    )
    batch = validate_batch(raw)
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (5, 3, -1)
    (record,) = batch.records()
    assert record.offset == 40 and record.timestamp == 99
    assert record.key == b"\x00\x00\x00" + bytes([control_type])
    assert record.value == b"\x00\x00\x00\x00\x00\x11"
    assert ControlRecordType.parse(record.key) == control_type
    assert EndTransactionMarker.deserialize(record) == EndTransactionMarker(control_type, 17)


def test_control_record_parsing_edge_cases() -> None:
    from pykafka_client.errors import CorruptRecordError
    from pykafka_client.protocol.records import Record

    assert ControlRecordType.parse(b"\x00\x00\x00\x63") == ControlRecordType.UNKNOWN
    with pytest.raises(CorruptRecordError):
        ControlRecordType.parse(b"\x00")
    with pytest.raises(CorruptRecordError):
        ControlRecordType.parse(None)
    leader_change = Record(0, 0, TimestampType.CREATE_TIME, ControlRecordType.LEADER_CHANGE.record_key(), b"", [])
    with pytest.raises(CorruptRecordError):
        EndTransactionMarker.deserialize(leader_change)
    short = Record(0, 0, TimestampType.CREATE_TIME, ControlRecordType.ABORT.record_key(), b"\x00", [])
    with pytest.raises(CorruptRecordError):
        EndTransactionMarker.deserialize(short)
    with pytest.raises(IllegalArgumentError):
        EndTransactionMarker(ControlRecordType.LEADER_CHANGE, 1)


def test_empty_builder_builds_an_empty_batch() -> None:
    raw = MemoryRecordsBuilder(CompressionType.ZSTD).build()
    batch = validate_batch(raw)
    assert batch.records_count == 0 and batch.records() == []
    assert len(raw) == 61
