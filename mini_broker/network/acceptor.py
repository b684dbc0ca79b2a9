"""The socket server's accepting thread, one per listener (Kafka: ``SocketServer.Acceptor``): accept, count
the connection against the quotas, configure the socket, hand it round-robin to the listener's processors.

Descriptor exhaustion (EMFILE/ENFILE, also ENOBUFS/ENOMEM): the pending connection stays in the listen
backlog, so the listening socket stays readable and a naive loop would spin. The acceptor instead stops
accepting for a backoff (100 ms doubling to 1 s), logs one line per backoff with the failures so far, keeps
the processors serving the existing connections, and resumes by itself once an accept succeeds.
"""

from __future__ import annotations

import errno
import heapq
import logging
import selectors
import socket
import threading
import time
from typing import TYPE_CHECKING, Final

from mini_broker.config import EndPoint, KafkaConfig
from mini_broker.network.connection_quotas import ConnectionQuotas, ConnectionThrottledError, TooManyConnectionsError
from mini_broker.network.processor import Processor, close_quietly

if TYPE_CHECKING:
    from mini_broker.metrics import BrokerMetrics

log = logging.getLogger(__name__)

#: accept() errors that mean "out of descriptors or kernel memory": back off instead of spinning
RESOURCE_EXHAUSTED_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_BACKOFF_INITIAL_S: Final = 0.1
ACCEPT_BACKOFF_MAX_S: Final = 1.0


class AcceptBackoff:
    """When to accept again after running out of descriptors (sans-IO: times are passed in).

    ``failed`` starts or doubles the pause (100 ms up to 1 s) and counts the failure; ``succeeded`` ends
    an episode and returns how many failures it had."""

    def __init__(self, initial_s: float = ACCEPT_BACKOFF_INITIAL_S, max_s: float = ACCEPT_BACKOFF_MAX_S) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self.backoff_s = 0.0
        self.paused_until: float | None = None
        self.failures = 0  # in the current episode

    def failed(self, now: float) -> float:
        """Record a failure; returns the pause to take."""
        self.failures += 1
        self.backoff_s = self.initial_s if self.backoff_s == 0 else min(self.backoff_s * 2, self.max_s)
        self.paused_until = now + self.backoff_s
        return self.backoff_s

    def remaining(self, now: float) -> float | None:
        """Seconds left in the pause, None when not paused (a pause that ran out ends here)."""
        if self.paused_until is None:
            return None
        left = self.paused_until - now
        if left <= 0:
            self.paused_until = None
            return None
        return left

    def succeeded(self) -> int:
        failures, self.failures, self.backoff_s = self.failures, 0, 0.0
        return failures


class Acceptor:
    """Accepts connections on one listener and hands them to its processors round-robin."""

    def __init__(self, endpoint: EndPoint, config: KafkaConfig, quotas: ConnectionQuotas, processors: list[Processor],
                 metrics: BrokerMetrics | None = None) -> None:
        self.endpoint = endpoint
        self._backoff = AcceptBackoff()
        # sockets over their IP's connection creation rate, closed at the time given: (close at, id, socket)
        self._throttled: list[tuple[float, int, socket.socket]] = []
        self._listening = True  # the server socket is registered with the selector
        self._exhausted = metrics.counter("kafka_network_Acceptor_AcceptResourceExhaustedTotal",
                                          listener=endpoint.listener_name) if metrics is not None else None
        self._config = config
        self._quotas = quotas
        self.processors = processors
        self._current = 0
        self._running = True
        self.server_socket = self._open_server_socket()
        self.bound_port: int = self.server_socket.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.server_socket, selectors.EVENT_READ)
        # a socketpair so that shutdown interrupts select() at once
        self._wakeup_r, self._wakeup_w = socket.socketpair()
        self._wakeup_r.setblocking(False)
        self._selector.register(self._wakeup_r, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self.run, name=f"data-plane-kafka-socket-acceptor-{endpoint.listener_name}-{self.bound_port}",
                                        daemon=True)
        self.stopped = threading.Event()

    def _open_server_socket(self) -> socket.socket:
        host = self.endpoint.host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        rcv = self._config.socket_receive_buffer_bytes
        if rcv != -1:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcv)
        try:
            sock.bind((host, self.endpoint.port))
        except OSError as e:
            sock.close()
            raise OSError(e.errno, f"Socket server failed to bind to {host}:{self.endpoint.port}: {e.strerror}") from e
        sock.listen(self._config.socket_listen_backlog_size)
        sock.setblocking(False)
        return sock

    def start(self) -> None:
        self._thread.start()

    def initiate_shutdown(self) -> None:
        self._running = False
        try:
            self._wakeup_w.send(b"x")
        except OSError:
            pass

    def join(self, timeout: float | None = None) -> None:
        if self._thread.ident is None:  # never started: release the sockets here
            self._selector.close()
            for sock in (self.server_socket, self._wakeup_r, self._wakeup_w):
                sock.close()
            return
        self._thread.join(timeout)

    def run(self) -> None:
        self._thread_ident = threading.get_ident()
        try:
            while self._running:
                try:
                    events = self._selector.select(self._select_timeout())
                    if any(key.fileobj is self.server_socket for key, _ in events):
                        self._accept_new_connections()
                except Exception:
                    log.exception("event=acceptor_error listener=%s", self.endpoint.listener_name)
        finally:
            while self._throttled:
                close_quietly(heapq.heappop(self._throttled)[2])
            self._selector.close()
            self.server_socket.close()
            self._wakeup_r.close()
            self._wakeup_w.close()
            self.stopped.set()

    def _select_timeout(self) -> float:
        """0.5 s normally; while paused, the rest of the pause with the listening socket unregistered;
        never past the next throttled socket's close time."""
        now = time.monotonic()
        timeout = 0.5
        if self._throttled:
            self._close_throttled(now)
            if self._throttled:
                timeout = max(0.0, min(timeout, self._throttled[0][0] - now))
        left = self._backoff.remaining(now)
        if left is not None:
            return min(left, timeout)
        if not self._listening:
            self._selector.register(self.server_socket, selectors.EVENT_READ)
            self._listening = True
        return timeout

    def _close_throttled(self, now: float) -> None:
        """Close the sockets whose per-IP connection-rate throttle has run out (Kafka ``closeThrottledConnections``)."""
        while self._throttled and self._throttled[0][0] <= now:
            close_quietly(heapq.heappop(self._throttled)[2])

    def _pause_accepting(self, e: OSError) -> None:
        backoff_s = self._backoff.failed(time.monotonic())
        if self._exhausted is not None:
            self._exhausted.inc()
        if self._listening:
            self._selector.unregister(self.server_socket)
            self._listening = False
        log.warning("event=accept_paused listener=%s error=%s failures=%d backoff_ms=%d: out of file descriptors "
                    "(or kernel memory); existing connections are still served, new ones wait in the backlog. "
                    "Raise the descriptor limit (ulimit -n) or lower max.connections", self.endpoint.listener_name,
                    errno.errorcode.get(e.errno or 0, e.errno), self._backoff.failures, int(backoff_s * 1000))

    def _accept_new_connections(self) -> None:
        while self._running:
            try:
                sock, addr = self.server_socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in RESOURCE_EXHAUSTED_ERRNOS:
                    self._pause_accepting(e)
                else:
                    log.warning("event=accept_failed listener=%s error=%r", self.endpoint.listener_name, e)
                return
            if self._backoff.failures:
                log.warning("event=accept_resumed listener=%s failures=%d", self.endpoint.listener_name,
                            self._backoff.succeeded())
            ip = str(addr[0])
            listener = self.endpoint.listener_name
            try:
                self._quotas.inc(ip, listener=listener)
            except TooManyConnectionsError as e:
                log.info("event=connection_rejected remote=%s reason=%s", ip, e)
                close_quietly(sock)
                continue
            except ConnectionThrottledError as e:
                log.info("event=connection_throttled remote=%s throttle_ms=%d", ip, int(e.throttle_s * 1000))
                heapq.heappush(self._throttled, (time.monotonic() + e.throttle_s, id(sock), sock))
                continue
            try:
                self._configure_socket(sock)
            except OSError as e:
                log.info("event=configure_socket_failed remote=%s error=%r", ip, e)
                self._quotas.dec(ip, listener)
                close_quietly(sock)
                continue
            if not self._assign(sock, ip):
                self._quotas.dec(ip, listener)
                close_quietly(sock)

    def _configure_socket(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        snd = self._config.socket_send_buffer_bytes
        if snd != -1:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, snd)

    def _assign(self, sock: socket.socket, ip: str) -> bool:
        """Round-robin with non-blocking offers; only the last try may block (all queues full)."""
        n = len(self.processors)
        for retries_left in range(n - 1, -1, -1):
            processor = self.processors[self._current % n]
            self._current = (self._current + 1) % n
            if processor.accept(sock, may_block=retries_left == 0, remote_ip=ip):
                return True
        return False
