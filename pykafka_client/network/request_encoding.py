"""Choosing the version of a request and encoding its frame (the request-building half of NetworkClient).

A request is sent at the highest version both sides support within its allowed range: the API's
client-supported range (``CLIENT_SUPPORTED_VERSIONS``) intersected with the body's ``VALID_VERSIONS`` and
narrowed by the request's ``oldest_allowed_version`` / ``latest_allowed_version``. Encoding can still
fail at that version (a field set that the version lacks): the caller must fail the request with the
error and log it at WARNING, never drop it (see ``NetworkClient._do_send``).
"""

from __future__ import annotations

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


#: Request types whose Produce response the compiled kernel decodes straight into the given response type (a
#: ProduceResponse subclass holding the per-partition results, its ``responses`` built when read): the producer's
#: ``DrainedProduceRequest`` -> ``DecodedProduceResponse`` (read by ``NetworkClient`` for each response).
RESULTS_RESPONSE_TYPES: dict[type, type] = {}


def register_results_response(request_type: type, response_type: type) -> None:
    """Have the Produce responses to ``request_type`` requests decoded by the kernel's ``decode_produce_results``
    into ``response_type`` (which the kernel was set up with) whenever it takes them."""
    RESULTS_RESPONSE_TYPES[request_type] = response_type


def api_name(api_key: int) -> str:
    """``ApiKey`` name of ``api_key`` for messages (``API key N`` when unknown)."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"API key {api_key}"
