"""Selector behaviour over socketpairs (deterministic: data is in the kernel before each poll)."""

from __future__ import annotations

import selectors
import socket
import threading
from collections.abc import Iterator

import pytest

from pykafka_client.errors import IllegalArgumentError, IllegalStateError, InvalidReceiveError
from pykafka_client.network.transport.channel import EVENT_READ, EVENT_WRITE, ChannelMuteEvent
from pykafka_client.network.transport.channel_builder import DefaultChannelBuilder, Mode
from pykafka_client.network.transport.network_send import size_prefixed
from pykafka_client.network.transport.selectable import (
    POLL_COMPLETED_RECEIVES,
    POLL_COMPLETED_SENDS,
    POLL_DISCONNECTED,
    ChannelState,
)
from pykafka_client.network.transport.selector import Selector
from pykafka_client.utils.time import MockTime


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


class Harness:
    def __init__(self, **kwargs: object) -> None:
        self.time = MockTime()
        self.selector = Selector(time=self.time, channel_builder=DefaultChannelBuilder(Mode.SERVER), **kwargs)  # type: ignore[arg-type]
        self.peers: dict[str, socket.socket] = {}

    def add(self, cid: str) -> socket.socket:
        ours, theirs = socket.socketpair()
        self.selector.register(cid, ours)
        self.peers[cid] = theirs
        return theirs

    def close(self) -> None:
        self.selector.close()
        for s in self.peers.values():
            s.close()


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness(max_receive_size=1000, connections_max_idle_ms=10_000)
    yield harness
    harness.close()


def receives(sel: Selector) -> list[tuple[str, bytes]]:
    return [(r.source, bytes(r.payload)) for r in sel.completed_receives()]


def test_register_is_ready_and_not_reported_connected(h: Harness) -> None:
    h.add("a")
    assert h.selector.is_channel_ready("a")
    h.selector.poll(0)
    assert h.selector.connected() == []


def test_receive_one_frame_per_channel_per_poll(h: Harness) -> None:
    peer = h.add("a")
    peer.sendall(frame(b"one") + frame(b"two") + frame(b"three"))
    got: list[tuple[str, bytes]] = []
    for _ in range(3):
        h.selector.poll(0)
        assert len(h.selector.completed_receives()) == 1
        got += receives(h.selector)
    assert got == [("a", b"one"), ("a", b"two"), ("a", b"three")]


def test_receive_limit_is_configurable() -> None:
    harness = Harness(max_receives_per_channel_per_poll=10)
    try:
        peer = harness.add("a")
        peer.sendall(frame(b"1") + frame(b"2") + frame(b"3"))
        harness.selector.poll(0)
        assert receives(harness.selector) == [("a", b"1"), ("a", b"2"), ("a", b"3")]
    finally:
        harness.close()


def test_invalid_size_closes_only_that_channel(h: Harness) -> None:
    bad = h.add("bad")
    good = h.add("good")
    bad.sendall((1001).to_bytes(4, "big"))
    good.sendall(frame(b"ok"))
    h.selector.poll(0)
    assert receives(h.selector) == [("good", b"ok")]
    info = h.selector.disconnected()["bad"]
    assert isinstance(info.exception, InvalidReceiveError)
    assert info.state is ChannelState.READY
    assert not h.selector.is_open("bad") and h.selector.is_open("good")
    assert bad.recv(10) == b""  # closed from our side


def test_peer_close_mid_frame_reports_disconnect_without_receive(h: Harness) -> None:
    peer = h.add("a")
    peer.sendall(frame(b"abcdef")[:7])
    peer.close()
    h.peers.pop("a")
    disconnected = {}
    for _ in range(3):
        h.selector.poll(0)
        assert h.selector.completed_receives() == []
        disconnected.update(h.selector.disconnected())
    assert disconnected["a"].state is ChannelState.READY
    assert disconnected["a"].exception is None  # an orderly close, not an error


def test_close_channel_is_not_reported(h: Harness) -> None:
    h.add("a")
    h.selector.close_channel("a")
    h.selector.poll(0)
    assert h.selector.disconnected() == {}
    assert h.selector.metrics.connection_close_total == 1
    h.selector.close_channel("unknown")  # ignored


def test_muted_channel_is_not_read_but_still_writes(h: Harness) -> None:
    peer = h.add("a")
    h.selector.mute("a")
    peer.sendall(frame(b"req"))
    h.selector.send(size_prefixed("a", [b"resp"]))
    h.selector.poll(0)
    assert h.selector.completed_receives() == []
    assert [s.destination for s in h.selector.completed_sends()] == ["a"]
    assert peer.recv(100) == frame(b"resp")
    h.selector.unmute("a")
    h.selector.poll(0)
    assert receives(h.selector) == [("a", b"req")]


def test_unmute_blocked_while_response_pending(h: Harness) -> None:
    peer = h.add("a")
    peer.sendall(frame(b"r1") + frame(b"r2"))
    h.selector.poll(0)
    assert receives(h.selector) == [("a", b"r1")]
    h.selector.mute("a")
    channel = h.selector.channel("a")
    assert channel is not None
    channel.handle_channel_mute_event(ChannelMuteEvent.REQUEST_RECEIVED)
    h.selector.unmute("a")  # not allowed yet
    h.selector.poll(0)
    assert h.selector.completed_receives() == []
    channel.handle_channel_mute_event(ChannelMuteEvent.RESPONSE_SENT)
    h.selector.unmute("a")
    h.selector.poll(0)
    assert receives(h.selector) == [("a", b"r2")]


def test_mute_and_unmute_of_a_held_channel_and_whether_the_unmute_took(h: Harness) -> None:
    peer = h.add("a")
    peer.sendall(frame(b"r1") + frame(b"r2"))
    h.selector.poll(0)
    assert receives(h.selector) == [("a", b"r1")]
    channel = h.selector.channel("a")
    assert channel is not None
    h.selector.mute_channel(channel)
    channel.handle_channel_mute_event(ChannelMuteEvent.REQUEST_RECEIVED)
    assert h.selector.unmute_channel(channel) is False  # a response is pending: stays muted
    h.selector.poll(0)
    assert h.selector.completed_receives() == []
    channel.handle_channel_mute_event(ChannelMuteEvent.RESPONSE_SENT)
    assert h.selector.unmute_channel(channel) is True
    h.selector.poll(0)
    assert receives(h.selector) == [("a", b"r2")]


def test_idle_channel_expires_with_mock_time(h: Harness) -> None:
    peer = h.add("idle")
    busy = h.add("busy")
    h.time.sleep(6_000)
    busy.sendall(frame(b"x"))
    h.selector.poll(0)
    h.time.sleep(4_001)  # idle: 10_001 ms since registration; busy: 4_001 ms
    h.selector.poll(0)
    info = h.selector.disconnected()["idle"]
    assert info.state is ChannelState.EXPIRED
    assert "busy" not in h.selector.disconnected()
    assert peer.recv(10) == b""


def test_muted_channel_also_expires(h: Harness) -> None:
    h.add("a")
    h.selector.mute("a")
    h.time.sleep(10_001)
    h.selector.poll(0)
    assert h.selector.disconnected()["a"].state is ChannelState.EXPIRED


def test_no_expiry_at_exactly_the_limit(h: Harness) -> None:
    h.add("a")
    h.time.sleep(10_000)
    h.selector.poll(0)
    assert h.selector.disconnected() == {}


def test_byte_counters(h: Harness) -> None:
    peer = h.add("a")
    peer.sendall(frame(b"hello"))
    h.selector.send(size_prefixed("a", [b"abc", b"de"]))
    h.selector.poll(0)
    channel = h.selector.channel("a")
    assert channel is not None
    assert channel.bytes_received == 9 and channel.bytes_sent == 9
    m = h.selector.metrics
    assert m.bytes_received_total == 9 and m.bytes_sent_total == 9
    assert m.requests_sent_total == 1 and m.responses_received_total == 1
    assert m.connection_creation_total == 1 and h.selector.num_channels() == 1 == m.connection_count
    h.selector.close_channel("a")
    assert m.connection_count == 0 and m.connection_close_total == 1


def test_send_to_unknown_channel_raises(h: Harness) -> None:
    with pytest.raises(IllegalStateError, match="no open connection"):
        h.selector.send(size_prefixed("nope", [b"x"]))


def test_mute_and_unmute_of_an_unknown_or_closed_channel_raise(h: Harness) -> None:
    h.add("a")
    h.selector.close_channel("a")
    for cid in ("nope", "a"):
        with pytest.raises(IllegalStateError, match=f"no connection. Connection id {cid}"):
            h.selector.mute(cid)
        with pytest.raises(IllegalStateError, match=f"no connection. Connection id {cid}"):
            h.selector.unmute(cid)


def test_register_twice_raises(h: Harness) -> None:
    h.add("a")
    with pytest.raises(IllegalStateError, match="already a connection"):
        h.add("a")


def test_negative_timeout_rejected(h: Harness) -> None:
    with pytest.raises(IllegalArgumentError):
        h.selector.poll(-1)


def test_wakeup_from_another_thread_interrupts_poll(h: Harness) -> None:
    started = threading.Event()
    done = threading.Event()

    def poller() -> None:
        started.set()
        h.selector.poll(60_000)
        done.set()

    t = threading.Thread(target=poller, daemon=True)
    t.start()
    started.wait(5)
    h.selector.wakeup()
    t.join(10)
    assert done.is_set()


def test_many_wakeups_do_not_block(h: Harness) -> None:
    for _ in range(100_000 // 100):
        h.selector.wakeup()
    h.selector.poll(0)
    h.selector.wakeup()
    h.selector.poll(0)


def test_lowest_priority_channel_is_least_recently_active(h: Harness) -> None:
    h.add("old")
    peer = h.add("new")
    assert (c := h.selector.lowest_priority_channel()) is not None and c.id == "old"
    h.time.sleep(1)
    peer.sendall(frame(b"x"))
    h.selector.poll(0)
    assert (c := h.selector.lowest_priority_channel()) is not None and c.id == "old"


def test_send_is_written_at_once_and_reported_by_next_poll(h: Harness) -> None:
    peer = h.add("a")
    h.selector.send(size_prefixed("a", [b"now"]))
    assert peer.recv(100) == frame(b"now")  # already on the wire before any poll
    h.selector.poll(60_000)  # must not block: a completed send is waiting to be reported
    assert [s.destination for s in h.selector.completed_sends()] == ["a"]
    h.selector.poll(0)
    assert h.selector.completed_sends() == []


def test_send_completing_a_whole_write_is_complete_at_once_and_never_reported(h: Harness) -> None:
    peer = h.add("a")
    assert h.selector.send_completing(size_prefixed("a", [b"now"]))
    assert peer.recv(100) == frame(b"now")
    assert h.selector.metrics.requests_sent_total == 1 and h.selector.metrics.bytes_sent_total == 7
    assert not h.selector.has_pending_io()  # nothing for the next poll to report
    h.selector.poll(0)
    assert h.selector.completed_sends() == []
    assert h.selector.send_completing(size_prefixed("a", [b"again"]))  # no send left in progress


def test_send_completing_a_partial_write_is_reported_by_a_later_poll(h: Harness) -> None:
    peer = h.add("a")
    big = b"x" * 4_000_000  # more than the socket buffers take at once
    assert not h.selector.send_completing(size_prefixed("a", [big]))
    peer.setblocking(False)
    got = bytearray()
    sends = []
    while len(got) < len(big) + 4:
        try:
            got += peer.recv(1 << 20)
        except BlockingIOError:
            pass
        h.selector.poll(0)
        sends += h.selector.completed_sends()
    while not sends:
        h.selector.poll(0)
        sends += h.selector.completed_sends()
    assert [s.destination for s in sends] == ["a"] and bytes(got) == frame(big)


def test_send_completing_to_a_closed_peer_reports_failed_send(h: Harness) -> None:
    peer = h.add("a")
    peer.close()
    h.peers.pop("a")
    assert not h.selector.send_completing(size_prefixed("a", [b"x" * 100_000]))
    h.selector.poll(0)
    assert h.selector.disconnected()["a"].state is ChannelState.FAILED_SEND


class _CountingSelector:
    """Wraps the OS selector of a Selector, counting registration changes."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.changes: list[str] = []

    def __getattr__(self, name: str) -> object:
        attr = getattr(self.inner, name)
        if name in ("register", "unregister", "modify"):
            self.changes.append(name)
        return attr


def test_mute_and_unmute_in_one_round_change_no_registration(h: Harness) -> None:
    peer = h.add("a")
    counting = _CountingSelector(h.selector._selector)
    h.selector._selector = counting  # type: ignore[assignment]
    h.selector.mute("a")
    h.selector.unmute("a")
    peer.sendall(frame(b"req"))
    h.selector.poll(0)
    assert receives(h.selector) == [("a", b"req")]
    assert counting.changes == []
    h.selector.mute("a")  # muted across a poll: unregistered by it, not read
    assert counting.changes == []
    peer.sendall(frame(b"next"))
    h.selector.poll(0)
    assert counting.changes == ["unregister"] and h.selector.completed_receives() == []
    h.selector.unmute("a")
    h.selector.poll(0)
    assert counting.changes == ["unregister", "register"] and receives(h.selector) == [("a", b"next")]


def test_unmute_after_a_registration_change_while_muted_brings_it_up_to_date(h: Harness) -> None:
    """A mute leaves the registration behind until the next poll, and an unmute in the same round skips the update
    only while nothing else changed it: a send left half written in between registers for writing alone, so the
    unmute must register reading again."""
    peer = h.add("a")
    channel = h.selector.channel("a")
    assert channel is not None
    h.selector.mute_channel(channel)
    big = b"x" * (16 * 1024 * 1024)  # more than the socket pair buffers: written in part
    assert h.selector.send_completing(size_prefixed("a", [big])) is False
    assert h.selector._events["a"] == selectors.EVENT_WRITE
    assert h.selector.unmute_channel(channel) is True
    assert h.selector._events["a"] == selectors.EVENT_READ | selectors.EVENT_WRITE
    peer.close()


def test_unmute_of_a_channel_muted_before_its_registration_was_updated_registers_reading(h: Harness) -> None:
    h.add("a")
    channel = h.selector.channel("a")
    assert channel is not None
    h.selector.mute_channel(channel)
    h.selector.poll(0)  # the mute reaches the registration
    assert "a" not in h.selector._events or h.selector._events["a"] == 0
    h.selector.mute_channel(channel)  # already muted: nothing changes
    assert h.selector.unmute_channel(channel) is True
    assert h.selector._events["a"] == selectors.EVENT_READ


def test_a_write_event_with_nothing_to_write_corrects_the_registration(h: Harness) -> None:
    """A read leaves a ready channel's registration alone (nothing a read does changes the interest), but a write
    event always brings it up to date, even with no send to write."""
    h.add("a")
    channel = h.selector.channel("a")
    assert channel is not None
    h.selector._selector.modify(channel.fd, selectors.EVENT_READ | selectors.EVENT_WRITE, channel)
    h.selector._events["a"] = selectors.EVENT_READ | selectors.EVENT_WRITE
    h.selector.poll(0)
    assert h.selector._events["a"] == selectors.EVENT_READ


def test_channel_closed_while_muted_is_not_registered_again(h: Harness) -> None:
    h.add("a")
    h.selector.mute("a")
    h.selector.close_channel("a")
    h.selector.poll(0)
    assert len(h.selector._selector.get_map()) == 1  # the wake-up socket only


def test_close_channel_drops_unreported_completed_send(h: Harness) -> None:
    h.add("a")
    h.selector.send(size_prefixed("a", [b"x"]))
    h.selector.close_channel("a")
    h.selector.poll(0)
    assert h.selector.completed_sends() == [] and h.selector.disconnected() == {}


def test_send_to_closed_peer_reports_failed_send(h: Harness) -> None:
    peer = h.add("a")
    peer.close()
    h.peers.pop("a")
    h.selector.send(size_prefixed("a", [b"x" * 100_000]))
    h.selector.poll(0)
    info = h.selector.disconnected()["a"]
    assert info.state is ChannelState.FAILED_SEND
    assert isinstance(info.exception, OSError)
    assert not h.selector.is_open("a")


def test_without_optimistic_writes_the_poll_writes() -> None:
    harness = Harness(optimistic_writes=False)
    try:
        peer = harness.add("a")
        peer.setblocking(False)
        harness.selector.send(size_prefixed("a", [b"later"]))
        with pytest.raises(BlockingIOError):
            peer.recv(100)
        harness.selector.poll(0)
        assert [s.destination for s in harness.selector.completed_sends()] == ["a"]
        assert peer.recv(100) == frame(b"later")
    finally:
        harness.close()


def test_one_busy_channel_does_not_starve_others(h: Harness) -> None:
    busy = h.add("busy")
    quiet = h.add("quiet")
    busy.sendall(b"".join(frame(b"b%d" % i) for i in range(50)))
    quiet.sendall(frame(b"q"))
    h.selector.poll(0)
    assert sorted(receives(h.selector)) == [("busy", b"b0"), ("quiet", b"q")]


def test_large_frame_is_read_across_polls_within_the_byte_budget() -> None:
    harness = Harness(max_read_bytes_per_channel_per_poll=1, max_receive_size=1 << 20)
    try:
        peer = harness.add("a")
        other = harness.add("b")
        payload = b"z" * 300_000
        data = frame(payload)
        # the frame's first bytes only, then the rest from a thread: its reading spans polls whatever the timing
        # (a peer that had sent the whole frame before the first poll let one read take all of it)
        peer.sendall(data[:1000])
        other.sendall(frame(b"small"))
        got: list[tuple[str, bytes]] = []
        harness.selector.poll(100)
        got += receives(harness.selector)
        assert all(source != "a" for source, _ in got)
        polls = 1
        t = threading.Thread(target=peer.sendall, args=(data[1000:],))
        t.start()
        while len(got) < 2 and polls < 10_000:
            harness.selector.poll(100)
            got += receives(harness.selector)
            polls += 1
        t.join(10)
        assert sorted(got) == [("a", payload), ("b", b"small")]
        assert polls > 1
    finally:
        harness.close()


def test_huge_poll_timeout_is_capped_not_an_error(h: Harness) -> None:
    h.selector.wakeup()
    h.selector.poll(2**63 - 1)


def test_idle_expiry_disabled_with_minus_one() -> None:
    harness = Harness(connections_max_idle_ms=-1)
    try:
        harness.add("a")
        harness.time.sleep(10**9)
        harness.selector.poll(0)
        assert harness.selector.disconnected() == {} and harness.selector.is_open("a")
    finally:
        harness.close()


def test_create_client_selector_reads_config() -> None:
    from pykafka_client.errors import ConfigurationError
    from pykafka_client.network.transport.sasl import SaslClientAuthenticator
    from pykafka_client.network.transport.selector import create_client_selector

    sel = create_client_selector(
        {"receive.message.max.bytes": 10, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
         "sasl.username": "u", "sasl.password": "p"},
        MockTime(),
    )
    try:
        a, b = socket.socketpair()
        b.close()
        channel = sel._builder.build_channel("x", a, connecting=False, host=None, max_receive_size=10)
        assert isinstance(channel.authenticator, SaslClientAuthenticator)
        assert not channel.ready()
        channel.close()
        assert sel._max_receive_size == 10
    finally:
        sel.close()
    with pytest.raises(ConfigurationError, match="sasl"):
        create_client_selector({"security.protocol": "SASL_SSL"})


def test_nonblocking_poll_reports_no_wait_for_connection_io_but_not_for_a_wakeup_alone(h: Harness) -> None:
    """The async producer's driver waits ``deferred_timeout_ms`` on the descriptor after a non-blocking poll: a
    connection's I/O means its caller loops at once (0), a drained wake-up alone does not (the timeout asked)."""
    peer = h.add("a")
    h.selector.nonblocking = True
    h.selector.poll(5_000)
    assert h.selector.deferred_timeout_ms == 5_000  # nothing ready
    h.selector.wakeup()
    h.selector.poll(5_000)
    assert h.selector.deferred_timeout_ms == 5_000  # only the wake-up, which the poll drained
    peer.sendall(frame(b"one"))
    h.selector.wakeup()
    h.selector.poll(5_000)
    assert receives(h.selector) == [("a", b"one")]
    assert h.selector.deferred_timeout_ms == 0  # a connection had I/O (with or without a wake-up)
    peer.sendall(frame(b"two"))
    h.selector.poll(5_000)
    assert h.selector.deferred_timeout_ms == 0


def test_poll_returns_the_bits_of_the_results_that_have_entries(h: Harness) -> None:
    """What poll() returns names exactly the non-empty results (NetworkClient asks for no other)."""
    peer = h.add("a")
    h.add("b")
    assert h.selector.poll(0) == 0
    h.selector.send(size_prefixed("a", [b"now"]))
    peer.sendall(frame(b"in"))
    assert h.selector.poll(0) == POLL_COMPLETED_SENDS | POLL_COMPLETED_RECEIVES
    assert h.selector.completed_sends() and h.selector.completed_receives()
    assert h.selector.poll(0) == 0
    h.time.sleep(10_001)
    assert h.selector.poll(0) == POLL_DISCONNECTED  # both channels expired, one per poll
    assert list(h.selector.disconnected()) == ["b"]  # the least recently active first
    assert h.selector.poll(0) == POLL_DISCONNECTED
    assert list(h.selector.disconnected()) == ["a"]


def test_idle_expiry_is_not_checked_before_the_oldest_connection_can_expire(h: Harness) -> None:
    """poll() asks the idle expiry for an expired connection only once one can have expired (its next check)."""
    h.add("a")
    idle = h.selector._idle
    assert idle is not None
    asked: list[int] = []
    poll_expired = idle.poll_expired_connection

    def counted(now_ns: int) -> str | None:
        asked.append(now_ns)
        return poll_expired(now_ns)

    idle.poll_expired_connection = counted  # type: ignore[method-assign]
    h.time.sleep(9_999)
    h.selector.poll(0)
    assert asked == []
    h.time.sleep(1)
    h.selector.poll(0)  # at the limit: asked, nothing expired yet (strictly longer than the limit)
    assert len(asked) == 1 and h.selector.disconnected() == {}
    h.time.sleep(1)
    h.selector.poll(0)
    assert len(asked) == 2 and h.selector.disconnected()["a"].state is ChannelState.EXPIRED


def test_a_read_alone_leaves_the_registration_as_it_is(h: Harness) -> None:
    """What a channel waits for changes with its connect, handshakes, mute state or send, not with a read: a poll that
    only reads does not ask the channel's interest again; one that finishes a write does (WRITE is dropped)."""
    peer = h.add("a")
    channel = h.selector.channel("a")
    assert channel is not None
    asked: list[int] = []
    interest = channel.interest

    def counted() -> int:
        asked.append(interest())
        return asked[-1]

    channel.interest = counted  # type: ignore[method-assign]
    peer.sendall(frame(b"one"))
    h.selector.poll(0)
    assert receives(h.selector) == [("a", b"one")] and asked == []
    peer.setblocking(False)
    big = b"x" * (8 * 1024 * 1024)  # more than the socket buffers take at once: the rest waits for WRITE
    h.selector.send(size_prefixed("a", [big]))
    assert channel.has_send() and asked == [EVENT_READ | EVENT_WRITE]
    got = 0
    while channel.has_send():
        try:
            got += len(peer.recv(1 << 20))
        except BlockingIOError:
            pass
        h.selector.poll(0)
    assert asked[-1] == EVENT_READ  # the write finished in a poll: the registration follows
