"""Choosing the version of a request and encoding its frame (the request-building half of NetworkClient).

A request is sent at the highest version both sides support within its allowed range: the API's
client-supported range (``CLIENT_SUPPORTED_VERSIONS``) intersected with the body's ``VALID_VERSIONS`` and
narrowed by the request's ``oldest_allowed_version`` / ``latest_allowed_version``. Encoding can still
fail at that version (a field set that the version lacks): the caller must fail the request with the
error and log it at WARNING, never drop it (see ``NetworkClient._do_send``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykafka_client.errors import UnsupportedVersionError
from pykafka_client.network.client_request import ClientRequest, RequestBody
from pykafka_client.network.node_api_versions import NodeApiVersions
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import CLIENT_SUPPORTED_VERSIONS, ApiKey
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.types import Chunk


def allowed_version_range(request: ClientRequest) -> tuple[int, int]:
    """``(lo, hi)`` of the versions the client may send ``request`` at (empty when ``lo > hi``)."""
    body = request.body
    lo, hi = CLIENT_SUPPORTED_VERSIONS.get(request.api_key, body.VALID_VERSIONS)  # type: ignore[call-overload]
    lo = max(lo, body.VALID_VERSIONS[0])
    hi = min(hi, body.VALID_VERSIONS[1])
    if request.oldest_allowed_version is not None:
        lo = max(lo, request.oldest_allowed_version)
    if request.latest_allowed_version is not None:
        hi = min(hi, request.latest_allowed_version)
    return lo, hi


def choose_version(request: ClientRequest, node_versions: NodeApiVersions | None) -> int:
    """The version to send ``request`` at to a node advertising ``node_versions`` (None: not known,
    the highest allowed). Raises UnsupportedVersionError when there is no common version."""
    lo, hi = allowed_version_range(request)
    if lo > hi:
        raise UnsupportedVersionError(
            f"no version of {api_name(request.api_key)} is allowed for this request (range {lo}-{hi} is empty)"
        )
    return hi if node_versions is None else node_versions.latest_usable_version(request.api_key, lo, hi)


def encode_request_frame(body: RequestBody, version: int, correlation_id: int, client_id: str | None) -> list[Chunk]:
    """The whole frame (size, header, body) of ``body`` at ``version``; raises UnsupportedVersionError
    when the body sets a field that ``version`` lacks.

    A ProduceRequest (one per produce request of the producer's I/O thread) is encoded by the compiled kernel
    when it is active: the same chunks as the reference, which decides whenever the kernel declines."""
    if isinstance(body, ProduceRequest):  # the producer's requests are a subclass (producer.sender)
        kernel = _native.kernel
        if kernel is not None:
            out = kernel.encode_produce_request(body, version, correlation_id, client_id)
            if out is not None:
                return out
    return headers.encode_request(body, version, correlation_id, client_id)  # type: ignore[arg-type]


def encode_reference_frame(body: RequestBody, version: int, correlation_id: int, client_id: str | None) -> list[Chunk]:
    """The reference encoder's frame of ``body`` (no kernel: a compiled encoder declined it)."""
    # (a RequestBody is the Protocol of what the client reads of a generated Message: every body is one)
    return headers.encode_request(body, version, correlation_id, client_id)  # type: ignore[arg-type]  # see above


#: An encoder of a request type's frames: ``encode(body, version, correlation_id, client_id)`` -> the frame's pieces (as
#: :func:`encode_request_frame`'s), or None to leave that request to :func:`encode_request_frame`.
RequestEncoder = Callable[[Any, int, int, "str | None"], "list[Chunk] | None"]
#: A decoder of the responses to a request type: ``decode(payload, api_version, correlation_id)`` -> the response
#: body, or None to leave that response to the general decoders (errors raised as theirs: ProtocolError).
ResponseDecoder = Callable[[Any, int, int], Any]


@dataclass(frozen=True, slots=True)
class CompiledCodecs:
    """The compiled encoders and response decoders by request type (exact type, no subclasses), registered by the module
    that defines the request type (:func:`register_compiled_codecs`). A NetworkClient made while the kernel is on uses
    them (:func:`compiled_codecs`): it encodes a request with its type's encoder and has its in-flight requests
    complete, in one call a poll, the receives its type's decoder takes."""

    encoders: dict[type, RequestEncoder]
    decoders: dict[type, ResponseDecoder]


_COMPILED_CODECS = CompiledCodecs({}, {})
_NO_CODECS = CompiledCodecs({}, {})


def register_compiled_codecs(request_type: type, encode: RequestEncoder, decode_response: ResponseDecoder) -> None:
    """Have the requests of exactly ``request_type`` encoded by ``encode`` and their responses decoded by
    ``decode_response`` (each may decline with None) by the NetworkClients made while the kernel is on."""
    _COMPILED_CODECS.encoders[request_type] = encode
    _COMPILED_CODECS.decoders[request_type] = decode_response


def compiled_codecs() -> CompiledCodecs:
    """The registered codecs while the kernel is on, none while it is off (``PYKAFKA_NO_NATIVE=1``, or switched off:
    the reference encoders and decoders only)."""
    return _COMPILED_CODECS if _native.kernel is not None else _NO_CODECS


def api_name(api_key: int) -> str:
    """``ApiKey`` name of ``api_key`` for messages (``API key N`` when unknown)."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"API key {api_key}"
