"""What a queued batch leaves for Python's cyclic garbage collector, and the lazily made containers behind it.

When the caller is ahead of the broker, batches queue up by the thousand and survive into the oldest generation;
CPython runs a full collection (tens of ms with the GIL held: the I/O thread stalls) once the objects that survived
into it since the last one exceed a quarter of it. So a queued batch holds as few GC-tracked objects as it can: its
ProducerBatch and BatchOutcome, and for a ``send_batch`` call the segment waiting on it (alone); no TopicPartition
of its own (its queue's), no empty lists (``watched``, ``calls`` and the size columns are made when needed), no tuple
per segment in the call's future. The counts are bounds, not exact numbers: they pin that none of these comes back.
"""

from __future__ import annotations

import functools
import gc
import random
import threading
from collections import Counter
from concurrent.futures._base import FINISHED
from typing import Any

import pytest

from pykafka_client import KafkaProducer
from pykafka_client.producer.future_record_metadata import (
    NOT_COLLECTED,
    BatchOutcome,
    CallSegment,
    Column,
    FutureRecordMetadata,
    SendBatchFuture,
)
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.responses import metadata_response, nodes
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)
from tests.unit.producer.test_send_batch import _idle_runner

pytestmark = pytest.mark.usefixtures("record_impl")

TOPIC = "t"
VALUE = b"x" * 100


def _producer(partitions: int = 1) -> KafkaProducer:
    time = MockTime()
    p = KafkaProducer(
        {"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": False, "linger.ms": 5, "batch.size": 16384,
         "buffer.memory": 32 << 20},
        time=time, io_runner=_idle_runner,
    )
    p.accumulator._rng = random.Random(1)
    now = time.hi_res_clock_ms()
    p.metadata.add(TOPIC, now)
    p.metadata.update(
        0, metadata_response(nodes(1), {TOPIC: partitions}, leaders={(TOPIC, i): 0 for i in range(partitions)}), False, now
    )
    return p


def _tracked() -> Counter[str]:
    gc.collect()
    return Counter(type(o).__name__ for o in gc.get_objects())


def _queued(p: KafkaProducer) -> int:
    return sum(p.accumulator.queue_sizes().values())


def _left_per_batch(p: KafkaProducer, send: Any) -> tuple[float, Counter[str]]:
    """GC-tracked objects per batch that ``send()`` (which queues whole batches) leaves, and the count by type.

    The total counts only the types left at a quarter of an object a batch or more: what the batches leave comes in
    whole objects a batch, while the objects of the process's other threads (a loaded box, a full suite's leftover
    threads) spread over many types at a few hundredths a batch each."""
    send()  # warm: the topic, its queue, the kernel's caches, the test's own first-use objects
    _tracked()
    send()
    batches0, before = _queued(p), _tracked()
    send()
    batches = _queued(p) - batches0
    after = _tracked()
    assert batches >= 50
    diff = after - before
    by_type = Counter({k: round(v / batches, 2) for k, v in diff.items()})
    return sum(v for v in diff.values() if v / batches >= 0.25) / batches, by_type


def test_send_batch_leaves_at_most_three_tracked_objects_per_queued_batch() -> None:
    """ProducerBatch, BatchOutcome and the call's segment (plus the pure-Python reference's list of pending records);
    it was 9.3 with a TopicPartition, four lists and a tuple more."""
    p = _producer()
    values = [VALUE] * 10_000
    try:
        per_batch, by_type = _left_per_batch(p, lambda: [p.send_batch(TOPIC, values) for _ in range(2)])
        reference = _native.kernel is None  # its pending records are a list
        assert per_batch <= 3.5 + reference, by_type
        assert by_type["TopicPartition"] < 0.1, by_type
        # a tuple per segment would be one a batch here; under load the process's other threads leave a few
        # (~0.1-0.2 a batch seen on a loaded box), so the bound is well above those and well below one
        assert by_type["tuple"] < 0.5, by_type
        assert by_type["list"] <= 0.2 + reference, by_type
    finally:
        p.close(0)


def test_send_leaves_at_most_two_tracked_objects_per_queued_batch() -> None:
    """ProducerBatch and BatchOutcome (plus the reference's pending list); it was 6 (a TopicPartition, three lists)."""
    p = _producer()
    try:
        per_batch, by_type = _left_per_batch(p, lambda: [p.send(TOPIC, VALUE) for _ in range(20_000)])
        assert per_batch <= 2.5 + (_native.kernel is None), by_type
    finally:
        p.close(0)


def test_the_batches_of_a_partition_share_its_topic_partition() -> None:
    """One TopicPartition per partition queue, shared by its batches, new or split (an equal tuple as before)."""
    p = _producer(2)
    try:
        p.send_batch(TOPIC, [VALUE] * 1000, partition=0)
        p.send_batch(TOPIC, [VALUE] * 1000, partition=1)
        for _ in range(200):
            p.send(TOPIC, VALUE, partition=1)
        for part in (0, 1):
            batches = p.accumulator.batches_for(TopicPartition(TOPIC, part))
            assert len(batches) > 3
            assert all(b.topic_partition is batches[0].topic_partition for b in batches)
            assert batches[0].topic_partition == TopicPartition(TOPIC, part) == (TOPIC, part)
        big = p.accumulator.batches_for(TopicPartition(TOPIC, 0))[0]
        pieces = big.split_into(4000, 0)
        assert len(pieces) > 1 and all(b.topic_partition is big.topic_partition for b in pieces)
    finally:
        p.close(0)


def _size_columns(outcome: BatchOutcome) -> tuple[Column, Column]:
    """The outcome's key and value size columns, read afresh (completion sets them)."""
    return outcome.key_sizes, outcome.value_sizes


def _none(container: object) -> bool:
    """``container`` is the empty tuple (a container made only when needed, not made)."""
    return container == ()


def _batch(records: int = 4, condition: threading.Condition | None = None) -> tuple[ProducerBatch, list[FutureRecordMetadata]]:
    b = ProducerBatch(TopicPartition(TOPIC, 0), 16384, 0, condition=condition)
    futures = [b.try_append(i + 1, None, b"v" * 100, [], None, 0) for i in range(records)]
    assert all(f is not None for f in futures)
    return b, futures  # type: ignore[return-value]


def test_an_outcome_makes_its_containers_only_when_needed() -> None:
    """A fresh outcome holds no list: nothing watched, no segment, no columns; the first future watched (a done-
    callback) and the first segment make their list; completion lets go of them and fills the columns."""
    b, futures = _batch()
    o = b.outcome
    assert _none(o.watched) and _none(o.calls) and o.key_sizes is NOT_COLLECTED and o.value_sizes is NOT_COLLECTED
    assert not gc.is_tracked(o.watched) and not gc.is_tracked(o.key_sizes)
    order: list[int] = []
    futures[2].add_done_callback(lambda f: order.append(2))
    futures[0].add_done_callback(lambda f: order.append(0))
    futures[2].add_done_callback(lambda f: order.append(22))
    assert o.watched == [futures[2], futures[0]]
    call = SendBatchFuture(4, None)
    call.add_segment(0, 4, o, 0)
    call.seal()
    assert isinstance(o.calls, CallSegment)  # the only segment: kept alone, no list
    b.done(100, -1, None)
    assert order == [2, 22, 0]  # in the order the futures were watched, each future's callbacks in their order
    assert _none(o.watched) and _none(o.calls) and _size_columns(o) == (-1, 100)
    assert [m.offset for m in call.result(0)] == [100, 101, 102, 103]
    assert futures[3].result(0).offset == 103


def test_two_calls_waiting_on_one_batch_and_a_future_watched_after_completion() -> None:
    """The second segment on an outcome makes the list; both are released, in order, when the batch completes."""
    b, futures = _batch()
    calls = [SendBatchFuture(2, None), SendBatchFuture(2, None)]
    for k, call in enumerate(calls):
        call.add_segment(0, 2, b.outcome, 2 * k)
        call.seal()
    assert isinstance(b.outcome.calls, list) and len(b.outcome.calls) == 2  # a list from the second segment on
    b.done(7, -1, None)
    assert [[m.offset for m in c.result(0)] for c in calls] == [[7, 8], [9, 10]]
    seen: list[int] = []
    futures[1].add_done_callback(lambda f: seen.append(f.result(0).offset))  # done: runs at once, nothing watched
    assert seen == [8] and _none(b.outcome.watched)


def test_a_waiter_blocked_in_result_is_woken_through_the_lazily_made_list() -> None:
    b, futures = _batch()
    got: list[int] = []
    t = threading.Thread(target=lambda: got.append(futures[1].result(30).offset), daemon=True)
    t.start()
    cond = b.outcome.condition
    while True:  # the waiter registered (under the condition) before the batch completes
        with cond:
            if b.outcome.watched:
                break
    assert b.outcome.watched == [futures[1]]
    b.done(40, -1, None)
    t.join(30)
    assert got == [41] and _none(b.outcome.watched)


def test_watched_futures_of_a_split_batch_move_to_the_pieces_outcomes() -> None:
    """A split registers the watched futures with the pieces' outcomes (whose ``watched`` starts empty)."""
    b, futures = _batch(6)
    order: list[tuple[int, int]] = []
    for i in (4, 1, 5):
        futures[i].add_done_callback(functools.partial(lambda i, f: order.append((i, f.result(0).offset)), i))
    pieces = b.split_into(400, 0)
    assert len(pieces) == 2 and b.outcome.moved_to is not None
    assert [list(p.outcome.watched) for p in pieces] == [[futures[1]], [futures[4], futures[5]]]
    pieces[1].done(70, -1, None)
    assert order == [(4, 71), (5, 72)] and _none(pieces[1].outcome.watched)
    pieces[0].done(10, -1, None)
    assert order == [(4, 71), (5, 72), (1, 11)]


def test_a_future_completed_on_its_own_and_a_failed_batch() -> None:
    b, futures = _batch(3)
    order: list[str] = []
    futures[0].add_done_callback(lambda f: order.append("own"))
    futures[0].set_exception(ValueError("mine"))
    assert order == ["own"] and isinstance(futures[0].exception(0), ValueError)
    futures[2].add_done_callback(lambda f: order.append(type(f.exception(0)).__name__))
    b.abort(RuntimeError("aborted"))
    assert order == ["own", "RuntimeError"]
    assert b.outcome.state == FINISHED and _none(b.outcome.watched) and b.outcome.key_sizes is NOT_COLLECTED
    assert isinstance(futures[1].exception(0), RuntimeError) and isinstance(futures[0].exception(0), ValueError)


def test_a_plain_outcome_is_not_a_container_the_collector_walks_through() -> None:
    """A fresh BatchOutcome refers to no tracked object but its condition (shared by the accumulator's batches)."""
    o = BatchOutcome(threading.Condition(), TOPIC, 0)
    referents = [r for r in gc.get_referents(o) if gc.is_tracked(r) and r is not BatchOutcome]  # (its type)
    assert referents == [o.condition]
