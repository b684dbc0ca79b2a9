"""The kernel's SelectorPoll (``records/kernel/client_poll.c.h``: a client Selector's common poll in one call,
:meth:`Selector.compiled_poll`) against its reference, :meth:`Selector.poll`. The same random operation sequences
(frames from the peers, whole, in part, several, oversized; sends completed at send time; peers closing; channels
closed, muted and unmuted; wake-ups; polls with and without a GIL hand-off) on two selectors, each over socket pairs,
give the same results, receives, disconnects, metrics, idle order and bytes on the wire. The channels read frame by
frame (a registered channel's reader) or through a receive buffer of some size (a client's: its read event is
compiled, ``Selector._poll_channel``'s common case), with or without the idle expiry."""

from __future__ import annotations

import gc
import socket
import struct
import weakref
from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pykafka_client.network.transport.selectable import NetworkSend
from pykafka_client.network.transport.selector import CLIENT_MAX_RECEIVES_PER_CHANNEL_PER_POLL, Selector
from pykafka_client.protocol.records import _native
from tests.unit.lockstep import run_in_lockstep

kernel = _native.loaded_kernel()
pytestmark = pytest.mark.skipif(kernel is None, reason="the kernel is not built")

IDS = ["0", "1"]


class World:
    def __init__(self, compiled: bool, handoff: bool, buffer_size: int | None = None, idle: bool = True) -> None:
        self.buffer_size = buffer_size
        self.selector = Selector(max_receives_per_channel_per_poll=CLIENT_MAX_RECEIVES_PER_CHANNEL_PER_POLL,
                                 max_receive_size=1000, connections_max_idle_ms=540_000 if idle else -1)
        compiled_poll = self.selector.compiled_poll()
        if compiled:
            assert compiled_poll is not None
        self.poll = compiled_poll if compiled and compiled_poll is not None else self.selector.poll
        if handoff:
            self.selector.enable_gil_handoff()
        self.peers: dict[str, socket.socket] = {}
        self.received: dict[str, bytearray] = {}
        for cid in IDS:
            self._connect(cid)

    def _connect(self, cid: str) -> None:
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        self.peers[cid] = theirs
        self.received.setdefault(cid, bytearray())
        self.selector.register(cid, ours)
        channel = self.selector.channel(cid)
        if self.buffer_size is not None and channel is not None:
            channel.use_buffered_reads(self.buffer_size)  # (a client's channel reads so)

    def drain(self) -> None:
        for cid, peer in self.peers.items():
            try:
                while chunk := peer.recv(65536):
                    self.received[cid] += chunk
            except (BlockingIOError, OSError):
                pass

    def state(self) -> Any:
        self.drain()
        s = self.selector
        return (
            [(r.source, bytes(r.payload)) for r in s.completed_receives()],
            [(x.destination, x.size) for x in s.completed_sends()],
            {k: (v.state, type(v.exception).__name__) for k, v in s.disconnected().items()},
            list(s.connected()),
            sorted(s.channel_ids()),
            [(c, None if (ch := s.channel(c)) is None else (ch.mute_state, ch.state)) for c in IDS],
            asdict(s.metrics) | {"select_time_ns_total": 0, "io_time_ns_total": 0},
            {k: bytes(v) for k, v in self.received.items()},
            s.has_pending_io(),
            None if s._idle is None else list(s._idle.activity_order()),
            [(c, None if (ch := s.channel(c)) is None else ch.bytes_received) for c in IDS],
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
        st.tuples(st.just("frames"), _ID, st.lists(st.integers(0, 300), min_size=1, max_size=20), st.booleans()),
        st.tuples(st.just("frames"), _ID, st.lists(st.integers(0, 30), min_size=1, max_size=3), st.just(False)),
        st.tuples(st.just("oversized"), _ID),
        st.tuples(st.just("send"), _ID, st.integers(1, 100)),
        st.tuples(st.just("peer_close"), _ID),
        st.tuples(st.just("close_channel"), _ID),
        st.tuples(st.just("reconnect"), _ID),
        st.tuples(st.just("mute"), _ID),
        st.tuples(st.just("unmute"), _ID),
        st.tuples(st.just("wakeup")),
        st.tuples(st.just("poll"), st.sampled_from([0, 0, 0, 1])),
        st.tuples(st.just("poll"), st.just(0)),
        st.tuples(st.just("poll"), st.just(-1)),
    ),
    min_size=3,
    max_size=40,
)


def _apply(w: World, op: tuple[Any, ...]) -> Any:
    s = w.selector
    kind = op[0]
    if kind == "frames":
        cid = IDS[op[1]]
        data = b"".join(_frame(n, i) for i, n in enumerate(op[2]))
        if op[3]:  # in part: the rest comes with a later step's frames
            data = data[: len(data) // 2 + 1]
        try:
            w.peers[cid].send(data)
        except OSError:
            pass
        return None
    if kind == "oversized":
        try:
            w.peers[IDS[op[1]]].send(struct.pack(">i", 5000))
        except OSError:
            pass
        return None
    if kind == "send":
        cid = IDS[op[1]]
        channel = s.channel(cid)
        if s.is_channel_ready(cid) and channel is not None and not channel.has_send():
            s.send(NetworkSend(cid, [b"s" * op[2]], op[2], 0, None))
            return True
        return False
    if kind == "peer_close":
        w.peers[IDS[op[1]]].close()
        return None
    if kind == "close_channel":
        s.close_channel(IDS[op[1]])
        return None
    if kind == "reconnect":
        cid = IDS[op[1]]
        if s.channel(cid) is None and not s.closed:
            w.peers.pop(cid).close()
            w._connect(cid)
        return None
    if kind == "mute":
        if s.channel(IDS[op[1]]) is not None:
            s.mute(IDS[op[1]])
        return None
    if kind == "unmute":
        if s.channel(IDS[op[1]]) is not None:
            s.unmute(IDS[op[1]])
        return None
    if kind == "wakeup":
        s.wakeup()
        return None
    if kind == "poll":
        return w.poll(op[1])
    raise AssertionError(kind)


def _outcome(w: World, op: tuple[Any, ...]) -> Any:
    try:
        return ("ok", _apply(w, op))
    except Exception as e:
        return ("raised", type(e).__name__, str(e))


_BUFFER_SIZE = st.sampled_from([None, 4, 16, 64, 4096])


@settings(max_examples=300, deadline=None)
@example(  # more whole frames in the receive buffer than a poll takes: the channel's id into buffered
    ops=[("frames", 0, [10] * 20, False), ("poll", 0), ("poll", 0), ("poll", 0)], handoff=False, buffer_size=4096,
    idle=True,
)
@given(_OPS, st.booleans(), _BUFFER_SIZE, st.booleans())
def test_the_compiled_selector_poll_does_what_the_reference_does(
    ops: list[tuple[Any, ...]], handoff: bool, buffer_size: int | None, idle: bool
) -> None:
    run_in_lockstep(World(True, handoff, buffer_size, idle), World(False, handoff, buffer_size, idle), ops, _outcome)


def test_the_path_holds_its_selector_weakly() -> None:
    selector = Selector()
    poll = selector.compiled_poll()
    assert poll is not None and selector.compiled_poll() == poll
    ref = weakref.ref(selector)
    selector.close()
    gc.disable()
    try:
        del selector
        assert ref() is None  # no cycle through the path: freed by refcount
    finally:
        gc.enable()
    with pytest.raises(ReferenceError):
        poll(0)


def test_a_closed_selector_s_compiled_poll_raises_as_the_reference() -> None:
    selector = Selector()
    poll = selector.compiled_poll()
    assert poll is not None
    selector.close()
    with pytest.raises(Exception, match="the selector is closed"):
        poll(0)


def test_no_compiled_poll_for_a_broker_s_selector_or_a_subclass() -> None:
    class Counting(Selector):
        def poll(self, timeout_ms: int) -> int:
            return super().poll(timeout_ms)

    for selector in (Selector(skip_wait_when_buffered=True), Counting()):
        try:
            assert selector.compiled_poll() is None
        finally:
            selector.close()
