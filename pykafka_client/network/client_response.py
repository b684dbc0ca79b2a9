"""The outcome of a ClientRequest (Java: ``clients.ClientResponse``).

Exactly one of these holds: ``response_body`` is set (a decoded response), ``was_disconnected`` (the
connection dropped, or the request timed out: then ``was_timed_out`` too; ``disconnect_exception``
says why when known), ``version_mismatch`` (no
common version; the request never hit the wire) or ``authentication_exception``. Fire-and-forget
requests complete with ``response_body=None`` and no flag set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple


class RequestHeaderInfo(NamedTuple):
    """The header fields of a sent request (the encoded header lives in the frame).

    An immutable named tuple rather than a frozen dataclass: one is built per request sent, and the hot path
    builds it with ``tuple.__new__`` (a frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``, several times the cost)."""

    api_key: int
    api_version: int
    client_id: str | None
    correlation_id: int


#: Called once with the response (or the disconnect / timeout / version-mismatch outcome).
RequestCompletionHandler = Callable[["ClientResponse"], object]  # (what it returns is ignored)


@dataclass(eq=False, slots=True)
class ClientResponse:
    request_header: RequestHeaderInfo
    callback: RequestCompletionHandler | None
    destination: str
    created_time_ms: int
    received_time_ms: int
    was_disconnected: bool = False
    was_timed_out: bool = False
    version_mismatch: BaseException | None = None
    authentication_exception: BaseException | None = None
    response_body: Any = None
    #: Why the connection was closed, when known (a protocol error from the peer, a transport error).
    disconnect_exception: BaseException | None = None

    @property
    def request_latency_ms(self) -> int:
        return self.received_time_ms - self.created_time_ms

    @property
    def api_key(self) -> int:
        return self.request_header.api_key

    def has_response(self) -> bool:
        return self.response_body is not None

    def on_complete(self) -> None:
        """Run the request's callback, if any."""
        if self.callback is not None:
            self.callback(self)

    def __repr__(self) -> str:
        return (
            f"ClientResponse(dest={self.destination}, api_key={self.request_header.api_key}, "
            f"v{self.request_header.api_version}, corr={self.request_header.correlation_id}, "
            f"disconnected={self.was_disconnected}, timed_out={self.was_timed_out}, "
            f"version_mismatch={self.version_mismatch!r}, auth={self.authentication_exception!r}, "
            f"body={type(self.response_body).__name__})"
        )
