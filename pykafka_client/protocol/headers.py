"""Request/response headers and whole-frame encoding (Java ``RequestHeader``, ``ResponseHeader``,
``ApiKeys.requestHeaderVersion``/``responseHeaderVersion``, ``RequestContext`` parsing).

Header versions:

* request: v0 only for ControlledShutdown v0 (no client id); otherwise v1 for non-flexible request
  versions and v2 (with a tag section) for flexible ones. The client id is always a non-compact
  nullable string (so that any broker can read an ApiVersions request header).
* response: v0 for non-flexible response versions, v1 (with a tag section) for flexible ones, except
  ApiVersions responses which always use v0 (a client that does not know the broker's versions must
  be able to read the error; KIP-511).

Frames: ``encode_request``/``encode_response`` return a list of pieces whose first piece starts with
the 4-byte big-endian size prefix; record payloads (and FileRegions) stay separate pieces, never copied.
``decode_*`` take the frame payload *without* the size prefix (``NetworkReceive.payload``).
"""

from __future__ import annotations

from pykafka_client.errors import (
    CorrelationIdMismatchError,
    MessageDecodeError,
    UnknownApiKeyError,
)
from pykafka_client.protocol.api_keys import REQUESTS, RESPONSES, ApiKey
from pykafka_client.protocol.messages import RequestHeader, ResponseHeader
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.types import Buffer, Chunk, Message, Reader, Writer, write_checked

__all__ = [
    "RequestHeader",
    "ResponseHeader",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "decode_response_header",
    "encode_request",
    "encode_response",
    "request_header_version",
    "response_header_version",
]


#: number -> ApiKey (a dict lookup, not an enum call, on every request and response)
_API_KEYS: dict[int, ApiKey] = {int(k): k for k in ApiKey}
#: (api key, version) -> header version, filled on first use
_REQUEST_HEADER_VERSIONS: dict[tuple[int, int], int] = {}
_RESPONSE_HEADER_VERSIONS: dict[tuple[int, int], int] = {}


def _api_key(api_key: int) -> ApiKey:
    key = _API_KEYS.get(api_key)
    if key is None:
        raise UnknownApiKeyError(f"unknown API key {api_key}")
    return key


def _known_version(cls: type[Message], version: int) -> bool:
    lo, hi = cls.VALID_VERSIONS
    return lo <= version <= hi


def _flexible(cls: type[Message], version: int) -> bool:
    fmin = cls.FLEXIBLE_VERSIONS_MIN
    return fmin is not None and version >= fmin


def request_header_version(api_key: int, version: int) -> int:
    """The RequestHeader version used with ``api_key`` at ``version`` (works for unknown versions too)."""
    hv = _REQUEST_HEADER_VERSIONS.get((api_key, version))
    if hv is None:
        key = _api_key(api_key)
        if key == ApiKey.CONTROLLED_SHUTDOWN and version == 0:
            hv = 0
        else:
            hv = 2 if _flexible(REQUESTS[key], version) else 1
        if _known_version(REQUESTS[key], version):  # a peer's made-up versions must not grow the cache
            _REQUEST_HEADER_VERSIONS[(api_key, version)] = hv
    return hv


def response_header_version(api_key: int, version: int) -> int:
    """The ResponseHeader version used with ``api_key`` at ``version`` (ApiVersions: always 0)."""
    hv = _RESPONSE_HEADER_VERSIONS.get((api_key, version))
    if hv is None:
        key = _api_key(api_key)
        hv = 0 if key == ApiKey.API_VERSIONS else 1 if _flexible(RESPONSES[key], version) else 0
        if _known_version(RESPONSES[key], version):
            _RESPONSE_HEADER_VERSIONS[(api_key, version)] = hv
    return hv


def _check_version(cls: type[Message], version: int) -> None:
    lo, hi = cls.VALID_VERSIONS
    if not lo <= version <= hi:
        raise cls.unsupported_version(version)


def encode_request(body: Message, version: int, correlation_id: int, client_id: str | None) -> list[Chunk]:
    """A whole request frame: size prefix + header + body, as pieces (see the module doc)."""
    api_key = body.API_KEY
    if api_key is None or body.MESSAGE_TYPE != "request":
        raise UnknownApiKeyError(f"{type(body).__qualname__} is not a request body")
    _check_version(type(body), version)
    w = Writer()
    w.buf += b"\0\0\0\0"
    write_checked(RequestHeader(api_key, version, correlation_id, client_id), w, request_header_version(api_key, version))
    write_checked(body, w, version)
    w.patch_int32(0, w.size - 4)
    return w.chunks()


def encode_response(body: Message, api_key: int, version: int, correlation_id: int) -> list[Chunk]:
    """A whole response frame: size prefix + header + body, as pieces (see the module doc)."""
    hv = response_header_version(api_key, version)
    if body.API_KEY != api_key or body.MESSAGE_TYPE != "response":
        raise UnknownApiKeyError(f"{type(body).__qualname__} is not the response body of API key {api_key}")
    _check_version(type(body), version)
    w = Writer()
    w.buf += b"\0\0\0\0"
    write_checked(ResponseHeader(correlation_id), w, hv)
    write_checked(body, w, version)
    w.patch_int32(0, w.size - 4)
    return w.chunks()


def decode_request_header(buf: Buffer) -> tuple[RequestHeader, int]:
    """Parse only the request header; returns it and the offset where the body starts.

    Works for versions this library cannot parse (so a broker can answer an ApiVersions request of an
    unknown version with v0 + UNSUPPORTED_VERSION). Raises UnknownApiKeyError for an unknown key.
    """
    r = Reader(buf)
    api_key = r.read_int16()
    version = r.read_int16()
    hv = request_header_version(api_key, version)
    r.pos = 0
    header = RequestHeader.read(r, hv)
    return header, r.pos


def decode_request(buf: Buffer) -> tuple[RequestHeader, Message]:
    """Parse a request frame payload into (header, body).

    Raises UnknownApiKeyError, UnsupportedVersionError (version outside the spec's validVersions) or
    MessageDecodeError (bad bytes, trailing bytes).
    """
    header, pos = decode_request_header(buf)
    cls = REQUESTS[_api_key(header.request_api_key)]
    version = header.request_api_version
    _check_version(cls, version)
    return header, _read_body(cls, buf, pos, version)


def decode_response_header(buf: Buffer, api_key: int, version: int) -> tuple[ResponseHeader, int]:
    """Parse only the response header; returns it and the offset where the body starts."""
    r = Reader(buf)
    header = ResponseHeader.read(r, response_header_version(api_key, version))
    return header, r.pos


#: ``[RESPONSES[ApiKey.PRODUCE]]`` once the first produce response was decoded
_PRODUCE_RESPONSE: list[type[Message]] = []


def _remember_produce_response() -> type[Message]:
    cls = RESPONSES[ApiKey.PRODUCE]
    _PRODUCE_RESPONSE.append(cls)
    return cls


def decode_response(buf: Buffer, api_key: int, version: int, expected_correlation_id: int) -> Message:
    """Parse a response frame payload; raises CorrelationIdMismatchError if it answers another request."""
    if api_key == ApiKey.PRODUCE:
        # the producer's I/O thread parses one per produce request: the compiled kernel when active (the
        # common response; anything unusual, including every error to raise, is left to the code below).
        # The class is looked up once (no key or mapping lookup per response).
        kernel = _native.kernel
        if kernel is not None:
            produce_cls = _PRODUCE_RESPONSE[0] if _PRODUCE_RESPONSE else _remember_produce_response()
            body = kernel.decode_produce_response(buf, version, expected_correlation_id, produce_cls)
            if body is not None:
                return body
    key = _api_key(api_key)
    cls = RESPONSES[key]
    _check_version(cls, version)
    header, pos = decode_response_header(buf, key, version)
    if header.correlation_id != expected_correlation_id:
        raise CorrelationIdMismatchError(
            f"correlation id {header.correlation_id} does not match the expected {expected_correlation_id}"
            f" ({key.name} v{version})"
        )
    try:
        return _read_body(cls, buf, pos, version)
    except MessageDecodeError:
        if key != ApiKey.API_VERSIONS or version == 0:
            raise
        # KIP-511: a broker that does not support our ApiVersions version answers with a v0 body
        # (error UNSUPPORTED_VERSION); Java's ApiVersionsResponse.parse falls back the same way.
        return _read_body(cls, buf, pos, 0)


def _read_body(cls: type[Message], buf: Buffer, pos: int, version: int) -> Message:
    r = Reader(buf, pos)
    body = cls.read(r, version)
    if r.pos != r.end:
        raise MessageDecodeError(f"{r.end - r.pos} trailing bytes after {cls.__qualname__} v{version}", r.pos)
    return body
