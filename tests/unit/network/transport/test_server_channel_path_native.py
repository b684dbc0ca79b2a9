"""The kernel's ServerChannelPath (``records/kernel/server_channel_path.c.h``, :meth:`Selector.compiled_server_path`)
against its reference, the Selector's own ``send_completing``, ``mute_channel``, ``unmute_channel`` and
``read_buffered``. The same random operation sequences (requests from the peers, whole, in part, several at once,
oversized; responses written whole or in part into small socket buffers; the mute state machine's events, valid and
not; read-ahead frames taken; polls; peers closing; time passing) on two broker selectors, each over socket pairs and
with a memory pool, give the same results, bytes on the wire, mute states, frames read, completion records and idle
expiry order."""

from __future__ import annotations

import gc
import socket
import struct
import weakref
from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.transport.channel import ChannelMuteEvent, KafkaChannel
from pykafka_client.network.transport.channel_builder import DefaultChannelBuilder, Mode
from pykafka_client.network.transport.memory_pool import SimpleMemoryPool
from pykafka_client.network.transport.selectable import NetworkSend
from pykafka_client.network.transport.selector import Selector
from pykafka_client.network.transport.server_channel_path import ServerChannelPathApi
from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import MockTime
from tests.doubles.socket_pairs import drain, register_pair
from tests.unit.lockstep import run_in_lockstep

kernel = _native.loaded_kernel()
pytestmark = pytest.mark.skipif(kernel is None, reason="the kernel is not built")

IDS = ["0", "1"]
#: the server side's send buffer: a response of a few KiB goes out in part
SEND_BUFFER = 4096


class World:
    """A broker selector (server role, a memory pool: read-ahead readers) with two connections, driven through
    ``steps``: the compiled path, or the selector itself."""

    def __init__(self, compiled: bool, pool_bytes: int) -> None:
        self.time = MockTime()
        self.pool = SimpleMemoryPool(pool_bytes)
        self.selector = Selector(time=self.time, channel_builder=DefaultChannelBuilder(Mode.SERVER),
                                 max_receive_size=3000, connections_max_idle_ms=50, memory_pool=self.pool,
                                 skip_wait_when_buffered=True)
        path = self.selector.compiled_server_path()
        assert path is not None
        self.steps: ServerChannelPathApi = path if compiled else self.selector
        self.peers: dict[str, socket.socket] = {}
        self.received: dict[str, bytearray] = {cid: bytearray() for cid in IDS}
        self.sends: list[NetworkSend] = []
        for cid in IDS:
            self.peers[cid] = register_pair(self.selector, cid, SEND_BUFFER)

    def drain(self, cid: str) -> None:
        drain(self.peers[cid], self.received[cid])

    def state(self) -> Any:
        s = self.selector
        return (
            [(r.source, bytes(r.payload)) for r in s.completed_receives()],
            [(x.destination, x.size, x.written) for x in s.completed_sends()],
            [(x.destination, x.size, x.written) for x in s.pending_completed_sends],
            [(x.destination, x.written) for x in self.sends],
            {k: (v.state, type(v.exception).__name__) for k, v in s.disconnected().items()},
            sorted(s.channel_ids()),
            [(c, None if (ch := s.channel(c)) is None else
              (ch.mute_state, ch.state, ch.bytes_sent, ch.bytes_received, ch.has_send(), ch.interest()))
             for c in IDS],
            asdict(s.metrics) | {"select_time_ns_total": 0, "io_time_ns_total": 0},
            {k: bytes(v) for k, v in self.received.items()},
            s.memory_muted_count(),
            s.has_pending_io(),
            (self.pool.available, self.pool.refused_total),
            None if (oldest := s.lowest_priority_channel()) is None else oldest.id,
        )

    def close(self) -> None:
        self.selector.close()
        for peer in self.peers.values():
            peer.close()


def _frame(n: int, tag: int) -> bytes:
    return struct.pack(">i", n) + bytes([tag % 256]) * n


_ID = st.sampled_from([0, 0, 1])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("frames"), _ID, st.lists(st.integers(1, 2000), min_size=1, max_size=8), st.booleans(),
                  st.booleans()),
        st.tuples(st.just("frames"), _ID, st.lists(st.integers(0, 30), min_size=1, max_size=4), st.just(False),
                  st.booleans()),
        st.tuples(st.just("oversized"), _ID),
        st.tuples(st.just("send"), _ID, st.lists(st.integers(0, 9000), min_size=1, max_size=3)),
        st.tuples(st.just("drain"), _ID),
        st.tuples(st.just("mute"), _ID, st.booleans()),
        st.tuples(st.just("unmute"), _ID, st.booleans()),
        st.tuples(st.just("throttle"), _ID, st.booleans()),
        st.tuples(st.just("read_buffered"), _ID),
        st.tuples(st.just("round"), _ID, st.integers(0, 9000), st.booleans()),
        st.tuples(st.just("round"), _ID, st.integers(0, 100), st.booleans()),
        st.tuples(st.just("pipeline"), _ID, st.lists(st.integers(1, 1500), min_size=2, max_size=6),
                  st.integers(0, 6000)),
        st.tuples(st.just("poll"),),
        st.tuples(st.just("tick"), st.integers(1, 30)),
        st.tuples(st.just("peer_close"), _ID),
        st.tuples(st.just("close_channel"), _ID),
    ),
    min_size=3,
    max_size=50,
)


def _apply(w: World, op: tuple[Any, ...]) -> Any:
    s = w.selector
    kind = op[0]
    if kind == "frames":
        data = b"".join(_frame(n, i) for i, n in enumerate(op[2]))
        if op[3]:  # in part: the rest never comes (a later step's frames follow it: a bad size or a stall)
            data = data[: len(data) // 2 + 1]
        try:
            w.peers[IDS[op[1]]].send(data)
        except OSError:
            pass
        return s.poll(0) if op[4] else None  # (then a poll: the first frame read, the next ones read ahead)
    if kind == "oversized":
        try:
            w.peers[IDS[op[1]]].send(struct.pack(">i", 5000))
        except OSError:
            pass
        return None
    if kind == "drain":
        w.drain(IDS[op[1]])
        return None
    if kind == "tick":
        w.time.sleep(op[1] / 1000)
        return None
    if kind == "peer_close":
        w.peers[IDS[op[1]]].close()
        return None
    if kind == "close_channel":
        s.close_channel(IDS[op[1]])
        return None
    if kind == "poll":
        return s.poll(0)
    cid = IDS[op[1]]
    channel = s.channel(cid)
    if kind == "send":
        pieces = [bytes([65 + i]) * n for i, n in enumerate(op[2])]
        send = NetworkSend(cid, pieces, sum(op[2]), 0, None)
        w.sends.append(send)
        return w.steps.send_completing(send)
    if channel is None:
        return "closed"
    if kind == "mute":
        return w.steps.mute_channel(channel, op[2])
    if kind == "unmute":
        return w.steps.unmute_channel(channel, op[2])
    if kind == "throttle":  # the throttle events, straight to the channel's machine (as the Processor sends them)
        channel.handle_channel_mute_event(ChannelMuteEvent.THROTTLE_STARTED if op[2] else ChannelMuteEvent.THROTTLE_ENDED)
        return None
    if kind == "read_buffered":
        return w.steps.read_buffered(channel)
    if kind == "round":
        return _round(w, channel, op[2], op[3])
    if kind == "pipeline":  # several requests at once, then a round for each while the next one was read ahead
        w.peers[cid].send(b"".join(_frame(n, i) for i, n in enumerate(op[2])))
        s.poll(0)
        return [_round(w, channel, op[3], False) for _ in op[2]]
    raise AssertionError(kind)


def _round(w: World, channel: KafkaChannel, response_size: int, throttled: bool) -> Any:
    """A Processor's round for a request of the channel: mute, answer, unmute, the frame read ahead after it; a
    throttled one's unmute waits for its throttle's end."""
    steps = w.steps
    steps.mute_channel(channel, True)
    if throttled:
        channel.handle_channel_mute_event(ChannelMuteEvent.THROTTLE_STARTED)
    sent = steps.send_completing(NetworkSend(channel.id, [b"r" * response_size], response_size, 0, None))
    if not sent:
        return "in flight"
    unmuted = steps.unmute_channel(channel, True)
    if throttled:
        assert not unmuted
        channel.handle_channel_mute_event(ChannelMuteEvent.THROTTLE_ENDED)
        unmuted = steps.unmute_channel(channel)
    return unmuted and steps.read_buffered(channel)


def _outcome(w: World, op: tuple[Any, ...]) -> Any:
    try:
        return ("ok", _apply(w, op))
    except Exception as e:
        return ("raised", type(e).__name__, str(e))


@settings(max_examples=300, deadline=None)
@given(_OPS, st.sampled_from([100_000, 100_000, 2500]))
def test_the_compiled_server_path_does_what_the_selector_does(ops: list[tuple[Any, ...]], pool_bytes: int) -> None:
    run_in_lockstep(World(True, pool_bytes), World(False, pool_bytes), ops, _outcome)


def test_a_request_s_round_through_the_compiled_path() -> None:
    """A frame read ahead behind another is handed out by read_buffered once the first one's response went out whole
    and the channel unmuted, with the idle order moved and nothing left buffered."""
    w = World(True, 100_000)
    try:
        s = w.selector
        w.peers["0"].send(_frame(10, 1) + _frame(20, 2))
        s.poll(0)
        assert [bytes(r.payload) for r in s.completed_receives()] == [b"\x01" * 10]
        channel = s.channel("0")
        assert channel is not None
        w.steps.mute_channel(channel, True)
        w.time.sleep(0.005)
        assert w.steps.send_completing(NetworkSend("0", [b"ok"], 2, 0, None)) is True
        assert w.steps.unmute_channel(channel, True) is True
        assert not channel.is_muted()
        assert w.steps.read_buffered(channel) is True
        assert [bytes(r.payload) for r in s.completed_receives()] == [b"\x01" * 10, b"\x02" * 20]
        oldest = s.lowest_priority_channel()
        assert oldest is not None and oldest.id == "1"  # "0" was active last: the idle order moved it
        assert w.steps.read_buffered(channel) is False  # nothing left buffered
        w.drain("0")
        assert bytes(w.received["0"]) == b"ok"
    finally:
        w.close()


def test_the_path_holds_its_selector_weakly() -> None:
    selector = Selector()
    path = selector.compiled_server_path()
    assert path is not None
    ref = weakref.ref(selector)
    selector.close()
    gc.disable()
    try:
        del selector
        assert ref() is None  # no cycle through the path: freed by its reference count
    finally:
        gc.enable()
    with pytest.raises(ReferenceError):
        path.send_completing(NetworkSend("x", [b"a"], 1, 0, None))


def test_no_compiled_path_for_a_subclass_overriding_a_step_or_without_optimistic_writes() -> None:
    class Counting(Selector):
        def read_buffered(self, channel: Any) -> bool:
            return super().read_buffered(channel)

    for selector in (Counting(), Selector(optimistic_writes=False)):
        try:
            assert selector.compiled_server_path() is None
        finally:
            selector.close()
