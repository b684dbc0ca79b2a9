"""The GIL hand-off from ``send()``'s kernel path to the producer's I/O thread (the kernel's ``GilHandoff``).

The I/O thread's wait in the Selector publishes its state (running, waiting in select, select returned and wanting
the GIL) and whether the broker had nothing in flight; ``send()``'s path, at a new batch only, releases the GIL until
the I/O thread's next wait when that thread wants the GIL and either the broker is idle or the request it would build
is full (``RecordAccumulator.request_full``). Driven here by publishing the state by hand (``_set_state``) with a
zero wait bound: no I/O thread, no timing.
"""

from __future__ import annotations

import functools
import random
import selectors
import socket
from typing import Any

import pytest

from pykafka_client import KafkaProducer
from pykafka_client.network.transport.selector import Selector
from pykafka_client.producer.producer_metadata import CLUSTER_ATTRIBUTE
from pykafka_client.producer.sender import WAKEUP_PENDING_ATTRIBUTE, IoRunner, Sender
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.responses import metadata_response, nodes
from tests.unit.producer.test_send_batch import _IdleRunner

handoff_type = getattr(_native.loaded_kernel(), "GilHandoff", None)
pytestmark = pytest.mark.skipif(handoff_type is None, reason="no compiled kernel with GilHandoff (Linux only)")

TOPIC = "t"
RUNNING, WAITING, WANTS = 0, 1, 2


def _idle(sender: Sender, client_id: str) -> IoRunner:
    return _IdleRunner()


#: every producer's clock (none advances it)
_TIME = MockTime()


def _producer(partitions: int, leaders: dict[tuple[str, int], int] | None = None, **config: Any) -> KafkaProducer:
    time = _TIME
    previous = _native.use_native(True)
    try:
        p = KafkaProducer(
            {"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": False, "linger.ms": 5, **config},
            time=time, io_runner=_idle,
        )
    finally:
        _native.use_native(previous)
    p.accumulator._rng = random.Random(1)
    now = time.hi_res_clock_ms()
    p.metadata.add(TOPIC, now)
    p.metadata.update(
        0,
        metadata_response(
            nodes(2), {TOPIC: partitions}, leaders=leaders or {(TOPIC, i): 0 for i in range(partitions)}
        ),
        False,
        now,
    )
    return p


class _Rule:
    """A ``request_full`` that records its calls and answers ``full``."""

    def __init__(self, full: bool) -> None:
        self.full = full
        self.calls: list[tuple[str, int]] = []

    def __call__(self, topic: str, partition: int) -> bool:
        self.calls.append((topic, partition))
        return self.full


@pytest.mark.parametrize(
    ("state", "idle", "full", "expected", "asked"),
    [
        (RUNNING, True, True, False, False),  # the I/O thread holds the GIL or runs: nothing to hand over
        (WAITING, True, True, False, False),  # it waits in select: it does not want the GIL
        (WANTS, True, False, True, False),  # the broker idles: hand over whatever the request
        (WANTS, False, True, True, True),  # the broker is busy and the request is full
        (WANTS, False, False, False, True),  # busy and the request could still grow: keep the GIL
    ],
)
def test_the_rule(state: int, idle: bool, full: bool, expected: bool, asked: bool) -> None:
    assert handoff_type is not None
    h = handoff_type()
    h._set_state(state, idle)
    rule = _Rule(full)
    assert h.decide(rule, TOPIC, 3) is expected
    assert rule.calls == ([(TOPIC, 3)] if asked else [])
    assert h.state == state and h.idle is idle


def _send_records(p: KafkaProducer, handoff: Any, rule: _Rule, n: int) -> tuple[int, int]:
    """``n`` records through the kernel's SendRecord bound to a wake-up tuple with ``handoff`` and ``rule``; returns
    (batches opened, hand-offs made)."""
    send_record = p.accumulator.send_record
    assert send_record is not None
    wakeup = (p.sender, WAKEUP_PENDING_ATTRIBUTE, p.sender.wakeup, handoff, rule)
    fn = send_record(_TIME.milliseconds, (), p.metadata, 1 << 20, False, wakeup, _TIME.hi_res_clock_ms, None,
                     (p.metadata, CLUSTER_ATTRIBUTE))
    p.send(TOPIC, b"v" * 100, None, 0)  # the partition's first record (its queue made): the Python path
    opened = 0
    before_yields = handoff.yields
    for _ in range(n):
        before = len(p.accumulator.batches_for(TopicPartition(TOPIC, 0)))
        f = fn(TOPIC, 0, None, None, b"v" * 100, None)
        assert f is not NotImplemented
        after = len(p.accumulator.batches_for(TopicPartition(TOPIC, 0)))
        opened += after - before
    return opened, handoff.yields - before_yields


@pytest.mark.parametrize(
    ("state", "idle", "full", "yields_per_batch", "asked_per_batch"),
    [
        (RUNNING, True, True, 0, 0),
        (WAITING, False, True, 0, 0),
        (WANTS, True, False, 1, 0),
        (WANTS, False, True, 1, 1),
        (WANTS, False, False, 0, 1),
    ],
)
def test_send_hands_over_at_new_batches_only(
    state: int, idle: bool, full: bool, yields_per_batch: int, asked_per_batch: int
) -> None:
    """The kernel's send path applies the rule once per batch it opens (none for a record into the open batch), and
    asks ``request_full`` only when the I/O thread wants the GIL and the broker is busy."""
    assert handoff_type is not None
    p = _producer(1, None, **{"batch.size": 1024})
    try:
        h = handoff_type(max_wait_us=0)
        h._set_state(state, idle)
        rule = _Rule(full)
        opened, yields = _send_records(p, h, rule, 40)  # ~8 records a batch
        assert opened >= 4
        assert yields == yields_per_batch * opened
        assert rule.calls == [(TOPIC, 0)] * (asked_per_batch * opened)
        assert h.state == state  # the hand-off does not change what the I/O thread published
        assert len(p.accumulator.batches_for(TopicPartition(TOPIC, 0))) == 1 + opened  # (the first: Python's)
    finally:
        p.close(0)


def _offer_through(p: KafkaProducer, handoff: Any, rule: _Rule) -> None:
    """Both of send_batch's new-batch paths bound to ``handoff`` and ``rule``, as a producer with its own I/O thread
    binds them: ``_handoff_offer`` (the Python append's) and the wake-up tuple of ``_send_record`` (send()'s compiled
    call, which opens send_batch's new batches with the kernel)."""
    p._handoff_offer = functools.partial(handoff.offer, rule)
    send_record = p.accumulator.send_record
    assert send_record is not None
    wakeup = (p.sender, WAKEUP_PENDING_ATTRIBUTE, p.sender.wakeup, handoff, rule)
    p._send_record = send_record(_TIME.milliseconds, (), p.metadata, 1 << 20, False, wakeup, _TIME.hi_res_clock_ms,
                                 None, (p.metadata, CLUSTER_ATTRIBUTE))


@pytest.mark.parametrize(("state", "idle", "full", "yields_per_batch"), [(RUNNING, True, True, 0), (WANTS, True, False, 1),
                                                                       (WANTS, False, True, 1), (WANTS, False, False, 0)])
def test_send_batch_offers_at_its_new_batches(state: int, idle: bool, full: bool, yields_per_batch: int) -> None:
    """send_batch applies the same rule at each batch it opens (``KafkaProducer._handoff_offer``)."""
    assert handoff_type is not None
    p = _producer(1, None, **{"batch.size": 1024})
    try:
        h = handoff_type(max_wait_us=0)
        h._set_state(state, idle)
        rule = _Rule(full)
        _offer_through(p, h, rule)
        p.send_batch(TOPIC, [b"v" * 100] * 40, partition=0)
        opened = len(p.accumulator.batches_for(TopicPartition(TOPIC, 0)))
        assert opened >= 5
        assert h.yields == yields_per_batch * opened
        assert len(rule.calls) == (opened if state == WANTS and not idle else 0)
    finally:
        p.close(0)


def test_send_batch_asks_the_rule_about_the_sticky_partition_the_records_went_to() -> None:
    """Without a partition (keyless records: the sticky partitioner), ``request_full`` is asked about the partition
    each new batch was opened for, never about UNKNOWN_PARTITION (-1, which has no leader)."""
    assert handoff_type is not None
    p = _producer(3, None, **{"batch.size": 1024})
    try:
        h = handoff_type(max_wait_us=0)
        h._set_state(WANTS, False)
        rule = _Rule(False)
        _offer_through(p, h, rule)
        p.send_batch(TOPIC, [b"v" * 100] * 60)
        opened = {tp.partition: len(p.accumulator.batches_for(tp)) for tp in map(TopicPartition, [TOPIC] * 3, range(3))}
        assert sum(opened.values()) >= 6 and len(rule.calls) == sum(opened.values())
        assert {part for _, part in rule.calls} == {part for part, n in opened.items() if n}
        assert all(0 <= part < 3 for _, part in rule.calls)
    finally:
        p.close(0)


def test_a_wake_up_tuple_without_a_handoff_is_unchanged() -> None:
    """The 3-item wake-up tuple (no hand-off: the pure-Python selector wait, the async producer) still wakes the
    Sender at a new batch."""
    p = _producer(1, None, **{"batch.size": 1024})
    try:
        calls: list[None] = []
        wakeup = (p.sender, WAKEUP_PENDING_ATTRIBUTE, lambda: calls.append(None))
        send_record = p.accumulator.send_record
        assert send_record is not None
        fn = send_record(_TIME.milliseconds, (), p.metadata, 1 << 20, False, wakeup, _TIME.hi_res_clock_ms, None,
                         (p.metadata, CLUSTER_ATTRIBUTE))
        p.send(TOPIC, b"v" * 100, None, 0)
        p.sender._wakeup_pending = False  # (no I/O thread clears it)
        for _ in range(20):
            assert fn(TOPIC, 0, None, None, b"v" * 100, None) is not NotImplemented
        assert calls
    finally:
        p.close(0)


def _fill(p: KafkaProducer, partition: int, batches: int) -> None:
    """Records into ``partition`` until it holds ``batches`` batches (every one but the last full)."""
    tp = TopicPartition(TOPIC, partition)
    while len(p.accumulator.batches_for(tp)) < batches:
        p.send(TOPIC, b"v" * 100, None, partition)


def test_request_full_one_partition() -> None:
    """On one partition the request is full as soon as any batch is full (a second one was opened)."""
    p = _producer(1, None, **{"batch.size": 1024})
    try:
        assert p.accumulator.request_full(p.metadata, TOPIC, 0) is False  # no queue yet
        _fill(p, 0, 1)
        assert p.accumulator.request_full(p.metadata, TOPIC, 0) is False  # one batch with room
        _fill(p, 0, 2)
        assert p.accumulator.request_full(p.metadata, TOPIC, 0) is True
        assert p.accumulator.request_full(p.metadata, "other", 0) is False
    finally:
        p.close(0)


def test_request_full_counts_every_partition_of_the_same_leader() -> None:
    """Every partition of the topic with a queue and the same leader needs a full batch; another node's do not count
    (its requests are another connection's)."""
    leaders = {(TOPIC, 0): 0, (TOPIC, 1): 0, (TOPIC, 2): 1}
    p = _producer(3, leaders, **{"batch.size": 1024})
    try:
        _fill(p, 0, 2)
        _fill(p, 1, 1)
        _fill(p, 2, 1)
        # partition 1 (same leader) has a batch with room
        assert p.accumulator.request_full(p.metadata, TOPIC, 0) is False
        _fill(p, 1, 2)
        # partition 2's batch has room, but node 1 leads it
        assert p.accumulator.request_full(p.metadata, TOPIC, 0) is True
        assert p.accumulator.request_full(p.metadata, TOPIC, 2) is False
        _fill(p, 2, 2)
        assert p.accumulator.request_full(p.metadata, TOPIC, 2) is True
    finally:
        p.close(0)


def test_selector_handoff_only_with_the_kernel() -> None:
    s = Selector()
    try:
        previous = _native.use_native(False)
        try:
            assert s.enable_gil_handoff() is None  # PYKAFKA_NO_NATIVE=1: today's wait
        finally:
            _native.use_native(previous)
        h = s.enable_gil_handoff()
        assert h is not None and s.enable_gil_handoff() is h
    finally:
        s.close()


def test_selector_poll_publishes_the_wait() -> None:
    """A blocking poll enters a wait (the generation a hand-off waits for moves on) and ends running, the broker
    idle with nothing in flight; a zero-timeout poll is a look that keeps the GIL (no wait entered)."""
    s = Selector()
    try:
        h = s.enable_gil_handoff()
        assert h is not None
        g = h.generation
        s.wakeup()
        assert s.poll(60_000) == 0  # returns at once: the wake-up is ready
        assert (h.generation, h.state, h.idle) == (g + 1, RUNNING, True)
        s.poll(0)
        assert h.generation == g + 1
    finally:
        s.close()


def test_wakeup_through_the_handoff() -> None:
    """Selector.wakeup writes its byte through GilHandoff.wake (GIL kept): a poll returns at once, many wake-ups
    before it are one; after close() a wake-up is ignored (its socket has no descriptor then)."""
    s = Selector()
    h = s.enable_gil_handoff()
    assert h is not None
    for _ in range(3):
        s.wakeup()
    g = h.generation
    s.poll(60_000)
    assert h.generation == g + 1
    # the poll drained the wake-ups
    with pytest.raises(BlockingIOError):
        s._wakeup_r.recv(16)
    s.close()
    s.wakeup()


def test_handoff_select_equals_epoll_selector_select() -> None:
    """The same (key, events) pairs as EpollSelector.select: read and write interest, ready or not."""
    assert handoff_type is not None
    h = handoff_type()
    sel = selectors.EpollSelector()
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        a, b = pairs[0]
        sel.register(a, selectors.EVENT_READ, "r-ready")
        b.send(b"x")
        c, _ = pairs[1]
        sel.register(c, selectors.EVENT_READ | selectors.EVENT_WRITE, "rw")
        e, f = pairs[2]
        sel.register(e, selectors.EVENT_READ, "r-idle")
        fd_to_key = dict(sel.get_map())
        expected = sorted((k.data, ev) for k, ev in sel.select(0))
        assert expected == [("r-ready", selectors.EVENT_READ), ("rw", selectors.EVENT_WRITE)]
        for timeout_ms in (0, 1000):
            got = sorted((k.data, ev) for k, ev in h.select(sel.fileno(), fd_to_key, timeout_ms, -1, 0))
            assert got == expected
        f.close()  # a hang-up: readable, as EpollSelector reports it
        expected = sorted((k.data, ev) for k, ev in sel.select(0))
        assert sorted((k.data, ev) for k, ev in h.select(sel.fileno(), fd_to_key, 0, -1, 0)) == expected
        # idle: in flight no more than the readable connections (wakeup_fd aside)
        # idle: no more in flight than readable connections (e's hang-up; a is named the wake-up descriptor and c
        # is only writable)
        h.select(sel.fileno(), fd_to_key, 1000, a.fileno(), 1)
        assert h.idle is True
        h.select(sel.fileno(), fd_to_key, 1000, a.fileno(), 2)
        assert h.idle is False
    finally:
        sel.close()
        for x, y in pairs:
            x.close()
            y.close()


def test_the_producer_enables_the_handoff_with_its_io_thread_only() -> None:
    previous = _native.use_native(True)
    try:
        p = KafkaProducer({"bootstrap.servers": "127.0.0.1:9"})
        q = KafkaProducer({"bootstrap.servers": "127.0.0.1:9"}, io_runner=_idle)
    finally:
        _native.use_native(previous)
    try:
        sp, sq = p.sender.pollable_selector, q.sender.pollable_selector
        assert sp is not None and sq is not None
        assert sp.gil_handoff is not None and p._handoff_offer is not None
        assert sq.gil_handoff is None and q._handoff_offer is None
    finally:
        p.close(0)
        q.close(0)

