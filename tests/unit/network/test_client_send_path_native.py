"""The kernel's ClientSendPath (``records/kernel/client_send_path.c.h``: a NetworkClient's send-side state, and its
``ready`` and ``send``) against its reference: the same client with the reference state (:class:`ClientSendState`)
and the class's ``ready`` and ``send`` (``_do_send``). The same random operation sequences (ready, requests sent at
the time ready() asked or another, fire-and-forget, internal, not ready, throttled, versions changed, disconnects,
polls, the client closed) on two clients, each on a real Selector over a socket pair, give the same results, errors,
bytes on the wire and state."""

from __future__ import annotations

import gc
import random
import socket
import weakref
from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.client_send_state import ClientSendState
from pykafka_client.network.correlation_ids import SASL_MIN_RESERVED_CORRELATION_ID
from pykafka_client.network.metadata_updater import ManualMetadataUpdater
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.node_api_versions import NodeApiVersions
from pykafka_client.network.transport.selector import Selector
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import HeartbeatRequest, ListGroupsRequest
from pykafka_client.protocol.records import _native
from pykafka_client.structs import Node
from pykafka_client.utils.time import MockTime
from tests.unit.lockstep import run_in_lockstep

kernel = _native.loaded_kernel()
pytestmark = pytest.mark.skipif(kernel is None, reason="the kernel is not built")

#: a port bound and never listened on, held for the module's life: a connect to it (ready() on a node disconnected past
#: its backoff) is refused at once, whatever else runs on the box
_REFUSING = socket.socket()
_REFUSING.bind(("127.0.0.1", 0))
_PORT = _REFUSING.getsockname()[1]
NODES = [Node(0, "127.0.0.1", _PORT), Node(1, "127.0.0.1", _PORT)]
EMPTY = Node(2, "", _PORT)
HEARTBEAT = int(ApiKey.HEARTBEAT)
#: a node's versions: the defaults, Heartbeat up to v2, Heartbeat only at a version the client does not have
VERSIONS = [NodeApiVersions.create(), NodeApiVersions.create({HEARTBEAT: (0, 2)}),
            NodeApiVersions.create({HEARTBEAT: (90, 91)})]


class World:
    """A client on a real Selector, its nodes' channels registered over socket pairs (READY at once)."""

    def __init__(self, compiled: bool) -> None:
        self.selector = Selector()
        # (a clock and a random source of their own: a disconnect's backoff reads both, the same in both worlds)
        self.client = NetworkClient(
            self.selector, metadata_updater=ManualMetadataUpdater(list(NODES)), discover_broker_versions=False,
            time=MockTime(current_high_res_time_ns=1000 * 1_000_000), rng=random.Random(7),
        )
        if compiled:
            assert type(self.client.send_state) is not ClientSendState
        else:
            # the reference: the class's ready and send (_do_send) over the reference state
            vars(self.client).pop("ready", None)
            vars(self.client).pop("send", None)
            vars(self.client).pop("new_client_request", None)
            vars(self.client).pop("poll_delay_ms", None)
            self.client.send_state = ClientSendState()
        self.peers: dict[str, socket.socket] = {}
        self.received: dict[str, bytearray] = {}
        for node in NODES:
            self._connect(node.id_string)

    def _connect(self, node_id: str) -> None:
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        self.peers[node_id] = theirs
        self.received.setdefault(node_id, bytearray())
        self.selector.register(node_id, ours)
        self.client.connection_states.connecting(node_id, 0, "localhost")
        self.client.connection_states.ready(node_id)

    def drain(self) -> None:
        for node_id, peer in self.peers.items():
            try:
                while chunk := peer.recv(65536):
                    self.received[node_id] += chunk
            except (BlockingIOError, OSError):
                pass

    def _newest(self, node_id: str) -> Any:
        r = self.client.in_flight_requests.newest_or_none(node_id)
        if r is None:
            return None
        return (r.header, r.request_timeout_ms, r.created_time_ms, r.destination, r.callback, r.expect_response,
                r.is_internal_request, r.send.size, r.send.written, r.send_time_ms, r.throttle_time_ms)

    def _connection(self, node_id: str) -> Any:
        state = self.client.connection_states.node_state(node_id)
        channel = self.selector.channel(node_id)
        return (
            None if state is None else (state.state, state.last_connect_attempt_ms, state.throttle_until_time_ms),
            None if channel is None else channel.state,
        )

    def state(self) -> tuple[Any, ...]:
        self.drain()
        s = self.client.send_state
        return (
            s.ready_node,
            s.ready_at_ms,
            s.active,
            {k: (v[0] is self.client.api_versions.by_node.get(k[0]), v[1]) for k, v in s.versions_chosen.items()},
            [(n.id_string, self.client.in_flight_requests.count(n.id_string)) for n in NODES],
            [(n.id_string, self._connection(n.id_string), self._newest(n.id_string)) for n in NODES],
            asdict(self.selector.metrics) | {"select_time_ns_total": 0, "io_time_ns_total": 0},
            {k: bytes(v) for k, v in self.received.items()},
            self.client.active(),
        )

    def close(self) -> None:
        self.client.close()
        for peer in self.peers.values():
            peer.close()


_NODE = st.sampled_from([0, 0, 0, 1, 2])
#: the times of the steps (ms): a few within a disconnect's backoff (the client's clock reads 1000), one past it
_AT = st.sampled_from([0, 0, 1, 2, 100])
_READY_SEND = st.tuples(st.just("ready_send"), _NODE, _AT, st.integers(1, 30), st.sampled_from([True, True, False]))
_VERSIONS = st.tuples(st.just("versions"), _NODE, st.integers(0, len(VERSIONS)))
_OPS = st.lists(
    st.one_of(
        _READY_SEND, _READY_SEND, _READY_SEND, _VERSIONS,
        st.tuples(st.just("ready"), _NODE, _AT),
        st.tuples(st.just("send"), _NODE, st.integers(0, 2), st.sampled_from(["plain", "plain", "plain", "acks0",
                                                                              "internal", "latest1", "kw"])),
        st.tuples(st.just("poll"), st.integers(0, 2)),
        st.tuples(st.just("poll_delay"), _NODE, st.integers(0, 4)),
        st.tuples(st.just("throttle"), _NODE, st.integers(0, 3)),
        st.tuples(st.just("disconnect"), _NODE),
        st.tuples(st.just("reconnect"), _NODE),
        st.tuples(st.just("in_flight_done"), _NODE),
        st.tuples(st.just("close"), st.sampled_from(["initiate", "close"])),
        st.tuples(st.just("ids_near_reserved"), st.integers(1, 3)),
    ),
    min_size=5,
    max_size=60,
)


def _node(i: int) -> Node:
    return EMPTY if i == 2 else NODES[i]


def _apply(w: World, op: tuple[Any, ...]) -> Any:
    client = w.client
    kind = op[0]
    if kind == "ready":
        return client.ready(_node(op[1]), 1000 + op[2])
    if kind == "send":
        node, now, how = _node(op[1]), 1000 + op[2], op[3]
        body = HeartbeatRequest("g", 1, "m")
        if how == "kw":
            request = client.new_client_request(node.id_string, body, now, expect_response=True, request_timeout_ms=5)
        elif how == "latest1":
            request = client.new_client_request(node.id_string, body, now, True, None, None, latest_allowed_version=2)
        else:
            request = client.new_client_request(node.id_string, body, now, how != "acks0")
        if how == "internal":
            return client.send(request, now, True)
        if how == "kw":
            return client.send(request, now_ms=now)
        return client.send(request, now)
    if kind == "ready_send":
        node, now = _node(op[1]), 1000 + op[2]
        if not client.ready(node, now):
            return "not ready"
        # (two body types by turns: their API keys in the frames' headers)
        either: Any = HeartbeatRequest("g" * op[3], 1, "m") if op[3] % 3 else ListGroupsRequest()
        request = client.new_client_request(node.id_string, either, now, op[4], op[3], None,
                                            oldest_allowed_version=None if op[3] % 2 else 0)
        return (request.correlation_id, request.request_timeout_ms, request.client_id, client.send(request, now))
    if kind == "poll":
        return [(r.destination, r.request_header, type(r.version_mismatch).__name__, r.was_disconnected)
                for r in client.poll(0, 1000 + op[1])]
    if kind == "ids_near_reserved":  # (the next draws reach the reserved range: the counter wraps around)
        client.correlation_ids.next_id = SASL_MIN_RESERVED_CORRELATION_ID - op[1]
        return None
    if kind == "poll_delay":
        return client.poll_delay_ms(_node(op[1]), 1000 + op[2])
    if kind == "throttle":
        node = _node(op[1])
        if client.connection_states.node_state(node.id_string) is not None:
            client.connection_states.throttle(node.id_string, 1000 + op[2])
        return None
    if kind == "versions":
        node_id = _node(op[1]).id_string
        if op[2] == len(VERSIONS):
            client.api_versions.remove(node_id)
        else:
            client.api_versions.update(node_id, VERSIONS[op[2]])
        return None
    if kind == "disconnect":
        client.disconnect(_node(op[1]).id_string)
        return None
    if kind == "reconnect":
        node_id = _node(op[1]).id_string
        if node_id in w.peers and w.selector.channel(node_id) is None and client.active():
            w.peers.pop(node_id).close()
            w._connect(node_id)
        return None
    if kind == "in_flight_done":
        taken = client.in_flight_requests.take_oldest_or_none(_node(op[1]).id_string)
        return None if taken is None else taken.header
    if kind == "close":
        if op[1] == "initiate":
            client.initiate_close()
        else:
            client.close()
        return None
    raise AssertionError(kind)


def _outcome(w: World, op: tuple[Any, ...]) -> Any:
    try:
        return ("ok", _apply(w, op))
    except Exception as e:
        return ("raised", type(e).__name__, str(e))


@settings(max_examples=500, deadline=None)
@given(_OPS)
def test_the_compiled_send_path_does_what_the_reference_does(ops: list[tuple[Any, ...]]) -> None:
    run_in_lockstep(World(True), World(False), ops, _outcome)


def test_the_client_is_its_path_s_ready_and_send_and_is_freed_by_refcount() -> None:
    w = World(True)
    path = w.client.send_state
    assert w.client.ready == path.ready and w.client.send == path.send  # type: ignore[attr-defined]  # the kernel's
    assert w.client.new_client_request == path.new_client_request  # type: ignore[attr-defined]  # the kernel's
    assert w.client.poll_delay_ms == path.poll_delay_ms  # type: ignore[attr-defined]  # the kernel's
    client = weakref.ref(w.client)
    w.close()
    gc.disable()
    try:
        del w
        assert client() is None  # no cycle through the path: freed by refcount
    finally:
        gc.enable()
    with pytest.raises(ReferenceError):
        path.send(object(), 0)  # type: ignore[attr-defined]  # (the kernel's: its client is gone)


def test_a_subclass_overriding_send_keeps_its_own() -> None:
    class Counting(NetworkClient):
        def send(self, request: Any, now_ms: int, is_internal: bool = False) -> None:
            super()._do_send(request, now_ms, is_internal)

    client = Counting(Selector(), metadata_updater=ManualMetadataUpdater(list(NODES)), discover_broker_versions=False)
    try:
        assert type(client.send_state) is ClientSendState
        assert "send" not in vars(client) and "ready" not in vars(client)
    finally:
        client.close()
