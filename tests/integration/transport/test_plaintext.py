"""Selector over real loopback sockets: client role against an echo server built on the server role."""

from __future__ import annotations

import resource
import socket
import struct
import tempfile
import threading
from collections.abc import Iterator

import pytest

from pykafka_client.errors import InvalidReceiveError
from pykafka_client.network.transport.network_send import FileRegion, size_prefixed
from pykafka_client.network.transport.selectable import ChannelState
from pykafka_client.network.transport.selector import Selector

from .harness import ClientRecorder, EchoServer, frame

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture
def server() -> Iterator[EchoServer]:
    with EchoServer(max_receive_size=8 * 1024 * 1024) as s:
        yield s


@pytest.fixture
def client() -> Iterator[ClientRecorder]:
    selector = Selector(max_receives_per_channel_per_poll=64)
    yield ClientRecorder(selector)
    selector.close()


def connect(client: ClientRecorder, port: int, cid: str = "0") -> None:
    client.selector.connect(cid, ("127.0.0.1", port))
    client.poll_until(lambda: cid in client.connected or cid in client.disconnected)
    assert cid in client.connected, client.disconnected
    assert client.selector.is_channel_ready(cid)


def test_pipelined_frames_come_back_in_order(server: EchoServer, client: ClientRecorder) -> None:
    connect(client, server.port)
    n = 300
    for i in range(n):
        client.selector.send(size_prefixed("0", [b"req-", str(i).encode()]))
        client.poll_until(lambda i=i: len(client.sends) > i)  # type: ignore[misc]
    client.poll_until(lambda: len(client.receives) >= n)
    assert [bytes(r.payload) for r in client.receives] == [b"req-%d" % i for i in range(n)]
    assert set(server.principals.values()) == {"ANONYMOUS"}
    channel = client.selector.channel("0")
    assert channel is not None and channel.bytes_received == sum(4 + len(b"req-%d" % i) for i in range(n))


def test_large_frame_with_partial_reads_and_writes(server: EchoServer, client: ClientRecorder) -> None:
    connect(client, server.port)
    payload = bytes(range(256)) * (5 * 4096)  # 5 MiB
    client.selector.send(size_prefixed("0", [payload[:100], memoryview(payload)[100:]]))
    client.poll_until(lambda: len(client.receives) == 1)
    assert bytes(client.receives[0].payload) == payload


def _ensure_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"needs {needed} file descriptors, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def test_thousand_connections(server: EchoServer, client: ClientRecorder) -> None:
    n = 1000
    _ensure_fd_limit(2 * n + 200)
    for i in range(n):
        client.selector.connect(str(i), ("127.0.0.1", server.port))
    client.poll_until(lambda: len(client.connected) + len(client.disconnected) >= n)
    assert len(client.connected) == n, list(client.disconnected.values())[:3]
    for i in range(n):
        client.selector.send(size_prefixed(str(i), [str(i).encode()]))
    client.poll_until(lambda: len(client.receives) >= n)
    assert sorted((r.source, bytes(r.payload)) for r in client.receives) == sorted(
        (str(i), str(i).encode()) for i in range(n)
    )
    assert client.selector.metrics.connection_creation_total == n
    assert client.selector.num_channels() == n


def test_oversized_frame_closes_only_that_server_channel(server: EchoServer, client: ClientRecorder) -> None:
    connect(client, server.port, "good")
    raw = socket.create_connection(("127.0.0.1", server.port))
    try:
        raw.sendall(struct.pack(">i", 8 * 1024 * 1024 + 1))
        assert raw.recv(10) == b""  # the server closed it
        raw2 = socket.create_connection(("127.0.0.1", server.port))
        raw2.sendall(b"\xff\xff\xff\xfe")
        assert raw2.recv(10) == b""
        raw2.close()
    finally:
        raw.close()
    client.poll_until(
        lambda: sum(isinstance(d.exception, InvalidReceiveError) for d in server.disconnect_snapshot().values()) == 2
    )
    client.selector.send(size_prefixed("good", [b"still here"]))
    client.poll_until(lambda: len(client.receives) == 1)
    assert bytes(client.receives[0].payload) == b"still here"


class RawServer:
    """Accepts one connection and runs ``script(sock)`` on it."""

    def __init__(self, script: object) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.script = script
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        sock, _ = self.listener.accept()
        self.script(sock)  # type: ignore[operator]

    def close(self) -> None:
        self.thread.join(10)
        self.listener.close()


def test_client_rejects_oversized_response_only_on_that_channel(server: EchoServer) -> None:
    selector = Selector(max_receive_size=100)
    client = ClientRecorder(selector)
    done = threading.Event()

    def script(sock: socket.socket) -> None:
        sock.sendall(struct.pack(">i", 101))
        done.wait(10)
        sock.close()

    raw = RawServer(script)
    try:
        connect(client, server.port, "good")
        selector.connect("bad", ("127.0.0.1", raw.port))
        client.poll_until(lambda: "bad" in client.disconnected)
        info = client.disconnected["bad"]
        assert isinstance(info.exception, InvalidReceiveError)
        assert "101 larger than 100" in str(info.exception)
        assert selector.is_channel_ready("good")
    finally:
        done.set()
        raw.close()
        selector.close()


def test_reset_mid_frame_delivers_no_partial_receive(client: ClientRecorder) -> None:
    def script(sock: socket.socket) -> None:
        sock.sendall(frame(b"complete") + frame(b"0123456789")[:9])
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # RST

    raw = RawServer(script)
    try:
        client.selector.connect("0", ("127.0.0.1", raw.port))
        client.poll_until(lambda: "0" in client.disconnected)
        assert [bytes(r.payload) for r in client.receives] in ([b"complete"], [])
        assert all(bytes(r.payload) != b"01234" for r in client.receives)
    finally:
        raw.close()


def test_connect_to_closed_port_reports_not_connected(client: ClientRecorder) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    client.selector.connect("0", ("127.0.0.1", port))
    client.poll_until(lambda: "0" in client.disconnected)
    info = client.disconnected["0"]
    assert info.state is ChannelState.NOT_CONNECTED
    assert isinstance(info.exception, ConnectionRefusedError) or "ECONNREFUSED" in str(info.exception)
    assert client.connected == [] and not client.selector.is_open("0")


def test_sendfile_file_region_round_trip(server: EchoServer, client: ClientRecorder) -> None:
    connect(client, server.port)
    body = bytes(range(256)) * 4000
    with tempfile.TemporaryFile() as f:
        f.write(b"junk" + body + b"tail")
        f.flush()
        client.selector.send(size_prefixed("0", [b"hdr:", FileRegion(f, 4, len(body)), b":end"]))
        client.poll_until(lambda: len(client.receives) == 1)
    assert bytes(client.receives[0].payload) == b"hdr:" + body + b":end"


def test_peer_close_is_reported(server: EchoServer, client: ClientRecorder) -> None:
    connect(client, server.port)
    raw = socket.create_connection(("127.0.0.1", server.port))
    raw.close()
    client.selector.close_channel("0")
    client.poll_until(lambda: len(server.disconnect_snapshot()) >= 1)
    assert client.disconnected == {}
