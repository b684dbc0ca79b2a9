"""The producer's hot paths give exactly what the general paths give.

* ``MemoryRecordsBuilder.append_all`` (used to encode a producer batch) == ``append`` one by one.
* ``RecordAccumulator.try_append_fast`` (used by ``send``) leaves the accumulator and the sticky
  partitioner in the same state as ``append`` alone, and declines (changing nothing) whenever ``append``
  has more to do.
* ``record_size_in_bytes`` at the 1/2/3-byte varint boundaries of its written-out cases.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.errors import IllegalArgumentError
from pykafka_client.producer.buffer_pool import BufferPool
from pykafka_client.producer.record_accumulator import UNKNOWN_PARTITION, RecordAccumulator
from pykafka_client.producer.record_size import record_size_in_bytes
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.protocol.records.builder import record_size_in_bytes as builder_size
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)
from tests.unit.producer.helpers import NODE1, FakeMetadata

pytestmark = pytest.mark.usefixtures("record_impl")  # every test on the kernel and on the reference

Rec = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

_records = st.lists(
    st.tuples(
        st.one_of(st.just(-1), st.integers(min_value=0, max_value=2**45)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.lists(st.tuples(st.text(max_size=10), st.one_of(st.none(), st.binary(max_size=50))), max_size=2),
    ),
    max_size=40,
)


def _one_by_one(records: list[Rec], codec: CompressionType) -> bytes:
    b = MemoryRecordsBuilder(codec, write_limit=2**62, producer_id=7, producer_epoch=1, base_sequence=3)
    for ts, k, v, h in records:
        assert b.append(ts, k, v, h)
    return b.build()


@settings(max_examples=60, deadline=None)
@given(_records, st.sampled_from([CompressionType.NONE, CompressionType.GZIP]))
def test_append_all_equals_append(records: list[Rec], codec: CompressionType) -> None:
    b = MemoryRecordsBuilder(codec, write_limit=2**62, producer_id=7, producer_epoch=1, base_sequence=3)
    b.append_all([(*r, "ignored extra field") for r in records])
    assert b.num_records == len(records)
    assert b.build() == _one_by_one(records, codec)


def test_append_all_large_values_and_many_records() -> None:
    records: list[Rec] = [(1000 + i % 7, b"k" * (i % 3), b"v" * (20_000 if i == 5 else 100), []) for i in range(20_000)]
    b = MemoryRecordsBuilder(write_limit=2**62, producer_id=7, producer_epoch=1, base_sequence=3)
    b.append_all(records)
    assert b.build() == _one_by_one(records, CompressionType.NONE)


def test_append_all_rejects_a_negative_timestamp_with_nothing_appended() -> None:
    b = MemoryRecordsBuilder(write_limit=2**62)
    with pytest.raises(IllegalArgumentError):
        b.append_all([(5, None, b"a", []), (-2, None, b"b", [])])
    assert b.num_records == 0


@pytest.mark.parametrize("n", [0, 63, 64, 8191, 8192, 2**20])
def test_record_size_varint_boundaries(n: int) -> None:
    data = b"x" * n
    for delta in (n, -n, n - 1, -n - 1):
        assert record_size_in_bytes(abs(delta), delta, data, data, []) == builder_size(abs(delta), delta, data, data, [])


META = FakeMetadata({("t", 0): NODE1, ("t", 1): NODE1, ("t", 2): NODE1})


def _acc(compression: CompressionType = CompressionType.NONE) -> RecordAccumulator:
    time = MockTime()
    return RecordAccumulator(
        batch_size=1024, linger_ms=5, retry_backoff_ms=100, retry_backoff_max_ms=1000, delivery_timeout_ms=120_000,
        buffer_pool=BufferPool(1 << 24, time), time=time, rng=random.Random(0), compression_type=compression,
    )


def _state(acc: RecordAccumulator) -> tuple[object, ...]:
    info = acc._topics["t"]
    sticky = info.partitioner.sticky
    queues = {p: [(b.record_count, b.closed, b.estimated_size_in_bytes()) for b in q.batches] for p, q in info.queues.items()}
    return (sticky.partition if sticky else None, sticky.produced_bytes if sticky else None, queues)


@pytest.mark.parametrize("compression", [CompressionType.NONE, CompressionType.GZIP])
@pytest.mark.parametrize("partition", [UNKNOWN_PARTITION, 1])
def test_fast_append_keeps_the_state_of_the_general_append(compression: CompressionType, partition: int) -> None:
    general, fast = _acc(compression), _acc(compression)
    sizes = [random.Random(1).randrange(1, 400) for _ in range(300)]
    fast_hits = 0
    for i, size in enumerate(sizes):
        value = bytes(size)
        general.append("t", partition, i, None, value, [], None, 0, META)
        r = fast.try_append_fast("t", partition, i, None, value, [], None, META)
        if r is None:
            fast.append("t", partition, i, None, value, [], None, 0, META)
        else:
            fast_hits += 1
        assert _state(fast) == _state(general), i
    assert fast_hits > 200  # the fast path is the common case


def test_fast_append_reports_full_batches() -> None:
    acc = _acc()
    tp = TopicPartition("t", 0)
    acc.append("t", 0, 0, None, b"x" * 100, [], None, 0, META)
    flags = []
    while (r := acc.try_append_fast("t", 0, 1, None, b"x" * 100, [], None, META)) is not None:
        batches = acc.batches_for(tp)
        assert r[1] == (len(batches) > 1 or batches[-1].is_full())
        flags.append(r[1])
    assert flags and not any(flags)  # one open batch that is not full yet
    acc.append("t", 0, 1, None, b"x" * 100, [], None, 0, META)  # no room: a second batch
    r = acc.try_append_fast("t", 0, 1, None, b"x" * 100, [], None, META)
    assert r is not None and r[1] is True  # two batches queued: sendable, the Sender must be woken


def test_fast_append_declines_without_changing_anything() -> None:
    acc = _acc()
    assert acc.try_append_fast("t", UNKNOWN_PARTITION, 0, None, b"x", [], None, META) is None  # unknown topic
    acc.append("t", 0, 0, None, b"x", [], None, 0, META)
    assert acc.try_append_fast("t", 2, 0, None, b"x", [], None, META) is None  # no queue for partition 2
    before = _state(acc)
    assert acc.try_append_fast("t", 0, 0, None, b"x" * 2000, [], None, META) is None  # no room
    assert _state(acc) == before
    acc.close()
    assert acc.try_append_fast("t", 0, 0, None, b"x", [], None, META) is None  # closing
    assert _state(acc) == before
