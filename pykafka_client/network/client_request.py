"""A request addressed to one node, before it is sent (Java: ``clients.ClientRequest``).

The request body is a generated message object (``pykafka_client.protocol.messages``); the version is
chosen at send time by NetworkClient from the node's advertised ApiVersions, within
``[oldest_allowed_version, latest_allowed_version]`` (defaults: the client-supported range of the API).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from pykafka_client.network.client_response import RequestCompletionHandler, RequestHeaderInfo

__all__ = ["ClientRequest", "RequestBody", "RequestCompletionHandler", "RequestHeaderInfo"]


class RequestBody(Protocol):
    """What NetworkClient needs from a generated request message."""

    API_KEY: ClassVar[Any]
    VALID_VERSIONS: ClassVar[tuple[int, int]]

    def encode(self, version: int) -> bytes: ...


@dataclass(eq=False, slots=True)
class ClientRequest:
    """A request for ``destination`` with its correlation id, deadline and callback."""

    destination: str
    body: RequestBody
    correlation_id: int
    client_id: str | None
    created_time_ms: int
    expect_response: bool
    request_timeout_ms: int
    callback: RequestCompletionHandler | None = None
    oldest_allowed_version: int | None = None
    latest_allowed_version: int | None = None

    @property
    def api_key(self) -> int:
        return int(self.body.API_KEY)

    def make_header(self, version: int) -> RequestHeaderInfo:
        return RequestHeaderInfo(self.api_key, version, self.client_id, self.correlation_id)
