"""The compiled record kernel against the pure-Python reference (issue 15 item 3): for random batches, every
codec, and corrupt or truncated input (the fuzz cases of the record tests), both give byte-for-byte equal output
and identical errors (type and message)."""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykafka_client.consumer.completed_fetch import consumer_records_reference
from pykafka_client.consumer.consumer_record import ConsumerRecord, TimestampType
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import DefaultRecordBatch, MemoryRecordsBuilder, _native
from pykafka_client.protocol.records.batch_ops import LONG_MAX, check_batch, check_records
from pykafka_client.protocol.records.columns import decode_columns
from pykafka_client.protocol.records.default_record_batch import decode_records, decode_records_reference
from pykafka_client.protocol.records.varint import encode_varint, read_varint
from tests.unit.protocol.records.test_records_fuzz import MUTATIONS, mutated

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

LIMIT = 1 << 20


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except Exception as e:
        return "error", (type(e), str(e))


def both(fn: Callable[[], Any]) -> tuple[str, Any]:
    """``fn``'s outcome on the kernel, asserted equal to its outcome on the reference."""
    previous = _native.use_native(True)
    try:
        native = outcome(fn)
        _native.use_native(False)
        reference = outcome(fn)
    finally:
        _native.use_native(previous)
    assert native == reference
    return native


timestamps = st.one_of(st.just(-1), st.integers(min_value=0, max_value=2**63 - 1), st.integers(0, 2**41))
blobs = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=60, max_size=300))
header_keys = st.one_of(st.text(max_size=8), st.sampled_from(["h\udcff", "\udc80"]))
headers = st.one_of(st.none(), st.lists(st.tuples(header_keys, st.one_of(st.none(), st.binary(max_size=20))), max_size=3))
records = st.lists(st.tuples(timestamps, blobs, blobs, headers), max_size=25)
codecs = st.sampled_from(list(CompressionType))


def build(codec: CompressionType, recs: list[tuple[int, Any, Any, Any]], bulk: bool, limit: int = 1 << 20) -> tuple[Any, ...]:
    builder = MemoryRecordsBuilder(codec, write_limit=limit, producer_id=7, producer_epoch=1, base_sequence=3)
    if bulk:
        builder.append_all(list(recs))
        appended = len(recs)
    else:
        appended = sum(1 for r in recs if builder.append(*r))
    return builder.build(), appended, builder.max_timestamp, builder.offset_of_max_timestamp, builder.base_timestamp


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codec=codecs, recs=records, bulk=st.booleans(), limit=st.sampled_from([200, 1000, 1 << 20]))
def test_encode_and_decode_agree(codec: CompressionType, recs: list[tuple[int, Any, Any, Any]], bulk: bool, limit: int) -> None:
    kind, built = both(lambda: build(codec, recs, bulk, limit))
    if kind == "ok":
        raw = built[0]
        both(lambda: DefaultRecordBatch(raw).records())
        both(lambda: decode_columns(DefaultRecordBatch(raw)))
        both(lambda: check_records(DefaultRecordBatch(raw), now=2**40, before_max_ms=2**39, after_max_ms=1000, require_keys=True))
        both(lambda: check_records(DefaultRecordBatch(raw)))
        both(lambda: checked_batch(raw, True, 2**40, 2**39, 1000, True))
        both(lambda: checked_batch(raw, False, 0, LONG_MAX, LONG_MAX, False))

        def records_from(position: int) -> Any:
            return consumer_records_of(DefaultRecordBatch(raw), position)

        for position in (-1, 0, 3):
            both(functools.partial(records_from, position))


@pytest.mark.parametrize("bulk", [True, False])
def test_a_timestamp_delta_beyond_64_bits_is_encoded_as_the_reference_does(bulk: bool) -> None:
    """Found by the property test: -1 then 2**63 - 1 gives a delta of 2**63 (the kernel overflowed)."""
    both(lambda: build(CompressionType.NONE, [(-1, None, None, None), (2**63 - 1, None, None, None)], bulk))


def test_invalid_timestamp_is_the_same_error() -> None:
    kind, (_error, message) = both(lambda: build(CompressionType.NONE, [(5, b"k", b"v", None), (-2, None, None, None)], True))
    assert kind == "error" and "invalid negative timestamp -2" in message


def checked_batch(raw: bytes, from_client: bool, now: int, before: int, after: int, keys: bool) -> tuple[int, ...]:
    """``batch_ops.check_batch`` at byte 2 of ``raw`` behind two other bytes (the batch's header fields, comparable)."""
    batch = check_batch(bytearray(b"xy" + raw), 2, from_client=from_client, now=now, before_max_ms=before,
                        after_max_ms=after, require_keys=keys)
    return batch.position, batch.size_in_bytes, batch.base_offset, batch.records_count, batch.crc


def _decode_everything(data: bytes) -> Callable[[], Any]:
    def run() -> Any:
        out: list[Any] = []
        if len(data) < 61:
            return out
        batch = DefaultRecordBatch(data)  # no CRC check: corrupt records reach the record loop
        for fn in (
            lambda: batch.records(LIMIT),
            lambda: decode_columns(batch, LIMIT),
            lambda: check_records(batch, now=10**12, before_max_ms=10**9, after_max_ms=10**9, require_keys=True),
            lambda: checked_batch(data, True, 10**12, 10**9, 10**9, True),
            lambda: checked_batch(data, False, 10**12, 10**9, LONG_MAX, False),
        ):
            out.append(outcome(fn))
        return out

    return run


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**MUTATIONS)
def test_corrupt_and_truncated_batches_agree(index: int, mutations: list[tuple[int, int]], cut: int | None, fix_lengths: bool) -> None:
    both(_decode_everything(mutated(index, mutations, cut, fix_lengths)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.binary(max_size=120),
    count=st.integers(min_value=-2, max_value=40),
    base_offset=st.one_of(st.integers(0, 100), st.just(2**63 - 3)),
    base_ts=st.one_of(st.integers(-1, 100), st.just(2**63 - 3)),
    log_append=st.one_of(st.none(), st.integers(0, 2**40)),
)
def test_random_record_sections_agree(data: bytes, count: int, base_offset: int, base_ts: int, log_append: int | None) -> None:
    both(lambda: decode_records(data, count, base_offset, base_ts, log_append))
    both(lambda: consumer_records(data, count, base_offset, base_ts, log_append, base_offset + 1))


def consumer_records(data: bytes, count: int, base_offset: int, base_ts: int, log_append: int | None,
                     position: int) -> list[ConsumerRecord[Any, Any]]:
    """The records as the consumer's fetch builds them without deserializers: by the kernel when it is on and
    accepts the bytes, else by the reference (as ``CompletedFetch._consumer_records``)."""
    tstype = TimestampType.CREATE_TIME if log_append is None else TimestampType.LOG_APPEND_TIME
    kernel = _native.kernel
    if kernel is not None:
        out = kernel.decode_consumer_records(data, count, base_offset, base_ts, log_append, position, ConsumerRecord,
                                             "t", 3, tstype, 5)
        if out is not None:
            return out
    return consumer_records_reference(decode_records(data, count, base_offset, base_ts, log_append), position, "t", 3,
                                      tstype, 5)


def consumer_records_of(batch: DefaultRecordBatch, position: int) -> list[ConsumerRecord[Any, Any]]:
    data = batch.records_data(LIMIT)
    if data is None:
        return []
    log_append = batch.max_timestamp if batch.attributes & 0x08 else None
    return consumer_records(bytes(data), batch.records_count, batch.base_offset, batch.base_timestamp, log_append,
                            position)


def _section(deltas: list[int]) -> bytes:
    """A records section of value-only records with the given offset deltas (and timestamp delta = index)."""
    out = b""
    for i, d in enumerate(deltas):
        body = b"\x00" + encode_varint(i) + encode_varint(d) + encode_varint(-1) + encode_varint(2) + b"v%d" % d
        body += encode_varint(1) + encode_varint(1) + b"h" + encode_varint(-1)
        out += encode_varint(len(body)) + body
    return out


def test_consumer_records_skip_offsets_behind_the_running_position() -> None:
    data = _section([0, 2, 1, 3, 3, 5])
    kernel = _native._loaded
    assert kernel is not None
    built = kernel.decode_consumer_records(data, 6, 100, 1000, None, 101, ConsumerRecord, "t", 3,
                                           TimestampType.CREATE_TIME, None)
    assert built is not None  # the kernel takes it (it does not decline to the reference)
    kind, records = both(lambda: consumer_records(data, 6, 100, 1000, None, 101))
    assert kind == "ok" and [(r.offset, r.value, r.headers) for r in records] == [
        (102, b"v2", (("h", None),)), (103, b"v3", (("h", None),)), (105, b"v5", (("h", None),))]
    assert built == consumer_records_reference(decode_records_reference(data, 6, 100, 1000, None), 101, "t", 3,
                                               TimestampType.CREATE_TIME, None)
    r = built[0]
    assert (r.topic, r.partition, r.timestamp, r.timestamp_type, r.key, r.leader_epoch,
            r.serialized_key_size, r.serialized_value_size) == ("t", 3, 1001, TimestampType.CREATE_TIME, None, None, -1, 2)


def test_consumer_records_need_a_slotted_class() -> None:
    kernel = _native._loaded
    assert kernel is not None

    class NotSlotted:
        pass

    with pytest.raises(TypeError):
        kernel.decode_consumer_records(_section([0]), 1, 0, 0, None, 0, NotSlotted, "t", 0,
                                       TimestampType.CREATE_TIME, None)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=14), pos=st.integers(-2, 16), max_bytes=st.integers(1, 10))
def test_read_varint_agrees(data: bytes, pos: int, max_bytes: int) -> None:
    assert _native.kernel is not None or not _native.native_available()
    kernel = _native._loaded
    assert kernel is not None
    assert outcome(lambda: kernel.read_varint(data, pos, max_bytes)) == outcome(lambda: read_varint(data, pos, max_bytes))


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 300, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)])
def test_read_varint_edges(value: int) -> None:
    from pykafka_client.protocol.records.varint import encode_varint

    kernel = _native._loaded
    assert kernel is not None
    data = b"\x00" + encode_varint(value)
    assert kernel.read_varint(data, 1) == read_varint(data, 1) == (value, len(data))


@pytest.mark.parametrize("max_bytes", [1, 2, 5])
@pytest.mark.parametrize("tail", [b"", b"\x00", b"\x80\x01"])
def test_every_one_and_two_byte_varint_agrees(max_bytes: int, tail: bytes) -> None:
    """The kernel reads one- and two-byte varints without its loop (the bytes of small records): every such
    encoding, alone at the end of the buffer (the loop's case), followed by more bytes, and cut after its first
    byte, reads as the reference reads it, with ``max_bytes`` 1 refusing a second byte."""
    kernel = _native._loaded
    assert kernel is not None
    encodings = [bytes((b0,)) for b0 in range(0x80)] + [bytes((b0, b1)) for b0 in range(0x80, 0x100) for b1 in range(0x100)]
    for enc in encodings:
        for data in (enc + tail, enc[:1] + tail if len(enc) == 2 else enc):
            assert outcome(functools.partial(kernel.read_varint, data, 0, max_bytes)) == outcome(
                functools.partial(read_varint, data, 0, max_bytes)), data


def test_overlong_ten_byte_varint_is_left_to_the_reference() -> None:
    """A 10th byte with more than the 64th bit: the reference keeps the big value, the kernel declines."""
    data = b"\xff" * 9 + b"\x7f"
    kernel = _native._loaded
    assert kernel is not None
    assert kernel.read_varint(data, 0) == read_varint(data, 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    count=st.integers(1, 150),
    value=st.one_of(st.none(), st.binary(max_size=5), st.binary(min_size=60, max_size=200)),
    key=st.one_of(st.none(), st.binary(max_size=70)),
    step=st.sampled_from([0, 1, 40, 5000, 2**20]),
    mutations=st.lists(st.tuples(st.integers(0, 2**14), st.integers(0, 255)), max_size=3),
    keys=st.booleans(),
    now_shift=st.sampled_from([0, 100, 10**7]),
)
def test_the_scans_common_record_shape_is_judged_as_the_reference(
        count: int, value: bytes | None, key: bytes | None, step: int, mutations: list[tuple[int, int]], keys: bool,
        now_shift: int) -> None:
    """The validation scan's quick path for records without headers whose varints take one or two bytes (the usual
    producer batch: offset deltas past 63 and timestamp deltas past 63 take two) accepts exactly what the reference
    accepts, also with bytes changed inside the records (lengths, deltas, key and value lengths, the header count)."""
    base = 1_700_000_000_000
    builder = MemoryRecordsBuilder(write_limit=1 << 20, producer_id=7, producer_epoch=1, base_sequence=3)
    for i in range(count):
        builder.append(base + i * step, key, value)
    raw = bytearray(builder.build())
    for at, byte in mutations:  # inside the records, the CRC made right again: the scan judges them
        raw[61 + at % (len(raw) - 61)] = byte
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    data = bytes(raw)
    both(lambda: checked_batch(data, True, base + now_shift, 10**6, 10**6, keys))
    both(lambda: checked_batch(data, False, base, LONG_MAX, LONG_MAX, keys))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from([0, 1, 8191, 8192, 8193, 1_700_000_000_000, 2**63 - 8192, 2**63 - 8193, 2**63 - 1]),
    deltas=st.lists(st.sampled_from([0, 1, -1, 63, -64, 8191, -8192, 5000, -5000]), min_size=1, max_size=20),
    now_offset=st.sampled_from([0, 1, -1, 8191, 8192, -8192, -8193, 10**6, -(10**6)]),
    before=st.sampled_from([0, 1, 8191, 8192, 8193, 16_383, 16_384, 10**6, LONG_MAX]),
    after=st.sampled_from([0, 1, 8191, 8192, 8193, 16_383, 16_384, 10**6, LONG_MAX]),
)
def test_the_quick_scans_batch_timestamp_verdict_is_the_references(
        base: int, deltas: list[int], now_offset: int, before: int, after: int) -> None:
    """The quick scan judges a batch's timestamps once when every delta of up to two varint bytes ([-8192, 8191])
    from its base passes the bounds (h/prodappend); around those edges (bases near 0 and the int64 end, ``now``
    a delta's reach away, bounds just above and below it) the verdicts stay the reference's, per record."""
    builder = MemoryRecordsBuilder(write_limit=1 << 20, producer_id=7, producer_epoch=1, base_sequence=3)
    first = min(base, 2**63 - 1)
    for d in [0, *deltas]:
        ts = first + d
        if not 0 <= ts < 2**63:
            return
        builder.append(ts, None, b"v" * 100)
    data = bytes(builder.build())
    now = first + now_offset
    if now >= 2**63:  # (a clock past int64: outside what the wrapper hands the kernel)
        return
    both(lambda: checked_batch(data, True, now, before, after, False))
