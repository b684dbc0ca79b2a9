"""A blocking raw Kafka connection for wire-level broker tests: frames requests, reads whole responses."""

from __future__ import annotations

import socket
import struct
from typing import Any

from mini_broker.broker import MiniBroker
from pykafka_client.protocol import headers
from pykafka_client.protocol.types import Message


class Conn:
    """One TCP connection to ``broker`` speaking Kafka's size-prefixed framing. A context manager."""

    def __init__(self, broker: MiniBroker, timeout: float = 15.0, client_id: str = "test") -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=timeout)
        self.client_id = client_id
        self.corr = 0

    def __enter__(self) -> Conn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def send(self, body: Message, version: int) -> int:
        self.corr += 1
        pieces = headers.encode_request(body, version, self.corr, self.client_id)
        self.sock.sendall(b"".join(bytes(p) for p in pieces))  # type: ignore[arg-type]
        return self.corr

    def recv_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._exact(4))
        return self._exact(size)

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by broker")
            buf += chunk
        return buf

    def call(self, body: Message, version: int) -> Any:
        corr = self.send(body, version)
        return headers.decode_response(self.recv_frame(), type(body).API_KEY, version, corr)  # type: ignore[arg-type]

    def closed_by_broker(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
