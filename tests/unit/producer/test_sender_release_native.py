"""A completed batch's bookkeeping in the compiled completion (the Sender's ``SenderCompletion``,
``records/kernel/producer_batch_release.c.h``: the batch out of the incomplete set and its memory back to the pool's
account, the idempotent producer's acknowledged sequence and offset, without ``RecordAccumulator.deallocate``'s,
``BufferPool.deallocate``'s and ``IdempotenceManager.handle_completed_batch``'s frames) == the reference: random
operation sequences (appends with and without delivery callbacks, rounds, answers to the oldest request with success,
retriable and fatal errors, DUPLICATE_SEQUENCE_NUMBER, OUT_OF_ORDER_SEQUENCE_NUMBER and MESSAGE_TOO_LARGE, time steps
past delivery.timeout.ms, appenders waiting for memory joining and leaving the pool's queue) driven through three
Senders: the kernel doing the bookkeeping itself, the kernel with the accumulator's ``deallocate`` and the manager's
``handle_completed_batch`` replaced on the instances before the Sender was built (the completion calls the methods),
and no kernel. After every step the futures' outcomes, the callbacks' and the waiters' wake-ups in one log (their
order), the pool's free memory, the incomplete batches, the batches' allocated bytes, the in-flight batches and the
idempotent producer's sequence state are equal."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, Protocol, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer.future_record_metadata import FutureRecordMetadata
from pykafka_client.producer.idempotence_manager import IdempotenceManager
from pykafka_client.producer.record_accumulator import RecordAccumulator
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from tests.unit.producer.helpers import partitions_of
from tests.unit.producer.sender_harness import TOPIC, Harness, produce_response

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

PARTITIONS = 3
NOT_LEADER_OR_FOLLOWER, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE = 6, 2, 10
OUT_OF_ORDER_SEQUENCE_NUMBER, DUPLICATE_SEQUENCE_NUMBER = 45, 46
#: a partition's answer: mostly a success (a response completes in the kernel only when every partition succeeded)
CODES = [0] * 12 + [NOT_LEADER_OR_FOLLOWER, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, OUT_OF_ORDER_SEQUENCE_NUMBER,
                    DUPLICATE_SEQUENCE_NUMBER]


class _Waiter(threading.Condition):
    """An appender waiting for memory, as BufferPool.allocate queues it: its wake-ups go to the shared log."""

    def __init__(self, lock: Any, name: int, log: list[tuple[Any, ...]]) -> None:
        super().__init__(lock)
        self.name = name
        self.log = log

    def notify(self, n: int = 1) -> None:
        self.log.append(("wake", self.name))
        super().notify(n)


@contextmanager
def _kernel(native: bool) -> Iterator[None]:
    saved = _native.kernel
    _native.kernel = _native.loaded_kernel() if native else None
    try:
        yield
    finally:
        _native.kernel = saved


_KINDS = ["append"] * 4 + ["run"] * 3 + ["respond"] * 3 + ["time", "waiter", "unwait"]


def _op(kind: str) -> st.SearchStrategy[tuple[Any, ...]]:
    if kind == "append":
        return st.tuples(st.just(kind), st.integers(0, PARTITIONS - 1), st.integers(1, 4), st.booleans(), st.integers(1, 300))
    if kind == "respond":
        return st.tuples(st.just(kind), st.lists(st.sampled_from(CODES), min_size=PARTITIONS, max_size=PARTITIONS))
    if kind == "time":
        return st.tuples(st.just(kind), st.sampled_from([10, 200, 200, 130_000]))
    return st.tuples(st.just(kind))


#: (appends, rounds and answers most often: batches appended, sent and answered)
_ops = st.lists(st.sampled_from(_KINDS).flatmap(_op), min_size=3, max_size=40)


def _outcome(f: FutureRecordMetadata) -> object:
    if not f.done():
        return "pending"
    e = f.exception(0)
    return (type(e).__name__, str(e)) if e is not None else tuple(f.result(0))


class State(NamedTuple):
    """What is observable after a step."""

    outcomes: list[object]
    log: list[tuple[Any, ...]]
    free: int
    incomplete: int
    batches: list[tuple[Any, bool, int]]
    in_flight: dict[TopicPartition, int]
    sequences: list[tuple[int, int, bool]] | None
    requests: int


class _Completion(Protocol):
    """What the kernel's SenderCompletion tells of its decisions."""

    @property
    def releases(self) -> bool: ...

    @property
    def acknowledges(self) -> bool: ...


def _releases(completion: object) -> tuple[bool, bool]:
    """(the completion releases batches itself, it acknowledges sequences itself)"""
    c = cast(_Completion, completion)
    return c.releases, c.acknowledges


def _replace_methods(h: Harness) -> None:
    """A spy's replacement on the instances (the reference's bodies), before the Sender is built: its compiled
    completion calls the methods."""
    acc = h.accumulator
    acc.deallocate = lambda batch: RecordAccumulator.deallocate(acc, batch)  # type: ignore[method-assign]  # a test's replacement of a method
    tm = h.tm
    if tm is not None:
        tm.handle_completed_batch = (  # type: ignore[method-assign]  # a test's replacement of a method
            lambda batch, base_offset: IdempotenceManager.handle_completed_batch(tm, batch, base_offset)
        )


def _run(mode: str, idempotent: bool, ordered: bool, ops: list[tuple[Any, ...]]) -> list[State]:
    """``ops`` on a Sender with ``mode``: "kernel" (the compiled release), "method" (the kernel, the accumulator's
    deallocate replaced on the instance: the completion calls it) or "reference" (no kernel); what is observable after
    each step."""
    with _kernel(mode != "reference"):
        h = Harness(idempotent=idempotent, max_in_flight=1 if ordered else 5, partitions=PARTITIONS, acks=-1,
                    retries=3, delivery_timeout_ms=120_000, request_timeout_ms=120_000,
                    before_sender=_replace_methods if mode == "method" else None)
        acc = h.accumulator
        if mode == "kernel":
            assert _releases(h.sender.completion) == (True, idempotent)
        elif mode == "method":
            assert _releases(h.sender.completion) == (False, False)
        account = acc.free.account
        log: list[tuple[Any, ...]] = []
        futures: list[FutureRecordMetadata] = []
        batches: list[Any] = []
        offsets: dict[TopicPartition, int] = {}
        waiters: list[_Waiter] = []
        states: list[State] = []
        for op in ops:
            kind = op[0]
            if kind == "append":
                _, p, n, with_cb, size = op
                for _ in range(n):
                    k = len(futures)

                    def cb(md: object, err: object, k: int = k) -> None:
                        log.append(("cb", k, md, None if err is None else type(err).__name__))

                    try:  # (an appender waiting ahead: memory is not taken past it, BufferExhaustedError at once)
                        r = acc.append(TOPIC, p, h.time.milliseconds(), None, b"v" * size, [], cb if with_cb else None,
                                       0, h.metadata)
                    except Exception as e:
                        log.append(("append", type(e).__name__))
                    else:
                        futures.append(r.future)
            elif kind == "run":
                h.run_once()
            elif kind == "respond":  # (a round first: what is ready goes out, and the oldest request is answered)
                h.run_once()
                oldest = h.client.pending()[0].body if h.client.pending() else None
                if isinstance(oldest, ProduceRequest):
                    parts: dict[TopicPartition, tuple[int, int]] = {}
                    for i, tp in enumerate(partitions_of(oldest)):
                        code = op[1][i % PARTITIONS]
                        parts[tp] = (code, offsets.get(tp, 0) if code == 0 else -1)
                        if code == 0:
                            offsets[tp] = offsets.get(tp, 0) + 100
                    h.client.respond(produce_response(parts))
                    h.run_once()
            elif kind == "time":
                h.time.sleep(op[1])
            elif kind == "waiter":
                with account.lock:
                    w = _Waiter(account.lock, len(waiters), log)
                    waiters.append(w)
                    account.waiters.append(w)
            elif kind == "unwait" and account.waiters:
                with account.lock:
                    account.waiters.popleft()
            batches.extend(b for lst in h.sender.in_flight_batches.values() for b in lst if b not in batches)
            tm = h.tm
            tps = [TopicPartition(TOPIC, i) for i in range(PARTITIONS)]
            states.append(State(
                [_outcome(f) for f in futures],
                list(log),
                acc.free.available_memory(),
                len(acc.incomplete_batches()),
                [(b.final_state, b.split, b.allocated_bytes) for b in batches],
                {tp: len(v) for tp, v in h.sender.in_flight_batches.items()},
                [(tm.last_acked_sequence(tp), tm.last_acked_offset(tp), tm.has_inflight_batches(tp)) for tp in tps]
                if tm is not None else None,
                len(h.produce_requests()),
            ))
        return states


@settings(max_examples=200, deadline=None)
@given(idempotent=st.booleans(), ordered=st.booleans(), ops=_ops)
def test_the_compiled_release_equals_the_reference(idempotent: bool, ordered: bool, ops: list[tuple[Any, ...]]) -> None:
    kernel = _run("kernel", idempotent, ordered, ops)
    assert kernel == _run("method", idempotent, ordered, ops)
    assert kernel == _run("reference", idempotent, ordered, ops)


def test_a_success_wakes_the_first_waiter_and_returns_the_memory() -> None:
    """Pinned: two batches answered at once with two appenders waiting: each release gives the batch's bytes back and
    wakes the first waiter (the kernel's release, no deallocate frame), as the reference."""
    ops: list[tuple[Any, ...]] = [
        ("append", 0, 3, False, 100), ("append", 1, 2, True, 50), ("run",), ("waiter",), ("waiter",),
        ("respond", [0, 0, 0]),
    ]
    kernel = _run("kernel", True, False, ops)
    assert kernel == _run("reference", True, False, ops)
    last = kernel[-1]
    assert all(o != "pending" for o in last.outcomes)
    assert last.incomplete == 0 and last.in_flight == {} and all(b[2] == 0 for b in last.batches)
    assert last.free == 1 << 22
    assert [e for e in last.log if e[0] == "wake"] == [("wake", 0), ("wake", 0)]


@pytest.mark.parametrize("idempotent", [False, True])
def test_the_kernel_releases_without_the_python_methods(idempotent: bool) -> None:
    """With the kernel, a success's completion calls none of RecordAccumulator.deallocate, BufferPool.deallocate and
    IdempotenceManager.handle_completed_batch (their functions are what the kernel compares with, so a spy on the class
    would be called: counted by a profile), and leaves the same state."""
    import sys

    calls: list[str] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_name in ("deallocate", "handle_completed_batch"):
            calls.append(frame.f_code.co_filename)

    with _kernel(True):
        h = Harness(partitions=PARTITIONS, acks=-1, idempotent=idempotent)
        tp = TopicPartition(TOPIC, 0)
        for round_ in range(2):  # (the partition's entry is made by the first answer's method)
            for _ in range(3):
                h.accumulator.append(TOPIC, 0, 0, None, b"v", [], None, 0, h.metadata)
            h.run_once()
            sys.setprofile(profile if round_ else None)
            try:
                h.client.respond(produce_response({tp: (0, 10 * round_)}))
                h.run_once()
            finally:
                sys.setprofile(None)
    assert calls == []
    assert not h.accumulator.has_incomplete() and h.accumulator.free.available_memory() == 1 << 22
    if h.tm is not None:
        assert (h.tm.last_acked_sequence(tp), h.tm.last_acked_offset(tp), h.tm.has_inflight_batches(tp)) == (5, 12, False)


def test_the_decision_is_taken_when_the_sender_is_built() -> None:
    """The Sender's completion does the bookkeeping itself only while the methods are the reference's when it is built:
    a subclass's override of ``handle_completed_batch`` or ``deallocate``, a pool whose ``deallocate`` is replaced,
    are called (the completion then holds no part of theirs)."""
    from pykafka_client.producer.buffer_pool import BufferPool
    from pykafka_client.producer.transaction_manager import TransactionManager

    class Manager(TransactionManager):
        def handle_completed_batch(self, batch: Any, base_offset: int) -> None:
            super().handle_completed_batch(batch, base_offset)

    class Accumulator(RecordAccumulator):
        def deallocate(self, batch: Any) -> None:
            super().deallocate(batch)

    with _kernel(True):
        assert _releases(Harness(idempotent=True).sender.completion) == (True, True)
        assert _releases(Harness().sender.completion) == (True, False)

        def manager(h: Harness) -> None:
            h.tm = Manager()
            h.tm.set_producer_id_and_epoch(1000, 0)

        assert _releases(Harness(before_sender=manager).sender.completion) == (True, False)

        def accumulator(h: Harness) -> None:
            h.accumulator.__class__ = Accumulator

        assert _releases(Harness(idempotent=True, before_sender=accumulator).sender.completion) == (False, True)

        def pool(h: Harness) -> None:
            free = h.accumulator.free
            free.deallocate = lambda size: BufferPool.deallocate(free, size)  # type: ignore[method-assign]  # a test's replacement of a method

        assert _releases(Harness(before_sender=pool).sender.completion) == (False, False)
    with _kernel(False):  # the accumulator's reference set and account: released by the method
        assert _releases(Harness(idempotent=True).sender.completion) == (False, True)


def test_no_instance_state_is_added_and_a_closed_sender_is_freed_by_refcount() -> None:
    """The completion adds no attribute to the accumulator, the pool or the manager (their instance dicts keep their
    keys: no per-response lookups through a materialized dict) and none to the slotted ProducerBatch and PartitionEntry;
    the Sender keeps it in a slot; it refers to nothing that refers to the Sender (not the accumulator, whose pool the
    producer gives the Sender's wake-up), so a Sender dropped is freed without the cyclic collector."""
    import gc
    import weakref

    from pykafka_client.producer.idempotence_manager import NONE, PartitionEntry
    from pykafka_client.producer.producer_batch import ProducerBatch

    with _kernel(True):
        h = Harness(idempotent=True, partitions=PARTITIONS)
        keys = [sorted(vars(o)) for o in (h.accumulator, h.accumulator.free, h.tm)]
        tp = TopicPartition(TOPIC, 0)
        for round_ in range(3):
            h.append(tp, b"v", 3)
            h.run_once()
            h.client.respond(produce_response({tp: (0, 10 * round_)}))
            h.run_once()
        assert not h.accumulator.has_incomplete() and h.tm is not None
        assert h.tm.last_acked_sequence(tp) == 8
        assert [sorted(vars(o)) for o in (h.accumulator, h.accumulator.free, h.tm)] == keys
        assert "completion" not in vars(h.sender)
        assert not hasattr(PartitionEntry(NONE), "__dict__")
        assert "__dict__" not in ProducerBatch.__slots__
        sender = weakref.ref(h.sender)
        h.client.sent.clear()  # (the mock client keeps the requests it sent, whose callbacks hold the Sender)
        gc.collect()
        gc.disable()
        try:
            del h
            assert sender() is None
        finally:
            gc.enable()
