"""Contract statements 57-60 (RecordAccumulatorTest) and the accumulator's bookkeeping."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from pykafka_client.producer.buffer_pool import BufferPool
from pykafka_client.producer.partitioner import BuiltInPartitioner
from pykafka_client.producer.record_accumulator import UNKNOWN_PARTITION, RecordAccumulator
from pykafka_client.protocol.records import _native
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import MockTime
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)
from tests.unit.producer.helpers import NODE1, NODE2, FakeMetadata

pytestmark = pytest.mark.usefixtures("record_impl")  # every test on the kernel and on the reference

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
TP2 = TopicPartition("t", 2)
LINGER = 10
VALUE = b"v" * 100


def make(
    time: MockTime,
    *,
    batch_size: int = 1024,
    linger_ms: int = LINGER,
    memory: int = 64 * 1024,
    backoff: int = 100,
    backoff_max: int = 1000,
    delivery_timeout_ms: int = 120_000,
) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=batch_size,
        linger_ms=linger_ms,
        retry_backoff_ms=backoff,
        retry_backoff_max_ms=backoff_max,
        delivery_timeout_ms=delivery_timeout_ms,
        buffer_pool=BufferPool(memory, time),
        time=time,
        rng=random.Random(0),
    )


META = FakeMetadata({("t", 0): NODE1, ("t", 1): NODE1, ("t", 2): NODE2})


def append(acc: RecordAccumulator, tp: TopicPartition = TP0, value: bytes = VALUE) -> None:
    acc.append(tp.topic, tp.partition, 0, None, value, [], None, 0, META)


def test_s57_linger() -> None:
    time = MockTime()
    acc = make(time)
    append(acc)
    now = time.hi_res_clock_ms()
    r = acc.ready(META, now)
    assert r.ready_nodes == set()
    assert r.next_ready_check_delay_ms == LINGER
    time.sleep(LINGER)
    r = acc.ready(META, time.hi_res_clock_ms())
    assert r.ready_nodes == {NODE1}
    drained = acc.drain(META, r.ready_nodes, 1024 * 1024, time.hi_res_clock_ms())
    assert [b.record_count for b in drained[NODE1.id]] == [1]


def test_s57_full_batch_is_ready_without_linger() -> None:
    time = MockTime()
    acc = make(time, linger_ms=10_000)
    n = 0
    while not acc.batches_for(TP0) or len(acc.batches_for(TP0)) == 1:
        append(acc)
        n += 1
    # The first batch filled up: ready at once although linger is long.
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == {NODE1}
    batches = acc.drain(META, {NODE1}, 1024 * 1024, time.hi_res_clock_ms())[NODE1.id]
    assert batches[0].record_count == n - 1


def test_s57_next_ready_check_delay_is_remaining_linger() -> None:
    time = MockTime()
    acc = make(time)
    append(acc, TP0)
    time.sleep(LINGER // 2)
    append(acc, TP2)
    r = acc.ready(META, time.hi_res_clock_ms())
    assert r.ready_nodes == set()
    assert r.next_ready_check_delay_ms == LINGER - LINGER // 2
    time.sleep(LINGER // 2)
    r = acc.ready(META, time.hi_res_clock_ms())
    assert r.ready_nodes == {NODE1}
    assert r.next_ready_check_delay_ms == LINGER // 2


def test_s57_flush_and_close_make_partitions_sendable() -> None:
    time = MockTime()
    acc = make(time, linger_ms=10_000)
    append(acc)
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == set()
    acc.begin_flush()
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == {NODE1}
    acc.end_flush()
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == set()
    acc.close()
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == {NODE1}


def test_flush_makes_a_lingering_partition_sendable_after_a_full_one() -> None:
    """ready() asks whether the producer flushes (or memory is exhausted, or it closes) only for a batch that is
    neither full nor past its linger: a full partition first, then a lingering one on another node, both ready."""
    time = MockTime()
    acc = make(time, linger_ms=10_000)
    while len(acc.batches_for(TP0)) < 2:
        append(acc, TP0)  # TP0 (NODE1): a full batch
    append(acc, TP2)  # TP2 (NODE2): one record, lingering
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == {NODE1}
    acc.begin_flush()
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == {NODE1, NODE2}
    acc.end_flush()
    r = acc.ready(META, time.hi_res_clock_ms())
    assert r.ready_nodes == {NODE1}
    assert r.next_ready_check_delay_ms == 10_000


def test_s57_unknown_leader_reported() -> None:
    time = MockTime()
    acc = make(time, linger_ms=0)
    meta = FakeMetadata({("t", 0): None})
    acc.append("t", 0, 0, None, VALUE, [], None, 0, meta)
    r = acc.ready(meta, time.hi_res_clock_ms())
    assert r.ready_nodes == set() and r.unknown_leader_topics == {"t"}


def test_s58_partial_drain_respects_max_request_size_but_takes_one() -> None:
    time = MockTime()
    acc = make(time, linger_ms=0)
    append(acc, TP0)
    append(acc, TP1)
    size0 = acc.batches_for(TP0)[0].estimated_size_in_bytes()
    drained = acc.drain(META, {NODE1}, size0 + 10, time.hi_res_clock_ms())[NODE1.id]
    assert len(drained) == 1
    # A batch bigger than the limit still goes out alone.
    drained = acc.drain(META, {NODE1}, 1, time.hi_res_clock_ms())[NODE1.id]
    assert len(drained) == 1


def test_drain_rotates_start_partition() -> None:
    time = MockTime()
    acc = make(time, linger_ms=0)
    for _ in range(2):
        append(acc, TP0)
        append(acc, TP1)
    limit = acc.batches_for(TP0)[0].estimated_size_in_bytes()
    first = acc.drain(META, {NODE1}, limit, time.hi_res_clock_ms())[NODE1.id]
    second = acc.drain(META, {NODE1}, limit, time.hi_res_clock_ms())[NODE1.id]
    assert {first[0].topic_partition, second[0].topic_partition} == {TP0, TP1}


def _retry_once(acc: RecordAccumulator, time: MockTime) -> None:
    append(acc)
    time.sleep(LINGER)
    (batch,) = acc.drain(META, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id]
    acc.reenqueue(batch, time.hi_res_clock_ms())


def test_s59_retry_backoff() -> None:
    time = MockTime()
    acc = make(time, backoff=100, backoff_max=100)
    _retry_once(acc, time)
    r = acc.ready(META, time.hi_res_clock_ms())
    assert r.ready_nodes == set()
    assert r.next_ready_check_delay_ms == 100
    time.sleep(99)
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == set()
    assert acc.drain(META, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id] == []
    time.sleep(1)
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == {NODE1}


def test_s59_exponential_retry_backoff_with_jitter() -> None:
    time = MockTime()
    acc = make(time, backoff=100, backoff_max=1000)
    append(acc)
    time.sleep(LINGER)
    expected = [100, 200, 400, 800, 1000, 1000]
    for attempt, exp in enumerate(expected, start=1):
        (batch,) = acc.drain(META, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id]
        assert batch.attempts == attempt - 1
        acc.reenqueue(batch, time.hi_res_clock_ms())
        delay = acc.ready(META, time.hi_res_clock_ms()).next_ready_check_delay_ms
        assert exp * 0.8 <= delay <= min(exp * 1.2, 1000)
        time.sleep(int(min(exp * 1.2, 1000)) + 1)


def test_s59_leader_change_skips_backoff() -> None:
    time = MockTime()
    acc = make(time, backoff=100, backoff_max=1000)
    meta = FakeMetadata({("t", 0): NODE1}, {("t", 0): 5})
    acc.append("t", 0, 0, None, VALUE, [], None, 0, meta)
    time.sleep(LINGER)
    assert acc.ready(meta, time.hi_res_clock_ms()).ready_nodes == {NODE1}
    (batch,) = acc.drain(meta, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id]
    acc.reenqueue(batch, time.hi_res_clock_ms())
    assert acc.ready(meta, time.hi_res_clock_ms()).ready_nodes == set()  # backing off
    meta.leaders[("t", 0)] = NODE2
    meta.epochs[("t", 0)] = 6
    assert acc.ready(meta, time.hi_res_clock_ms()).ready_nodes == {NODE2}
    assert len(acc.drain(meta, {NODE2}, 1 << 20, time.hi_res_clock_ms())[NODE2.id]) == 1


def test_s60_muted_partition_not_ready_nor_drained() -> None:
    time = MockTime()
    acc = make(time, linger_ms=0)
    append(acc, TP0)
    acc.mute_partition(TP0)
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == set()
    assert acc.drain(META, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id] == []
    acc.unmute_partition(TP0)
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == {NODE1}


def test_memory_exhaustion_makes_ready() -> None:
    time = MockTime()
    acc = make(time, linger_ms=10_000, batch_size=1024, memory=2048)
    append(acc, TP0)
    append(acc, TP2)
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == set()
    assert acc.free.available_memory() == 0


def test_expired_batches_and_next_expiry() -> None:
    time = MockTime()
    acc = make(time, delivery_timeout_ms=1000, linger_ms=10_000)
    append(acc, TP0)
    assert acc.expired_batches(time.hi_res_clock_ms()) == []
    assert acc.next_expiry_time_ms() == time.hi_res_clock_ms() + 1000
    time.sleep(1000)
    (b,) = acc.expired_batches(time.hi_res_clock_ms())
    assert b.topic_partition == TP0
    assert not acc.has_undrained()


def test_expired_batches_start_the_next_expiry_from_the_one_given() -> None:
    """The Sender gives the in-flight batches' earliest expiry: the next expiry is the earlier of it and the queued
    batches' (reset to it first, whatever it was before)."""
    time = MockTime()
    acc = make(time, delivery_timeout_ms=1000, linger_ms=10_000)
    now = time.hi_res_clock_ms()
    assert acc.expired_batches(now, now + 5) == [] and acc.next_expiry_time_ms() == now + 5
    append(acc, TP0)
    assert acc.expired_batches(now, now + 5000) == [] and acc.next_expiry_time_ms() == now + 1000
    assert acc.expired_batches(now, now + 300) == [] and acc.next_expiry_time_ms() == now + 300
    acc.expired_batches(now)  # without one: the time moves only earlier
    assert acc.next_expiry_time_ms() == now + 300
    assert acc.expired_batches(now, 2**63 - 1) == [] and acc.next_expiry_time_ms() == now + 1000


def test_ready_records_the_leader_epoch_on_a_new_batch() -> None:
    """A batch never attempted takes the partition's leader epoch at ready (maybe_update_leader_epoch's rule): a
    later epoch is then a leader change for its retry."""
    time = MockTime()
    acc = make(time)
    meta = FakeMetadata({("t", 0): NODE1}, {("t", 0): 5})
    acc.append("t", 0, 0, None, VALUE, [], None, 0, meta)
    (batch,) = acc.batches_for(TP0)
    acc.ready(meta, time.hi_res_clock_ms())
    assert (batch.current_leader_epoch, batch.attempts_when_leader_last_changed) == (5, 0)
    meta.epochs[("t", 0)] = 4  # an older epoch changes nothing
    acc.ready(meta, time.hi_res_clock_ms())
    assert batch.current_leader_epoch == 5
    meta.epochs[("t", 0)] = 7
    time.sleep(LINGER)
    acc.ready(meta, time.hi_res_clock_ms())
    assert batch.current_leader_epoch == 7
    (drained,) = acc.drain(meta, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id]
    assert drained is batch and batch.closed and batch.drained_ms == time.hi_res_clock_ms()
    acc.reenqueue(batch, time.hi_res_clock_ms())
    meta.epochs[("t", 0)] = 8
    acc.ready(meta, time.hi_res_clock_ms())
    assert (batch.current_leader_epoch, batch.attempts_when_leader_last_changed) == (8, 1)


class _CountingMetadata(FakeMetadata):
    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.asked = 0

    def available_partitions_for_topic(self, topic: str) -> list[int]:
        self.asked += 1
        return list(super().available_partitions_for_topic(topic))


def test_ready_drops_the_load_stats_of_equal_queues_without_asking_for_the_available_partitions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    time = MockTime()
    acc = make(time)
    meta = _CountingMetadata({("t", 0): NODE1, ("t", 1): NODE1})
    append(acc, TP0)
    append(acc, TP1)
    partitioner = acc._topics["t"].partitioner
    acc.ready(meta, time.hi_res_clock_ms())
    assert meta.asked == 0 and partitioner.load_stats is None
    append(acc, TP0, b"x" * 1000)  # a second batch on partition 0
    acc.ready(meta, time.hi_res_clock_ms())
    assert meta.asked == 1 and partitioner.load_stats is not None
    assert partitioner.load_stats.partitions == [0, 1]
    # equal queues again: the stats are dropped, and while there are none no drop is asked for
    append(acc, TP1, b"x" * 1000)
    dropped: list[tuple[object, ...]] = []
    update = BuiltInPartitioner.update_partition_load_stats

    def counted(self: BuiltInPartitioner, *args: Any) -> None:
        dropped.append(args)
        update(self, *args)

    monkeypatch.setattr(BuiltInPartitioner, "update_partition_load_stats", counted)
    acc.ready(meta, time.hi_res_clock_ms())
    assert partitioner.load_stats is None and dropped == [((), (), 0)]
    acc.ready(meta, time.hi_res_clock_ms())
    assert dropped == [((), (), 0)] and meta.asked == 1


def test_memory_returned_on_deallocate() -> None:
    time = MockTime()
    acc = make(time, linger_ms=0, batch_size=1024, memory=4096)
    append(acc)
    assert acc.free.available_memory() == 3072
    (b,) = acc.drain(META, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id]
    b.done(0, -1, None)
    acc.deallocate(b)
    assert acc.free.available_memory() == 4096
    assert not acc.has_incomplete()


def test_flush_waits_for_the_batches_incomplete_at_its_mark_only() -> None:
    """await_flush_completion(mark): done once every batch incomplete at flush_mark() is, and the pieces of any of
    them split meanwhile; not the batches added after the mark."""
    time = MockTime()
    acc = make(time, linger_ms=0, batch_size=1024, memory=1 << 20)
    append(acc, TP0)
    append(acc, TP1)
    drained = acc.drain(META, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id]
    b0, b1 = sorted(drained, key=lambda b: b.topic_partition.partition)
    mark = acc.flush_mark()
    append(acc, TP2)  # after the mark: not waited for
    assert not acc.await_flush_completion(0, mark)
    b0.done(0, -1, None)
    acc.deallocate(b0)
    assert not acc.await_flush_completion(0, mark)  # b1 is still incomplete
    pieces = acc.split_and_reenqueue(b1, time.hi_res_clock_ms())  # b1's records move to new batches
    assert pieces >= 1
    acc.deallocate(b1)
    # b1's records are in its pieces now: the flush waits for them too (Java since KAFKA-19479), not for TP2's batch
    assert not acc.await_flush_completion(0, mark)
    now = time.hi_res_clock_ms()
    for piece in acc.drain(META, {NODE1}, 1 << 20, now)[NODE1.id]:
        if piece.topic_partition == TP1:
            piece.done(0, -1, None)
            acc.deallocate(piece)
    assert acc.await_flush_completion(0, mark)
    assert not acc.await_flush_completion(0)  # now: the TP2 batch
    assert acc.has_incomplete()


def test_oversized_record_gets_its_own_batch() -> None:
    time = MockTime()
    acc = make(time, batch_size=100, memory=10_000)
    append(acc, TP0, b"x" * 500)
    (b,) = acc.batches_for(TP0)
    assert b.record_count == 1 and b.estimated_size_in_bytes() > 500
    assert acc.free.available_memory() < 10_000 - 500


def test_sticky_partition_for_unkeyed_records() -> None:
    time = MockTime()
    acc = make(time, batch_size=1024)
    parts = set()
    for _ in range(5):
        r = acc.append("t", UNKNOWN_PARTITION, 0, None, VALUE, [], None, 0, META)
        parts.add(r.partition)
    assert len(parts) == 1  # well under batch.size: stays sticky
    for _ in range(100):
        r = acc.append("t", UNKNOWN_PARTITION, 0, None, VALUE, [], None, 0, META)
        parts.add(r.partition)
    assert len(parts) > 1


def test_split_and_reenqueue_front_in_order() -> None:
    time = MockTime()
    acc = make(time, batch_size=300, linger_ms=0)
    big_meta = META
    acc2 = make(time, batch_size=10_000, linger_ms=0)
    for _ in range(10):
        acc2.append("t", 0, 0, None, VALUE, [], None, 0, big_meta)
    (big,) = acc2.drain(META, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id]
    n = acc.split_and_reenqueue(big, time.hi_res_clock_ms())
    queued = acc.batches_for(TP0)
    assert n == len(queued) > 1
    assert sum(b.record_count for b in queued) == 10


@pytest.mark.parametrize("abort_all", [True, False])
def test_abort_batches(abort_all: bool) -> None:
    time = MockTime()
    acc = make(time, linger_ms=0)
    fut = acc.append(TP0.topic, TP0.partition, 0, None, VALUE, [], None, 0, META).future
    err = RuntimeError("closing")
    if abort_all:
        acc.abort_incomplete_batches(err)
    else:
        acc.abort_undrained_batches(err)
    assert fut.exception(0) is err
    assert acc.free.available_memory() == acc.free.total_memory


def test_compression_ratio_estimate_improves_slowly_and_deteriorates_fast() -> None:
    from pykafka_client.protocol.compression import CompressionType

    time = MockTime()
    acc = RecordAccumulator(
        batch_size=4096, linger_ms=0, retry_backoff_ms=100, retry_backoff_max_ms=100, delivery_timeout_ms=120_000,
        buffer_pool=BufferPool(1 << 20, time), time=time, compression_type=CompressionType.GZIP,
    )
    for _ in range(20):
        acc.append("t", 0, 0, None, b"a" * 200, [], None, 0, META)
    (b,) = acc.drain(META, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id]
    assert b.estimated_size_in_bytes() > 3000  # estimate before encoding: uncompressed x 1.0 x 1.05
    b.records()
    assert b.actual_compression_ratio < 0.1 and b.estimated_size_in_bytes() < 500  # exact once encoded
    acc.update_compression_ratio(b)
    assert acc.compression_ratio_estimate("t") == pytest.approx(0.995)
    b.actual_compression_ratio = 1.5  # a batch that compresses badly: jump to it
    acc.update_compression_ratio(b)
    assert acc.compression_ratio_estimate("t") == 1.5


def test_batch_with_lower_ratio_estimate_holds_more_records() -> None:
    from pykafka_client.producer.producer_batch import ProducerBatch
    from pykafka_client.protocol.compression import CompressionType

    def fill(ratio: float) -> int:
        b = ProducerBatch(TP0, 4096, 0, CompressionType.LZ4, compression_ratio=ratio)
        while b.try_append(0, None, b"v" * 100, [], None, 0) is not None:
            pass
        assert b.estimated_size_in_bytes() <= 4096
        return b.record_count

    assert fill(0.5) > 1.8 * fill(1.0)


def test_ready_feeds_queue_sizes_to_the_adaptive_partitioner() -> None:
    time = MockTime()
    acc = make(time, linger_ms=10_000, batch_size=200, memory=1 << 20)
    meta = FakeMetadata({("t", 0): NODE1, ("t", 1): NODE2})
    for _ in range(12):  # partition 0 gets a long queue of full batches
        acc.append("t", 0, 0, None, VALUE, [], None, 0, meta)
    acc.append("t", 1, 0, None, VALUE, [], None, 0, meta)
    acc.ready(meta, time.hi_res_clock_ms())
    counts = {0: 0, 1: 0}
    for _ in range(300):
        r = acc.append("t", UNKNOWN_PARTITION, 0, None, b"v" * 190, [], None, 0, meta)
        counts[r.partition] += 1
    assert counts[1] > 3 * counts[0]  # the shorter queue is preferred


def test_batches_share_one_condition_and_a_waiter_wakes_only_for_its_own_batch() -> None:
    """The accumulator's batches share one Condition (no Condition built per batch on send()'s new-batch path):
    a thread blocked in ``result()`` on a record of one batch stays blocked through another batch's completion
    (which notifies the shared condition, as a future of it is waited on too), and wakes with its own record's
    metadata when its batch completes."""
    time = MockTime()
    acc = make(time)
    f0 = acc.append("t", 0, 0, None, VALUE, [], None, 0, META).future
    f1 = acc.append("t", 1, 0, None, VALUE, [], None, 0, META).future
    o0, o1 = f0.batch_position()[0], f1.batch_position()[0]
    assert o0 is not o1
    assert o0.condition is o1.condition
    results: dict[int, object] = {}

    def wait(i: int, f: object) -> None:
        try:
            results[i] = f.result(timeout=30)  # type: ignore[attr-defined]
        except BaseException as e:  # the test asserts on it
            results[i] = e

    waiting = [threading.Thread(target=wait, args=(i, f), daemon=True) for i, f in ((0, f0), (1, f1))]
    for t in waiting:
        t.start()
    cond = o0.condition
    while True:  # both threads registered as waiters (under the condition) before anything completes
        with cond:
            if len(o0.watched) == 1 and len(o1.watched) == 1:
                break
    o1.complete_success(500, -1, [0], [-1], [len(VALUE)])
    waiting[1].join(30)
    assert results[1].offset == 500  # type: ignore[attr-defined]
    assert 0 not in results and not f0.done()
    o0.complete_success(70, -1, [0], [-1], [len(VALUE)])
    waiting[0].join(30)
    assert results[0].offset == 70  # type: ignore[attr-defined]


def test_a_new_batchs_append_tries_the_full_batch_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The record that does not fit closes the last batch in append's first round; the second round (after
    the buffer memory) skips that closed batch without another try_append, then makes the new batch."""
    from pykafka_client.producer.producer_batch import ProducerBatch

    time = MockTime()
    acc = make(time, batch_size=300)
    append(acc)
    append(acc)
    tried: list[int] = []
    kernel = _native.kernel
    if kernel is not None:  # append calls the kernel's ProducerBatch.try_append directly

        class CountingKernel:
            def __getattr__(self, name: str) -> object:
                return getattr(kernel, name)

            def batch_try_append(self, batch: ProducerBatch, *args: object) -> object:
                tried.append(id(batch))
                return kernel.batch_try_append(batch, *args)  # type: ignore[union-attr, arg-type]

        monkeypatch.setattr(_native, "kernel", CountingKernel())
    else:
        real = ProducerBatch.try_append_reference

        def counting(self: ProducerBatch, *args: object) -> object:
            tried.append(id(self))
            return real(self, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(ProducerBatch, "try_append_reference", counting)
    (full,) = acc.batches_for(TP0)
    append(acc)
    batches = acc.batches_for(TP0)
    assert [b.record_count for b in batches] == [2, 1]
    assert full.closed
    assert tried == [id(full), id(batches[1])]


def test_a_new_batch_waits_for_memory_outside_the_deque_lock() -> None:
    """A new batch takes free memory under the deque lock (one lock round); when the pool is short, the append
    waits (max.block.ms) with the deque lock released, then makes the batch once memory is returned."""
    time = MockTime()
    acc = make(time, batch_size=300, memory=300)
    append(acc)
    append(acc)
    (full,) = acc.batches_for(TP0)
    assert acc.free.available_memory() == 0
    results: list[object] = []
    t = threading.Thread(target=lambda: results.append(acc.append("t", 0, 0, None, VALUE, [], None, 60_000, META)))
    t.start()
    for _ in range(100_000):
        if acc.free.queued() == 1:
            break
        threading.Event().wait(0.001)
    assert acc.free.queued() == 1 and acc.appends_in_progress()
    assert acc.batches_for(TP0) == [full] and full.closed  # the deque lock is free while the append waits
    (drained,) = acc.drain(META, {NODE1}, 1 << 20, time.hi_res_clock_ms())[NODE1.id]
    drained.done(0, -1, None)
    acc.deallocate(drained)
    t.join(30)
    (r,) = results
    assert r.new_batch_created and r.partition == 0 and not r.batch_is_full  # type: ignore[attr-defined]
    (new,) = acc.batches_for(TP0)
    assert new.record_count == 1 and new.allocated_bytes == 300
    assert acc.free.available_memory() == 0 and not acc.appends_in_progress()


def test_append_result_fields_for_an_open_batch_and_a_new_one() -> None:
    """append's result: (future, batch_is_full, new_batch_created, partition, appended_bytes), as Java's
    RecordAppendResult; appended bytes are what the sticky partitioner counts (the whole new batch's size)."""
    time = MockTime()
    acc = make(time, batch_size=300)
    r1 = acc.append("t", UNKNOWN_PARTITION, 0, None, VALUE, [], None, 0, META)
    (b,) = acc.batches_for(TopicPartition("t", r1.partition))
    assert (r1.batch_is_full, r1.new_batch_created, r1.appended_bytes) == (False, True, b.size_bytes)
    r2 = acc.append("t", UNKNOWN_PARTITION, 0, None, VALUE, [], None, 0, META)
    assert r2.partition == r1.partition
    assert (r2.batch_is_full, r2.new_batch_created, r2.appended_bytes) == (False, False, b.size_bytes - r1.appended_bytes)
    assert r1.future is not r2.future and b.record_count == 2
    info = acc._topics["t"].partitioner.sticky
    assert info is not None and info.produced_bytes == b.size_bytes


@pytest.mark.parametrize("key", [None, b"", b"k" * 50])
@pytest.mark.parametrize("value", [None, b"v" * 10, b"v" * 400, b"v" * 1500])
@pytest.mark.parametrize("headers", [[], [("h", b"x" * 30)]])
def test_a_new_batch_reserves_the_larger_of_batch_size_and_the_records_size_bound(
    key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes]]
) -> None:
    """append reserves max(batch.size, estimate_size_upper_bound(record)) for a new batch (Java's
    ``max(batchSize, estimateSizeInBytesUpperBound)``)."""
    from pykafka_client.producer.record_size import estimate_size_upper_bound

    time = MockTime()
    acc = make(time, batch_size=512, memory=1 << 20)
    result = acc.append(TP0.topic, TP0.partition, 0, key, value, headers, None, 0, META)
    assert result.new_batch_created
    (batch,) = acc.batches_for(TP0)
    expected = max(512, estimate_size_upper_bound(key, value, headers))
    assert batch.allocated_bytes == expected
    assert acc.free.available_memory() == (1 << 20) - expected


def test_ready_nodes_are_the_leaders_of_the_metadata_read_even_when_a_node_id_moves() -> None:
    """ready adds a ready leader as a one-node set it keeps per node id (no Node hash per iteration): the set is
    the Node the metadata gives now, also when that id's Node changes (a broker at a new address)."""
    time = MockTime()
    acc = make(time, linger_ms=0)
    append(acc, TP0)
    append(acc, TopicPartition("t", 2))
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == {NODE1, NODE2}
    moved = Node(1, "elsewhere", 9191)
    meta = FakeMetadata({("t", 0): moved, ("t", 1): moved, ("t", 2): NODE2})
    ready = acc.ready(meta, time.hi_res_clock_ms()).ready_nodes
    assert ready == {moved, NODE2} and NODE1 not in ready
    assert next(n for n in ready if n.id == 1) is moved
    assert acc.ready(META, time.hi_res_clock_ms()).ready_nodes == {NODE1, NODE2}
