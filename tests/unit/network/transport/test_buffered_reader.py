"""BufferedFrameReader (the client's receive path) against scripted transports and a socketpair channel."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.errors import InvalidReceiveError
from pykafka_client.network.transport.channel import KafkaChannel, PeerClosedError
from pykafka_client.network.transport.network_receive import BufferedFrameReader
from pykafka_client.network.transport.transport_layer import PlaintextTransportLayer


class ScriptedTransport:
    """Delivers ``data`` in reads of at most ``steps[i]`` bytes (0: nothing available now); once the data is
    all delivered, 0 (would block) until ``eof`` is set, then -1. Counts the reads."""

    def __init__(self, data: bytes, steps: Sequence[int] = (), *, eof: bool = False) -> None:
        self.data = data
        self.pos = 0
        self.steps = list(steps)
        self.eof = eof
        self.reads = 0

    def feed(self, more: bytes, steps: Sequence[int] = ()) -> None:
        self.data += more
        self.steps += list(steps)

    def read_into(self, view: memoryview) -> int:
        self.reads += 1
        if self.pos >= len(self.data):
            return -1 if self.eof else 0
        step = self.steps.pop(0) if self.steps else len(self.data)
        n = min(step, view.nbytes, len(self.data) - self.pos)
        view[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def payloads(frames: Sequence[object]) -> list[bytes]:
    return [bytes(f.payload) for f in frames]  # type: ignore[attr-defined]


def test_several_frames_in_one_read_need_one_read() -> None:
    t = ScriptedTransport(frame(b"one") + frame(b"") + frame(b"three"))
    r = BufferedFrameReader("n", 100, 64)
    frames, n, ended = r.read_frames(t, 16, 1 << 20)
    assert payloads(frames) == [b"one", b"", b"three"]
    assert (n, ended) == (4 + 3 + 4 + 4 + 5, False)
    assert t.reads == 1  # a short read: the socket is drained, no read that only finds it empty
    assert all(f.source == "n" for f in frames)
    assert not r.bytes_pending()


def test_size_and_payload_split_across_reads() -> None:
    data = frame(b"hello world")
    t = ScriptedTransport(data, [2])
    r = BufferedFrameReader("n", 100, 64)
    frames, n, _ = r.read_frames(t, 16, 1 << 20)
    assert frames == [] and n == 2 and r.bytes_pending()  # two bytes of the size
    t.feed(b"", [5])
    frames, n, _ = r.read_frames(t, 16, 1 << 20)
    assert frames == [] and n == 5 and r.bytes_pending()  # the size and 3 payload bytes
    frames, n, _ = r.read_frames(t, 16, 1 << 20)
    assert payloads(frames) == [b"hello world"] and n == len(data) - 7
    assert not r.bytes_pending()


def test_nothing_available_reads_once_and_returns_nothing() -> None:
    t = ScriptedTransport(b"")
    r = BufferedFrameReader("n", 100, 64)
    assert r.read_frames(t, 16, 1 << 20) == ([], 0, False)
    assert t.reads == 1


def test_frame_larger_than_the_buffer_is_read_into_its_own_buffer() -> None:
    big = bytes(range(256)) * 3
    t = ScriptedTransport(frame(b"a") + frame(big) + frame(b"z"), [40, 100, 1000])
    r = BufferedFrameReader("n", 10_000, 32)
    got: list[bytes] = []
    for _ in range(10):
        frames, _, _ = r.read_frames(t, 16, 1 << 20)
        got += payloads(frames)
    assert got == [b"a", big, b"z"]


def test_handed_out_payloads_are_not_overwritten_by_later_reads() -> None:
    t = ScriptedTransport(frame(b"first"), [])
    r = BufferedFrameReader("n", 100, 16)
    first, _, _ = r.read_frames(t, 16, 1 << 20)
    t.feed(frame(b"SECOND") + frame(b"third!"))
    later, _, _ = r.read_frames(t, 16, 1 << 20)
    assert payloads(first) == [b"first"]
    assert payloads(later) == [b"SECOND", b"third!"]


def test_oversize_frame_is_the_existing_clear_error() -> None:
    t = ScriptedTransport((9).to_bytes(4, "big") + b"x" * 9)
    r = BufferedFrameReader("n", 8, 64)
    with pytest.raises(InvalidReceiveError, match=r"size = 9 larger than 8"):
        r.read_frames(t, 16, 1 << 20)


def test_oversize_frame_after_good_ones_is_raised_before_any_allocation() -> None:
    t = ScriptedTransport(frame(b"ok") + (2**31 - 1).to_bytes(4, "big"))
    r = BufferedFrameReader("n", 100, 64)
    with pytest.raises(InvalidReceiveError, match="2147483647"):
        r.read_frames(t, 16, 1 << 20)


def test_negative_size_rejected() -> None:
    t = ScriptedTransport((-1).to_bytes(4, "big", signed=True))
    with pytest.raises(InvalidReceiveError, match=r"size = -1"):
        BufferedFrameReader("n", 100, 64).read_frames(t, 16, 1 << 20)


def test_eof_mid_frame_ends_without_a_frame() -> None:
    t = ScriptedTransport(frame(b"abcdef")[:7], eof=True)
    r = BufferedFrameReader("n", 100, 64)
    frames, n, ended = r.read_frames(t, 16, 1 << 20)
    assert (frames, n, ended) == ([], 7, False)  # a short read: the end shows at the next read
    frames, n, ended = r.read_frames(t, 16, 1 << 20)
    assert (frames, n, ended) == ([], 0, True)


def test_eof_mid_large_frame() -> None:
    t = ScriptedTransport(frame(b"y" * 100)[:50], [50], eof=True)
    r = BufferedFrameReader("n", 1000, 16)
    ended = False
    for _ in range(5):
        frames, _, ended = r.read_frames(t, 16, 1 << 20)
        assert frames == []
        if ended:
            break
    assert ended


def test_max_receives_leaves_whole_frames_buffered_and_says_so() -> None:
    t = ScriptedTransport(frame(b"1") + frame(b"2") + frame(b"3"))
    r = BufferedFrameReader("n", 100, 64)
    frames, _, _ = r.read_frames(t, 2, 1 << 20)
    assert payloads(frames) == [b"1", b"2"]
    assert r.has_buffered_frame()
    reads = t.reads
    frames, n, _ = r.read_frames(t, 2, 1 << 20)
    assert payloads(frames) == [b"3"] and n == 0 and t.reads == reads + 1
    assert not r.has_buffered_frame()


def test_partial_frame_in_buffer_is_not_a_buffered_frame() -> None:
    t = ScriptedTransport(frame(b"abc")[:5])
    r = BufferedFrameReader("n", 100, 64)
    r.read_frames(t, 16, 1 << 20)
    assert r.bytes_pending() and not r.has_buffered_frame()


def test_full_reads_continue_until_a_short_one() -> None:
    data = b"".join(frame(bytes([i]) * 10) for i in range(10))  # 140 bytes through a 32-byte buffer
    t = ScriptedTransport(data)
    r = BufferedFrameReader("n", 100, 32)
    frames, n, _ = r.read_frames(t, 100, 1 << 20)
    assert payloads(frames) == [bytes([i]) * 10 for i in range(10)] and n == len(data)


def test_max_bytes_stops_reading() -> None:
    data = b"".join(frame(b"x" * 20) for _ in range(10))
    t = ScriptedTransport(data)
    r = BufferedFrameReader("n", 100, 32)
    _, n, _ = r.read_frames(t, 100, 50)
    assert 50 <= n < len(data)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(max_size=120), max_size=8),
    st.lists(st.integers(0, 70), max_size=40),
    st.integers(4, 80),
    st.integers(1, 4),
)
def test_any_split_of_any_frames_round_trips(
    frames_in: list[bytes], steps: list[int], buffer_size: int, max_receives: int
) -> None:
    t = ScriptedTransport(b"".join(frame(p) for p in frames_in), steps)
    r = BufferedFrameReader("n", 1000, buffer_size)
    got: list[bytes] = []
    for _ in range(len(steps) + 4 * len(frames_in) + 50):
        frames, _, _ = r.read_frames(t, max_receives, 1 << 20)
        got += payloads(frames)
        if len(got) == len(frames_in) and not r.bytes_pending():
            break
    assert got == frames_in


# --- the channel over a real socket ---------------------------------------------------------------------


class CountingTransport(PlaintextTransportLayer):
    __slots__ = ("reads",)

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock)
        self.reads = 0

    def read_into(self, view: memoryview) -> int:
        self.reads += 1
        return super().read_into(view)


@pytest.fixture
def pair() -> Iterator[tuple[KafkaChannel, CountingTransport, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    transport = CountingTransport(ours)
    channel = KafkaChannel("n", transport, max_receive_size=1000)
    channel.use_buffered_reads()
    yield channel, transport, theirs
    channel.close()
    theirs.close()


def test_channel_reads_a_response_with_one_recv(pair: tuple[KafkaChannel, CountingTransport, socket.socket]) -> None:
    channel, transport, peer = pair
    peer.sendall(frame(b"response-1") + frame(b"response-2"))
    frames, n = channel.read(16, 1 << 20)
    assert payloads(frames) == [b"response-1", b"response-2"] and n == 28
    assert transport.reads == 1  # the frame-at-a-time reader made 5: two sizes, two payloads, one would-block
    assert channel.bytes_received == 28 and not channel.has_bytes_buffered()


def test_channel_reports_frames_left_over_the_receive_limit(
    pair: tuple[KafkaChannel, CountingTransport, socket.socket]
) -> None:
    channel, _, peer = pair
    peer.sendall(frame(b"a") + frame(b"b"))
    frames, _ = channel.read(1, 1 << 20)
    assert payloads(frames) == [b"a"]
    assert channel.has_bytes_buffered()  # the selector polls it again without waiting for the socket
    frames, _ = channel.read(1, 1 << 20)
    assert payloads(frames) == [b"b"] and not channel.has_bytes_buffered()


def test_channel_peer_close_mid_frame_raises(pair: tuple[KafkaChannel, CountingTransport, socket.socket]) -> None:
    channel, _, peer = pair
    peer.sendall(frame(b"abcdef")[:7])
    peer.shutdown(socket.SHUT_WR)
    with pytest.raises(PeerClosedError):
        for _ in range(3):
            assert channel.read(16, 1 << 20)[0] == []


def test_channel_oversize_frame(pair: tuple[KafkaChannel, CountingTransport, socket.socket]) -> None:
    channel, _, peer = pair
    peer.sendall((1001).to_bytes(4, "big"))
    with pytest.raises(InvalidReceiveError, match="size = 1001 larger than 1000"):
        channel.read(16, 1 << 20)


def test_frames_and_sends_carry_no_instance_dict() -> None:
    """One NetworkReceive per response and one NetworkSend per request: slotted (no dict each), with only their
    fields settable (the frame reader builds a receive positionally)."""
    from pykafka_client.network.transport.selectable import NetworkReceive, NetworkSend

    reader = BufferedFrameReader("n", 1 << 20)
    transport = ScriptedTransport(b"\x00\x00\x00\x02ab")
    (receive,), _, _ = reader.read_frames(transport, 16, 1 << 20)
    assert type(receive) is NetworkReceive and (receive.source, bytes(receive.payload), receive.extra) == ("n", b"ab", None)
    send = NetworkSend("n", [b"\x00\x00\x00\x00"], 4)
    for obj in (receive, send):
        assert not hasattr(obj, "__dict__")
        with pytest.raises(AttributeError):
            obj.other = 1  # type: ignore[union-attr]
    receive.extra = send.extra = "set"
