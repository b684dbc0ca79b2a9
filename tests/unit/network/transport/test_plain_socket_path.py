"""A plaintext channel writes and reads its socket straight (no transport call per request): the same bytes,
frames, counters, partial writes, would-blocks and end of stream as the transport's own methods give."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.transport.channel import KafkaChannel, PeerClosedError
from pykafka_client.network.transport.selectable import NetworkSend
from pykafka_client.network.transport.transport_layer import PlaintextTransportLayer


class ThroughTransport(PlaintextTransportLayer):
    """The plaintext transport under another type: the channel goes through its read_into/write_buffers."""

    __slots__ = ("calls",)

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock)
        self.calls = 0

    def read_into(self, view: memoryview) -> int:
        self.calls += 1
        return super().read_into(view)

    def write_buffers(self, views: object) -> int:
        self.calls += 1
        return super().write_buffers(views)  # type: ignore[arg-type]


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def _channel(through: bool, buffer_size: int = 64) -> tuple[KafkaChannel, socket.socket]:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    transport = ThroughTransport(ours) if through else PlaintextTransportLayer(ours)
    channel = KafkaChannel("n", transport, max_receive_size=1000)
    channel.use_buffered_reads(buffer_size)
    return channel, theirs


@pytest.fixture
def channels() -> Iterator[tuple[tuple[KafkaChannel, socket.socket], tuple[KafkaChannel, socket.socket]]]:
    direct, through = _channel(False), _channel(True)
    yield direct, through
    for channel, peer in (direct, through):
        channel.close()
        peer.close()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.binary(max_size=150), max_size=8),
    st.lists(st.integers(1, 90), min_size=1, max_size=12),
    st.integers(1, 4),
    st.integers(8, 80),
)
def test_direct_reads_equal_transport_reads(
    payloads: list[bytes], chunks: list[int], max_receives: int, buffer_size: int
) -> None:
    """Fed the same bytes in the same pieces, the direct and the transport path hand out the same frames, byte
    counts and 'bytes still buffered' answers, and that answer is has_bytes_buffered()'s."""
    data = b"".join(frame(p) for p in payloads)
    pairs = [_channel(False, buffer_size), _channel(True, buffer_size)]
    try:
        results: list[list[tuple[list[bytes], int, bool]]] = [[], []]
        pos = 0
        for step in chunks + [len(data)] * 3:
            piece = data[pos : pos + step]
            pos += len(piece)
            for (channel, peer), out in zip(pairs, results, strict=True):
                if piece:
                    peer.sendall(piece)
                for _ in range(len(payloads) + 2):  # until it hands out nothing more
                    frames, n, more = channel.read_frames(max_receives, 1 << 20)
                    assert more == channel.has_bytes_buffered()
                    out.append(([bytes(f.payload) for f in frames], n, more))
                    if not frames and not more:
                        break
        assert results[0] == results[1]
        assert [p for r in results[0] for p in r[0]] == payloads
        assert pairs[0][0].bytes_received == pairs[1][0].bytes_received == len(data)
        assert pairs[1][0].transport.calls > 0  # type: ignore[attr-defined]  # (the other path was taken)
    finally:
        for channel, peer in pairs:
            channel.close()
            peer.close()


def test_direct_read_with_nothing_available(channels: tuple[tuple[KafkaChannel, socket.socket], ...]) -> None:
    for channel, _ in channels:
        assert channel.read_frames(16, 1 << 20) == ([], 0, False)
        assert channel.read(16, 1 << 20) == ([], 0)


def test_direct_read_end_of_stream(channels: tuple[tuple[KafkaChannel, socket.socket], ...]) -> None:
    for channel, peer in channels:
        peer.sendall(frame(b"abc") + frame(b"defgh")[:6])
        frames, n, more = channel.read_frames(16, 1 << 20)
        assert [bytes(f.payload) for f in frames] == [b"abc"] and (n, more) == (13, False)
        peer.shutdown(socket.SHUT_WR)
        with pytest.raises(PeerClosedError):
            channel.read_frames(16, 1 << 20)


def test_direct_read_of_a_frame_larger_than_the_buffer(channels: tuple[tuple[KafkaChannel, socket.socket], ...]) -> None:
    big = bytes(range(256)) * 3
    for channel, peer in channels:
        peer.sendall(frame(b"a") + frame(big)[:100])
        frames, _, more = channel.read_frames(16, 1 << 20)
        assert [bytes(f.payload) for f in frames] == [b"a"] and not more
        peer.sendall(frame(big)[100:] + frame(b"z"))
        got: list[bytes] = []
        for _ in range(4):
            frames, _, _ = channel.read_frames(16, 1 << 20)
            got += [bytes(f.payload) for f in frames]
        assert got == [big, b"z"]


def test_frames_over_the_receive_limit_are_reported_buffered(
    channels: tuple[tuple[KafkaChannel, socket.socket], ...]
) -> None:
    for channel, peer in channels:
        peer.sendall(frame(b"1") + frame(b"2") + frame(b"3"))
        frames, _, more = channel.read_frames(2, 1 << 20)
        assert [bytes(f.payload) for f in frames] == [b"1", b"2"] and more
        frames, n, more = channel.read_frames(2, 1 << 20)
        assert [bytes(f.payload) for f in frames] == [b"3"] and (n, more) == (0, False)


def _drain(peer: socket.socket) -> bytes:
    peer.setblocking(False)
    out = bytearray()
    while True:
        try:
            chunk = peer.recv(1 << 20)
        except BlockingIOError:
            return bytes(out)
        if not chunk:
            return bytes(out)
        out += chunk


@pytest.mark.parametrize("through", [False, True])
def test_direct_write_whole_and_partial(through: bool) -> None:
    """A frame the socket takes whole completes at once; one it takes in part resumes where the socket stopped,
    the peer getting exactly the frame either way (and the channel's byte counter its size)."""
    channel, peer = _channel(through)
    try:
        channel.transport.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        small = NetworkSend("n", [b"\x00\x00\x00\x03", b"abc"], 7)
        assert channel.write_new_send(small) is small and small.written == 7
        assert _drain(peer) == b"\x00\x00\x00\x03abc"
        body = bytes(range(256)) * 4096  # 1 MiB: more than the socket takes at once
        header = bytearray(len(body).to_bytes(4, "big"))
        big = NetworkSend("n", [header, body], len(body) + 4)
        assert channel.write_new_send(big) is None
        assert 0 < channel.bytes_sent - 7 < big.size and channel.has_send()
        got = bytearray(_drain(peer))
        done = None
        while done is None:
            done = channel.write()
            got += _drain(peer)
        assert done is big and big.written == big.size and not channel.has_send()
        assert bytes(got) == bytes(header) + body and channel.bytes_sent == 7 + big.size
    finally:
        channel.close()
        peer.close()


def test_direct_write_to_a_full_socket_writes_nothing() -> None:
    channel, peer = _channel(False)
    try:
        sock = channel.transport.socket
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        try:
            while True:
                sock.send(b"x" * 65536)
        except BlockingIOError:
            pass
        send = NetworkSend("n", [b"\x00\x00\x00\x01", b"y"], 5)
        assert channel.write_new_send(send) is None
        assert channel.bytes_sent == 0 and send.written == 0 and channel.has_send()
    finally:
        channel.close()
        peer.close()
