"""The broker <-> controller channel: one JSON object per line over TCP (mini_broker's stand-in for KRaft's
BrokerRegistration, BrokerHeartbeat, AlterPartition, CreateTopics-forwarding and AllocateProducerIds requests).

A request is ``{"op": NAME, ...}``; a reply is ``{...}`` or ``{"error": CODE, "message": TEXT}`` with a Kafka
error code. :class:`ControllerChannel` is the broker's blocking client: one request at a time, reconnecting
after a failure; :func:`raise_reply_error` turns an error reply into the Kafka exception.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

from pykafka_client.errors import raise_for_code


def encode(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


def raise_reply_error(reply: dict[str, Any]) -> None:
    code = int(reply.get("error", 0))
    if code:
        raise_for_code(code, str(reply.get("message", "")))


def close_quietly(sock: socket.socket | None) -> None:
    if sock is not None:
        try:
            sock.close()
        except OSError:
            pass


class ControllerChannel:
    """A blocking request/reply client to the controller at ``host:port``."""

    def __init__(self, host: str, port: int, timeout_s: float = 10.0) -> None:
        self.host = host
        self.port = port
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._file: Any = None

    def _connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._file = sock.makefile("rb")

    def call(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return the reply (raising the Kafka error it carries). An unreachable
        controller raises ``OSError``, for the caller to retry."""
        with self._lock:
            try:
                if self._sock is None:
                    self._connect()
                assert self._sock is not None
                self._sock.sendall(encode(msg))
                line = self._file.readline()
                if not line:
                    raise ConnectionError("controller closed the connection")
            except OSError:
                self._close_locked()
                raise
        reply: dict[str, Any] = json.loads(line)
        raise_reply_error(reply)
        return reply

    def _close_locked(self) -> None:
        close_quietly(self._sock)
        self._sock = None
        self._file = None

    def close(self) -> None:
        with self._lock:
            self._close_locked()

