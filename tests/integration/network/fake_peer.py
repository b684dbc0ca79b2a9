"""A misbehaving Kafka peer on a loopback port, for failure-mode integration tests.

It answers ApiVersions correctly (so the client's connection becomes READY), then reacts to every
other request according to ``mode``:

* ``silent``: never answers (request timeout);
* ``garbage``: a well-sized frame of junk bytes;
* ``oversized``: a size prefix far over any receive limit;
* ``reset``: half a frame, then a TCP reset;
* ``wrong_correlation``: a valid response with another correlation id.
"""

from __future__ import annotations

import socket
import struct
import threading

from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import ApiKey
from tests.doubles.responses import api_versions_response

MODES = ("silent", "garbage", "oversized", "reset", "wrong_correlation")


def _read_exact(conn: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class FakePeer:
    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(mode)
        self.mode = mode
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(8)
        self._server.settimeout(0.2)
        self.port = int(self._server.getsockname()[1])
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self.requests_seen: list[int] = []
        self._thread = threading.Thread(target=self._run, name=f"fake-peer-{mode}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except (TimeoutError, OSError):
                continue
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.2)
        try:
            while not self._stop.is_set():
                try:
                    size_bytes = _read_exact(conn, 4)
                except TimeoutError:
                    continue
                if size_bytes is None:
                    return
                (size,) = struct.unpack(">i", size_bytes)
                conn.settimeout(5)
                payload = _read_exact(conn, size)
                conn.settimeout(0.2)
                if payload is None:
                    return
                header, _body = headers.decode_request(payload)
                key = int(header.request_api_key)
                self.requests_seen.append(key)
                if key == ApiKey.API_VERSIONS:
                    pieces = headers.encode_response(
                        api_versions_response(), key, int(header.request_api_version), int(header.correlation_id)
                    )
                    conn.sendall(b"".join(bytes(p) for p in pieces))  # type: ignore[arg-type]
                    continue
                self._misbehave(conn, int(header.correlation_id))
        except OSError:
            return

    def _misbehave(self, conn: socket.socket, correlation_id: int) -> None:
        if self.mode == "silent":
            return
        if self.mode == "garbage":
            junk = b"\xde\xad\xbe\xef" * 4
            conn.sendall(struct.pack(">i", len(junk)) + junk)
        elif self.mode == "oversized":
            conn.sendall(struct.pack(">i", 2**31 - 1) + b"\x00" * 16)
        elif self.mode == "reset":
            conn.sendall(struct.pack(">i", 100) + b"\x00" * 10)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
        elif self.mode == "wrong_correlation":
            body = struct.pack(">i", correlation_id + 1000) + b"\x00" * 8
            conn.sendall(struct.pack(">i", len(body)) + body)

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        for conn in self._conns:
            try:
                conn.close()
            except OSError:
                pass
        self._thread.join(5)
