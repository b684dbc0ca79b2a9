"""The kernel's ClientPollPath (``records/kernel/client_poll.c.h``: a NetworkClient's poll state and its ``poll``)
against its reference: the same client with the reference state (:class:`ClientPollState`) and the class's ``poll``.
The same random operation sequences (requests sent, expecting a response or not; the peers answering them, throttled,
with garbage, unsolicited, in part, or closing; the client disconnecting a node; version mismatches; callbacks that
raise; the metadata deadline reached; the clock moved past request timeouts; polls with timeouts; the client closed)
on two clients, each on a real Selector over socket pairs, give the same results, errors, callbacks, questions to the
metadata updater, bytes on the wire and state."""

from __future__ import annotations

import gc
import logging
import random
import socket
import struct
import weakref
from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.client_poll_state import ClientPollState
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.metadata_updater import ManualMetadataUpdater
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.node_api_versions import NodeApiVersions
from pykafka_client.network.transport.selector import CLIENT_MAX_RECEIVES_PER_CHANNEL_PER_POLL, Selector
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.headers import encode_response
from pykafka_client.protocol.messages import HeartbeatRequest, HeartbeatResponse
from pykafka_client.protocol.records import _native
from pykafka_client.structs import Node
from pykafka_client.utils.time import MockTime
from tests.doubles.frames import frame_bytes

kernel = _native.loaded_kernel()
pytestmark = pytest.mark.skipif(kernel is None, reason="the kernel is not built")

_REFUSING = socket.socket()
_REFUSING.bind(("127.0.0.1", 0))
_PORT = _REFUSING.getsockname()[1]
NODES = [Node(0, "127.0.0.1", _PORT), Node(1, "127.0.0.1", _PORT)]
HEARTBEAT = int(ApiKey.HEARTBEAT)
#: a node's versions: the defaults, or Heartbeat only at a version the client does not have (a version mismatch)
VERSIONS = [NodeApiVersions.create(), NodeApiVersions.create({HEARTBEAT: (90, 91)})]
START_MS = 1000


class _Deadline:
    def __init__(self, no_update_before_ms: int) -> None:
        self.no_update_before_ms = no_update_before_ms


class RecordingUpdater(ManualMetadataUpdater):
    """A fixed node list whose deadline a step moves, recording the questions the client asks it."""

    def __init__(self, nodes: list[Node], asked: list[Any]) -> None:
        super().__init__(nodes)
        self.asked = asked
        self.deadline = _Deadline(2**62)
        self.update_deadline = self.deadline
        self.rebootstrap_answer = False

    def maybe_update(self, now_ms: int) -> int:
        self.asked.append(("maybe_update", now_ms))
        return 7

    def needs_rebootstrap(self, now_ms: int, rebootstrap_trigger_ms: int) -> bool:
        self.asked.append(("needs_rebootstrap", now_ms))
        return False


class World:
    """A client on a real Selector, its nodes' channels registered over socket pairs (READY at once); the peers read
    the requests and write the answers a step asks for."""

    def __init__(self, compiled: bool, buffered_reads: bool = False) -> None:
        self.buffered_reads = buffered_reads
        # (the client's selector takes several frames of a channel a poll: a poll completes several requests)
        self.selector = Selector(max_receives_per_channel_per_poll=CLIENT_MAX_RECEIVES_PER_CHANNEL_PER_POLL)
        self.asked: list[Any] = []
        self.time = MockTime(current_high_res_time_ns=START_MS * 1_000_000)
        self.client = NetworkClient(
            self.selector, metadata_updater=RecordingUpdater(list(NODES), self.asked), discover_broker_versions=False,
            time=self.time, rng=random.Random(7), request_timeout_ms=50,
        )
        if compiled:
            assert type(self.client.poll_state) is not ClientPollState
        else:
            vars(self.client).pop("poll", None)  # the reference: the class's poll over the reference state
            self.client.poll_state = ClientPollState()
        self.peers: dict[str, socket.socket] = {}
        self.received: dict[str, bytearray] = {}
        self.read_to: dict[str, int] = {}
        self.pending: dict[str, list[tuple[int, int]]] = {}  # node -> (correlation id, version) not answered yet
        for node in NODES:
            self._connect(node.id_string)

    def _connect(self, node_id: str) -> None:
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        self.peers[node_id] = theirs
        self.received[node_id] = bytearray()
        self.read_to[node_id] = 0
        self.pending[node_id] = []
        self.selector.register(node_id, ours)
        channel = self.selector.channel(node_id)
        if self.buffered_reads and channel is not None:
            channel.use_buffered_reads()  # (as a client's connect does: the selector's read event compiled)
        self.client.connection_states.connecting(node_id, 0, "localhost")
        self.client.connection_states.ready(node_id)

    def drain(self) -> None:
        for node_id, peer in self.peers.items():
            try:
                while chunk := peer.recv(65536):
                    self.received[node_id] += chunk
            except (BlockingIOError, OSError):
                pass
            buf, at = self.received[node_id], self.read_to[node_id]
            while len(buf) - at >= 4:
                (size,) = struct.unpack_from(">i", buf, at)
                if len(buf) - at - 4 < size:
                    break
                _, version, correlation_id = struct.unpack_from(">hhi", buf, at + 4)
                self.pending[node_id].append((correlation_id, version))
                at += 4 + size
            self.read_to[node_id] = at

    def answer(self, node_id: str, how: str, count: int) -> None:
        self.drain()
        peer = self.peers.get(node_id)
        if peer is None or peer.fileno() < 0:
            return
        out = b""
        if how in ("ok", "throttled", "partial"):
            for _ in range(min(count, len(self.pending[node_id]))):
                correlation_id, version = self.pending[node_id].pop(0)
                body = HeartbeatResponse(throttle_time_ms=5 if how == "throttled" else 0, error_code=count % 2)
                out += frame_bytes(encode_response(body, HEARTBEAT, version, correlation_id))
            if how == "partial":
                out = out[: len(out) // 2 + 1]
        elif how == "garbage":
            out = struct.pack(">i", 3) + b"\xff\xff\xff"
        elif how == "unsolicited":
            out = frame_bytes(encode_response(HeartbeatResponse(), HEARTBEAT, 0, 0x7000_0000))
        elif how == "close":
            peer.close()
            return
        if out:
            try:
                peer.send(out)
            except OSError:
                pass

    def state(self) -> tuple[Any, ...]:
        self.drain()
        s = self.client.poll_state
        in_flight = self.client.in_flight_requests
        return (
            [(r.request_header, r.was_disconnected, type(r.version_mismatch).__name__) for r in s.aborted_sends],
            s.fire_and_forget_sent, s.handshakes_may_be_due, s.may_be_connecting,
            self.client.send_state.ready_node,
            [(n.id_string, in_flight.count(n.id_string)) for n in NODES],
            [(state := self.client.connection_states.node_state(n.id_string)) is not None and state.state
             for n in NODES],
            [self.selector.channel(n.id_string) is not None for n in NODES],
            asdict(self.selector.metrics) | {"select_time_ns_total": 0, "io_time_ns_total": 0},
            {k: bytes(v) for k, v in self.received.items()},
            list(self.asked),
            self.client.active(),
        )

    def close(self) -> None:
        self.client.close()
        for peer in self.peers.values():
            peer.close()


_NODE = st.sampled_from([0, 0, 1])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("send"), _NODE, st.sampled_from(["plain", "plain", "plain", "acks0", "raises", "internal"])),
        st.tuples(st.just("send"), _NODE, st.sampled_from(["plain", "raises"])),
        st.tuples(st.just("ready"), _NODE),
        st.tuples(st.just("answer"), _NODE, st.sampled_from(["ok", "ok", "ok", "throttled", "partial", "garbage",
                                                            "unsolicited", "close"]), st.integers(1, 4)),
        st.tuples(st.just("answer"), _NODE, st.just("ok"), st.integers(1, 4)),
        st.tuples(st.just("poll"), st.sampled_from([0, 0, 0, 1, 3]), st.integers(-3, 3)),
        st.tuples(st.just("poll"), st.just(0), st.just(0)),
        st.tuples(st.just("sleep"), st.sampled_from([1, 30, 60])),
        # (the deadline from the clock's time: a poll given an earlier time reaches it only after its select)
        st.tuples(st.just("deadline"), st.sampled_from([-1, 0, 1, 2, 2**61])),
        st.tuples(st.just("rebootstrap_strategy"), st.booleans()),
        st.tuples(st.just("versions"), _NODE, st.integers(0, len(VERSIONS) - 1)),
        st.tuples(st.just("disconnect"), _NODE),
        st.tuples(st.just("reconnect"), _NODE),
        st.tuples(st.just("close"), st.sampled_from(["initiate", "close"])),
    ),
    min_size=5,
    max_size=60,
)


def _callback(seen: list[Any], raises: bool) -> Any:
    def on_complete(response: ClientResponse) -> None:
        seen.append((response.request_header, response.was_disconnected, response.was_timed_out, type(response.response_body).__name__,
                     type(response.disconnect_exception).__name__))
        if raises:
            raise ValueError("a callback's error")

    return on_complete


def _apply(w: World, op: tuple[Any, ...], seen: list[Any]) -> Any:
    client = w.client
    kind = op[0]
    now = w.time.hi_res_clock_ms()
    if kind == "send":
        node, how = NODES[op[1]], op[2]
        if how != "internal" and not client.ready(node, now):
            return "not ready"
        request = client.new_client_request(
            node.id_string, HeartbeatRequest("g", 1, "m"), now, how != "acks0", None, _callback(seen, how == "raises")
        )
        client.send(request, now, how == "internal")
        return request.correlation_id
    if kind == "answer":
        w.answer(NODES[op[1]].id_string, op[2], op[3])
        return None
    if kind == "poll":
        return [(r.destination, r.request_header, type(r.version_mismatch).__name__, r.was_disconnected,
                 type(r.response_body).__name__, r.received_time_ms, r.was_timed_out,
                 type(r.disconnect_exception).__name__) for r in client.poll(op[1], now + op[2])]
    if kind == "sleep":
        w.time.sleep(op[1])
        return None
    if kind == "ready":
        return client.ready(NODES[op[1]], now)
    if kind == "deadline":
        w.client.metadata_updater.deadline.no_update_before_ms = now + op[1]  # type: ignore[attr-defined]  # the test's
        return None
    if kind == "rebootstrap_strategy":
        from pykafka_client.network.metadata_updater import MetadataRecoveryStrategy

        client.metadata_recovery_strategy = (
            MetadataRecoveryStrategy.REBOOTSTRAP if op[1] else MetadataRecoveryStrategy.NONE
        )
        return None
    if kind == "versions":
        client.api_versions.update(NODES[op[1]].id_string, VERSIONS[op[2]])
        return None
    if kind == "disconnect":
        client.disconnect(NODES[op[1]].id_string)
        return None
    if kind == "reconnect":
        node_id = NODES[op[1]].id_string
        if w.selector.channel(node_id) is None and client.active():
            w.peers.pop(node_id).close()
            w._connect(node_id)
        return None
    if kind == "close":
        if op[1] == "initiate":
            client.initiate_close()
        else:
            client.close()
        return None
    raise AssertionError(kind)


def _outcome(w: World, op: tuple[Any, ...], seen: list[Any]) -> Any:
    try:
        return ("ok", _apply(w, op, seen))
    except Exception as e:
        return ("raised", type(e).__name__, str(e))


@settings(max_examples=400, deadline=None)
@given(_OPS, st.booleans())
def test_the_compiled_poll_does_what_the_reference_does(ops: list[tuple[Any, ...]], buffered_reads: bool) -> None:
    compiled, reference = World(True, buffered_reads), World(False, buffered_reads)
    seen_compiled: list[Any] = []
    seen_reference: list[Any] = []
    logging.disable(logging.CRITICAL)  # (the callbacks' errors and the closed connections are logged: many)
    try:
        assert compiled.state() == reference.state()
        for op in ops:
            got, want = _outcome(compiled, op, seen_compiled), _outcome(reference, op, seen_reference)
            assert got == want, op
            assert seen_compiled == seen_reference, op
            assert compiled.state() == reference.state(), op
    finally:
        logging.disable(logging.NOTSET)
        compiled.close()
        reference.close()


def test_a_callback_s_error_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    w = World(True)
    try:
        seen: list[Any] = []
        assert _apply(w, ("send", 0, "raises"), seen) != "not ready"
        w.answer("0", "ok", 1)
        with caplog.at_level(logging.ERROR, logger="pykafka_client.network.network_client"):
            responses = w.client.poll(0, w.time.hi_res_clock_ms())
        assert len(responses) == 1 and len(seen) == 1
        (record,) = [r for r in caplog.records if r.getMessage() == "uncaught error in request completion"]
        assert record.exc_info is not None and record.exc_info[0] is ValueError and record.exc_info[2] is not None
    finally:
        w.close()


def test_the_client_is_its_path_s_poll_and_is_freed_by_refcount() -> None:
    w = World(True)
    path = w.client.poll_state
    assert w.client.poll == path.poll  # type: ignore[attr-defined]  # the kernel's
    client = weakref.ref(w.client)
    w.close()
    gc.disable()
    try:
        del w
        assert client() is None  # no cycle through the path: freed by refcount
    finally:
        gc.enable()
    with pytest.raises(ReferenceError):
        path.poll(0, 0)  # type: ignore[attr-defined]  # (the kernel's: its client is gone)


def test_a_subclass_overriding_poll_keeps_its_own() -> None:
    class Counting(NetworkClient):
        def poll(self, timeout_ms: int, now_ms: int) -> list[ClientResponse]:
            return super().poll(timeout_ms, now_ms)

    client = Counting(Selector(), metadata_updater=ManualMetadataUpdater(list(NODES)), discover_broker_versions=False)
    try:
        assert type(client.poll_state) is ClientPollState
        assert "poll" not in vars(client)
    finally:
        client.close()


@pytest.mark.parametrize("compiled", [True, False])
def test_every_callback_runs_after_one_raises(compiled: bool) -> None:
    w = World(compiled)
    logging.disable(logging.CRITICAL)
    try:
        seen: list[Any] = []
        ids = [_apply(w, ("send", 0, how), seen) for how in ("raises", "plain", "raises", "plain")]
        w.answer("0", "ok", 4)
        assert len(_apply(w, ("poll", 0, 0), seen)) == 4
        assert [s[0].correlation_id for s in seen] == ids
    finally:
        logging.disable(logging.NOTSET)
        w.close()
