"""The compiled kernel's IndexColumns (a segment index's entries in C memory) against the reference
``mini_broker.log.index_columns.IndexColumns``: over random sequences of the offset and time indexes' appends
(in and out of order, full, values at their columns' bounds), lookups, truncations, loads and encodings, the same
answers, the same errors and the same entries."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.log.index_columns import IndexColumns, IndexColumnsApi, new_index_columns
from pykafka_client.protocol.records import _native

_kernel = _native.loaded_kernel()
pytestmark = pytest.mark.skipif(_kernel is None, reason="the compiled record kernel is not built")

_INT32 = st.integers(-(2**31), 2**31 - 1)
_VALUES = {4: st.one_of(_INT32, st.integers(-3, 40)), 8: st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-3, 40))}
_KEYS = st.one_of(st.integers(-3, 40), st.integers(-(2**70), 2**70))


def _op(widths: tuple[int, int]) -> st.SearchStrategy[tuple[object, ...]]:
    first, second = _VALUES[widths[0]], _VALUES[widths[1]]
    return st.one_of(
        st.tuples(st.just("append_increasing"), first, second, st.integers(0, 12), st.integers(0, 14)),
        st.tuples(st.just("append_newer"), first, second, st.integers(0, 12), st.booleans(), st.integers(0, 14)),
        st.tuples(st.just("entry"), st.integers(-14, 14)),
        st.tuples(st.just("bisect"), st.integers(0, 1), _KEYS, st.booleans()),
        st.tuples(st.just("truncate"), st.integers(-2, 14)),
        st.tuples(st.just("encode"), st.integers(-2, 14)),
        st.tuples(st.just("pairs")),
        st.tuples(st.just("len")),
    )


def _call(columns: IndexColumnsApi, op: tuple[object, ...]) -> object:
    name, *args = op
    try:
        if name == "len":
            return len(columns)
        return getattr(columns, str(name))(*args)
    except (IndexError, OverflowError) as e:
        return type(e)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), widths=st.sampled_from([(4, 4), (8, 4)]))
def test_the_kernels_index_columns_answer_as_the_reference(data: st.DataObject, widths: tuple[int, int]) -> None:
    assert _kernel is not None
    compiled = _kernel.index_columns(*widths)
    reference = IndexColumns(*widths)
    loaded = data.draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=4).map(sorted))
    raw = IndexColumns(*widths)
    for a, b in loaded:
        raw.append_increasing(a, b, 100, 0) if widths == (4, 4) else raw.append_newer(a, b, 100, True, 0)
    blob = raw.encode(0) + data.draw(st.binary(max_size=3))  # a torn tail is ignored
    compiled.load(blob)
    reference.load(blob)
    for op in data.draw(st.lists(_op(widths), max_size=40)):
        got, expected = _call(compiled, op), _call(reference, op)
        if op[0].startswith("append") and expected is OverflowError:  # type: ignore[attr-defined]  # (op[0] is a str)
            # the reference may have appended the first column's value: both are out of the log's range, stop here
            assert got is OverflowError
            return
        assert got == expected, op
        assert compiled.pairs() == reference.pairs()


def test_new_index_columns_follows_the_active_implementation() -> None:
    previous = _native.use_native(False)
    try:
        assert isinstance(new_index_columns(4, 4), IndexColumns)
    finally:
        _native.use_native(previous)
    assert isinstance(new_index_columns(8, 4), IndexColumns) == (_native.kernel is None)
    assert _kernel is not None
    with pytest.raises(ValueError):
        _kernel.index_columns(2, 4)


def test_the_kernels_columns_take_their_widths_in_memory() -> None:
    """As the reference's arrays: an offset index entry is 8 bytes, a time index entry 12 (not two int64s each)."""
    assert _kernel is not None
    for widths in ((4, 4), (8, 4)):
        columns = _kernel.index_columns(*widths)
        for i in range(1000):
            assert columns.append_increasing(i, i, 10_000, 10**9) == 0
        assert sys.getsizeof(columns) <= 1024 * sum(widths) + 200
