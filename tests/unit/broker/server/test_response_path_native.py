"""A broker Processor's response path in the kernel (#27, h/brknet) against its reference:

* ``new_send_response`` (the kernel's slots constructor of the slotted SendResponse, whose slots are partly its base
  NetworkSend's) builds what ``SendResponse(...)`` builds;
* ``ProcessorResponsePath`` (``records/kernel/broker_response_path.c.h``) sends and completes the common SendResponse
  as ``Processor._process_new_responses`` and ``_response_sent`` do: the same random operation sequences (requests
  muting their channels, answers of every kind and size, a closed connection, frames pending or read ahead, the
  read-ahead budget, a callback that raises, the request logger at DEBUG, metrics off) on two processors, each over a
  real server Selector and socket pairs, one with the compiled path and one without, give the same bytes on the wire,
  mute states, in-flight and ready connections, frames read, request metrics, frame releases and log lines."""

from __future__ import annotations

import collections
import gc
import logging
import socket
import struct
import weakref
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_broker.config import KafkaConfig
from mini_broker.metrics import BrokerMetrics
from mini_broker.network.connection_quotas import ConnectionQuotas
from mini_broker.network.processor import Processor, _Conn
from mini_broker.network.request_channel import (
    CloseConnectionResponse,
    NoOpResponse,
    Request,
    RequestChannel,
    RequestContext,
    Response,
    SendResponse,
    _new_send_response_reference,
    new_send_response,
)
from mini_broker.server.apis import api_versions
from mini_broker.server.kafka_apis import KafkaApis, request_log
from pykafka_client.network.transport.channel_builder import DefaultChannelBuilder, Mode
from pykafka_client.network.transport.memory_pool import SimpleMemoryPool
from pykafka_client.network.transport.selectable import NetworkReceive
from pykafka_client.network.transport.selector import Selector
from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import MockTime
from tests.doubles.socket_pairs import drain, register_pair
from tests.unit.lockstep import run_in_lockstep

kernel = _native.loaded_kernel()
pytestmark = pytest.mark.skipif(kernel is None, reason="the kernel is not built")

IDS = ["0", "1"]
SEND_BUFFER = 4096


def _request(cid: str, api_key: int = 18, correlation_id: int = 7) -> Request:
    ctx = RequestContext(api_key, 3, correlation_id, "client", cid, "1.2.3.4:5", "PLAINTEXT")
    return Request(0, ctx, None, 10, 1_000)


def _slots(resp: SendResponse) -> tuple[Any, ...]:
    return (resp.request, resp.destination, resp.buffers, resp.size, resp.written, resp.extra, resp.body,
            resp.on_complete)


@given(st.text(max_size=8), st.lists(st.binary(max_size=5), max_size=3), st.integers(0, 2**40),
       st.sampled_from([None, "body", 3]), st.booleans())
def test_new_send_response_builds_what_send_response_builds(cid: str, buffers: list[object], size: int, body: object,
                                                            callback: bool) -> None:
    request = _request(cid)
    on_complete = (lambda: None) if callback else None
    made = new_send_response(request, cid, buffers, size, 0, None, body, on_complete)
    reference = _new_send_response_reference(request, cid, buffers, size, 0, None, body, on_complete)
    assert type(made) is SendResponse
    assert _slots(made) == _slots(reference) == _slots(SendResponse(request, buffers, size, body, on_complete))
    assert not hasattr(made, "__dict__") and repr(made) == repr(reference)


def test_the_kernel_builds_send_responses_and_frees_what_they_hold() -> None:
    assert kernel is not None
    assert new_send_response is not _new_send_response_reference

    class Body:
        pass

    body = Body()
    gone = weakref.ref(body)
    resp = new_send_response(_request("c"), "c", [b"x"], 1, 0, None, body, None)
    del body
    assert gone() is not None
    del resp
    gc.collect()
    assert gone() is None
    with pytest.raises(TypeError):
        new_send_response(_request("c"), "c", [b"x"], 1)  # every slot's value is required


class World:
    """A Processor (KafkaApis as its parser, request metrics on) over a server Selector with a memory pool and two
    connections over socket pairs; ``compiled``: its kernel response path, else none (the reference's loop)."""

    def __init__(self, compiled: bool) -> None:
        self.time = MockTime(auto_tick_ms=1)  # (every read moves it: each time a response's metrics take shows)
        self.metrics = BrokerMetrics(self.time)
        config = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0"})
        self.channel = RequestChannel(10)
        self.apis = KafkaApis(self.channel, [api_versions.API], None, self.metrics, self.time)
        self.pool = SimpleMemoryPool(1 << 20)
        self.selector = Selector(time=self.time, channel_builder=DefaultChannelBuilder(Mode.SERVER),
                                 max_receive_size=3000, memory_pool=self.pool, skip_wait_when_buffered=True)
        quotas = ConnectionQuotas(10)
        self.proc = Processor(0, config.listeners[0], config, self.channel, quotas, self.apis, self.selector,
                              self.time, self.metrics)
        self.channel.add_processor(0, self.proc)
        assert self.proc._compiled_responses is not None
        if not compiled:
            self.proc._compiled_responses = None
        self.peers: dict[str, socket.socket] = {}
        self.received: dict[str, bytearray] = {cid: bytearray() for cid in IDS}
        self.events: list[tuple[str, str]] = []
        for cid in IDS:
            self.peers[cid] = register_pair(self.selector, cid, SEND_BUFFER)
            quotas.inc("1.2.3.4")
            self.proc._conns[cid] = _Conn(cid, "1.2.3.4", "1.2.3.4:5")

    def drain(self, cid: str) -> None:
        drain(self.peers[cid], self.received[cid])

    def state(self) -> Any:
        p, s = self.proc, self.selector
        for cid in IDS:
            self.drain(cid)
        return (
            {k: bytes(v) for k, v in self.received.items()},
            sorted(p._inflight), list(p._ready), p.read_ahead_budget, sorted(p._conns),
            [(cid, None if (c := p._conns.get(cid)) is None else
              (len(c.pending or ()), c.inflight_release is not None)) for cid in IDS],
            [(cid, None if (ch := s.channel(cid)) is None else (ch.mute_state, ch.bytes_sent)) for cid in IDS],
            [(r.source, bytes(r.payload)) for r in s.completed_receives()],
            self.metrics.snapshot(), list(self.events), (self.pool.available, self.pool.refused_total),
        )

    def close(self) -> None:
        self.selector.close()
        for peer in self.peers.values():
            peer.close()


class Later(SendResponse):
    """A SendResponse subclass: the reference's loop takes it."""

    __slots__ = ()


_ID = st.sampled_from([0, 0, 1])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("request"), _ID, st.integers(0, 3), st.booleans()),
        st.tuples(st.just("respond"), _ID, st.sampled_from(["send", "send", "send", "later", "noop", "close"]),
                  st.sampled_from([0, 5, 100, 3000, 20000]), st.sampled_from(["none", "record", "raise"]),
                  st.integers(0, 2), st.sampled_from([18, 0])),
        st.tuples(st.just("respond_many"), st.lists(st.tuples(_ID, st.sampled_from([5, 50, 9000])), min_size=2,
                                                    max_size=4)),
        st.tuples(st.just("pending"), _ID),
        st.tuples(st.just("debug"), st.booleans()),
        st.tuples(st.just("metrics_off"),),
        st.tuples(st.just("close"), _ID),
        st.tuples(st.just("peer_close"), _ID),
        st.tuples(st.just("drain"), _ID),
        st.tuples(st.just("poll"),),
        st.tuples(st.just("completed_sends"),),
        st.tuples(st.just("tick"), st.integers(1, 30)),
    ),
    min_size=3,
    max_size=40,
)


def _frame(n: int, tag: int) -> bytes:
    return struct.pack(">i", n) + bytes([tag % 256]) * n


def _respond(w: World, cid: str, kind: str, size: int, callback: str, api_key: int) -> Response:
    request = _request(cid, api_key)
    request.request_dequeue_time_ns = w.time.nanoseconds()
    request.api_local_complete_time_ns = w.time.nanoseconds()
    request.response_complete_time_ns = w.time.nanoseconds()

    def on_complete() -> None:
        w.events.append(("on_complete", cid))
        if callback == "raise":
            raise RuntimeError("callback failed")

    if kind in ("noop", "close"):
        return (NoOpResponse if kind == "noop" else CloseConnectionResponse)(request)
    frame = _frame(size, size)
    cls = Later if kind == "later" else SendResponse
    return cls(request, [frame], len(frame), None, None if callback == "none" else on_complete)


def _apply(w: World, op: tuple[Any, ...]) -> Any:
    p, s = w.proc, w.selector
    kind = op[0]
    if kind == "debug":
        request_log.setLevel(logging.DEBUG if op[1] else logging.WARNING)
        return None
    if kind == "metrics_off":
        w.apis.metrics = None
        return None
    if kind == "poll":
        return s.poll(0)
    if kind == "completed_sends":
        p._process_completed_sends()
        return None
    if kind == "tick":
        w.time.sleep(op[1] / 1000)
        return None
    if kind == "respond_many":
        for i, size in op[1]:
            p.enqueue_response(_respond(w, IDS[i], "send", size, "record", 0))
        p._process_new_responses()
        return None
    cid = IDS[op[1]]
    if kind == "close":
        p._close(cid, "test")
        return None
    if kind == "peer_close":
        w.peers[cid].close()
        return None
    if kind == "drain":
        w.drain(cid)
        return None
    channel = s.channel(cid)
    conn = p._conns.get(cid)
    if kind == "pending":
        if conn is not None:
            conn.pending = collections.deque([NetworkReceive(cid, memoryview(b"waiting"))])
        return None
    if kind == "request":  # a request received: its channel muted (REQUEST_RECEIVED), frames read ahead after it
        ahead = b"".join(_frame(10 + i, i) for i in range(op[2]))
        if ahead:
            try:
                w.peers[cid].send(ahead)
            except OSError:
                pass
            s.poll(0)
        if channel is None or conn is None:
            return "closed"
        if op[3]:
            conn.inflight_release = lambda: w.events.append(("released", cid))
        try:
            p._steps.mute_channel(channel, True)
        except Exception as e:
            return type(e).__name__
        return None
    if kind == "respond":
        p.enqueue_response(_respond(w, cid, op[2], op[3], op[4], op[6]))
        p.read_ahead_budget = op[5]
        p._process_new_responses()
        budget, p.read_ahead_budget = p.read_ahead_budget, 0
        return budget
    raise AssertionError(kind)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_OPS)
def test_the_compiled_response_path_sends_and_completes_as_the_reference(ops: list[tuple[Any, ...]]) -> None:
    lines = Lines()
    loggers = [logging.getLogger("mini_broker.network.processor"), request_log]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(lines)
    processor_log = loggers[0]
    processor_log.setLevel(logging.DEBUG)
    request_log.setLevel(logging.WARNING)
    compiled, reference = World(True), World(False)

    def outcome(w: World, op: tuple[Any, ...]) -> object:
        before = len(lines.lines)
        if op[0] == "debug":  # (one logger for both worlds: set before each world's step alike)
            _apply(w, op)
            return None
        result = _apply(w, op)
        said = [line.replace(" total_ms=", "@").split("@")[0] for line in lines.lines[before:]]
        return result, said

    try:
        run_in_lockstep(compiled, reference, ops, outcome)
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(lines)
            lg.setLevel(level)


def test_a_dropped_processor_is_freed_and_its_path_says_so() -> None:
    """The path holds its processor and parser weakly: a dropped processor is freed (nothing keeps it alive) and the
    path, called after, raises ReferenceError instead of touching freed memory."""
    w = World(True)
    path = w.proc._compiled_responses
    assert path is not None
    gone = weakref.ref(w.proc)
    w.close()
    w.channel.remove_processor(0)
    del w
    gc.collect()
    assert gone() is None
    with pytest.raises(ReferenceError):
        path.send_responses()


def test_a_processor_without_compiled_steps_has_no_compiled_response_path() -> None:
    previous = _native.use_native(False)
    try:
        config = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0"})
        channel = RequestChannel(10)
        apis = KafkaApis(channel, [api_versions.API], None, None, MockTime())
        selector = Selector(time=MockTime(), channel_builder=DefaultChannelBuilder(Mode.SERVER))
        proc = Processor(0, config.listeners[0], config, channel, ConnectionQuotas(10), apis, selector, MockTime())
        assert proc._compiled_responses is None
        selector.close()
    finally:
        _native.use_native(previous)


@pytest.mark.parametrize("compiled", [True, False])
def test_at_debug_the_request_log_line_is_written_and_the_metrics_recorded(compiled: bool) -> None:
    """With the request logger at DEBUG, every completed request's line (the reference's complete_response_metrics
    runs), also for an api key whose instruments the compiled path already holds."""
    lines = Lines()
    request_log.addHandler(lines)
    level = request_log.level
    w = World(compiled)
    try:
        for debug in (False, True, True, False):
            request_log.setLevel(logging.DEBUG if debug else logging.WARNING)
            _apply(w, ("request", 0, 0, False))
            _apply(w, ("respond", 0, "send", 5, "none", 0, 0))
        assert [line.split(" total_ms=")[0] for line in lines.lines] == [
            "event=request_completed api=Produce version=3 correlation_id=7 client_id=client connection=0 "
            "response=SendResponse"] * 2
        assert w.metrics.snapshot()['kafka_network_RequestMetrics_Requests_total{request="Produce"}'] == 4
    finally:
        request_log.removeHandler(lines)
        request_log.setLevel(level)
        w.close()


@pytest.mark.parametrize("compiled", [True, False])
def test_a_frame_read_ahead_joins_the_receives_only_within_the_budget(compiled: bool) -> None:
    w = World(compiled)
    try:
        got = []
        for budget in (0, 1, 1):
            _apply(w, ("request", 0, 3 if budget == 0 else 0, False))
            got.append((_apply(w, ("respond", 0, "send", 5, "none", budget, 0)),
                        len(w.selector.completed_receives())))
        assert got == [(0, 1), (0, 2), (0, 3)]
    finally:
        w.close()
