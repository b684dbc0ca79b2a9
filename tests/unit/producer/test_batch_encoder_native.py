"""The Sender's per-request batch encoding compiled (the kernel's ``encode_batch``, via
``batch_encoder.encode_batch``) == the reference ``encode_batch_reference`` (the shared MemoryRecordsBuilder):
byte-identical batches for any records, producer id, epoch, sequence and transactional flag, and the kernel
declines (None) whatever the reference handles its own way, so the result through ``encode_batch`` is the
reference's in every case."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer.batch_encoder import encode_batch, encode_batch_reference
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.memory_records import MemoryRecords
from tests.unit.producer.helpers import EncodableRecords as _Batch

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")


_bytes_or_none = st.one_of(st.none(), st.binary(max_size=300))
_header = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20)))
_record = st.tuples(
    st.integers(min_value=0, max_value=2**45), _bytes_or_none, _bytes_or_none, st.lists(_header, max_size=3).map(tuple),
    st.none(),  # a PendingRecord has further fields (the callback): ignored by the encoding
)


def _kernel() -> Any:
    kernel = _native.kernel
    assert kernel is not None
    return kernel


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(_record, min_size=1, max_size=40),
    producer_id=st.one_of(st.just(-1), st.integers(min_value=0, max_value=2**63 - 1)),
    producer_epoch=st.one_of(st.just(-1), st.integers(min_value=0, max_value=2**15 - 1)),
    base_sequence=st.one_of(st.just(-1), st.integers(min_value=0, max_value=2**31 - 1)),
    is_transactional=st.booleans(),
)
def test_compiled_batch_is_byte_identical_to_the_reference(
    records: list[Any], producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool
) -> None:
    batch = _Batch(records, producer_id, producer_epoch, base_sequence, is_transactional)
    reference, ratio = encode_batch_reference(batch, None, None)
    compiled, compiled_ratio = encode_batch(batch, None, None)
    assert compiled == reference
    assert compiled_ratio == ratio == 1.0
    direct = _kernel().encode_batch(records, producer_id, producer_epoch, base_sequence, is_transactional, _crc)
    assert direct == reference
    (decoded,) = MemoryRecords(reference).batches()
    assert decoded.is_valid()
    assert [r.value for r in decoded] == [r[2] for r in records]


def _crc(view: Any) -> int:
    from crc32c import crc32c

    return int(crc32c(view))


@pytest.mark.parametrize(
    "records",
    [
        [],  # no records: the reference writes its empty-batch header
        [(-1, None, b"v", (), None)],  # no timestamp
        [(0, None, b"v", (), None), (-1, None, b"w", (), None)],
        [(0, "not bytes", b"v", (), None)],
        [[0, None, b"v", ()]],  # not a tuple
    ],
)
def test_kernel_declines_what_the_reference_handles_its_own_way(records: list[Any]) -> None:
    assert _kernel().encode_batch(records, -1, -1, -1, False, _crc) is None
    batch = _Batch(records)
    try:
        expected: Any = encode_batch_reference(batch, None, None)
    except Exception as e:  # the same error either way
        with pytest.raises(type(e)):
            encode_batch(batch, None, None)
    else:
        assert encode_batch(batch, None, None) == expected


def test_compressed_batches_take_the_reference() -> None:
    records = [(5, None, b"v" * 200, (), None)] * 10
    batch = _Batch(records)
    for codec in ("gzip", CompressionType.GZIP):
        assert encode_batch(batch, codec, None) == encode_batch_reference(batch, codec, None)


def test_a_tuple_of_records_takes_the_reference() -> None:
    records = ((5, None, b"v", (), None),)
    batch = _Batch(records)
    assert encode_batch(batch, None, None) == encode_batch_reference(batch, None, None)


@pytest.mark.parametrize("count", [511, 512, 513, 1500])
def test_large_batches_are_byte_identical(count: int) -> None:
    records = [(1_700_000_000_000 + (i * 7919) % 5000, b"k%d" % i if i % 3 else None, b"v" * (i % 50), (), None)
               for i in range(count)]
    batch = _Batch(records, 7, 2, 11, True)
    reference, _ = encode_batch_reference(batch, None, None)
    assert _kernel().encode_batch(records, 7, 2, 11, True, _crc) == reference
    # a -1 timestamp anywhere (here the last record) still leaves the whole batch to the reference
    assert _kernel().encode_batch([*records, (-1, None, b"v", (), None)], 7, 2, 11, True, _crc) is None


# Records that share their timestamp int and headers objects, as the producer's do (its clock int for every
# record of a millisecond, its one empty headers tuple): the kernel converts an object once per run of records
# holding it. Pools mix ints inside and outside CPython's small-int cache, equal values as distinct objects,
# None / empty / non-empty headers and objects the reference must take (a -1 timestamp, a header key not str).
_ts_pool = [0, 5, 256, 257, 1_700_000_000_000, int("1700000000000"), 2**45, 2**62, -1, 2**63]
_headers_pool: list[Any] = [
    None, (), [], ((("h", b"v"),)), [("h", b"v"), ("k", None)], (("", b""),), ((b"not str", b"v"),), (("\ud800", b"v"),),
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(_ts_pool) - 1), st.sampled_from([None, b"", b"k", b"key" * 50]),
            st.sampled_from([None, b"", b"v" * 100, bytearray(b"w" * 3)]), st.integers(0, len(_headers_pool) - 1),
        ),
        min_size=1, max_size=40,
    ),
    st.booleans(),
)
def test_records_sharing_timestamp_and_headers_objects_encode_as_the_reference(
    picks: list[tuple[int, Any, Any, int]], valid_only: bool
) -> None:
    if valid_only:  # mostly batches the kernel takes
        picks = [(t % 8, k, v, h % 6) for t, k, v, h in picks]
    records = [(_ts_pool[t], k, v, _headers_pool[h], None) for t, k, v, h in picks]
    batch = _Batch(records, 3, 1, 7, False)
    try:
        expected: Any = encode_batch_reference(batch, None, None)
    except Exception as e:  # the kernel declines; the reference raises either way
        assert _kernel().encode_batch(records, 3, 1, 7, False, _crc) is None
        with pytest.raises(type(e)):
            encode_batch(batch, None, None)
        return
    assert encode_batch(batch, None, None) == expected
    direct = _kernel().encode_batch(records, 3, 1, 7, False, _crc)
    assert direct is None or direct == expected[0]
    if valid_only and all(_ts_pool[t] >= 0 for t, _, _, _ in picks):
        assert direct == expected[0]  # the kernel took it


def test_one_timestamp_object_shared_by_a_large_batch_is_byte_identical() -> None:
    ts = 1_700_000_000_123
    headers: tuple[tuple[str, bytes], ...] = ()
    records = [(ts, None if i % 2 else b"", b"v" * (i % 130), headers if i % 5 else None, None) for i in range(700)]
    records[600] = (ts + 1, b"k", b"v", (("h", b"x"),), None)  # a new object, then the shared one again
    batch = _Batch(records, 7, 2, 11, False)
    assert _kernel().encode_batch(records, 7, 2, 11, False, _crc) == encode_batch_reference(batch, None, None)[0]
    # a -1 timestamp object shared by the records after the first still leaves the batch to the reference
    neg = [(-1 if i else 5, None, b"v", headers, None) for i in range(600)]
    assert _kernel().encode_batch(neg, 7, 2, 11, False, _crc) is None


@pytest.mark.parametrize(
    "sizes",
    [
        [0] + [300] * 60,  # the first record much smaller than the rest: the kernel's output grows, several times
        [0, 0, 70_000, 1],  # one record larger than all the room made for the batch at once
        [5000] + [0] * 200,  # the first record much larger: the room made is cut to the bytes written
        [100] * 200,  # the producer's batch: records of one size, the offset delta one byte longer from record 64
    ],
)
def test_batches_whose_first_record_is_no_guide_to_their_size_are_byte_identical(sizes: list[int]) -> None:
    # the kernel writes the records in one pass, into room for about as many records as the first one's size
    records = [(1_700_000_000_000 + i * 97, None if i % 2 else b"key", b"v" * n, (), None) for i, n in enumerate(sizes)]
    batch = _Batch(records, 7, 2, 11, False)
    assert _kernel().encode_batch(records, 7, 2, 11, False, _crc) == encode_batch_reference(batch, None, None)[0]
