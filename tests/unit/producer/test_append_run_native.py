"""send_batch's run of records compiled (``kernel/producer_append_run.c.h``) == its Python reference.

- ``ManyAppender`` (``RecordAccumulator.try_append_many`` compiled, ``producer.many_appender``): two producers get the
  same random sequences of ``send`` and ``send_batch`` calls at the same MockTime with the same seeded partitioner, one
  with the compiled appender, one with it removed (``del accumulator.try_append_many``: the reference method) and its
  calls' segments the reference ``CallSegments``. Both must make byte-identical batches with the same state in every
  slot, choose the same partitions, give the same futures' results and errors and leave the buffer pool with the same
  free memory, across batch.size, keys, nulls, timestamps, callbacks, headers, partitions (explicit, keyed, sticky,
  unavailable ones, adaptive load stats), ``partitioner.ignore.keys`` and buffer.memory running out.
- ``CallSegments`` (``producer.call_segments``): the kernel's and the reference driven by the same random ``add`` and
  ``flush`` sequences over outcomes that are pending, complete or split: the same segment lists, waiting counts,
  segments registered in each outcome's ``calls`` and segments released.
- The sticky partitioner's switch on the only available partition (its produced bytes start over in place): the same
  partitions, counts and random draws as a switch that always makes a new StickyInfo (the rule before).
"""

from __future__ import annotations

import gc
import random
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client import KafkaProducer
from pykafka_client.producer import future_record_metadata
from pykafka_client.producer.call_segments import CallSegments
from pykafka_client.producer.future_record_metadata import (
    BatchOutcome,
    CallSegment,
    SendBatchFuture,
    WaitingSegments,
    segments_of,
)
from pykafka_client.producer.partitioner import BuiltInPartitioner, StaticClusterView, StickyInfo
from pykafka_client.producer.record_accumulator import RecordAccumulator
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.responses import metadata_response, nodes
from tests.unit.producer.test_batch_opener_native import _state
from tests.unit.producer.test_send_batch import _batches, _complete, _idle_runner

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

TOPIC = "t"


@contextmanager
def _reference_segments() -> Iterator[None]:
    """SendBatchFuture's segments the reference CallSegments while active."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(future_record_metadata, "new_call_segments", CallSegments)
        yield


def _producer(time: MockTime, partitions: int, down: set[int], seed: int, compiled: bool, **config: Any) -> KafkaProducer:
    previous = _native.use_native(True)
    try:
        p = KafkaProducer(
            {"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": False, "linger.ms": 5, **config},
            time=time, io_runner=_idle_runner,
        )
    finally:
        _native.use_native(previous)
    p.accumulator._rng = random.Random(seed)
    assert type(p.accumulator.try_append_many).__name__ == "ManyAppender"
    if not compiled:
        del p.accumulator.try_append_many  # the reference method again
        assert type(p.accumulator.try_append_many).__name__ != "ManyAppender"
    now = time.hi_res_clock_ms()
    p.metadata.add(TOPIC, now)
    leaders = {(TOPIC, i): (-1 if i in down else 0) for i in range(partitions)}
    p.metadata.update(0, metadata_response(nodes(1), {TOPIC: partitions}, leaders=leaders), False, now)
    return p


_bytes = st.one_of(st.none(), st.integers(0, 40).map(lambda n: b"v" * n), st.integers(100, 400).map(lambda n: b"w" * n))

_op = st.tuples(
    st.sampled_from(["send", "send_batch", "send_batch", "send_batch", "load"]),
    st.integers(1, 60),  # records (send: repeats)
    st.one_of(st.none(), st.none(), st.integers(0, 3)),  # partition (mod the partition count)
    st.sampled_from([None, None, None, None, [("h", b"v")]]),  # headers
    st.integers(0, 3),  # ms the clock advances first
    st.booleans(),  # keys
    st.booleans(),  # timestamps
    st.booleans(),  # a callback
)


@settings(max_examples=80, deadline=None)
@given(
    ops=st.lists(_op, min_size=1, max_size=10),
    partitions=st.integers(1, 3),
    down=st.sampled_from([set(), set(), {1}, {0, 2}]),
    batch_size=st.sampled_from([100, 300, 1024, 16384]),
    memory_batches=st.sampled_from([3, 6, 1000]),
    ignore_keys=st.booleans(),
    seed=st.integers(0, 1000),
    data=st.data(),
)
def test_the_compiled_run_equals_the_reference(
    ops: list[tuple[str, int, int | None, list[tuple[str, bytes]] | None, int, bool, bool, bool]],
    partitions: int,
    down: set[int],
    batch_size: int,
    memory_batches: int,
    ignore_keys: bool,
    seed: int,
    data: st.DataObject,
) -> None:
    config = {
        "batch.size": batch_size, "buffer.memory": memory_batches * batch_size + batch_size // 2, "max.block.ms": 0,
        "partitioner.ignore.keys": ignore_keys,
    }
    down = {d for d in down if d < partitions}
    time = MockTime()
    producers = {
        "k": _producer(time, partitions, down, seed, True, **config),
        "r": _producer(time, partitions, down, seed, False, **config),
    }
    delivered: dict[str, list[Any]] = {name: [] for name in producers}
    try:
        futures: dict[str, list[Any]] = {name: [] for name in producers}
        sticky: dict[str, list[Any]] = {name: [] for name in producers}
        for op, count, partition, headers, sleep_ms, with_keys, with_ts, with_cb in ops:
            part = None if partition is None else partition % partitions
            values = data.draw(st.lists(_bytes, min_size=count, max_size=count))
            keys = data.draw(st.lists(st.one_of(st.none(), st.binary(max_size=3)), min_size=count, max_size=count))
            stamps = data.draw(st.lists(st.one_of(st.none(), st.integers(0, 2**41)), min_size=count, max_size=count))
            sizes = data.draw(st.lists(st.integers(0, 5), min_size=partitions, max_size=partitions))
            time.sleep(sleep_ms / 1000)
            for name, p in producers.items():
                sink = delivered[name]
                cb = (lambda m, e, sink=sink: sink.append((m, repr(e)))) if with_cb else None
                ctx = _reference_segments() if name == "r" else _no_context()
                with ctx:
                    if op == "load":
                        partitioner = p.accumulator._topic_info(TOPIC).partitioner
                        partitioner.update_partition_load_stats(sizes, list(range(partitions)), 5)
                    elif op == "send":
                        for i in range(count):
                            try:
                                futures[name].append(p.send(
                                    TOPIC, values[i], keys[i] if with_keys else None, part,
                                    stamps[i] if with_ts else None, headers, on_delivery=cb,
                                ))
                            except Exception as e:  # the same error on both paths
                                futures[name].append(repr(e))
                    else:
                        try:
                            futures[name].append(p.send_batch(
                                TOPIC, values, keys if with_keys else None, partition=part, headers=headers,
                                timestamps=stamps if with_ts else None, on_delivery=cb,
                            ))
                        except Exception as e:  # the same error on both paths
                            futures[name].append(repr(e))
                info = p.accumulator._topic_info(TOPIC).partitioner.sticky
                sticky[name].append(None if info is None else (info.partition, info.produced_bytes))
        assert sticky["k"] == sticky["r"]
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
                assert f.done()
                meta = f.metadata()
                return [(repr(meta.exception(i)), None if meta.exception(i) else meta[i]) for i in range(len(meta))]
            e = f.exception(0)
            return repr(e) if e is not None else f.result(0)

        results = {name: [outcome(f) for f in fs] for name, fs in futures.items()}
        assert results["k"] == results["r"]
        assert delivered["k"] == delivered["r"]
    finally:
        for p in producers.values():
            p.close(0)


@contextmanager
def _no_context() -> Iterator[None]:
    yield


def test_the_appender_holds_the_accumulator_weakly() -> None:
    p = _producer(MockTime(), 1, set(), 0, True, **{"batch.size": 300})
    acc = weakref.ref(p.accumulator)
    p.send_batch(TOPIC, [b"v"] * 10)
    p.close(0)
    del p
    gc.collect()
    assert acc() is None


def test_the_appender_declines_other_input_to_the_reference() -> None:
    """A list subclass of values is not what the compiled appender takes: its reference appends them (same result)."""
    calls: list[int] = []
    reference = RecordAccumulator.try_append_many

    def counting(self: RecordAccumulator, *args: Any) -> Any:
        calls.append(len(args))
        return reference(self, *args)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(RecordAccumulator, "try_append_many", counting)
        p = _producer(MockTime(), 1, set(), 0, True, **{"batch.size": 300})  # its appender's reference: counting
    try:
        p.send(TOPIC, b"v", partition=0)
        got = p.accumulator.try_append_many(TOPIC, 0, None, _Values([b"a", b"b"]), 0, 2, None, 5, (), None, p.metadata)
        assert calls == [11]
        assert got is not None and got[0] == 2 and got[2] == 1
        assert p.accumulator.batches_for(TopicPartition(TOPIC, 0))[0].record_count == 3
        got = p.accumulator.try_append_many(TOPIC, 0, None, [b"c"], 0, 1, None, 5, (), None, p.metadata)
        assert calls == [11] and got is not None and got[2] == 3
    finally:
        p.close(0)


class _Values(list[Any]):
    """A list subclass: not a plain list of records."""


# --- CallSegments ------------------------------------------------------------------------------------------------


class _Call:
    """A send_batch future as the segments see it: what a released segment reports."""

    def __init__(self, released: list[tuple[int, int, int]], outcomes: list[BatchOutcome]) -> None:
        self.released = released
        self.outcomes = outcomes

    def _segment_done(self, outcome: BatchOutcome, index: int, count: int) -> None:
        self.released.append((self.outcomes.index(outcome), index, count))


def _calls(outcome: BatchOutcome) -> Any:
    calls = outcome.calls
    if isinstance(calls, tuple):
        return ("none", len(calls))
    kind = "list" if isinstance(calls, list) else "one"
    return (kind, [(s.index, s.count, s.waiting.count) for s in segments_of(calls)])


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.integers(0, 3), st.integers(0, 3), st.integers(1, 4), st.booleans()),
            st.tuples(st.just("flush"), st.just(0), st.just(0), st.just(0), st.just(False)),
            st.tuples(st.just("finish"), st.integers(0, 3), st.just(0), st.just(0), st.just(False)),
            st.tuples(st.just("split"), st.integers(0, 3), st.just(0), st.just(0), st.just(False)),
        ),
        max_size=25,
    ),
)
def test_the_compiled_segments_equal_the_reference(ops: list[tuple[str, int, int, int, bool]]) -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    sides: dict[str, Any] = {}
    for name in ("k", "r"):
        cond = threading.Condition()
        outcomes = [BatchOutcome(cond, TOPIC, i) for i in range(4)]
        starts: list[int] = []
        outs: list[BatchOutcome] = []
        indexes: list[int] = []
        waiting = WaitingSegments()
        made = (kernel.CallSegments(starts, outs, indexes, waiting, CallSegment, CallSegment, "FINISHED") if name == "k"
                else CallSegments(starts, outs, indexes, waiting, CallSegment, CallSegment))
        released: list[tuple[int, int, int]] = []
        sides[name] = (made, _Call(released, outcomes), outcomes, starts, outs, indexes, waiting, released)
    position = {"k": 0, "r": 0}
    nxt_index = {"k": [0] * 4, "r": [0] * 4}
    for op, which, gap, count, same in ops:
        for name, (made, call, outcomes, *_rest) in sides.items():
            if op == "add":
                outcome = outcomes[which]
                index = nxt_index[name][which] + (0 if same else gap)
                pos = position[name] + (0 if same or gap else 1)
                made.add(call, pos, count, outcome, index)
                nxt_index[name][which] = index + count
                position[name] = pos + count
            elif op == "flush":
                made.flush(call)
            elif op == "finish":
                outcomes[which].state = "FINISHED"
            else:
                outcomes[which].moved_to = []
    views = {}
    for name, (made, _call, outcomes, starts, outs, indexes, waiting, released) in sides.items():
        views[name] = (
            made.open_segment if made.open_segment is None else (*made.open_segment[:2], outcomes.index(made.open_segment[2]),
                                                                  made.open_segment[3]),
            starts, [outcomes.index(o) for o in outs], indexes, waiting.count, released, [_calls(o) for o in outcomes],
        )
    assert views["k"] == views["r"]


def test_the_compiled_segments_hold_no_future() -> None:
    """A call's future holds its segments, never the other way round: a dropped future is freed by its count."""
    gc.collect()
    gc.disable()
    try:
        f = SendBatchFuture(3, None)
        assert type(f.segments).__name__ == "CallSegments"
        outcome = BatchOutcome(threading.Condition(), TOPIC, 0)
        f.add_segment(0, 3, outcome, 0)
        ref = weakref.ref(f)
        del f
        assert ref() is None
    finally:
        gc.enable()


# --- the sticky switch on one partition ----------------------------------------------------------------------------


class _NewInfoEachSwitch(BuiltInPartitioner):
    """The switch before: a new StickyInfo from the uniform or weighted choice at every switch."""

    __slots__ = ()

    def update_partition_info(self, partition: int, appended_bytes: int, cluster: Any, enable_switch: bool) -> None:
        info = self.sticky
        if info is None or info.partition != partition:
            return
        info.produced_bytes += appended_bytes
        if info.produced_bytes >= self.sticky_batch_size * 2 or (enable_switch and info.produced_bytes >= self.sticky_batch_size):
            self.sticky = StickyInfo(self.next_partition(cluster, partition))


@settings(max_examples=200, deadline=None)
@given(
    partitions=st.integers(1, 4),
    down=st.sets(st.integers(0, 3), max_size=3),
    steps=st.lists(st.tuples(st.integers(0, 150), st.booleans(), st.integers(0, 12)), max_size=40),
    seed=st.integers(0, 100),
)
def test_the_switch_on_the_only_partition_equals_a_new_choice(
    partitions: int, down: set[int], steps: list[tuple[int, bool, int]], seed: int
) -> None:
    cluster = StaticClusterView({TOPIC: partitions}, {TOPIC: down})
    new = BuiltInPartitioner(TOPIC, 100, random.Random(seed))
    old = _NewInfoEachSwitch(TOPIC, 100, random.Random(seed))
    seen: dict[str, list[Any]] = {"new": [], "old": []}
    for name, p in (("new", new), ("old", old)):
        for appended, full, load in steps:
            current = p.peek_partition(cluster)
            if load == 12:
                p.update_partition_load_stats([1, 2][: min(partitions, 2)], list(range(min(partitions, 2))), 3)
            elif load == 11:
                p.update_partition_load_stats([], [], 3)
            p.update_partition_info(current, appended, cluster, full)
            assert p.sticky is not None
            seen[name].append((p.sticky.partition, p.sticky.produced_bytes, p._rng.random()))
    assert seen["new"] == seen["old"]
