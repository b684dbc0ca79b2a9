"""send_batch's Arrow columns read in place (``kernel/producer_binary_column.c.h``) == their Python reference.

- ``BinaryColumn`` (``batch_append.binary_column``) against ``BinaryColumnReference`` over the same buffers of binary,
  string and large arrays, sliced (a non-zero offset) and with nulls: the same length, items (negative indexes
  included), slices and IndexError; on corrupt buffers the kernel declines (None) where the reference raises
  ValueError; a column keeps its buffers alive and lets go of them when dropped.
- ``scan_records`` and ``key_partitions`` given a column equal their references given the column's items.
- ``send_batch`` from pyarrow columns (binary / string / large variants, sliced, chunked, nulls; keys too) on the
  compiled kernel and on the pure-Python reference (``_native.use_native(False)`` for that producer's whole life): the
  same batches byte for byte (and closed at the same records), the same futures' results, delivery callbacks and free
  buffer memory, across every codec, records over batch.size, headers, timestamps, partitions and buffer.memory
  running out.
"""

from __future__ import annotations

import gc
import random
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client import KafkaProducer
from pykafka_client.producer import batch_append
from pykafka_client.producer.batch_append import BinaryColumnReference
from pykafka_client.producer.kafka_producer import SendBatchFuture
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import MockTime
from tests.unit.producer.helpers import native_switched
from tests.unit.producer.test_send_batch import _batches, _complete
from tests.unit.producer.test_send_batch import _producer as _send_batch_producer

pa = pytest.importorskip("pyarrow")

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

TOPIC = "t"
_TYPES = {"binary": pa.binary(), "string": pa.string(), "large_binary": pa.large_binary(), "large_string": pa.large_string()}


def _array(items: list[bytes | None], kind: str, cut: int) -> Any:
    """``items`` as an Arrow array of ``kind`` sliced ``cut`` items into a larger one (strings: latin-1 decoded, so
    their UTF-8 bytes differ from the items for bytes over 0x7f)."""
    t = _TYPES[kind]
    padded = [b"pad"] * cut + items + [b"tail"]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.array([None if x is None else x.decode("latin-1") for x in padded], t).slice(cut, len(items))
    return pa.array(padded, t).slice(cut, len(items))


def _columns(arr: Any) -> tuple[Any, BinaryColumnReference]:
    validity, offsets, data = arr.buffers()
    large = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type)
    kernel = _native.kernel
    assert kernel is not None
    compiled = kernel.binary_column(validity, offsets, data, arr.offset, len(arr), large)
    assert compiled is not None and type(compiled).__name__ == "BinaryColumn"
    return compiled, BinaryColumnReference(validity, offsets, data, arr.offset, len(arr), large)


_items = st.lists(st.one_of(st.none(), st.binary(max_size=30)), max_size=40)


@settings(max_examples=80, deadline=None)
@given(items=_items, kind=st.sampled_from(sorted(_TYPES)), cut=st.integers(0, 17), data=st.data())
def test_the_kernel_column_equals_the_reference(items: list[bytes | None], kind: str, cut: int, data: st.DataObject) -> None:
    with native_switched(True):
        arr = _array(items, kind, cut)
        compiled, reference = _columns(arr)
    expected = [x.encode() if isinstance(x, str) else x for x in arr.to_pylist()]
    assert len(compiled) == len(reference) == len(items)
    assert list(compiled) == list(reference) == expected
    n = len(items)
    for i in data.draw(st.lists(st.integers(-n - 2, n + 2), max_size=8)):
        if -n <= i < n:
            assert compiled[i] == reference[i] == expected[i]
        else:
            for column in (compiled, reference):
                with pytest.raises(IndexError):
                    column[i]
    start, stop = data.draw(st.integers(-n - 2, n + 2)), data.draw(st.integers(-n - 2, n + 2))
    step = data.draw(st.sampled_from([1, 2, 3, -1, -2]))
    assert compiled[start:stop:step] == reference[start:stop:step] == expected[start:stop:step]
    with native_switched(True):
        assert batch_append.scan_records(None, compiled, None) == batch_append.scan_records_reference(None, expected, None)
        assert batch_append.scan_records(compiled, compiled, None) == batch_append.scan_records_reference(
            expected, expected, None
        )
        assert batch_append.key_partitions(compiled, 7) == batch_append.key_partitions_reference(expected, 7)


def _buf(*offsets: int, large: bool = False) -> Any:
    width = 8 if large else 4
    return pa.py_buffer(b"".join(o.to_bytes(width, "little", signed=True) for o in offsets))


@pytest.mark.parametrize(
    ("validity", "offsets", "offset", "length", "large", "message"),
    [
        (None, _buf(0, 2, 1), 0, 2, False, "offsets are corrupt"),  # descending
        (None, _buf(-1, 2), 0, 1, False, "offsets are corrupt"),  # before the data
        (None, _buf(0, 9), 0, 1, False, "offsets are corrupt"),  # past the data's end
        (None, _buf(0, 2, 5), 0, 2, False, "offsets are corrupt"),  # one byte past it
        (None, _buf(0, 1), 0, 2, False, "offsets buffer"),  # too few offsets
        (None, _buf(0, 1, 2), 2, 1, False, "offsets buffer"),  # too few at that offset
        (pa.py_buffer(b"\xff"), _buf(*range(10)), 0, 9, False, "validity bitmap"),  # a bitmap of 8 bits for 9 items
        # a 64-bit descent whose difference overflows (a subtraction alone would see an ascent)
        (None, _buf(0, 3 << 61, -(3 << 61), 4, large=True), 0, 3, True, "offsets are corrupt"),
    ],
)
def test_corrupt_buffers_are_declined_by_the_kernel_and_reported_by_the_reference(
    validity: Any, offsets: Any, offset: int, length: int, large: bool, message: str
) -> None:
    data = pa.py_buffer(b"abcd")
    kernel = _native.kernel
    assert kernel is not None
    assert kernel.binary_column(validity, offsets, data, offset, length, large) is None
    with pytest.raises(ValueError, match=message):
        BinaryColumnReference(validity, offsets, data, offset, length, large)
    with native_switched(True), pytest.raises(ValueError, match=message):
        batch_append.binary_column(validity, offsets, data, offset, length, large)


def test_a_column_keeps_its_buffers_and_lets_go_of_them() -> None:
    data = bytearray(b"hello")
    offsets = _buf(0, 2, 5)
    kernel = _native.kernel
    assert kernel is not None
    before = sys.getrefcount(data), sys.getrefcount(offsets)
    column = kernel.binary_column(None, offsets, data, 0, 2, False)
    assert column is not None
    with pytest.raises(BufferError):
        data.extend(b"!")  # held: the data cannot move under the column
    data[0:2] = b"HE"  # its bytes may change (an exporter's): read as they are, never outside the data
    assert list(column) == [b"HE", b"llo"]
    del column
    gc.collect()
    assert (sys.getrefcount(data), sys.getrefcount(offsets)) == before
    data.extend(b"!")  # released


def _producer(time: MockTime, partitions: int, seed: int, native: bool, **config: Any) -> KafkaProducer:
    with native_switched(native):
        return _send_batch_producer(time, partitions, seed, **config)


def _column(items: list[bytes | None], kind: str, cut: int, chunks: int) -> Any:
    arr = _array(items, kind, cut)
    if chunks == 0:
        return arr
    step = max(1, -(-len(items) // chunks))
    return pa.chunked_array([arr.slice(i, step) for i in range(0, len(items), step)], _TYPES[kind])


def _outcome(f: Any) -> Any:
    if isinstance(f, str):
        return f
    assert isinstance(f, SendBatchFuture) and f.done()
    meta = f.metadata()
    return [(repr(meta.exception(i)), None if meta.exception(i) else meta[i]) for i in range(len(meta))]


_value = st.one_of(st.none(), st.integers(0, 40).map(lambda n: b"v" * n), st.integers(100, 400).map(lambda n: b"\xe9" * n))


@settings(max_examples=60, deadline=None)
@given(
    calls=st.lists(
        st.tuples(
            st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=4)), _value, st.one_of(st.none(), st.integers(0, 2**41))),
                     min_size=1, max_size=50),
            st.sampled_from(sorted(_TYPES)),  # the values' type
            st.sampled_from(sorted(_TYPES)),  # the keys'
            st.integers(0, 5),  # cut
            st.integers(0, 3),  # chunks
            st.booleans(),  # keys
            st.booleans(),  # timestamps
            st.booleans(),  # a callback
            st.one_of(st.none(), st.none(), st.integers(0, 3)),  # partition (mod the partition count)
            st.sampled_from([None, None, [("h", b"v")]]),  # headers
        ),
        min_size=1, max_size=4,
    ),
    partitions=st.integers(1, 3),
    codec=st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
    batch_size=st.sampled_from([100, 300, 1024]),
    memory_batches=st.sampled_from([3, 1000]),
    seed=st.integers(0, 1000),
)
def test_send_batch_of_arrow_columns_compiled_equals_the_reference(
    calls: list[tuple[Any, ...]], partitions: int, codec: str, batch_size: int, memory_batches: int, seed: int
) -> None:
    config = {
        "compression.type": codec, "batch.size": batch_size,
        "buffer.memory": memory_batches * batch_size + batch_size // 2, "max.block.ms": 0,
    }
    time = MockTime()
    producers = {"k": _producer(time, partitions, seed, True, **config), "r": _producer(time, partitions, seed, False, **config)}
    futures: dict[str, list[Any]] = {name: [] for name in producers}
    delivered: dict[str, list[Any]] = {name: [] for name in producers}
    try:
        for records, kind, key_kind, cut, chunks, with_keys, with_ts, with_cb, partition, headers in calls:
            keys = [k for k, _, _ in records]
            values = [v for _, v, _ in records]
            stamps = [t for _, _, t in records]
            part = None if partition is None else partition % partitions
            for name, p in producers.items():
                sink = delivered[name]
                cb = (lambda m, e, sink=sink: sink.append((m, repr(e)))) if with_cb else None
                with native_switched(name == "k"):
                    try:
                        futures[name].append(p.send_batch(
                            TOPIC, _column(values, kind, cut, chunks),
                            _column(keys, key_kind, cut, chunks) if with_keys else None,
                            partition=part, headers=headers, timestamps=stamps if with_ts else None, on_delivery=cb,
                        ))
                    except Exception as e:  # the same error on both paths
                        futures[name].append(repr(e))
        batches = {name: _batches(p, partitions) for name, p in producers.items()}
        shapes = {
            name: {i: [(b.records(), b.closed, b.record_count) for b in bs] for i, bs in got.items()}
            for name, got in batches.items()
        }
        assert shapes["k"] == shapes["r"]
        free = {name: p.accumulator.free.available_memory() for name, p in producers.items()}
        assert free["k"] == free["r"]
        for name, got in batches.items():
            with native_switched(name == "k"):
                _complete(got)
        results = {name: [_outcome(f) for f in fs] for name, fs in futures.items()}
        assert results["k"] == results["r"]
        assert delivered["k"] == delivered["r"]
    finally:
        for name, p in producers.items():
            with native_switched(name == "k"):
                p.close(0)


def test_the_record_a_batch_has_no_room_for_is_the_one_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bulk round that stops at a record the batch may have no room for checks that record (``has_room_for``, when
    the lower bound of its size does not tell): from an Arrow column on the kernel, the same checks of the same
    records as on the reference, around the bound's edges and with sizes that change from record to record."""
    checks: list[tuple[int, int]] = []
    real = ProducerBatch.has_room_for

    def counting(self: ProducerBatch, timestamp: int, key: bytes | None, value: bytes | None, headers: Any) -> bool:
        checks.append((self.record_count, -1 if value is None else len(value)))
        return real(self, timestamp, key, value, headers)

    monkeypatch.setattr(ProducerBatch, "has_room_for", counting)
    time = MockTime()
    checked = 0
    for seed in range(12):
        rng = random.Random(seed)
        values = [b"v" * rng.randrange(40, 90) for _ in range(300)]
        # (timestamp deltas over 63: a record's size is then over the lower bound, which alone no longer tells)
        stamps = [1000 + (i % 2) * 500 for i in range(300)]
        for batch_size in (1024, 1500):
            seen = {}
            for name in ("k", "r"):
                checks.clear()
                p = _producer(time, 1, 1, name == "k", **{"batch.size": batch_size})
                with native_switched(name == "k"):
                    try:
                        p.send_batch(TOPIC, pa.array(values, pa.binary()), partition=0, timestamps=stamps)
                        seen[name] = (list(checks), [(b.records(), b.closed) for b in _batches(p, 1)[0]])
                    finally:
                        p.close(0)
            assert seen["k"] == seen["r"], (seed, batch_size)
            checked += len(seen["k"][0])
    assert checked > 0  # (the edges were reached: some rounds needed the exact check)
