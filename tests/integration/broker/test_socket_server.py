"""SocketServer + RequestChannel + handler pool on real loopback sockets, with an echo API layer.

The echo layer answers each frame with the same payload, so these tests pin the network layer alone:
ordering of pipelined requests, frame size limit, idle expiry, per-IP limit, backpressure, bad requests.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Callable

import pytest

from mini_broker.config import KafkaConfig
from mini_broker.metrics import BrokerMetrics
from mini_broker.network.request_channel import (
    CloseConnectionResponse,
    Request,
    RequestChannel,
    RequestContext,
    Response,
    SendResponse,
)
from mini_broker.network.socket_server import SocketServer
from mini_broker.server.request_handler import KafkaRequestHandlerPool

pytestmark = pytest.mark.timeout(60)


class EchoApis:
    """parse: payload b"close" raises (-> connection closed); handle: echo, optionally gated."""

    def __init__(self, channel: RequestChannel) -> None:
        self.channel = channel
        self.gate: threading.Event | None = None
        self.handled: list[bytes] = []
        self.started = threading.Event()

    def parse_request(self, processor_id: int, connection_id: str, client_address: str, listener_name: str,
                      payload: memoryview, start_time_ns: int) -> Request:
        data = bytes(payload)
        if data == b"close":
            raise ValueError("unknown api")
        ctx = RequestContext(0, 0, 0, None, connection_id, client_address, listener_name)
        return Request(processor_id, ctx, data, len(data), start_time_ns)

    def handles_inline(self, request: Request) -> bool:
        return False

    def handle(self, request: Request) -> None:
        body = request.body
        assert isinstance(body, bytes)
        self.started.set()
        if self.gate is not None:
            self.gate.wait(30)
        self.handled.append(body)
        if body == b"boom":
            raise RuntimeError("handler bug")
        if body == b"drop":
            self.channel.send_response(CloseConnectionResponse(request))
            return
        frame = struct.pack(">i", len(body)) + body
        self.channel.send_response(SendResponse(request, [frame], len(frame), body))

    def complete_response_metrics(self, response: Response, now_ns: int) -> None:
        return

    def response_metrics_parts(self) -> None:
        return None


Server = tuple[SocketServer, EchoApis, KafkaRequestHandlerPool, RequestChannel]


@pytest.fixture
def make_server() -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def make(**props: object) -> Server:
        base: dict[str, object] = {"listeners": "PLAINTEXT://127.0.0.1:0", "num.network.threads": 2, "num.io.threads": 2}
        base.update({k.replace("_", "."): v for k, v in props.items()})
        config = KafkaConfig(base)
        channel = RequestChannel(config.queued_max_requests)
        apis = EchoApis(channel)
        server = SocketServer(config, channel, apis, metrics=BrokerMetrics())
        pool = KafkaRequestHandlerPool(channel, apis, config.num_io_threads)
        server.start()
        pool.start()
        s: Server = (server, apis, pool, channel)
        started.append(s)
        return s

    yield make
    for server, apis, pool, _ in started:
        if apis.gate is not None:
            apis.gate.set()
        server.stop_processing()
        pool.shutdown(5)


def connect(server: SocketServer) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", server.bound_port()), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def recv_frame(s: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exact(s, 4))
    return recv_exact(s, size)


def is_closed(s: socket.socket, timeout: float = 10.0) -> bool:
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def test_pipelined_requests_answered_in_order(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(num_io_threads=4)
    s = connect(server)
    payloads = [f"req-{i}".encode() * (1 + i % 7) for i in range(200)]
    s.sendall(b"".join(frame(p) for p in payloads))
    got = [recv_frame(s) for _ in payloads]
    assert got == payloads
    s.close()


def test_oversized_frame_closes_only_that_connection(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(socket_request_max_bytes=1024)
    good = connect(server)
    bad = connect(server)
    bad.sendall(struct.pack(">i", 1025) + b"x" * 16)
    assert is_closed(bad)
    neg = connect(server)
    neg.sendall(struct.pack(">i", -5))
    assert is_closed(neg)
    good.sendall(frame(b"still-here"))
    assert recv_frame(good) == b"still-here"
    good.sendall(frame(b"y" * 1024))  # exactly the limit is fine
    assert recv_frame(good) == b"y" * 1024


def test_unparseable_request_closes_connection(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server()
    s = connect(server)
    other = connect(server)
    s.sendall(frame(b"close"))
    assert is_closed(s)
    other.sendall(frame(b"ok"))
    assert recv_frame(other) == b"ok"


def test_handler_exception_fails_only_that_connection(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(num_io_threads=1)
    s = connect(server)
    s.sendall(frame(b"boom"))
    assert is_closed(s)
    # the single handler thread survived
    t = connect(server)
    t.sendall(frame(b"after"))
    assert recv_frame(t) == b"after"


def test_close_connection_response(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server()
    s = connect(server)
    s.sendall(frame(b"drop") + frame(b"never"))
    assert is_closed(s)


def test_idle_connection_is_expired(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(connections_max_idle_ms=300)
    s = connect(server)
    s.sendall(frame(b"hi"))
    assert recv_frame(s) == b"hi"
    assert is_closed(s, timeout=10)
    deadline = time.monotonic() + 5
    while server.quotas.total and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.quotas.total == 0


def test_max_connections_per_ip(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(max_connections_per_ip=2)
    a, b = connect(server), connect(server)
    for s in (a, b):
        s.sendall(frame(b"x"))
        assert recv_frame(s) == b"x"
    try:
        c = connect(server)  # TCP accept succeeds, then the broker closes it at once (RST)
    except ConnectionResetError:
        pass  # the reset can even beat connect() returning
    else:
        assert is_closed(c)
    a.close()
    deadline = time.monotonic() + 5
    while server.quotas.get("127.0.0.1") > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    d = connect(server)
    d.sendall(frame(b"again"))
    assert recv_frame(d) == b"again"


def test_full_request_queue_blocks_processor_without_errors(make_server: Callable[..., Server]) -> None:
    server, apis, _, channel = make_server(queued_max_requests=1, num_io_threads=1, num_network_threads=1)
    apis.gate = threading.Event()
    clients = [connect(server) for _ in range(3)]
    clients[0].sendall(frame(b"a"))
    assert apis.started.wait(10)  # the only handler now holds "a"
    clients[1].sendall(frame(b"b"))  # fills the queue (size 1)
    deadline = time.monotonic() + 10
    while channel.request_queue_size() < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    clients[2].sendall(frame(b"c"))  # the processor blocks putting this one
    time.sleep(0.3)
    processor = server.processors[0]
    before = processor.connection_count()
    late = connect(server)  # accepted by the acceptor but not registered while the processor is blocked
    late.sendall(frame(b"late"))
    time.sleep(0.3)
    assert processor.connection_count() == before
    assert channel.request_queue_size() == 1
    late.settimeout(0.2)
    with pytest.raises(TimeoutError):
        late.recv(1)
    apis.gate.set()
    for s, p in zip([*clients, late], [b"a", b"b", b"c", b"late"], strict=True):
        assert recv_frame(s) == p
    assert sorted(apis.handled) == [b"a", b"b", b"c", b"late"]


def test_shutdown_closes_connections(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server()
    s = connect(server)
    s.sendall(frame(b"x"))
    assert recv_frame(s) == b"x"
    server.stop_processing()
    assert is_closed(s)


def wait_until(cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_memory_pool_mutes_large_frames_and_resumes_as_memory_frees(make_server: Callable[..., Server]) -> None:
    mib = 1024 * 1024
    # 4 MiB pool: large frames may use 3 MiB of it, 1 MiB stays for small frames
    server, _, _, _ = make_server(queued_max_request_bytes=4 * mib, num_network_threads=1)
    pool = server.memory_pool
    selector = server.processors[0].selector
    assert pool is not None and pool.small_frame_reserve == mib
    size = 2_500_000
    a, b, c, d = connect(server), connect(server), connect(server), connect(server)
    payloads = {s: bytes([65 + i]) * size for i, s in enumerate((a, b, c))}

    def send(s: socket.socket, data: bytes) -> threading.Thread:
        t = threading.Thread(target=s.sendall, args=(data,), daemon=True)
        t.start()
        return t

    def muted() -> int:
        return selector.memory_muted_count()  # type: ignore[attr-defined, no-any-return]

    send(a, struct.pack(">i", size) + payloads[a][:2_000_000])  # reserves 2 MiB, then waits for bytes
    assert wait_until(lambda: pool.used == 2 * mib)
    # b takes the last large step, then goes on in overdraft (one frame at a time may) and stalls
    send(b, struct.pack(">i", size) + payloads[b][:1_500_000])
    assert wait_until(lambda: not pool.has_room(large=True))
    assert pool.used == 3 * mib
    send(c, struct.pack(">i", size) + payloads[c])  # no room and the overdraft is taken: c is muted
    assert wait_until(lambda: muted() == 1)
    t0 = time.monotonic()
    d.sendall(frame(b"small"))  # small frames are still served
    assert recv_frame(d) == b"small"
    assert time.monotonic() - t0 < 1.0
    send(a, payloads[a][2_000_000:])  # a needs another step: muted too
    assert wait_until(lambda: muted() == 2)
    assert pool.used == 3 * mib
    # b completes: its memory and the overdraft come back, a and c are unmuted and complete
    send(b, payloads[b][1_500_000:])
    for s in (b, a, c):
        assert recv_frame(s) == payloads[s]
    assert wait_until(lambda: pool.used == 0)
    assert muted() == 0


def test_connection_stalled_mid_frame_is_closed_after_idle_timeout(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(connections_max_idle_ms=400)
    pool = server.memory_pool
    assert pool is not None
    s = connect(server)
    s.sendall(struct.pack(">i", 90_000_000) + b"z" * 300_000)  # announces 90 MB, sends 300 kB, stalls
    assert wait_until(lambda: pool.used > 0)
    assert is_closed(s, timeout=10)
    assert wait_until(lambda: pool.used == 0 and server.quotas.total == 0)


def test_pool_off_when_queued_max_request_bytes_is_minus_one(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(queued_max_request_bytes=-1)
    assert server.memory_pool is None
    s = connect(server)
    s.sendall(frame(b"q" * 200_000))
    assert recv_frame(s) == b"q" * 200_000


def served(s: socket.socket, payload: bytes = b"ping", timeout: float = 10.0) -> bool:
    """Whether ``s`` gets its frame echoed within ``timeout`` (False if closed or no answer)."""
    s.settimeout(timeout)
    try:
        s.sendall(frame(payload))
        return recv_frame(s) == payload
    except (TimeoutError, ConnectionError):
        return False


def test_fifty_of_sixty_connections_served_with_max_connections_per_ip_fifty(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(max_connections_per_ip=50)
    socks = []
    for _ in range(60):
        try:
            socks.append(connect(server))
        except ConnectionResetError:
            pass
    assert sum(served(s, timeout=3) for s in socks) == 50
    assert server.quotas.metrics.rejected_total == 10


def test_listener_limit_makes_the_acceptor_wait(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(listener_name_plaintext_max_connections=2)
    a, b = connect(server), connect(server)
    assert served(a) and served(b)
    c = connect(server)  # sits in the listen backlog: not rejected, not served
    assert not served(c, timeout=0.5)
    a.close()
    c.settimeout(10)
    assert recv_frame(c) == b"ping"  # its frame is answered once a slot frees
    assert server.quotas.listener_count("PLAINTEXT") == 2


def test_connection_creation_rate_throttles_accepts(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(max_connection_creation_rate=10)
    t0 = time.monotonic()
    socks = [connect(server) for _ in range(20)]
    assert all(served(s) for s in socks)  # a burst of 10, then 10 more at 10/s
    elapsed = time.monotonic() - t0
    assert 0.8 <= elapsed < 5.0
    assert server.quotas.metrics.rate_throttled_total >= 8


def test_ip_connection_rate_closes_excess_sockets_after_the_throttle(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server()
    server.quotas.update_ip_connection_rate(None, 3)
    socks = [connect(server) for _ in range(6)]
    results = [served(s, timeout=3) for s in socks]
    assert results.count(True) == 3  # a burst of 3; the rest is closed after its throttle time
    assert server.quotas.metrics.ip_throttled_total == 3


def test_close_excess_connections_drops_the_least_recently_active(make_server: Callable[..., Server]) -> None:
    server, _, _, _ = make_server(num_network_threads=1)
    socks = [connect(server) for _ in range(4)]
    for s in socks:
        assert served(s)
    server.quotas.update_max_connections(2, listener="PLAINTEXT")
    assert is_closed(socks[0]) and is_closed(socks[1])
    assert served(socks[2]) and served(socks[3])
    assert server.quotas.metrics.excess_closed_total == 2
