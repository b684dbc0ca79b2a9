"""The socket server's accepting thread, one per listener (Kafka: ``SocketServer.Acceptor``): accept, count
the connection against the quotas, configure the socket, hand it round-robin to the listener's processors."""

from __future__ import annotations

import logging
import selectors
import socket
import threading

from mini_broker.config import EndPoint, KafkaConfig
from mini_broker.network.connection_quotas import ConnectionQuotas, TooManyConnectionsError
from mini_broker.network.processor import Processor, close_quietly

log = logging.getLogger(__name__)


class Acceptor:
    """Accepts connections on one listener and hands them to its processors round-robin."""

    def __init__(self, endpoint: EndPoint, config: KafkaConfig, quotas: ConnectionQuotas, processors: list[Processor]) -> None:
        self.endpoint = endpoint
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
                    events = self._selector.select(0.5)
                    if any(key.fileobj is self.server_socket for key, _ in events):
                        self._accept_new_connections()
                except Exception:
                    log.exception("event=acceptor_error listener=%s", self.endpoint.listener_name)
        finally:
            self._selector.close()
            self.server_socket.close()
            self._wakeup_r.close()
            self._wakeup_w.close()
            self.stopped.set()

    def _accept_new_connections(self) -> None:
        while self._running:
            try:
                sock, addr = self.server_socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log.warning("event=accept_failed error=%r", e)
                return
            ip = str(addr[0])
            try:
                self._quotas.inc(ip)
            except TooManyConnectionsError as e:
                log.info("event=connection_rejected remote=%s reason=%s", ip, e)
                close_quietly(sock)
                continue
            try:
                self._configure_socket(sock)
            except OSError as e:
                log.info("event=configure_socket_failed remote=%s error=%r", ip, e)
                self._quotas.dec(ip)
                close_quietly(sock)
                continue
            if not self._assign(sock, ip):
                self._quotas.dec(ip)
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
