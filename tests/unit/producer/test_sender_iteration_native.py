"""The kernel's ``SenderIteration`` (``records/kernel/sender_send_round.c.h``: ``Sender.run_once`` in one call, the
Sender's ``run_once`` with the kernel) against its reference, the class's ``run_once``: the same random operations
(appends, time steps, broker answers, a producer id lost and found again, wake-ups, the kernel switched off) on a
Sender whose ``run_once`` is the kernel's and on one running the class's method give the same requests, polls (their
timeouts and times), futures, wake-up flags and metrics; and what it holds, declines and reads."""

from __future__ import annotations

import gc
import time as _time
import weakref
from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer.idempotence_manager import (
    NO_PRODUCER_ID,
    SETTLED_PARTS,
    IdempotenceManager,
    ProducerIdAndEpoch,
)
from pykafka_client.producer.sender import Sender
from pykafka_client.producer.transaction_manager import TransactionManager
from pykafka_client.producer.transaction_state import State
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import SystemTime
from tests.doubles.responses import metadata_response
from tests.unit.producer.helpers import native_switched
from tests.unit.producer.sender_harness import TOPIC, Harness

kernel = _native.loaded_kernel()
pytestmark = pytest.mark.skipif(kernel is None, reason="the compiled record kernel is not built")

_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 1), st.integers(1, 600)),
        st.tuples(st.just("tick"), st.sampled_from([1, 5, 50, 400]), st.just(0)),
        st.tuples(st.just("respond"), st.sampled_from([0, 0, 6]), st.just(0)),
        st.tuples(st.just("wakeup"), st.just(0), st.just(0)),
        st.tuples(st.just("lose_pid"), st.just(0), st.just(0)),
        st.tuples(st.just("off"), st.just(0), st.just(0)),
    ),
    min_size=1,
    max_size=30,
)


def _run(compiled: bool, ops: list[tuple[str, int, int]], idempotent: bool) -> list[Any]:
    h = Harness(idempotent=idempotent, batch_size=1024, linger_ms=5, retry_backoff_ms=20, retry_backoff_max_ms=20,
                partitions=2)
    if compiled:
        assert "run_once" in vars(h.sender)  # the kernel's
    else:
        vars(h.sender).pop("run_once")  # the class's method, the reference
    polls: list[tuple[int, int]] = []
    poll = h.client.poll

    def recorded_poll(timeout_ms: int, now_ms: int) -> Any:
        polls.append((timeout_ms, now_ms))
        return poll(timeout_ms, now_ms)

    h.client.poll = recorded_poll  # type: ignore[method-assign]  # a spy on the instance
    futures: list[Any] = []
    steps: list[Any] = []
    offsets: dict[TopicPartition, int] = {}
    for kind, a, b in ops:
        off = False
        if kind == "append":
            futures += h.append(TopicPartition(TOPIC, a), b"v" * b)
        elif kind == "tick":
            h.time.sleep(a)
        elif kind == "respond" and h.client.has_in_flight_request():
            h.respond_oldest(a, offsets)
        elif kind == "wakeup":
            h.sender.wakeup()
        elif kind == "lose_pid" and h.tm is not None:  # the epoch to bump: not settled until the Sender bumps it
            h.tm.request_epoch_bump_for_partition(TopicPartition(TOPIC, 0))
        elif kind == "off":
            off = True
        with native_switched(not off):
            h.run_once()
        steps.append((
            list(polls), h.sender.wakeup_pending, asdict(h.sender.metrics),
            [f.done() and (f.exception(0) is None) for f in futures],
            None if h.tm is None else h.tm.is_settled(),
        ))
    requests = [[(t.name, p.index, bytes(p.records)) for t in body.topic_data for p in t.partition_data]  # type: ignore[arg-type]  # records: bytes-like
                for body in h.produce_requests()]
    return [requests, steps]


@settings(max_examples=100, deadline=None)
@given(_OPS, st.booleans())
def test_the_kernel_s_run_once_does_what_the_class_s_does(ops: list[tuple[str, int, int]], idempotent: bool) -> None:
    with native_switched(True):
        compiled = _run(True, ops, idempotent)
        reference = _run(False, ops, idempotent)
    assert compiled == reference


def test_run_once_is_the_kernel_s_and_the_sender_is_freed_by_refcount() -> None:
    h = Harness()
    run_once = h.sender.run_once
    assert type(run_once.__self__).__name__ == "SenderIteration"  # type: ignore[attr-defined]  # the kernel's bound
    ref = weakref.ref(h.sender)
    gc.collect()
    gc.disable()
    try:
        del h
        assert ref() is None  # no cycle through the iteration: freed by refcount
    finally:
        gc.enable()
    with pytest.raises(ReferenceError):
        run_once()


def test_a_subclass_overriding_run_once_keeps_its_own() -> None:
    class Counting(Sender):
        def run_once(self) -> None:
            super().run_once()

    h = Harness(before_sender=lambda h: None)
    s = Counting(h.client, h.metadata, h.accumulator, guarantee_message_order=False, max_request_size=1 << 20, acks=-1,
                 retries=3, request_timeout_ms=1000, retry_backoff_ms=10, time=h.time)
    assert "run_once" not in vars(s)


def test_the_system_clock_is_read_as_the_reference_reads_it() -> None:
    h = Harness()
    h.sender.time = SystemTime()
    polls: list[int] = []
    h.client.poll = lambda timeout_ms, now_ms: polls.append(now_ms) or []  # type: ignore[method-assign,func-returns-value]
    before = _time.monotonic_ns() // 1_000_000
    h.sender.run_once()
    after = _time.monotonic_ns() // 1_000_000
    assert len(polls) == 1 and before <= polls[0] <= after


def test_an_unsettled_manager_s_spent_iteration_ends_it() -> None:
    h = Harness(idempotent=True, with_producer_id=False)
    h.append(TopicPartition(TOPIC, 0), b"x")
    polls: list[int] = []
    poll = h.client.poll

    def counted(timeout_ms: int, now_ms: int) -> Any:
        polls.append(timeout_ms)
        return poll(timeout_ms, now_ms)

    h.client.poll = counted  # type: ignore[method-assign]
    h.sender.run_once()  # InitProducerId sent (and polled): no round in this iteration, the batch stays queued
    assert h.produce_requests() == [] and h.client.has_in_flight_request() and len(polls) == 1
    assert h.tm is not None and not h.tm.is_settled()


def test_an_error_of_the_round_propagates() -> None:
    h = Harness()

    def failing_poll(timeout_ms: int, now_ms: int) -> Any:
        raise RuntimeError("the poll failed")

    h.client.poll = failing_poll  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="the poll failed"):
        h.sender.run_once()


# (weighted towards settled: each field on its own makes the answer False)
_SETTLED_FIELDS = st.fixed_dictionaries({
    "_state": st.sampled_from([State.READY] * len(State) + list(State)),
    "transactional_id": st.sampled_from([None, None, None, "t"]),
    "_unresolved": st.sampled_from([{}, {}, {}, {TopicPartition(TOPIC, 0): 3}]),
    "_epoch_bump_required": st.sampled_from([False, False, False, True]),
    "_pid_reset_required": st.sampled_from([False, False, False, True]),
    "init_producer_id_in_flight": st.sampled_from([False, False, False, True]),
    "_pid_epoch": st.sampled_from([ProducerIdAndEpoch(NO_PRODUCER_ID, -1), ProducerIdAndEpoch(7, 0),
                                   ProducerIdAndEpoch(7, 3)]),
})


@settings(max_examples=300, deadline=None)
@given(_SETTLED_FIELDS, st.booleans())
def test_idempotence_settled_answers_as_is_settled(fields: dict[str, Any], transactional: bool) -> None:
    assert kernel is not None
    tm = TransactionManager("t" if transactional else None)
    for name, value in fields.items():
        setattr(tm, name, value)
    assert kernel.idempotence_settled(tm, SETTLED_PARTS) is tm.is_settled()


def test_idempotence_settled_calls_an_override_or_a_replacement() -> None:
    assert kernel is not None

    class Never(IdempotenceManager):
        def is_settled(self) -> bool:
            return False

    settled = IdempotenceManager()
    settled.set_producer_id_and_epoch(7, 0)
    assert settled.is_settled() and kernel.idempotence_settled(settled, SETTLED_PARTS)
    never = Never()
    never.set_producer_id_and_epoch(7, 0)
    assert not kernel.idempotence_settled(never, SETTLED_PARTS)
    settled.is_settled = lambda: False  # type: ignore[method-assign]  # replaced on the instance
    assert not kernel.idempotence_settled(settled, SETTLED_PARTS)
    with pytest.raises(TypeError):
        kernel.idempotence_settled(settled, (1, 2))


def _counted(retain: Any, calls: list[int]) -> Any:
    def counted(now_ms: int) -> Any:
        calls.append(now_ms)
        return retain(now_ms)

    return counted


@pytest.mark.parametrize("replaced", [False, True])
def test_the_metadata_step_forgets_idle_topics_as_the_reference(replaced: bool) -> None:
    """The round's metadata step (ProducerMetadata.retain_topics_and_fetch_snapshot's work in the kernel, or the method
    replaced on the instance, called): a topic idle past metadata.max.idle.ms forgotten at the same iteration."""
    seen: list[list[Any]] = []
    for compiled in (True, False):
        h = Harness()
        if not compiled:
            vars(h.sender).pop("run_once")
        calls: list[int] = []
        if replaced:
            h.metadata.retain_topics_and_fetch_snapshot = _counted(  # type: ignore[method-assign]
                h.metadata.retain_topics_and_fetch_snapshot, calls
            )
        h.metadata.metadata_idle_ms = 100
        h.metadata.add("idle-topic", h.time.hi_res_clock_ms())
        stale = h.metadata.index  # (an index of an older cluster: the step builds the current one)
        h.metadata.update(0, metadata_response(h.brokers, {TOPIC: 2}), False, h.time.hi_res_clock_ms())
        h.metadata.index = stale
        steps = []
        for tick in (10, 60, 30, 1, 200):  # (at 100 the idle topic's expiry exactly)
            h.time.sleep(tick)
            with native_switched(compiled):  # (the reference: the Python round, retain_topics_and_fetch_snapshot)
                h.run_once()
            steps.append((h.metadata.contains_topic("idle-topic"), h.metadata.contains_topic(TOPIC),
                          h.metadata.index is stale))
        seen.append([steps, len(calls)])
    assert seen[0] == seen[1]
    assert seen[0][0][0] == (True, True, False) and seen[0][0][-1] == (False, True, False)  # (TOPIC: its own idle time)
    assert seen[0][1] == (5 if replaced else 0)
