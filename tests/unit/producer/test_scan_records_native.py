"""The kernel's ``scan_records`` (``kernel/producer_send_batch.c.h``) == ``batch_append.scan_records_reference``.

Random columns of keys (or none: the kernel's loop for values only), values and timestamps (or none) mixing bytes of
any size, None, and items that are not bytes (str, bytearray, int) and timestamps out of range or of another type:
the same largest payload, -1 or -2.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer import batch_append
from pykafka_client.protocol.records import _native

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

_item = st.one_of(
    st.binary(max_size=300),
    st.binary(max_size=300),
    st.none(),
    st.sampled_from(["s", bytearray(b"ba"), 7, memoryview(b"m")]),
)
_timestamp = st.one_of(
    st.none(), st.integers(0, 1 << 62), st.sampled_from([-1, (1 << 62) + 1, 2**64, True, 1.5, "1"])
)


@settings(max_examples=400, deadline=None)
@given(
    values=st.lists(_item, max_size=30),
    keyed=st.booleans(),
    timed=st.booleans(),
    data=st.data(),
)
def test_the_kernel_scan_equals_the_reference(values: list[Any], keyed: bool, timed: bool, data: st.DataObject) -> None:
    n = len(values)
    keys = data.draw(st.lists(_item, min_size=n, max_size=n)) if keyed else None
    timestamps = data.draw(st.lists(_timestamp, min_size=n, max_size=n)) if timed else None
    kernel = _native.loaded_kernel()
    assert kernel is not None
    assert kernel.scan_records(keys, values, timestamps) == batch_append.scan_records_reference(keys, values, timestamps)


@pytest.mark.parametrize(
    ("keys", "values", "timestamps", "expected"),
    [
        (None, [], None, 0),
        (None, [None, b"abc", b"a"], None, 3),
        (None, [b"abc", "x"], None, -1),
        (None, [b"abc", None, bytearray(b"x")], [None, None, 1], -1),
        (None, [b"abcd"], [-5], -2),
        ([b"k", None], [b"v", b"vvv"], None, 3),
        ([b"kk", "k"], [b"v", b"v"], [1, 2], -1),
    ],
)
def test_scan_records_cases(keys: list[Any] | None, values: list[Any], timestamps: list[Any] | None, expected: int) -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    assert batch_append.scan_records_reference(keys, values, timestamps) == expected
    assert kernel.scan_records(keys, values, timestamps) == expected
