"""The kernel's send of a request on its channel (``ChannelSend.send``, made by ``Selector.compiled_send``) and its
readiness check (``SendReadiness.can_send``) against their references: ``in_flight_requests.add`` then
``Selector.send`` (undoing the add when that raises), and ``NetworkClient.can_send_request``'s three questions. The
same random operation sequences on two selectors (real channels over socket pairs, each channel's socket write
scripted: all taken, part, would block, an error) give the same results, errors, bytes written and state."""

from __future__ import annotations

import socket
from dataclasses import asdict
from typing import Any, Callable, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.errors import IllegalStateError
from pykafka_client.network.client_request import RequestHeaderInfo
from pykafka_client.network.cluster_connection_states import ClusterConnectionStates, ConnectionState
from pykafka_client.network.in_flight_requests import InFlightRequest, InFlightRequests, InFlightRequestsApi
from pykafka_client.network.transport.channel import KafkaChannel
from pykafka_client.network.transport.selectable import ChannelState, NetworkSend
from pykafka_client.network.transport.selector import Selector
from pykafka_client.protocol.records import _native

kernel = _native.loaded_kernel()
pytestmark = pytest.mark.skipif(kernel is None, reason="the kernel is not built")

NODES = ["0", "1"]


class ScriptedSendmsg:
    """A channel's socket write: takes what the script says (all, the first n bytes, nothing: would block, an error),
    and keeps the bytes taken."""

    def __init__(self) -> None:
        self.taken = bytearray()
        self.next: tuple[str, int] = ("all", 0)

    def __call__(self, pieces: list[Any]) -> int:
        kind, n = self.next
        data = b"".join(bytes(p) for p in pieces)
        if kind == "block":
            raise BlockingIOError(11, "would block")
        if kind == "error":
            raise BrokenPipeError(32, "broken pipe")
        if kind == "part":
            data = data[: min(n, len(data))]
        self.taken += data
        return len(data)


class World:
    def __init__(self, compiled: bool, kernel_in_flight: bool) -> None:
        self.selector = Selector()
        self.peers: list[socket.socket] = []
        self.scripts: dict[str, ScriptedSendmsg] = {}
        for node in NODES:
            ours, theirs = socket.socketpair()
            self.peers.append(theirs)
            self.selector.register(node, ours)
            self.scripts[node] = self._script(node)
        assert kernel is not None
        self.in_flight: InFlightRequestsApi = (
            kernel.InFlightRequests(5, IllegalStateError) if kernel_in_flight else InFlightRequests(5)
        )
        self.states = ClusterConnectionStates(50, 1000, 10_000, 30_000)
        for node in NODES:
            self.states.connecting(node, 0, "localhost")
            self.states.ready(node)
        send = self.selector.compiled_send() if compiled else None
        self.send: Callable[[InFlightRequestsApi, InFlightRequest, NetworkSend], None]
        if compiled:
            assert send is not None
            self.send = send
            readiness = kernel.SendReadiness(
                self.states.node_states(), ConnectionState.READY, self.selector.open_channels(), ChannelState.READY
            )
            self.can_send: Callable[[InFlightRequestsApi, str, int], bool] = readiness.can_send
        else:
            self.send = self._reference_send
            self.can_send = self._reference_can_send

    def _script(self, node: str) -> ScriptedSendmsg:
        script = ScriptedSendmsg()
        channel = self.selector.channel(node)
        assert channel is not None and channel.plain_sendmsg is not None
        channel.plain_sendmsg = cast("Callable[..., int]", script)  # the socket's sendmsg, as the common send calls it
        return script

    def _reference_send(self, in_flight: InFlightRequestsApi, request: InFlightRequest, send: NetworkSend) -> None:
        in_flight.add(request)
        try:
            self.selector.send(send)
        except BaseException:
            in_flight.complete_last_sent(request.destination)
            raise

    def _reference_can_send(self, in_flight: InFlightRequestsApi, node: str, now_ms: int) -> bool:
        return (
            self.states.is_ready(node, now_ms)
            and self.selector.is_channel_ready(node)
            and in_flight.can_send_more(node)
        )

    def channel(self, node: str) -> KafkaChannel | None:
        return self.selector.channel(node)

    def state(self) -> tuple[Any, ...]:
        channels = []
        for node in NODES:
            ch = self.channel(node)
            channels.append(None if ch is None else (ch.bytes_sent, ch.send_writer is None, ch.state))
        return (
            [(n, self.in_flight.count(n)) for n in NODES],
            self.in_flight.count(),
            channels,
            asdict(self.selector.metrics) | {"select_time_ns_total": 0, "io_time_ns_total": 0},
            [(s.destination, s.size, s.written) for s in self.selector.pending_completed_sends],
            [bytes(self.scripts[n].taken) for n in NODES],
        )

    def close(self) -> None:
        self.selector.close()
        for peer in self.peers:
            peer.close()


def _piece(kind: str, n: int, fill: int) -> Any:
    data = bytes([fill % 256]) * n
    return bytearray(data) if kind == "bytearray" else memoryview(data) if kind == "memoryview" else data


_PIECES = st.lists(st.tuples(st.sampled_from(["bytes", "bytes", "bytearray", "memoryview"]), st.integers(0, 40)),
                   min_size=0, max_size=5)
_SEND = st.tuples(
    st.just("send"), st.sampled_from([*NODES, *NODES, "9"]), _PIECES, st.sampled_from([0, 0, 0, 0, 1, -1]),
    st.sampled_from(["all", "all", "all", "part", "block", "error"]), st.integers(0, 60),
)
_OPS = st.lists(st.one_of(
    _SEND, _SEND, _SEND,
    st.tuples(st.just("poll")),
    st.tuples(st.just("poll")),
    st.tuples(st.just("ready"), st.sampled_from([*NODES, "9"]), st.integers(-5, 5)),
    st.tuples(st.just("throttle"), st.sampled_from(NODES), st.integers(-5, 5)),
    st.tuples(st.just("plain"), st.sampled_from(NODES)),
    st.tuples(st.just("take"), st.sampled_from(NODES)),
    st.tuples(st.just("close"), st.sampled_from(NODES)),
), max_size=40)


def _outcome(f: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return ("ok", f())
    except Exception as e:  # (the same error, type and message)
        return (type(e).__name__, str(e))


def _run(world: World, op: tuple[Any, ...], n: int) -> Any:
    kind = op[0]
    if kind == "send":
        _, node, pieces, delta, script, part = op
        if node in world.scripts:  # (what this send's socket write does)
            world.scripts[node].next = (script, part)
        buffers = [_piece(k, size, n + i) for i, (k, size) in enumerate(pieces)]
        size = sum(len(b) for b in buffers) + delta
        send = NetworkSend(node, buffers, size)
        request = InFlightRequest(RequestHeaderInfo(0, 9, "c", n), 30_000, n, node, None, True, False, None, send, n)
        return _outcome(lambda: world.send(world.in_flight, request, send)), send.written
    if kind == "poll":
        result = world.selector.poll(0)
        return result, sorted(world.selector.disconnected()), [s.size for s in world.selector.completed_sends()]
    if kind == "ready":
        return _outcome(lambda: world.can_send(world.in_flight, op[1], op[2]))
    if kind == "throttle":
        world.states.throttle(op[1], op[2])
        return None
    if kind == "plain":  # a channel with another transport's write (the reference's general path)
        channel = world.channel(op[1])
        if channel is not None:
            channel.plain_sendmsg = None
        return None
    if kind == "take":  # a request answered
        return _outcome(lambda: world.in_flight.take_oldest_or_none(op[1]) is not None)
    world.selector.close_channel(op[1])
    return None


@settings(max_examples=300, deadline=None)
@given(st.booleans(), _OPS)
def test_the_kernel_send_and_readiness_are_the_references(kernel_in_flight: bool, ops: list[tuple[Any, ...]]) -> None:
    compiled, reference = World(True, kernel_in_flight), World(False, kernel_in_flight)
    try:
        for n, op in enumerate(ops):
            got, expected = _run(compiled, op, n), _run(reference, op, n)
            assert got == expected, op
            assert compiled.state() == reference.state(), op
    finally:
        compiled.close()
        reference.close()


def test_a_selector_without_optimistic_writes_has_no_compiled_send() -> None:
    selector = Selector(optimistic_writes=False)
    try:
        assert selector.compiled_send() is None
    finally:
        selector.close()


class _CountingSelector(Selector):
    made = 0

    def compiled_send(self) -> Callable[[object, object, NetworkSend], None] | None:
        send = super().compiled_send()
        if send is not None:
            _CountingSelector.made += 1
        return send


def test_a_network_client_on_a_real_selector_sends_through_the_kernel() -> None:
    from pykafka_client.network.metadata import Metadata
    from pykafka_client.network.network_client import NetworkClient

    previous = _native.use_native(True)
    try:
        NetworkClient(_CountingSelector(), Metadata()).close()
        assert _CountingSelector.made == 1
        _native.use_native(False)
        NetworkClient(_CountingSelector(), Metadata()).close()
        assert _CountingSelector.made == 1
    finally:
        _native.use_native(previous)


def test_a_network_client_keeps_at_most_30_instance_attributes() -> None:
    """CPython 3.11 keeps an instance's attributes in its class's shared keys (every ``self.x`` read specialised and
    cheap) only up to 30 of them: a 31st makes every attribute read of the client's hot paths slower."""
    from pykafka_client.network.metadata_updater import ManualMetadataUpdater
    from pykafka_client.network.network_client import NetworkClient

    selector = Selector()
    client = NetworkClient(selector, metadata_updater=ManualMetadataUpdater([]))
    try:
        assert len(vars(client)) <= 30, sorted(vars(client))
    finally:
        client.close()
