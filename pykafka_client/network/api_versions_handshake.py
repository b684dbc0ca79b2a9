"""The ApiVersions handshake of each new connection, as a sans-IO state machine (the part of Java's
``NetworkClient`` that handles ``nodesNeedingApiVersionsFetch`` and ``handleApiVersionsResponse``).

A node is READY only after a successful ApiVersions exchange. NetworkClient does the I/O: on a new
connection it calls :meth:`ApiVersionsHandshake.connected`, sends what :meth:`due` yields once the
channel can take it, and hands the response to :meth:`on_response`, which says what to do next.

KIP-511: a broker that does not support our ApiVersions version answers UNSUPPORTED_VERSION (in v0)
listing the ApiVersions versions it does support; the request is then retried at the highest common
version (v0 if it lists none).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pykafka_client._version import __version__
from pykafka_client.errors import MessageDecodeError, for_code
from pykafka_client.network.node_api_versions import NodeApiVersions
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import CLIENT_SUPPORTED_VERSIONS, ApiKey
from pykafka_client.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

log = logging.getLogger(__name__)

_UNSUPPORTED_VERSION = 35
CLIENT_SOFTWARE_NAME = "pykafka-client"


class Outcome(enum.Enum):
    READY = "ready"  #: the node advertised its versions: it is ready
    RETRY = "retry"  #: the broker asked for a lower ApiVersions version: the request goes out again
    DISCONNECT = "disconnect"  #: the broker answered with an error: close the connection


@dataclass(frozen=True, slots=True)
class HandshakeResult:
    outcome: Outcome
    versions: NodeApiVersions | None = None
    error_code: int = 0


class ApiVersionsHandshake:
    """``node id -> ApiVersions version to send`` for nodes whose handshake has not gone out yet."""

    def __init__(self) -> None:
        self._needing_fetch: dict[str, int] = {}

    @staticmethod
    def request() -> ApiVersionsRequest:
        return ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=__version__)

    def connected(self, node_id: str) -> None:
        """A connection to ``node_id`` was established: its handshake is due at our highest version."""
        self._needing_fetch[node_id] = CLIENT_SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]

    def forget(self, node_id: str) -> None:
        self._needing_fetch.pop(node_id, None)

    def has_due(self) -> bool:
        """True while a connected node's handshake has not gone out yet."""
        return bool(self._needing_fetch)

    def due(self, can_send: Callable[[str], bool]) -> Iterator[tuple[str, int]]:
        """``(node id, version)`` of each handshake to send now (those ``can_send`` accepts); each is
        yielded once and forgotten."""
        for node_id, version in list(self._needing_fetch.items()):
            if can_send(node_id):
                del self._needing_fetch[node_id]
                yield node_id, version

    def on_response(self, node_id: str, request_version: int, body: ApiVersionsResponse) -> HandshakeResult:
        if body.error_code == 0:
            return HandshakeResult(Outcome.READY, NodeApiVersions.from_api_versions(body.api_keys, body))
        if request_version == 0 or body.error_code != _UNSUPPORTED_VERSION:
            log.warning(
                "node %s answered ApiVersions with %s: disconnecting; the client reconnects after its backoff",
                node_id,
                for_code(body.error_code).__name__,
            )
            return HandshakeResult(Outcome.DISCONNECT, error_code=body.error_code)
        max_version = 0
        for item in body.api_keys:
            if item.api_key == ApiKey.API_VERSIONS:
                max_version = int(item.max_version)
        self._needing_fetch[node_id] = min(max_version, CLIENT_SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1])
        return HandshakeResult(Outcome.RETRY)


def decode_response(buf: memoryview, api_key: int, api_version: int, correlation_id: int) -> object:
    """Decode a response; an ApiVersions response that does not parse at our version is retried in v0
    (a broker that does not support our version answers in v0, KIP-511)."""
    try:
        return headers.decode_response(buf, api_key, api_version, correlation_id)
    except MessageDecodeError:
        if api_key == ApiKey.API_VERSIONS and api_version != 0:
            return headers.decode_response(buf, api_key, 0, correlation_id)
        raise
