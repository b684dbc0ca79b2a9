"""A blocking, frame-level Kafka client for the security tests: what a test needs to step through SASL by hand
(handshake, authenticate, re-authenticate) and to send malformed exchanges."""

from __future__ import annotations

import socket
import struct

from pykafka_client.network.transport.sasl import wire
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.headers import decode_response, encode_request
from pykafka_client.protocol.messages import MetadataRequest, MetadataResponse
from tests.doubles.frames import frame_bytes


class RawClient:
    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self._cid = 0

    def close(self) -> None:
        self.sock.close()

    def next_id(self) -> int:
        self._cid += 1
        return self._cid

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self) -> bytes | None:
        """One response frame's payload; None when the broker closed the connection."""
        head = self._read(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        return self._read(size)

    def _read(self, n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            buf += chunk
        return buf

    def handshake(self, mechanism: str) -> wire.SaslHandshakeResponse:
        cid = self.next_id()
        self.send(frame_bytes(wire.handshake_request(mechanism, cid, "raw")))
        payload = self.receive()
        assert payload is not None, "the broker closed the connection instead of answering SaslHandshake"
        return wire.decode_handshake_response(memoryview(payload), cid)

    def authenticate(self, token: bytes) -> wire.SaslAuthenticateResponse | None:
        cid = self.next_id()
        self.send(frame_bytes(wire.authenticate_request(token, cid, "raw")))
        payload = self.receive()
        return None if payload is None else wire.decode_authenticate_response(memoryview(payload), cid)

    def plain(self, user: str, password: str) -> wire.SaslAuthenticateResponse | None:
        """SaslHandshake + one SaslAuthenticate with a PLAIN token."""
        assert self.handshake("PLAIN").error_code == 0
        return self.authenticate(f"\0{user}\0{password}".encode())

    def metadata(self) -> MetadataResponse | None:
        """A Metadata v1 request for no topics; None when the broker closed the connection."""
        cid = self.next_id()
        self.send(frame_bytes(encode_request(MetadataRequest(topics=[]), 1, cid, "raw")))
        payload = self.receive()
        if payload is None:
            return None
        body = decode_response(memoryview(payload), ApiKey.METADATA, 1, cid)
        assert isinstance(body, MetadataResponse)
        return body
