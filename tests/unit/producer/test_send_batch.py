"""``KafkaProducer.send_batch`` == a loop of ``send``: the same batches with the same bytes, partitions and record
futures' results, on the compiled kernel and on the pure-Python reference (``record_impl``).

The producers here run no Sender (an idle I/O runner): batches stay in the accumulator, where the test reads
and completes them by hand. Both producers share a MockTime and a seeded partitioner random source.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client import KafkaProducer
from pykafka_client.errors import IllegalArgumentError, KafkaTimeoutError, ProducerClosedError, RecordTooLargeError
from pykafka_client.producer import batch_append
from pykafka_client.producer.future_record_metadata import column_at
from pykafka_client.producer.kafka_producer import SendBatchFuture
from pykafka_client.producer.partitioner import murmur2, to_positive
from pykafka_client.producer.producer_batch import ProducerBatch, pending_columns_reference
from pykafka_client.producer.record_metadata import RecordMetadata
from pykafka_client.producer.sender import IoRunner, Sender
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.responses import metadata_response, nodes
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)

pytestmark = pytest.mark.usefixtures("record_impl")

TOPIC = "t"


class _IdleRunner:
    def is_alive(self) -> bool:
        return False

    def join(self, timeout: float | None = None) -> None:
        return None

    def ensure_started(self) -> None:
        return None


def _idle_runner(sender: Sender, client_id: str) -> IoRunner:
    """Runs no Sender: what is sent stays in the accumulator."""
    return _IdleRunner()


def _producer(time: MockTime, partitions: int, seed: int, **config: Any) -> KafkaProducer:
    p = KafkaProducer(
        {"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": False, "linger.ms": 5, **config},
        time=time,
        io_runner=_idle_runner,
    )
    p.accumulator._rng = random.Random(seed)
    now = time.hi_res_clock_ms()
    p.metadata.add(TOPIC, now)
    p.metadata.update(
        0, metadata_response(nodes(1), {TOPIC: partitions}, leaders={(TOPIC, i): 0 for i in range(partitions)}), False, now
    )
    return p


def _batches(p: KafkaProducer, partitions: int) -> dict[int, list[ProducerBatch]]:
    return {i: p.accumulator.batches_for(TopicPartition(TOPIC, i)) for i in range(partitions)}


def _complete(batches: dict[int, list[ProducerBatch]]) -> None:
    for part, bs in batches.items():
        offset = 1000 * part
        for b in bs:
            b.done(offset, -1, None)
            offset += b.record_count


_bytes = st.one_of(st.none(), st.binary(max_size=60), st.binary(max_size=60), st.binary(min_size=200, max_size=700))


@settings(max_examples=40, deadline=None)
@given(
    records=st.lists(st.tuples(_bytes, _bytes, st.one_of(st.none(), st.integers(0, 2**41))), min_size=1, max_size=80),
    partitions=st.integers(1, 4),
    explicit=st.one_of(st.none(), st.integers(0, 3)),
    with_keys=st.booleans(),
    with_timestamps=st.booleans(),
    headers=st.sampled_from([None, [("h", b"v")], [("h1", None), ("h2", b"")]]),
    codec=st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
    batch_size=st.sampled_from([150, 500, 1024, 4096]),
    seed=st.integers(0, 1000),
)
def test_send_batch_makes_the_batches_of_a_send_loop(
    records: list[tuple[bytes | None, bytes | None, int | None]],
    partitions: int,
    explicit: int | None,
    with_keys: bool,
    with_timestamps: bool,
    headers: list[tuple[str, bytes | None]] | None,
    codec: str,
    batch_size: int,
    seed: int,
) -> None:
    partition = None if explicit is None else explicit % partitions
    keys = [k for k, _, _ in records] if with_keys else None
    values = [v for _, v, _ in records]
    timestamps = [t for _, _, t in records] if with_timestamps else None
    config = {"compression.type": codec, "batch.size": batch_size}
    time = MockTime()
    one = _producer(time, partitions, seed, **config)
    many = _producer(time, partitions, seed, **config)
    try:
        futures = [
            one.send(TOPIC, values[i], None if keys is None else keys[i], partition,
                     None if timestamps is None else timestamps[i], headers)
            for i in range(len(values))
        ]
        batch_future = many.send_batch(TOPIC, values, keys, partition=partition, headers=headers, timestamps=timestamps)
        expected, got = _batches(one, partitions), _batches(many, partitions)
        assert {p: [b.records() for b in bs] for p, bs in got.items()} == {
            p: [b.records() for b in bs] for p, bs in expected.items()
        }
        # closed at the same records (a batch closes at its first record without room)
        assert {p: [b.closed for b in bs] for p, bs in got.items()} == {p: [b.closed for b in bs] for p, bs in expected.items()}
        assert not batch_future.done() or not values
        _complete(expected)
        _complete(got)
        assert batch_future.done()
        assert list(batch_future.result(0)) == [f.result(0) for f in futures]
    finally:
        one.close(0)
        many.close(0)


def test_send_batch_fills_batches_up_to_batch_size_and_then_opens_new_ones() -> None:
    time = MockTime()
    p = _producer(time, 1, 1, **{"batch.size": 1000})
    try:
        f = p.send_batch(TOPIC, [b"x" * 100] * 50, partition=0)
        bs = p.accumulator.batches_for(TopicPartition(TOPIC, 0))
        assert len(bs) > 5
        assert sum(b.record_count for b in bs) == 50
        assert all(b.estimated_size_in_bytes() <= 1000 for b in bs)
        _complete({0: bs})
        md = f.result(0)
        assert [m.offset for m in md] == list(range(50))
        assert md[-1] == md[49]
    finally:
        p.close(0)


def test_send_batch_of_nothing_is_done_at_once() -> None:
    p = _producer(MockTime(), 1, 1)
    try:
        f = p.send_batch(TOPIC, [])
        assert f.done()
        assert len(f.result(0)) == 0
    finally:
        p.close(0)


def test_pyarrow_arrays_with_nulls_equal_their_lists() -> None:
    pa = pytest.importorskip("pyarrow")
    values: list[str | None] = ["a", None, "ccc", "", "é"]
    keys: list[bytes | None] = [None, b"k", b"", None, b"kk"]
    time = MockTime()
    lists = _producer(time, 3, 5)
    arrays = _producer(time, 3, 5)
    try:
        for kind, ktype in ((pa.string(), pa.binary()), (pa.large_string(), pa.large_binary())):
            lists.send_batch(TOPIC, [None if v is None else v.encode() for v in values], keys)
            arrays.send_batch(TOPIC, pa.array(values, kind), pa.chunked_array([pa.array(keys, ktype)]))
        got, expected = _batches(arrays, 3), _batches(lists, 3)
        assert {k: [b.records() for b in v] for k, v in got.items()} == {k: [b.records() for b in v] for k, v in expected.items()}
    finally:
        lists.close(0)
        arrays.close(0)


def test_a_failed_batch_fails_the_batch_future_and_every_record() -> None:
    p = _producer(MockTime(), 2, 1)
    seen: list[tuple[RecordMetadata | None, BaseException | None]] = []
    try:
        f = p.send_batch(TOPIC, [b"a", b"b", b"c"], [b"1", b"2", b"3"], on_delivery=lambda m, e: seen.append((m, e)))
        batches = _batches(p, 2)
        boom = RuntimeError("boom")
        for b in batches[0]:
            b.done(-1, -1, boom)
        for b in batches[1]:
            b.done(0, -1, None)
        assert f.exception(0) is boom
        md = f.metadata()
        outcomes = [md.exception(i) for i in range(3)]
        parts = [to_positive(murmur2(k)) % 2 for k in (b"1", b"2", b"3")]
        assert outcomes == [boom if part == 0 else None for part in parts]
        assert len(seen) == 3
    finally:
        p.close(0)


def test_misuse_raises_before_anything_is_appended() -> None:
    p = _producer(MockTime(), 1, 1, **{"max.request.size": 2000})
    try:
        with pytest.raises(IllegalArgumentError, match="2 keys for 3 values"):
            p.send_batch(TOPIC, [b"a", b"b", b"c"], [b"k", b"k"])
        with pytest.raises(IllegalArgumentError, match="Invalid timestamp"):
            p.send_batch(TOPIC, [b"a", b"b"], timestamps=[1, -5])
        with pytest.raises(RecordTooLargeError):
            p.send_batch(TOPIC, [b"a", b"b" * 5000])
        with pytest.raises(IllegalArgumentError, match="Invalid partition"):
            p.send_batch(TOPIC, [b"a"], partition=-1)
        with pytest.raises(TypeError, match="sequence or a pyarrow array"):
            p.send_batch(TOPIC, b"abc")
        assert p.accumulator.batches_for(TopicPartition(TOPIC, 0)) == []
    finally:
        p.close(0)
    with pytest.raises(ProducerClosedError):
        p.send_batch(TOPIC, [b"a"])


def test_values_through_the_configured_serializer() -> None:
    time = MockTime()
    one = _producer(time, 1, 1, **{"value.serializer": "str", "key.serializer": "str"})
    many = _producer(time, 1, 1, **{"value.serializer": "str", "key.serializer": "str"})
    try:
        for v in ("x", "yy", "zzz"):
            one.send(TOPIC, v, "k")
        many.send_batch(TOPIC, ["x", "yy", "zzz"], ("k", "k", "k"))
        assert [b.records() for b in _batches(many, 1)[0]] == [b.records() for b in _batches(one, 1)[0]]
    finally:
        one.close(0)
        many.close(0)


def test_a_split_batch_completes_the_batch_future_once_all_pieces_did() -> None:
    p = _producer(MockTime(), 1, 1)
    try:
        f = p.send_batch(TOPIC, [b"x" * 100] * 20, partition=0)
        [big] = p.accumulator.batches_for(TopicPartition(TOPIC, 0))
        p.accumulator.drain(p.metadata, [nodes(1)[0]], 10**6, 0)
        pieces = big.split_into(600, 0)
        assert len(pieces) > 1
        for piece in pieces[:-1]:
            piece.done(0, -1, None)
        assert not f.done()
        pieces[-1].done(100, -1, None)
        md = f.result(0)
        assert len(md) == 20 and md[19].offset == 100 + pieces[-1].record_count - 1
    finally:
        p.close(0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=30)), max_size=30), st.integers(1, 50))
def test_key_partitions_and_murmur2_match_the_reference(keys: list[bytes | None], parts: int) -> None:
    assert batch_append.key_partitions(keys, parts) == [-1 if k is None else to_positive(murmur2(k)) % parts for k in keys]
    kernel = _native.kernel
    if kernel is not None:
        for k in keys:
            if k is not None:
                assert kernel.murmur2(k) == murmur2(k)


def test_scan_records_reports_bad_items() -> None:
    assert batch_append.scan_records([b"ab", None], [b"c", b"defg"], None) == 4
    assert batch_append.scan_records(None, ["str"], None) == -1
    assert batch_append.scan_records(None, [b"a"], [True]) == -2
    assert batch_append.scan_records(None, [b"a"], [2**63]) == -2


def test_send_batch_future_type() -> None:
    p = _producer(MockTime(), 1, 1)
    try:
        assert isinstance(p.send_batch(TOPIC, [b"a"]), SendBatchFuture)
    finally:
        p.close(0)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2**41), _bytes, _bytes, st.sampled_from([(), [("h", b"v")], [("k", None)]])),
        min_size=5, max_size=40,
    ),
    st.sampled_from([150, 300, 1000, 5000]),
    st.booleans(),
)
def test_compiled_try_append_equals_the_reference(
    records: list[tuple[int, bytes | None, bytes | None, Any]], limit: int, with_callback: bool
) -> None:
    """``ProducerBatch.try_append`` (on the kernel when active) leaves the batch as ``try_append_reference``."""
    def cb(m: RecordMetadata | None, e: BaseException | None) -> None:
        return None

    callback = cb if with_callback else None
    tp = TopicPartition(TOPIC, 0)
    compiled, reference = ProducerBatch(tp, limit, 0), ProducerBatch(tp, limit, 0)
    for i, (ts, k, v, h) in enumerate(records):
        a = compiled.try_append(ts, k, v, h, callback, i)
        b = reference.try_append_reference(ts, k, v, h, callback, i)
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            assert a.batch_position()[1] == b.batch_position()[1]
    state = ("pending", "size_bytes", "base_timestamp", "max_timestamp", "max_record_size", "last_append_ms", "has_callbacks")
    assert [getattr(compiled, s) for s in state] == [getattr(reference, s) for s in state]
    assert compiled.records() == reference.records()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**41), _bytes, _bytes), max_size=30), st.booleans())
def test_pending_columns_equal_the_reference(records: list[tuple[int, bytes | None, bytes | None]], with_ts: bool) -> None:
    """The columns a completed batch keeps per record (timestamps, key and value sizes), kernel or reference."""
    pending: list[Any] = [(ts, k, v, (), None) for ts, k, v in records]
    kernel = _native.kernel
    got = kernel.pending_columns(pending, with_ts) if kernel is not None else None
    expected = pending_columns_reference(pending, with_ts)
    assert got is None if kernel is None else got == expected
    sizes = [-1 if k is None else len(k) for _, k, _ in records]
    assert [column_at(expected[1], i) for i in range(len(records))] == sizes
    # a column of one value is that int
    assert isinstance(expected[1], int) == (len(records) > 0 and len(set(sizes)) == 1)
    if with_ts:
        assert isinstance(expected[0], int) == (len(records) > 0 and len({ts for ts, _, _ in records}) == 1)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([None, b"", b"k", b"k" * 300]),
                       st.sampled_from([None, b"", b"v" * 100, b"v" * 257, bytearray(b"w" * 5)])), max_size=40),
    st.booleans(), st.integers(0, 40),
)
def test_pending_columns_of_repeated_sizes_and_a_late_bad_record_equal_the_reference(
    records: list[tuple[Any, Any]], with_ts: bool, bad_at: int
) -> None:
    """Runs of records with the same key or value size (the kernel shares one int per run, in and out of the
    small-int cache) and a record the kernel cannot take anywhere in the batch (then None, the reference's turn)."""
    pending: list[Any] = [(1_700_000_000_000 + i // 3, k, v, (), None) for i, (k, v) in enumerate(records)]
    kernel = _native.kernel
    if kernel is None:
        return
    assert kernel.pending_columns(pending, with_ts) == pending_columns_reference(pending, with_ts)
    pending.insert(min(bad_at, len(pending)), (5, "not bytes", b"v", (), None))
    assert kernel.pending_columns(pending, with_ts) is None


def test_a_partition_missing_from_the_metadata_fails_every_record_as_send_does() -> None:
    p = _producer(MockTime(auto_tick_ms=5), 1, 1, **{"max.block.ms": 20})
    seen: list[BaseException | None] = []
    try:
        single = p.send(TOPIC, b"a", partition=5)
        f = p.send_batch(TOPIC, [b"a", b"b"], partition=5, on_delivery=lambda m, e: seen.append(e))
        assert f.done() and single.done()
        assert type(f.exception(0)) is type(single.exception(0)) is KafkaTimeoutError
        assert [type(e) for e in seen] == [KafkaTimeoutError, KafkaTimeoutError]
        assert f.metadata().exception(1) is f.exception(0)
    finally:
        p.close(0)


def test_bytes_keys_with_serialized_values_make_the_batches_of_a_send_loop() -> None:
    # bytes keys (the default key serializer passes them through) beside values that need serializing: the keys
    # are scanned as they are, not compared with an empty value list
    time = MockTime()
    one = _producer(time, 1, 1, **{"value.serializer": "str"})
    many = _producer(time, 1, 1, **{"value.serializer": "str"})
    try:
        for k, v in ((b"k1", "a"), (bytearray(b"k2"), "bb")):
            one.send(TOPIC, v, k)
        many.send_batch(TOPIC, ["a", "bb"], [b"k1", bytearray(b"k2")])
        assert [b.records() for b in _batches(many, 1)[0]] == [b.records() for b in _batches(one, 1)[0]]
    finally:
        one.close(0)
        many.close(0)


@pytest.mark.parametrize("timestamps", [[-5, 7], [1, "x"], [1, 2**63]])
def test_timestamps_are_checked_when_values_are_serialized(timestamps: list[Any]) -> None:
    p = _producer(MockTime(), 1, 1, **{"value.serializer": "str"})
    try:
        with pytest.raises(IllegalArgumentError, match="Invalid timestamp"):
            p.send_batch(TOPIC, ["a", "b"], timestamps=timestamps)
        assert p.accumulator.batches_for(TopicPartition(TOPIC, 0)) == []  # nothing was appended
    finally:
        p.close(0)


class _Recording:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, Any, Any, Any]] = []

    def configure(self, configs: Any) -> None:
        return None

    def partition(self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any) -> int:
        self.calls.append((key, key_bytes, value, value_bytes))
        return 0

    def close(self) -> None:
        return None


def test_a_custom_partitioner_sees_the_objects_given_as_with_send() -> None:
    p = _producer(MockTime(), 1, 1, **{"value.serializer": "str", "key.serializer": "str"})
    recording = _Recording()
    p._partitioner = recording  # the test's partitioner, as partitioner.class would give
    try:
        p.send(TOPIC, "v", "k")
        p.send_batch(TOPIC, ["v"], ["k"])
        assert recording.calls == [("k", b"k", "v", b"v")] * 2
    finally:
        p.close(0)


def test_a_send_batch_future_cannot_be_cancelled() -> None:
    p = _producer(MockTime(), 1, 1)
    try:
        f = p.send_batch(TOPIC, [b"x"], partition=0)
        assert f.cancel() is False and not f.cancelled()
        _complete(_batches(p, 1))
        assert f.result(0)[0].offset >= 0
    finally:
        p.close(0)


def test_send_batch_makes_one_record_future_per_batch_not_per_record() -> None:
    """Nothing observes a record of send_batch on its own until asked: the producer keeps one future per batch
    (the first record's, for the batch's outcome), and a record's future or metadata is built when read."""
    import gc

    from pykafka_client.producer.future_record_metadata import FutureRecordMetadata

    def futures() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, FutureRecordMetadata))

    time = MockTime()
    p = _producer(time, 2, 1, **{"batch.size": 2000})
    try:
        before = futures()
        f = p.send_batch(TOPIC, [b"x" * 100] * 1000, [b"k%d" % (i % 7) for i in range(1000)])
        batches = _batches(p, 2)
        count = sum(len(bs) for bs in batches.values())
        assert 20 < count < 100
        assert futures() - before <= count
        _complete(batches)
        md = f.result(0)
        assert futures() - before <= count
        assert md[999].partition in (0, 1) and md[999].serialized_value_size == 100
        assert f.record_future(999).result(0) == md[999]
    finally:
        p.close(0)


def test_a_dropped_send_batch_future_is_freed_without_the_cyclic_collector() -> None:
    """Neither the outcome's watched futures nor the result (BatchMetadata) reference the SendBatchFuture back: once
    its batches completed, dropping it frees it (and the outcomes' per-record lists) at once."""
    import gc
    import weakref

    from pykafka_client.producer.producer_batch import ProducerBatch
    from pykafka_client.structs import TopicPartition

    batches = [ProducerBatch(TopicPartition("t", p), 16384, 0) for p in (0, 1)]
    for i, b in enumerate([batches[0]] * 3 + [batches[1]] * 2):
        b.try_append(i + 1, None, b"v", [], None, 0)
    future = SendBatchFuture(5, None)
    future.add_segment(0, 3, batches[0].outcome, 0)
    future.add_segment(3, 2, batches[1].outcome, 0)
    future.seal()
    batches[0].done(10, -1, None)
    batches[1].done(20, -1, None)
    metadata = future.result(0)
    assert [m.offset for m in metadata] == [10, 11, 12, 20, 21]
    ref = weakref.ref(future)
    gc.disable()
    try:
        del future
        assert ref() is None, "a SendBatchFuture is kept alive by a reference cycle"
        assert [m.timestamp for m in metadata] == [1, 2, 3, 4, 5]  # the result stays readable on its own
    finally:
        gc.enable()


def test_segments_added_to_a_finished_or_split_outcome_complete_as_a_done_callback_would() -> None:
    """A send_batch segment waits on its batch's outcome (its ``calls``), not through a watched future; one added
    after the batch completed counts as done at once, one added after a split waits for the pieces' records."""
    from concurrent.futures._base import FINISHED

    done_batch, split_batch = (ProducerBatch(TopicPartition(TOPIC, p), 16384, 0) for p in (0, 1))
    for b in (done_batch, split_batch):
        for i in range(4):
            b.try_append(i + 1, None, b"v" * 100, [], None, 0)
    done_batch.done(10, -1, None)
    pieces = split_batch.split_into(300, 0)
    assert len(pieces) == 2 and split_batch.outcome.moved_to is not None
    future = SendBatchFuture(8, None)
    future.add_segment(0, 4, done_batch.outcome, 0)
    future.add_segment(4, 4, split_batch.outcome, 0)
    future.seal()
    assert done_batch.outcome.state == FINISHED and done_batch.outcome.calls == () and split_batch.outcome.calls == ()
    pieces[0].done(50, -1, None)
    assert not future.done()
    pieces[1].done(60, -1, None)
    assert [m.offset for m in future.result(0)] == [10, 11, 12, 13, 50, 51, 60, 61]


def test_a_segment_waiting_when_its_batch_is_split_follows_the_pieces() -> None:
    big = ProducerBatch(TopicPartition(TOPIC, 0), 16384, 0)
    for i in range(4):
        big.try_append(i + 1, None, b"v" * 100, [], None, 0)
    future = SendBatchFuture(4, None)
    future.add_segment(0, 4, big.outcome, 0)
    future.seal()
    assert big.outcome.calls.__class__.__name__ == "CallSegment"  # the only segment: kept alone
    pieces = big.split_into(300, 0)
    assert big.outcome.calls == () and len(pieces) == 2
    pieces[1].done(60, -1, None)
    assert not future.done()
    pieces[0].done(50, -1, None)
    assert [m.offset for m in future.result(0)] == [50, 51, 60, 61]


def test_a_column_of_one_value_is_kept_as_that_int() -> None:
    """The usual send_batch batch (no keys, one value size, one millisecond) keeps three ints, not three lists of a
    record each; equal timestamps that are distinct int objects count as one value, a bool does not."""
    big = 2**40
    pending: list[Any] = [(big + int("0"), None, b"v" * 100, (), None) for _ in range(5)]
    assert pending[0][0] is not pending[1][0]
    expected = pending_columns_reference(pending, True)
    assert expected == (big, -1, 100)
    kernel = _native.kernel
    if kernel is not None:
        assert kernel.pending_columns(pending, True) == expected
        pending[2] = (True, None, b"v", (), None)
        assert kernel.pending_columns(pending, True) == pending_columns_reference(pending, True)
        assert kernel.pending_columns([], True) == ([], [], [])
        over = [(2**70, None, b"v", (), None)] * 2  # an int over 64 bits: kept as a list
        assert kernel.pending_columns(over, True) == pending_columns_reference(over, True) == ([2**70] * 2, -1, 1)
    b = ProducerBatch(TopicPartition(TOPIC, 0), 16384, 0)
    futures = [b.try_append(7, None, b"abc", [], None, 0) for _ in range(3)]
    b.done(5, -1, None)
    assert (b.outcome.timestamps, b.outcome.key_sizes, b.outcome.value_sizes) == (7, -1, 3)
    assert [tuple(f.result(0)) for f in futures if f is not None] == [(TOPIC, 0, o, 7, -1, 3) for o in (5, 6, 7)]


def test_send_batch_tries_each_batch_once_and_opens_the_next_without_trying_it_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Per batch of a send_batch call on one partition (sticky: its switches pick the same partition), one bulk round
    (``try_append_many``, which closes the batch at the record without room, as append would) and one new batch
    whose only try is its first record: the full batch is not tried again. With the kernel the new batch and its
    first record go through send()'s compiled call (``_send_record``), not ``append``."""
    time = MockTime()
    p = _producer(time, 1, 1, **{"batch.size": 1024})
    acc = p.accumulator
    rounds: list[int] = []
    tries: list[int] = []
    appends: list[int] = []
    real_many = acc.try_append_many
    real_try = ProducerBatch.try_append
    real_append = acc.append

    def counting_append(*args: Any) -> Any:
        appends.append(1)
        return real_append(*args)

    def counting_many(*args: Any) -> Any:
        rounds.append(args[4])
        return real_many(*args)

    def counting_try(self: ProducerBatch, *args: Any) -> Any:
        tries.append(self.record_count)
        return real_try(self, *args)

    monkeypatch.setattr(acc, "try_append_many", counting_many)
    monkeypatch.setattr(acc, "append", counting_append)
    monkeypatch.setattr(ProducerBatch, "try_append", counting_try)
    try:
        p.send(TOPIC, b"v" * 100)  # the partition's queue and first batch
        rounds.clear()
        tries.clear()
        appends.clear()
        p.send_batch(TOPIC, [b"v" * 100] * 200)
        batches = _batches(p, 1)[0]
        assert len(batches) > 20
        assert [b.closed for b in batches] == [True] * (len(batches) - 1) + [False]
        assert len(rounds) <= len(batches)  # one round per batch at most: none after a batch closed or at a switch
        if _native.kernel is not None:
            assert appends == tries == []  # the compiled new-batch call (its try of the closed batch: no append)
        else:
            assert tries == [0] * (len(batches) - 1)  # each new batch's first record, and nothing else
            assert len(appends) == len(batches) - 1
    finally:
        p.close(0)


def test_a_full_batch_is_closed_on_a_lower_bound_of_the_next_record_exactly_where_a_send_loop_closes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bulk round closes a batch at its first record without room, told by a lower bound of that record's size
    (its varints over 63 counted) before the exact ``has_room_for``: the same batches and closes as a send loop for
    values around the bound's edges, and no exact check at all for 100-byte values in 16 KiB batches."""
    time = MockTime()
    for size in [*range(54, 72), 100, 126, 127, 128]:
        for batch_size in (1024, 1500, 16384):
            one = _producer(time, 1, 1, **{"batch.size": batch_size})
            many = _producer(time, 1, 1, **{"batch.size": batch_size})
            try:
                for _ in range(300):
                    one.send(TOPIC, b"v" * size, None, 0)
                many.send_batch(TOPIC, [b"v" * size] * 300, partition=0)
                expected, got = _batches(one, 1)[0], _batches(many, 1)[0]
                assert [b.records() for b in got] == [b.records() for b in expected]
                assert [b.closed for b in got] == [b.closed for b in expected]
            finally:
                one.close(0)
                many.close(0)
    exact: list[int] = []
    real = ProducerBatch.has_room_for

    def counting(self: ProducerBatch, *args: Any) -> bool:
        exact.append(self.record_count)
        return real(self, *args)

    monkeypatch.setattr(ProducerBatch, "has_room_for", counting)
    p = _producer(time, 1, 1)
    try:
        p.send_batch(TOPIC, [b"v" * 100] * 2000)
        assert len(_batches(p, 1)[0]) > 10 and exact == []
    finally:
        p.close(0)
