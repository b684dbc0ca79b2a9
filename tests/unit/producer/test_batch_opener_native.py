"""The kernel's ``BatchOpener`` (``RecordAccumulator.open_batch`` compiled, ``producer.batch_opener``) == its reference.

Two producers get the same random sequences of ``send`` and ``send_batch`` calls at the same MockTime with the same
seeded partitioner: one whose accumulator opens its new batches with the compiled BatchOpener, one with it removed
(``del accumulator.open_batch``: the reference method, on the same compiled send path). Both must make byte-identical
batches with the same state in every slot, the same futures' results and errors, and leave the buffer pool with the
same free memory, across record sizes around the one that still fits a batch of batch.size, nulls, headers, explicit
and sticky partitions, and buffer.memory running out.
"""

from __future__ import annotations

import gc
import random
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client import KafkaProducer
from pykafka_client.producer.future_record_metadata import BatchOutcome, FutureRecordMetadata, SendBatchFuture
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.producer.record_accumulator import RecordAccumulator
from pykafka_client.producer.record_size import estimate_size_upper_bound
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.responses import metadata_response, nodes
from tests.unit.producer.test_send_batch import _batches, _complete, _idle_runner

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

TOPIC = "t"

#: the fields ProducerBatch.__init__ derives from its partition and creation time, which the opener sets on its copy
#: of the prototype (kernel/producer_batch_open.c.h's bo_attr_names), and the two mutable objects it makes anew
_PER_BATCH = {"topic_partition", "created_ms", "last_attempt_ms", "drained_ms", "last_append_ms", "pending", "outcome"}


def _producer(time: MockTime, partitions: int, seed: int, compiled: bool, **config: Any) -> KafkaProducer:
    previous = _native.use_native(True)
    try:
        p = KafkaProducer(
            {"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": False, "linger.ms": 5, **config},
            time=time, io_runner=_idle_runner,
        )
    finally:
        _native.use_native(previous)
    p.accumulator._rng = random.Random(seed)
    if config.get("compression.type", "none") == "none":
        assert type(p.accumulator.open_batch).__name__ == "BatchOpener"
        if not compiled:
            del p.accumulator.open_batch  # the reference method again
            assert not type(p.accumulator.open_batch).__name__ == "BatchOpener"
    now = time.hi_res_clock_ms()
    p.metadata.add(TOPIC, now)
    p.metadata.update(
        0, metadata_response(nodes(1), {TOPIC: partitions}, leaders={(TOPIC, i): 0 for i in range(partitions)}), False, now
    )
    return p


def _slots(obj: object) -> dict[str, Any]:
    names: tuple[str, ...] = vars(type(obj))["__slots__"]
    return {name: getattr(obj, name, "<unset>") for name in names}


def _state(batch: ProducerBatch) -> dict[str, Any]:
    """Every slot of a batch and of its outcome, the records as their bytes."""
    state = _slots(batch)
    state["pending"] = batch.records()
    state["outcome"] = _slots(batch.outcome)
    state["outcome"].pop("condition")
    calls = batch.outcome.calls  # send_batch's segments: each of its own call's future
    state["outcome"]["calls"] = [(c.index, c.count) for c in (calls if isinstance(calls, list) else [calls] if calls else [])]
    state["outcome"]["watched"] = len(batch.outcome.watched)
    state.pop("_condition")
    state.pop("encoded")  # records()' cache
    return state


def _small(batch_size: int) -> int:
    """The largest key plus value a record of batch.size's batch takes (the opener's boundary)."""
    return batch_size - estimate_size_upper_bound(None, None, ())


def test_an_opened_batch_has_every_slot_of_one_made_by_init() -> None:
    time = MockTime()
    p = _producer(time, 1, 0, True, **{"batch.size": 300})
    try:
        time.sleep(0.007)
        f = p.send(TOPIC, b"v" * 100, partition=0)
        batch = p.accumulator.batches_for(TopicPartition(TOPIC, 0))[0]
        made = ProducerBatch(
            TopicPartition(TOPIC, 0), 300, time.hi_res_clock_ms(), p.accumulator.compression_type,
            p.accumulator.compression_level, False, 1.0, batch._condition,
        )
        made.allocated_bytes = 300
        assert made.try_append(batch.base_timestamp, None, b"v" * 100, (), None, made.created_ms) is not None
        assert _state(batch) == _state(made)
        assert batch.outcome is not made.outcome and batch.pending is not made.pending
        assert isinstance(f, FutureRecordMetadata) and f.outcome is batch.outcome and not f.done()
    finally:
        p.close(0)


def test_the_opener_sets_every_field_that_differs_between_two_batches_made_by_init() -> None:
    """What ProducerBatch.__init__ derives from the partition and the creation time is what the opener sets: a new
    per-batch field in __init__ fails this until the opener sets it too."""
    cond: Any = object()
    a = ProducerBatch(TopicPartition("a", 0), 300, 5, None, None, False, 1.0, cond)
    b = ProducerBatch(TopicPartition("b", 1), 300, 6, None, None, False, 1.0, cond)
    immutable = (int, float, str, bytes, tuple, type(None))
    other = _slots(b)
    differ = {
        name for name, value in _slots(a).items()
        if value is not other[name] and (value != other[name] or not isinstance(value, immutable))
    }
    assert differ == _PER_BATCH
    outcome_differ = {name for name, value in _slots(a.outcome).items() if value != _slots(b.outcome)[name]}
    assert outcome_differ == {"topic", "partition"}
    assert isinstance(a.outcome, BatchOutcome)


def test_the_opener_holds_the_accumulator_weakly() -> None:
    p = _producer(MockTime(), 1, 0, True)
    acc = weakref.ref(p.accumulator)
    p.send(TOPIC, b"v")
    p.close(0)
    del p
    gc.collect()
    assert acc() is None


def test_a_record_over_the_boundary_or_with_headers_goes_to_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    reference = RecordAccumulator.open_batch

    def counting(self: RecordAccumulator, *args: Any) -> Any:
        calls.append(len(args))
        return reference(self, *args)

    time = MockTime()
    monkeypatch.setattr(RecordAccumulator, "open_batch", counting)
    p = _producer(time, 1, 0, True, **{"batch.size": 300})
    try:
        small = _small(300)
        p.send(TOPIC, b"v" * small, partition=0)  # the first batch: append(), not open_batch
        p.send(TOPIC, b"v" * small, partition=0)  # fits the opener
        assert calls == []
        p.send(TOPIC, b"v" * (small + 1), partition=0)  # a batch larger than batch.size: the reference
        assert calls == [6]
        p.send(TOPIC, b"v" * 10, partition=0, headers=[("h", b"v")] * 2)  # headers: append() opens it, no opener
        assert calls == [6]
        batches = p.accumulator.batches_for(TopicPartition(TOPIC, 0))
        assert [b.write_limit for b in batches] == [300, 300, 301, 300]
    finally:
        p.close(0)


def _record(batch_size: int) -> st.SearchStrategy[tuple[bytes | None, bytes | None]]:
    small = _small(batch_size)
    sizes = st.one_of(st.integers(0, 40), st.sampled_from([small - 1, small, small + 1, small + 2, batch_size + 10]))
    value = st.one_of(st.none(), sizes.map(lambda n: b"v" * max(n, 0)))
    key = st.one_of(st.none(), st.none(), st.integers(0, 3).map(lambda n: b"k" * n))
    return st.tuples(key, value)


_op = st.tuples(
    st.sampled_from(["send", "send", "send_batch"]),
    st.integers(1, 30),  # records (send: repeats)
    st.one_of(st.none(), st.none(), st.integers(0, 3)),  # partition (mod the partition count)
    st.sampled_from([None, None, None, None, [("h", b"v")]]),  # headers
    st.integers(0, 3),  # ms the clock advances first
    st.integers(0, 2**32),  # a seed for the records
)


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(_op, min_size=1, max_size=12),
    partitions=st.integers(1, 3),
    batch_size=st.sampled_from([150, 300, 1024]),
    memory_batches=st.sampled_from([3, 6, 1000]),
    codec=st.sampled_from(["none", "none", "none", "gzip"]),
    seed=st.integers(0, 1000),
    data=st.data(),
)
def test_the_compiled_opener_equals_the_reference(
    ops: list[tuple[str, int, int | None, list[tuple[str, bytes]] | None, int, int]],
    partitions: int,
    batch_size: int,
    memory_batches: int,
    codec: str,
    seed: int,
    data: st.DataObject,
) -> None:
    config = {
        "batch.size": batch_size, "buffer.memory": memory_batches * batch_size + batch_size // 2, "max.block.ms": 0,
        "compression.type": codec,
    }
    time = MockTime()
    producers = {"k": _producer(time, partitions, seed, True, **config), "r": _producer(time, partitions, seed, False, **config)}
    record = _record(batch_size)
    try:
        futures: dict[str, list[Any]] = {name: [] for name in producers}
        for op, count, partition, headers, sleep_ms, _ in ops:
            part = None if partition is None else partition % partitions
            records = data.draw(st.lists(record, min_size=count, max_size=count))
            time.sleep(sleep_ms / 1000)
            for name, p in producers.items():
                if op == "send":
                    for key, value in records:
                        try:
                            futures[name].append(p.send(TOPIC, value, key, part, None, headers))
                        except Exception as e:  # the same error on both paths
                            futures[name].append(repr(e))
                else:
                    try:
                        futures[name].append(p.send_batch(
                            TOPIC, [v for _, v in records], [k for k, _ in records], partition=part, headers=headers,
                        ))
                    except Exception as e:  # the same error on both paths
                        futures[name].append(repr(e))
        batches = {name: _batches(p, partitions) for name, p in producers.items()}
        states = {name: {i: [_state(b) for b in bs] for i, bs in got.items()} for name, got in batches.items()}
        assert states["k"] == states["r"]
        free = {name: p.accumulator.free.available_memory() for name, p in producers.items()}
        assert free["k"] == free["r"]
        for got in batches.values():
            _complete(got)

        def outcome(f: Any) -> Any:
            if isinstance(f, str):
                return f
            if isinstance(f, SendBatchFuture):
                meta = f.metadata()
                return [(repr(meta.exception(i)), None if meta.exception(i) else meta[i]) for i in range(len(meta))]
            e = f.exception(0)
            return repr(e) if e is not None else f.result(0)

        results = {name: [outcome(f) for f in fs] for name, fs in futures.items()}
        assert results["k"] == results["r"]
    finally:
        for p in producers.values():
            p.close(0)


@settings(max_examples=80, deadline=None)
@given(
    calls=st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(0, 400).map(lambda n: b"k" * n)),  # key
            st.one_of(st.none(), st.integers(0, 400).map(lambda n: b"v" * n)),  # value
            st.sampled_from([(), [], [("h", b"v")], [("h", None)] * 30]),  # headers
            st.integers(0, 12),  # 0: the accumulator closes first, 1: its closed flag alone
        ),
        min_size=1, max_size=12,
    ),
    memory_batches=st.sampled_from([2, 5, 1000]),
)
def test_open_batch_called_directly_equals_the_reference(
    calls: list[tuple[bytes | None, bytes | None, Any, int]], memory_batches: int
) -> None:
    """The opener as the kernel's send path calls it (under the deque lock), and for what that path never passes it
    (headers, a closed accumulator): the same batches, results and free memory as the reference."""
    time = MockTime()
    config = {"batch.size": 300, "buffer.memory": memory_batches * 300}
    producers = {"k": _producer(time, 1, 0, True, **config), "r": _producer(time, 1, 0, False, **config)}
    try:
        for p in producers.values():
            p.send(TOPIC, b"first", partition=0)  # the partition's queue
        got: dict[str, list[Any]] = {name: [] for name in producers}
        for key, value, headers, close in calls:
            time.sleep(0.001)
            for name, p in producers.items():
                acc = p.accumulator
                if close == 0:
                    acc.close()
                elif close == 1:
                    acc.closed = True  # the accumulator alone (close() sets it before it closes the pool)
                q = acc._topics[TOPIC].queues[0]
                with q.lock:
                    batch = acc.open_batch(q.batches, TOPIC, 0, key, value, headers)
                got[name].append(None if batch is None else _state(batch))
                got[name].append((acc.free.available_memory(), len(q.batches), len(acc.incomplete_batches())))
        assert got["k"] == got["r"]
    finally:
        for p in producers.values():
            p.close(0)


def test_after_a_class_change_the_opener_goes_to_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """A patched ProducerBatch.__init__ runs for every new batch: the opener copies its prototype only while the
    class is the one that made it."""
    p = _producer(MockTime(), 1, 0, True, **{"batch.size": 300})
    try:
        p.send(TOPIC, b"v" * 200, partition=0)
        made: list[int] = []
        init = ProducerBatch.__init__

        def counting(self: ProducerBatch, *args: Any) -> None:
            made.append(len(args))
            init(self, *args)

        p.send(TOPIC, b"v" * 200, partition=0)  # the opener's batch
        assert made == []
        monkeypatch.setattr(ProducerBatch, "__init__", counting)
        p.send(TOPIC, b"v" * 200, partition=0)
        assert made == [8]
        assert [b.record_count for b in p.accumulator.batches_for(TopicPartition(TOPIC, 0))] == [1, 1, 1]
    finally:
        p.close(0)
