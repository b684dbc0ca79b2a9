"""Connections over local socket pairs for tests that drive a real server Selector: our end registered with a small
send buffer (a response of a few KiB goes out in part), the peer's end non-blocking, and what the peer received."""

from __future__ import annotations

import socket
from typing import Protocol


class Registering(Protocol):
    def register(self, connection_id: str, sock: socket.socket) -> None: ...


def register_pair(selector: Registering, connection_id: str, send_buffer: int) -> socket.socket:
    """A socket pair: our end registered with ``selector`` as ``connection_id`` (its send buffer ``send_buffer``
    bytes); the peer's end, non-blocking, returned."""
    ours, theirs = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    theirs.setblocking(False)
    selector.register(connection_id, ours)
    return theirs


def drain(peer: socket.socket, into: bytearray) -> None:
    """Everything the peer's end has to read now, appended to ``into`` (nothing once it is closed)."""
    try:
        while chunk := peer.recv(65536):
            into += chunk
    except OSError:
        pass
