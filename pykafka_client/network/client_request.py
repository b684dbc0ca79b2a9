"""A request addressed to one node, before it is sent (Java: ``clients.ClientRequest``).

The request body is a generated message object (``pykafka_client.protocol.messages``); the version is
chosen at send time by NetworkClient from the node's advertised ApiVersions, within
``[oldest_allowed_version, latest_allowed_version]`` (defaults: the client-supported range of the API).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from pykafka_client.network.client_response import ClientResponse


class RequestBody(Protocol):
    """What NetworkClient needs from a generated request message."""

    API_KEY: ClassVar[Any]
    VALID_VERSIONS: ClassVar[tuple[int, int]]

    def encode(self, version: int) -> bytes: ...


#: Called once with the response (or the disconnect / timeout / version-mismatch outcome).
RequestCompletionHandler = Callable[["ClientResponse"], None]


@dataclass(frozen=True, slots=True)
class RequestHeaderInfo:
    """The header fields of a sent request (the encoded header lives in the frame)."""

    api_key: int
    api_version: int
    client_id: str | None
    correlation_id: int


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
