"""The kernel's ``sender_send_round`` (the Sender's whole round of produce data in one call) == its reference,
``Sender.send_producer_data_reference``: three Senders given the same random operations (appends on four partitions
led by two nodes, time steps past linger and delivery.timeout.ms, broker answers with errors, throttled nodes, leader
moves and unknown leaders, flushes) answer the same after every step: the produce requests sent (partitions and
record bytes, in order), each poll's timeout, the futures' outcomes, the batches in flight, the muted partitions, the
next expiry, the metrics and the queues. One Sender runs the compiled round; one runs the reference with the rest of
the kernel (its accumulator's instance wraps ``ready``: the round declines to the reference); one runs without the
kernel (``PYKAFKA_NO_NATIVE=1``'s path)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from tests.doubles.responses import metadata_response
from tests.unit.producer.helpers import native_switched
from tests.unit.producer.sender_harness import TOPIC, Harness

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

PARTITIONS = 4
NONE, NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE, REQUEST_TIMED_OUT = 0, 6, 10, 7

_op = st.one_of(
    st.tuples(st.just("append"), st.integers(0, PARTITIONS - 1), st.integers(0, 1500), st.integers(1, 6)),
    st.tuples(st.just("append"), st.integers(0, PARTITIONS - 1), st.integers(0, 300), st.integers(1, 3)),
    st.tuples(st.just("respond"), st.sampled_from([NONE, NONE, NONE, NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE,
                                                   REQUEST_TIMED_OUT]), st.just(0), st.just(0)),
    st.tuples(st.just("tick"), st.integers(1, 900), st.just(0), st.just(0)),
    st.tuples(st.just("throttle"), st.integers(0, 1), st.integers(1, 400), st.just(0)),
    st.tuples(st.just("throttle"), st.integers(0, 1), st.integers(1, 400), st.just(0)),
    st.tuples(st.just("leaders"), st.integers(0, 2**PARTITIONS - 1), st.integers(0, 2**PARTITIONS - 1), st.just(0)),
    st.tuples(st.just("flush"), st.just(0), st.just(0), st.just(0)),
)


def _outcome(f: Any) -> Any:
    if not f.done():
        return "pending"
    if f.exception(0) is not None:
        return type(f.exception(0)).__name__
    md = f.result(0)
    return (md.partition, md.offset, md.serialized_value_size)


def _run(mode: str, ops: list[tuple[str, int, int, int]], idempotent: bool, max_in_flight: int, linger_ms: int) -> list[Any]:
    h = Harness(idempotent=idempotent, max_in_flight=max_in_flight, batch_size=2048, retry_backoff_ms=50,
                retry_backoff_max_ms=50, delivery_timeout_ms=1500, linger_ms=linger_ms, partitions=PARTITIONS)
    if mode == "declined":  # a wrapper on the instance: the compiled round runs the reference
        ready = h.accumulator.ready

        def wrapped_ready(metadata: Any, now_ms: int) -> Any:
            return ready(metadata, now_ms)

        h.accumulator.ready = wrapped_ready  # type: ignore[method-assign]  # a wrapper on the instance
    timeouts: list[int] = []
    poll = h.client.poll

    def recorded_poll(timeout_ms: int, now_ms: int) -> Any:
        timeouts.append(timeout_ms)
        return poll(timeout_ms, now_ms)

    h.client.poll = recorded_poll  # type: ignore[method-assign]  # a spy on the instance
    futures: list[Any] = []
    offsets: dict[TopicPartition, int] = {}
    steps: list[Any] = []
    for kind, a, b, c in ops:
        if kind == "append":
            futures += h.append(TopicPartition(TOPIC, a), bytes([a + 1]) * b, c)
        elif kind == "tick":
            h.time.sleep(a)
        elif kind == "throttle":
            h.client.throttle(h.brokers[a], b)
        elif kind == "leaders":  # a: which partitions node 1 leads, b: which have no leader
            leaders = {(TOPIC, p): -1 if b >> p & 1 else (1 if a >> p & 1 else 0) for p in range(PARTITIONS)}
            h.metadata.update(0, metadata_response(h.brokers, {TOPIC: PARTITIONS}, leaders=leaders), False,
                              h.time.hi_res_clock_ms())
        elif kind == "flush":
            h.accumulator.begin_flush()
        elif h.client.has_in_flight_request():
            h.respond_oldest(a, offsets)
        h.run_once()
        if kind == "flush":
            h.accumulator.end_flush()
        steps.append((
            timeouts[-1] if timeouts else None,
            {tp: [b.record_count for b in lst] for tp, lst in h.sender.in_flight_batches.items()},
            [h.accumulator.is_muted(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)],
            h.accumulator.next_expiry_time_ms(),
            asdict(h.sender.metrics),
            sorted((str(tp), n) for tp, n in h.accumulator.queue_sizes().items()),
            [_outcome(f) for f in futures],
            h.metadata.update_requested(),
            h.metadata.topics_to_request(),
        ))
    requests = [
        [(t.name, p.index, bytes(p.records)) for t in body.topic_data for p in t.partition_data]  # type: ignore[arg-type]  # records: bytes-like
        for body in h.produce_requests()
    ]
    return [requests, steps]


@settings(max_examples=150, deadline=None)
@example(  # a throttled node's delay is the poll timeout
    ops=[("append", 0, 10, 1), ("tick", 1, 0, 0), ("throttle", 0, 300, 0), ("append", 0, 10, 1), ("tick", 5, 0, 0)],
    idempotent=False, max_in_flight=5, linger_ms=0,
)
@example(  # an unknown leader: the topic's metadata update is requested
    ops=[("leaders", 0, 1, 0), ("append", 0, 10, 1), ("append", 1, 10, 1), ("tick", 5, 0, 0)],
    idempotent=True, max_in_flight=1, linger_ms=0,
)
@example(  # queued and in-flight batches expire
    ops=[("append", 0, 10, 2), ("throttle", 1, 400, 0), ("append", 1, 10, 1), ("tick", 900, 0, 0),
         ("tick", 900, 0, 0), ("respond", 0, 0, 0)],
    idempotent=True, max_in_flight=5, linger_ms=200,
)
@given(
    ops=st.lists(_op, min_size=1, max_size=30),
    idempotent=st.booleans(),
    max_in_flight=st.sampled_from([1, 5]),
    linger_ms=st.sampled_from([0, 200]),
)
def test_the_compiled_round_equals_its_reference(
    ops: list[tuple[str, int, int, int]], idempotent: bool, max_in_flight: int, linger_ms: int
) -> None:
    with native_switched(True):
        compiled = _run("compiled", ops, idempotent, max_in_flight, linger_ms)
        declined = _run("declined", ops, idempotent, max_in_flight, linger_ms)
    with native_switched(False):
        reference = _run("reference", ops, idempotent, max_in_flight, linger_ms)
    assert compiled == declined
    assert compiled == reference


def test_the_round_runs_compiled_and_declines_for_a_wrapped_accumulator() -> None:
    """The compiled round calls none of the accumulator's Python round methods; a wrapper on the instance is called
    (the reference runs the round)."""
    h = Harness(partitions=PARTITIONS)
    calls: list[str] = []
    reference = h.sender.send_producer_data_reference

    def recorded_reference(snapshot: Any, now: int) -> int:
        calls.append("reference")
        return reference(snapshot, now)

    h.sender.send_producer_data_reference = recorded_reference  # type: ignore[method-assign]  # a spy on the instance
    h.append(TopicPartition(TOPIC, 0), b"x", 3)
    with native_switched(True):
        h.run_once()
        assert calls == [] and len(h.produce_requests()) == 1
        drain = h.accumulator.drain

        def recorded_drain(*args: Any) -> Any:
            calls.append("drain")
            return drain(*args)

        h.accumulator.drain = recorded_drain  # type: ignore[method-assign,assignment]  # a spy taking any arguments
        h.append(TopicPartition(TOPIC, 1), b"y", 2)
        h.run_once()
    assert calls == ["reference", "drain"] and len(h.produce_requests()) == 2
