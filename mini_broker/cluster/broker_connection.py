"""A blocking Kafka-protocol connection from one broker to another (Kafka: ``BlockingSend`` /
``NetworkClientUtils.sendAndReceive``), for the replica fetchers and the transaction marker sender."""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from typing import Protocol

from mini_broker.cluster.controller_rpc import close_quietly
from pykafka_client.protocol.headers import decode_response, encode_request
from pykafka_client.protocol.types import Message

_SIZE = struct.Struct(">i")


class BrokerDirectory(Protocol):
    """This broker's id and where the other brokers listen (what an inter-broker sender needs)."""

    @property
    def broker_id(self) -> int: ...

    def broker_endpoint(self, broker_id: int) -> tuple[str, int] | None: ...


class BrokerConnection:
    """Connects lazily to ``endpoint()`` (None: unknown broker) and sends one request at a time. Any error
    closes the connection; the next request reconnects (the caller backs off)."""

    def __init__(self, endpoint: Callable[[], tuple[str, int] | None], client_id: str) -> None:
        self._endpoint = endpoint
        self.client_id = client_id
        self._sock: socket.socket | None = None
        self._correlation = 0

    def close(self) -> None:
        close_quietly(self._sock)
        self._sock = None

    def send_and_receive(self, body: Message, version: int, timeout_s: float) -> Message:
        try:
            return self._send_and_receive(body, version, timeout_s)
        except BaseException:
            self.close()
            raise

    def _send_and_receive(self, body: Message, version: int, timeout_s: float) -> Message:
        if self._sock is None:
            endpoint = self._endpoint()
            if endpoint is None:
                raise ConnectionError("the broker's endpoint is unknown")
            self._sock = socket.create_connection(endpoint, timeout=timeout_s)
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock = self._sock
        sock.settimeout(timeout_s)
        self._correlation += 1
        chunks = encode_request(body, version, self._correlation, self.client_id)
        sock.sendall(b"".join(c for c in chunks if isinstance(c, (bytes, bytearray, memoryview))))
        size = _SIZE.unpack(self._recv(sock, 4))[0]
        payload = self._recv(sock, size)
        api_key = body.API_KEY
        assert api_key is not None
        return decode_response(memoryview(payload), api_key, version, self._correlation)

    @staticmethod
    def _recv(sock: socket.socket, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            buf += chunk
        return bytes(buf)
