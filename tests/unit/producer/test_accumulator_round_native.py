"""The Sender's round over the accumulator compiled (the kernel's ``accumulator_ready``, ``accumulator_drain`` and
``accumulator_expired``, taken by ``RecordAccumulator.ready``/``drain``/``expired_batches`` with a
MetadataSnapshot) == the Python reference (``ready_reference``, ``drain_reference``, ``expired_batches_reference``,
what ``PYKAFKA_NO_NATIVE=1`` runs): two accumulators given the same random appends, time steps, readies, drains,
mutes, retries (re-enqueued batches backing off, with the same jittered backoff), leader moves and epoch bumps,
flushes and expiries answer the same and leave the same queues, batch state and partitioner load statistics."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykafka_client.network.cluster import Cluster, PartitionInfo
from pykafka_client.producer.buffer_pool import BufferPool
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.producer.producer_metadata import MetadataSnapshot
from pykafka_client.producer.record_accumulator import RecordAccumulator
from pykafka_client.protocol.records import _native
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import MockTime
from tests.unit.producer.helpers import native_switched

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

NODES = (Node(1, "h1", 9091), Node(2, "h2", 9092))
TOPICS = ("a", "b")
PARTITIONS = 3


def _accumulator(time: MockTime, linger_ms: int, adaptive: bool) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=1024, linger_ms=linger_ms, retry_backoff_ms=40, retry_backoff_max_ms=400, delivery_timeout_ms=900,
        buffer_pool=BufferPool(1 << 20, time), time=time, adaptive_partitioning=adaptive, rng=random.Random(7),
    )


class _Side:
    """One accumulator with its clock, its in-flight batches and whether its round runs compiled."""

    def __init__(self, native: bool, linger_ms: int, adaptive: bool) -> None:
        self.native = native
        self.time = MockTime()
        self.acc = _accumulator(self.time, linger_ms, adaptive)
        self.in_flight: list[ProducerBatch] = []

    def round(self, fn: Any, *args: Any) -> Any:
        with native_switched(self.native):
            return fn(*args)


def _snapshot(leaders: dict[tuple[str, int], int | None], epochs: dict[tuple[str, int], int],
              seen: dict[tuple[str, int], int]) -> MetadataSnapshot:
    partitions = {
        tp: PartitionInfo(tp[0], tp[1], None if n is None else NODES[n], epochs.get(tp)) for tp, n in leaders.items()
    }
    return MetadataSnapshot(Cluster(NODES, partitions), dict(seen))


def _batch_state(b: ProducerBatch) -> tuple[Any, ...]:
    return (tuple(b.topic_partition), b.record_count, b.size_bytes, b.created_ms, b.closed, b.attempts,
            b.current_leader_epoch, b.attempts_when_leader_last_changed, b.drained_ms, b.last_attempt_ms)


def _state(side: _Side) -> tuple[Any, ...]:
    acc = side.acc
    queues = {tp: [_batch_state(b) for b in acc.batches_for(tp)] for tp in acc.queue_sizes()}
    stats = {}
    for topic in TOPICS:
        info = acc._topics.get(topic)
        load = None if info is None else info.partitioner.load_stats
        stats[topic] = None if load is None else (list(load.cumulative), list(load.partitions))
    return queues, stats, acc.next_expiry_time_ms(), [_batch_state(b) for b in side.in_flight]


_tp = st.tuples(st.sampled_from(TOPICS), st.integers(0, PARTITIONS - 1))
_append = st.tuples(st.just("append"), _tp, st.integers(1, 700))
_tick = st.tuples(st.just("tick"), st.integers(0, 120))
#: a drain of the ready nodes (as the Sender's), or of every node (drain's rules hold for any node asked)
_drain = st.tuples(st.just("drain"), st.sampled_from([300, 1500, 1 << 20]), st.booleans())
_ops = {
    "append": _append,
    "tick": _tick,
    "drain": _drain,
    "ready": st.tuples(st.just("ready"), st.just(0)),
    "mute": st.tuples(st.just("mute"), _tp),
    "unmute": st.tuples(st.just("unmute"), _tp),
    "retry": st.tuples(st.just("retry"), st.integers(0, 5)),
    "complete": st.tuples(st.just("complete"), st.integers(0, 5)),
    "leader": st.tuples(st.just("leader"), _tp, st.sampled_from([None, 0, 1])),
    "epoch": st.tuples(st.just("epoch"), _tp, st.integers(0, 3)),
    "seen": st.tuples(st.just("seen"), _tp, st.integers(0, 6)),
    "flush": st.tuples(st.just("flush"), st.booleans()),
    "expire": st.tuples(st.just("expire"), st.sampled_from([None, 500, 2**63 - 1])),
}
#: the kinds of operation, appends, time steps and drains the more often
_op = st.sampled_from(["append"] * 6 + ["tick"] * 3 + ["drain"] * 3 + list(_ops)).flatmap(_ops.__getitem__)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_op, min_size=20, max_size=80), linger_ms=st.sampled_from([0, 30, 10_000]), adaptive=st.booleans())
def test_the_compiled_round_equals_the_reference(ops: list[tuple[Any, ...]], linger_ms: int, adaptive: bool) -> None:
    sides = [_Side(True, linger_ms, adaptive), _Side(False, linger_ms, adaptive)]
    leaders: dict[tuple[str, int], int | None] = {(t, p): p % 2 for t in TOPICS for p in range(PARTITIONS)}
    epochs: dict[tuple[str, int], int] = {(t, p): 1 for t in TOPICS for p in range(PARTITIONS)}
    seen: dict[tuple[str, int], int] = {}
    flushing = False
    for op in ops:
        kind = op[0]
        snapshot = _snapshot(leaders, epochs, seen)
        answers: list[object] = []
        for side in sides:
            acc, now = side.acc, side.time.hi_res_clock_ms()
            if kind == "append":
                (topic, partition), size = op[1], op[2]
                acc.append(topic, partition, 0, None, b"v" * size, [], None, 0, snapshot)
            elif kind == "tick":
                side.time.sleep(op[1])
            elif kind == "ready":
                r = side.round(acc.ready, snapshot, now)
                answers.append((sorted(n.id for n in r.ready_nodes), r.next_ready_check_delay_ms,
                                sorted(r.unknown_leader_topics)))
            elif kind == "drain":
                ready = NODES if op[2] else side.round(acc.ready, snapshot, now).ready_nodes
                nodes = sorted(ready, key=lambda n: n.id)
                drained = side.round(acc.drain, snapshot, nodes, op[1], now)
                answers.append({n: [_batch_state(b) for b in bs] for n, bs in drained.items()})
                side.in_flight += [b for bs in drained.values() for b in bs]
            elif kind == "mute":
                acc.mute_partition(TopicPartition(*op[1]))
            elif kind == "unmute":
                acc.unmute_partition(TopicPartition(*op[1]))
            elif kind in ("retry", "complete"):
                if side.in_flight:
                    b = side.in_flight.pop(op[1] % len(side.in_flight))
                    if kind == "retry":
                        acc.reenqueue(b, now)
                    else:
                        b.done(0, -1, None)
                        acc.deallocate(b)
            elif kind == "flush":
                if op[1] and not flushing:
                    acc.begin_flush()
                elif not op[1] and flushing:
                    acc.end_flush()
            elif kind == "expire":
                expired = side.round(acc.expired_batches, now, op[1])
                answers.append([_batch_state(b) for b in expired])
        if kind == "leader":
            leaders[op[1]] = op[2]
        elif kind == "epoch":
            epochs[op[1]] = epochs.get(op[1], 0) + op[2]
        elif kind == "seen":
            seen[op[1]] = op[2]
        elif kind == "flush":
            flushing = op[1]
        if answers:
            assert answers[0] == answers[1], op
        assert _state(sides[0]) == _state(sides[1]), op


def test_the_round_is_compiled_for_a_metadata_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the kernel and a MetadataSnapshot, ready, drain and expired_batches make no call of their reference."""
    time = MockTime()
    acc = _accumulator(time, 0, True)
    snapshot = _snapshot({("a", 0): 0}, {("a", 0): 1}, {})
    acc.append("a", 0, 0, None, b"v" * 10, [], None, 0, snapshot)

    def refused(*args: Any) -> Any:
        raise AssertionError("the reference ran")

    for name in ("ready_reference", "drain_reference", "expired_batches_reference"):
        monkeypatch.setattr(RecordAccumulator, name, refused)
    now = time.hi_res_clock_ms()
    r = acc.ready(snapshot, now)
    assert [n.id for n in r.ready_nodes] == [1]
    drained = acc.drain(snapshot, list(r.ready_nodes), 1 << 20, now)
    assert [b.record_count for b in drained[1]] == [1]
    assert acc.expired_batches(now) == []
