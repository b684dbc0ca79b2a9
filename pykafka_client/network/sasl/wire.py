"""The four SASL messages on the wire, hand-encoded: SaslHandshake v1 and SaslAuthenticate v0/v1
(request header v1, response header v0; none of them is flexible).

The authenticators run before the channel is ready, below the protocol layer's request machinery,
and need only these few non-flexible versions, so they are encoded here directly (field layout from
``SaslHandshake*.json`` / ``SaslAuthenticate*.json``). Decoding checks every length against the bytes
present and raises :class:`~pykafka_client.errors.MessageDecodeError`; trailing bytes are an error.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pykafka_client.errors import MessageDecodeError

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
API_VERSIONS = 18
HANDSHAKE_VERSION = 1
AUTHENTICATE_VERSION = 1

#: Correlation ids Java reserves for SASL requests (Integer.MAX_VALUE - 7 .. Integer.MAX_VALUE):
#: they never collide with ids NetworkClient uses, which wrap before this range.
MAX_RESERVED_CORRELATION_ID = 2**31 - 1
MIN_RESERVED_CORRELATION_ID = MAX_RESERVED_CORRELATION_ID - 7

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_REQ_HEADER = struct.Struct(">hhi")


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | memoryview) -> None:
        self.buf = memoryview(buf)
        self.pos = 0

    def _take(self, n: int, what: str) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise MessageDecodeError(f"truncated {what}: need {n} bytes, {len(self.buf) - self.pos} remain", self.pos)
        view = self.buf[self.pos : self.pos + n]
        self.pos += n
        return view

    def int16(self) -> int:
        return int(_H.unpack(self._take(2, "int16"))[0])

    def int32(self) -> int:
        return int(_I.unpack(self._take(4, "int32"))[0])

    def int64(self) -> int:
        return int(_Q.unpack(self._take(8, "int64"))[0])

    def nullable_string(self) -> str | None:
        n = self.int16()
        if n == -1:
            return None
        if n < 0:
            raise MessageDecodeError(f"negative string length {n}", self.pos - 2)
        try:
            return bytes(self._take(n, "string")).decode("utf-8")
        except UnicodeDecodeError:
            raise MessageDecodeError("invalid UTF-8 in string", self.pos) from None

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise MessageDecodeError("null in a non-nullable string", self.pos)
        return s

    def bytes_(self) -> bytes:
        n = self.int32()
        if n < 0:
            raise MessageDecodeError(f"negative bytes length {n}", self.pos - 4)
        return bytes(self._take(n, "bytes"))

    def done(self) -> None:
        if self.pos != len(self.buf):
            raise MessageDecodeError(f"{len(self.buf) - self.pos} trailing bytes", self.pos)


def _string(s: str | None) -> bytes:
    if s is None:
        return _H.pack(-1)
    b = s.encode("utf-8")
    return _H.pack(len(b)) + b


def _framed(payload: bytes) -> bytes:
    return _I.pack(len(payload)) + payload


@dataclass
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None, body: bytes) -> bytes:
    """A whole size-prefixed request frame with request header v1."""
    return _framed(_REQ_HEADER.pack(api_key, version, correlation_id) + _string(client_id) + body)


def decode_request_header(payload: bytes | memoryview) -> tuple[RequestHeader, _Reader]:
    r = _Reader(payload)
    api_key, version, correlation_id = r.int16(), r.int16(), r.int32()
    client_id = r.nullable_string() if api_key != API_VERSIONS or version < 3 else None
    return RequestHeader(api_key, version, correlation_id, client_id), r


def encode_response(correlation_id: int, body: bytes) -> bytes:
    """A whole size-prefixed response frame with response header v0."""
    return _framed(_I.pack(correlation_id) + body)


def _response_reader(payload: bytes | memoryview, expected_correlation_id: int) -> _Reader:
    r = _Reader(payload)
    correlation_id = r.int32()
    if correlation_id != expected_correlation_id:
        raise MessageDecodeError(f"SASL response has correlation id {correlation_id}, expected {expected_correlation_id}")
    return r


# --- SaslHandshake ----------------------------------------------------------------------------------


def handshake_request_body(mechanism: str) -> bytes:
    return _string(mechanism)


def decode_handshake_request(r: _Reader) -> str:
    mechanism = r.string()
    r.done()
    return mechanism


def handshake_response_body(error_code: int, mechanisms: list[str]) -> bytes:
    return _H.pack(error_code) + _I.pack(len(mechanisms)) + b"".join(_string(m) for m in mechanisms)


def decode_handshake_response(payload: bytes | memoryview, correlation_id: int) -> tuple[int, list[str]]:
    r = _response_reader(payload, correlation_id)
    error_code = r.int16()
    count = r.int32()
    if count < 0 or count * 2 > len(r.buf) - r.pos:
        raise MessageDecodeError(f"invalid mechanisms array length {count}", r.pos - 4)
    mechanisms = [r.string() for _ in range(count)]
    r.done()
    return error_code, mechanisms


# --- SaslAuthenticate -------------------------------------------------------------------------------


def authenticate_request_body(auth_bytes: bytes) -> bytes:
    return _I.pack(len(auth_bytes)) + auth_bytes


def decode_authenticate_request(r: _Reader) -> bytes:
    auth_bytes = r.bytes_()
    r.done()
    return auth_bytes


def authenticate_response_body(
    version: int, error_code: int, error_message: str | None, auth_bytes: bytes, session_lifetime_ms: int = 0
) -> bytes:
    body = _H.pack(error_code) + _string(error_message) + _I.pack(len(auth_bytes)) + auth_bytes
    if version >= 1:
        body += _Q.pack(session_lifetime_ms)
    return body


@dataclass
class AuthenticateResponse:
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int


def decode_authenticate_response(payload: bytes | memoryview, correlation_id: int, version: int) -> AuthenticateResponse:
    r = _response_reader(payload, correlation_id)
    error_code = r.int16()
    error_message = r.nullable_string()
    auth_bytes = r.bytes_()
    lifetime = r.int64() if version >= 1 else 0
    r.done()
    return AuthenticateResponse(error_code, error_message, auth_bytes, lifetime)
