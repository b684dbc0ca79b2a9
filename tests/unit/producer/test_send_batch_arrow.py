"""``send_batch`` from pyarrow columns read straight from their buffers (``batch_append.arrow_column_items``):
the items equal ``to_pylist`` (strings as UTF-8 bytes) for binary, string and the large variants, with nulls,
sliced arrays (a non-zero offset into shared buffers) and chunked arrays; the kernel and the Python reference
give the same items; and the record batches equal those of the same records given as lists."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer import batch_append
from pykafka_client.protocol.records import _native
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)
from tests.unit.producer.test_send_batch import _batches, _producer

pa = pytest.importorskip("pyarrow")

pytestmark = pytest.mark.usefixtures("record_impl")

TOPIC = "t"
_TYPES = {"binary": pa.binary(), "string": pa.string(), "large_binary": pa.large_binary(), "large_string": pa.large_string()}


def _expected(column: Any) -> list[bytes | None]:
    return [x.encode() if isinstance(x, str) else x for x in column.to_pylist()]


def _array(items: list[bytes | None], kind: str) -> Any:
    t = _TYPES[kind]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.array([None if x is None else x.decode("latin-1") for x in items], t)
    return pa.array(items, t)


def _column(items: list[bytes | None], kind: str, cut: int, drop: int, chunks: int) -> Any:
    """``items`` as an array of ``kind`` sliced from a larger one (``cut`` items before, ``drop`` after), or as
    ``chunks`` chunks of such slices (0: a plain array)."""
    whole = _array([b"pad"] * cut + items + [None] * drop, kind)
    sliced = whole.slice(cut, len(items))
    if chunks == 0:
        return sliced
    step = max(1, -(-len(items) // chunks))
    return pa.chunked_array([sliced.slice(i, step) for i in range(0, len(items), step)], _TYPES[kind])


_items = st.lists(st.one_of(st.none(), st.binary(max_size=40).map(lambda b: bytes(c & 0x7F for c in b))), max_size=60)


@settings(max_examples=60, deadline=None)
@given(items=_items, kind=st.sampled_from(sorted(_TYPES)), cut=st.integers(0, 9), drop=st.integers(0, 3),
       chunks=st.integers(0, 4))
def test_items_from_the_buffers_equal_to_pylist(items: list[bytes | None], kind: str, cut: int, drop: int, chunks: int) -> None:
    column = _column(items, kind, cut, drop, chunks)
    assert batch_append.arrow_column_items(column) == _expected(column) == items


def test_sliced_chunked_and_null_columns() -> None:
    base = pa.array([b"a", None, b"", b"bcd", None, b"e" * 300], pa.binary())
    assert base.slice(1).offset == 1
    assert batch_append.arrow_column_items(base.slice(1)) == [None, b"", b"bcd", None, b"e" * 300]
    assert batch_append.arrow_column_items(base.slice(3, 2)) == [b"bcd", None]
    assert batch_append.arrow_column_items(base.slice(6)) == []
    assert batch_append.arrow_column_items(pa.array([None, None], pa.large_string())) == [None, None]
    chunked = pa.chunked_array([base.slice(4), pa.array([], pa.binary()), base.slice(0, 2)])
    assert batch_append.arrow_column_items(chunked) == [None, b"e" * 300, b"a", None]
    assert batch_append.arrow_column_items(pa.chunked_array([], pa.string())) == []
    assert batch_append.arrow_column_items(pa.array(["é", "ü"], pa.string())) == ["é".encode(), "ü".encode()]
    assert batch_append.arrow_column_items(pa.array([1, 2])) is None  # not a binary column: the caller's to_pylist


def test_kernel_and_reference_agree_and_corrupt_buffers_are_reported() -> None:
    arr = pa.array([b"xy", None, b"z"], pa.binary()).slice(1)
    validity, offsets, data = arr.buffers()
    assert batch_append.arrow_binary_items(validity, offsets, data, arr.offset, len(arr), False) == [None, b"z"]
    assert batch_append.arrow_binary_items_reference(validity, offsets, data, arr.offset, len(arr), False) == [None, b"z"]
    # offsets past the end of the data: the kernel declines, the reference names the problem
    bad_offsets = pa.py_buffer((0).to_bytes(4, "little") + (99).to_bytes(4, "little"))
    if _native.kernel is not None:
        assert _native.kernel.binary_column(None, bad_offsets, pa.py_buffer(b"abc"), 0, 1, False) is None
    with pytest.raises(ValueError, match="offsets are corrupt"):
        batch_append.arrow_binary_items(None, bad_offsets, pa.py_buffer(b"abc"), 0, 1, False)
    with pytest.raises(ValueError, match="offsets buffer"):
        batch_append.arrow_binary_items(None, bad_offsets, pa.py_buffer(b"abc"), 1, 5, False)


@settings(max_examples=30, deadline=None)
@given(
    records=st.lists(st.tuples(_items.map(lambda xs: xs[0] if xs else None), _items.map(lambda xs: xs[0] if xs else b"v")),
                     min_size=1, max_size=60),
    kind=st.sampled_from(sorted(_TYPES)),
    key_kind=st.sampled_from(sorted(_TYPES)),
    with_keys=st.booleans(),
    cut=st.integers(0, 5),
    chunks=st.integers(0, 3),
    partitions=st.integers(1, 4),
    codec=st.sampled_from(["none", "lz4", "zstd"]),
    batch_size=st.sampled_from([150, 1024]),
    seed=st.integers(0, 1000),
)
def test_arrow_columns_make_the_batches_of_the_same_lists(
    records: list[tuple[bytes | None, bytes | None]], kind: str, key_kind: str, with_keys: bool, cut: int, chunks: int,
    partitions: int, codec: str, batch_size: int, seed: int,
) -> None:
    from pykafka_client.utils.time import MockTime

    keys = [k for k, _ in records] if with_keys else None
    values = [v for _, v in records]
    config = {"compression.type": codec, "batch.size": batch_size}
    time = MockTime()
    lists = _producer(time, partitions, seed, **config)
    arrays = _producer(time, partitions, seed, **config)
    try:
        lists.send_batch(TOPIC, values, keys)
        arrays.send_batch(
            TOPIC, _column(values, kind, cut, 1, chunks), None if keys is None else _column(keys, key_kind, cut, 0, chunks)
        )
        got, expected = _batches(arrays, partitions), _batches(lists, partitions)
        assert {p: [b.records() for b in bs] for p, bs in got.items()} == {
            p: [b.records() for b in bs] for p, bs in expected.items()
        }
    finally:
        lists.close(0)
        arrays.close(0)
