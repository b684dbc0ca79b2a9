"""The SASL requests and responses on the wire, via the generated protocol classes and headers.

Client: SaslHandshake v1, then SaslAuthenticate v1 (non-flexible; every broker since 1.0 and through
4.x accepts them). Server: SaslHandshake v1 and SaslAuthenticate v0-v2, and an ApiVersions request
before the handshake (Java clients send one) answered by :func:`sasl_api_versions_response` unless
the listener supplies its own handler.
"""

from __future__ import annotations

from typing import Sequence

from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.headers import (
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from pykafka_client.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    RequestHeader,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from pykafka_client.protocol.types import Chunk, Message

__all__ = [
    "AUTHENTICATE_VERSION",
    "HANDSHAKE_VERSION",
    "MAX_RESERVED_CORRELATION_ID",
    "MIN_RESERVED_CORRELATION_ID",
    "RequestHeader",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "authenticate_request",
    "authenticate_response",
    "decode_authenticate_response",
    "decode_handshake_response",
    "decode_request",
    "decode_request_header",
    "handshake_request",
    "handshake_response",
    "sasl_api_versions_response",
]

HANDSHAKE_VERSION = 1
AUTHENTICATE_VERSION = 1
#: Versions the server side accepts.
SERVER_HANDSHAKE_VERSIONS = (1, 1)
SERVER_AUTHENTICATE_VERSIONS = (0, 2)

#: Correlation ids Java reserves for SASL requests (Integer.MAX_VALUE - 7 .. Integer.MAX_VALUE).
MAX_RESERVED_CORRELATION_ID = 2**31 - 1
MIN_RESERVED_CORRELATION_ID = MAX_RESERVED_CORRELATION_ID - 7

UNSUPPORTED_VERSION = 35


def handshake_request(mechanism: str, correlation_id: int, client_id: str | None) -> list[Chunk]:
    return encode_request(SaslHandshakeRequest(mechanism=mechanism), HANDSHAKE_VERSION, correlation_id, client_id)


def decode_handshake_response(payload: memoryview, correlation_id: int) -> SaslHandshakeResponse:
    body = decode_response(payload, ApiKey.SASL_HANDSHAKE, HANDSHAKE_VERSION, correlation_id)
    assert isinstance(body, SaslHandshakeResponse)
    return body


def authenticate_request(token: bytes, correlation_id: int, client_id: str | None) -> list[Chunk]:
    return encode_request(SaslAuthenticateRequest(auth_bytes=token), AUTHENTICATE_VERSION, correlation_id, client_id)


def decode_authenticate_response(payload: memoryview, correlation_id: int) -> SaslAuthenticateResponse:
    body = decode_response(payload, ApiKey.SASL_AUTHENTICATE, AUTHENTICATE_VERSION, correlation_id)
    assert isinstance(body, SaslAuthenticateResponse)
    return body


def handshake_response(header: RequestHeader, error_code: int, mechanisms: Sequence[str]) -> list[Chunk]:
    body = SaslHandshakeResponse(error_code=error_code, mechanisms=list(mechanisms))
    return encode_response(body, ApiKey.SASL_HANDSHAKE, header.request_api_version, header.correlation_id)


def authenticate_response(
    header: RequestHeader, error_code: int, error_message: str | None, auth_bytes: bytes
) -> list[Chunk]:
    body = SaslAuthenticateResponse(error_code=error_code, error_message=error_message, auth_bytes=auth_bytes)
    return encode_response(body, ApiKey.SASL_AUTHENTICATE, header.request_api_version, header.correlation_id)


def sasl_api_versions_response(header: RequestHeader, body: Message | None) -> list[Chunk]:
    """An ApiVersions answer listing the APIs usable before authentication (SaslHandshake,
    SaslAuthenticate, ApiVersions). An unsupported request version is answered in v0 with
    UNSUPPORTED_VERSION (KIP-511); ``body`` is None then."""
    lo, hi = ApiVersionsRequest.VALID_VERSIONS
    keys = [
        ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=lo, max_version=hi),
        ApiVersionsResponse.ApiVersion(api_key=ApiKey.SASL_HANDSHAKE, min_version=SERVER_HANDSHAKE_VERSIONS[0], max_version=SERVER_HANDSHAKE_VERSIONS[1]),
        ApiVersionsResponse.ApiVersion(api_key=ApiKey.SASL_AUTHENTICATE, min_version=SERVER_AUTHENTICATE_VERSIONS[0], max_version=SERVER_AUTHENTICATE_VERSIONS[1]),
    ]
    version = header.request_api_version
    if body is None or not lo <= version <= hi:
        response = ApiVersionsResponse(error_code=UNSUPPORTED_VERSION, api_keys=keys)
        return encode_response(response, ApiKey.API_VERSIONS, 0, header.correlation_id)
    return encode_response(ApiVersionsResponse(api_keys=keys), ApiKey.API_VERSIONS, version, header.correlation_id)
