"""Requests sent (or being sent) and not yet answered, per node (Java: ``clients.InFlightRequests``).

Invariants:

* Per node, requests are answered in send order: :meth:`complete_next` takes the oldest.
* A new request may go out only when the previous one to that node has been fully written and fewer
  than ``max.in.flight.requests.per.connection`` are outstanding (:meth:`can_send_more`).
* A node has timed-out requests when some request's ``now - send_time - throttle_time`` exceeds its own
  request timeout (time spent throttled by the broker does not count).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from pykafka_client.errors import IllegalStateError
from pykafka_client.network.client_request import RequestCompletionHandler, RequestHeaderInfo
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.request_encoding import ResponseDecoder
from pykafka_client.network.transport.positional_new import positional_new
from pykafka_client.network.transport.selectable import NetworkReceive, NetworkSend
from pykafka_client.protocol.records import _native


@dataclass(eq=False, slots=True)
class InFlightRequest:
    """A request on the wire, waiting for its response (or its send completion if fire-and-forget)."""

    header: RequestHeaderInfo
    request_timeout_ms: int
    created_time_ms: int
    destination: str
    callback: RequestCompletionHandler | None
    expect_response: bool
    is_internal_request: bool
    body: Any
    send: NetworkSend
    send_time_ms: int
    throttle_time_ms: int = field(default=0)

    def time_elapsed_since_send_ms(self, now_ms: int) -> int:
        return max(0, now_ms - self.send_time_ms)

    def time_elapsed_since_create_ms(self, now_ms: int) -> int:
        return max(0, now_ms - self.created_time_ms)

    def completed(self, response: Any, now_ms: int) -> ClientResponse:
        # every field, positional, without the __init__ frame: once per response
        return _new_client_response(
            self.header, self.callback, self.destination, self.created_time_ms, now_ms, False, False, None, None, response,
            None,
        )

    def timed_out(self, now_ms: int) -> ClientResponse:
        # A timed-out request is also a disconnected one.
        return ClientResponse(
            self.header,
            self.callback,
            self.destination,
            self.created_time_ms,
            now_ms,
            was_disconnected=True,
            was_timed_out=True,
        )

    def disconnected(
        self,
        now_ms: int,
        authentication_exception: BaseException | None = None,
        cause: BaseException | None = None,
    ) -> ClientResponse:
        return ClientResponse(
            self.header,
            self.callback,
            self.destination,
            self.created_time_ms,
            now_ms,
            was_disconnected=True,
            authentication_exception=authentication_exception,
            disconnect_exception=cause,
        )


_new_client_response = positional_new(ClientResponse)

#: ``no_timeout_until_ms`` with nothing in flight, and with a request whose deadline cannot be bounded
_NEVER = 2**63 - 1
_ALWAYS = -(2**63)


class InFlightRequestsApi(Protocol):
    """What a NetworkClient uses of its in-flight requests: :class:`InFlightRequests` (the reference) or the kernel's
    ``InFlightRequests`` (a type that owns the same state: one compiled call per step, no Python frame)."""

    @property
    def max_in_flight_requests_per_connection(self) -> int: ...

    @property
    def no_timeout_until_ms(self) -> int:
        """No request in flight has timed out while the time is at most this (ms)."""
        ...

    def add(self, request: InFlightRequest, /) -> None: ...

    def complete_next(self, node: str, /) -> InFlightRequest: ...

    def last_sent(self, node: str, /) -> InFlightRequest: ...

    def complete_last_sent(self, node: str, /) -> InFlightRequest: ...

    def oldest(self, node: str, /) -> InFlightRequest: ...

    def take_oldest_or_none(self, node: str, /) -> InFlightRequest | None: ...

    def put_back_oldest(self, request: InFlightRequest, /) -> None: ...

    def newest_or_none(self, node: str, /) -> InFlightRequest | None: ...

    def can_send_more(self, node: str, /) -> bool: ...

    def count(self, node: str | None = None) -> int: ...

    def is_empty(self, node: str | None = None) -> bool: ...

    def clear_all(self, node: str, /) -> list[InFlightRequest]: ...

    def increment_throttle_time(self, node: str, throttle_time_ms: int, /) -> None: ...

    def nodes_with_timed_out_requests(self, now_ms: int, /) -> list[str]: ...

    def complete_receives(
        self,
        receives: list[NetworkReceive],
        responses: list[ClientResponse],
        now_ms: int,
        decoders: dict[type, ResponseDecoder],
        new_client_response: Callable[..., ClientResponse],
        /,
    ) -> int | None:
        """The start of ``NetworkClient._handle_completed_receives`` (the reference) in one step: the receives that
        answer, in order, the oldest request of their node when its body's type has a decoder in ``decoders`` that
        takes the answer (``decoder(payload, api_version, correlation_id)`` is not None) and the body it gives has no
        throttle time, each request taken and ``new_client_response(header, callback, destination, created_time_ms,
        now_ms, False, False, None, None, body, None)`` appended. The index of the first receive left to the
        reference, None when none is left. A decoder's error propagates with its request left the oldest."""
        ...

    def __iter__(self) -> Iterator[InFlightRequest]: ...


def new_in_flight_requests(max_in_flight_requests_per_connection: int) -> InFlightRequestsApi:
    """The kernel's ``InFlightRequests`` when the kernel is on, else the reference :class:`InFlightRequests`."""
    kernel = _native.kernel
    if kernel is None:
        return InFlightRequests(max_in_flight_requests_per_connection)
    compiled: InFlightRequestsApi = kernel.InFlightRequests(max_in_flight_requests_per_connection, IllegalStateError)
    return compiled


class InFlightRequests:
    """Per-node FIFO queues of :class:`InFlightRequest` (oldest at the left)."""

    def __init__(self, max_in_flight_requests_per_connection: int) -> None:
        if max_in_flight_requests_per_connection < 1:
            raise ValueError("max.in.flight.requests.per.connection must be at least 1")
        self._max = max_in_flight_requests_per_connection
        self._requests: dict[str, deque[InFlightRequest]] = {}
        self._count = 0
        #: No request in flight has timed out while the time is at most this (ms): a lower bound of every request's
        #: ``send_time_ms + request_timeout_ms`` (throttling only moves a deadline later; a request answered leaves
        #: the bound lower than needed, which costs one scan). :meth:`nodes_with_timed_out_requests` has nothing to
        #: look at before then: a poll reads it instead of calling that (every poll, and most find nothing).
        self.no_timeout_until_ms = _NEVER

    @property
    def max_in_flight_requests_per_connection(self) -> int:
        return self._max

    def add(self, request: InFlightRequest) -> None:
        """Record ``request`` as the newest on its node."""
        q = self._requests.get(request.destination)
        if q is None:
            q = self._requests[request.destination] = deque()
        q.append(request)
        self._count += 1
        timeout = request.request_timeout_ms
        # (a negative timeout times out before its send time: no bound then, every poll scans)
        deadline = request.send_time_ms + timeout if timeout >= 0 else _ALWAYS
        if deadline < self.no_timeout_until_ms:
            self.no_timeout_until_ms = deadline

    def _queue(self, node: str) -> deque[InFlightRequest]:
        q = self._requests.get(node)
        if not q:
            raise IllegalStateError(f"there are no in-flight requests for node {node}")
        return q

    def complete_next(self, node: str) -> InFlightRequest:
        """Remove and return the oldest request to ``node`` (the one a response answers)."""
        req = self.take_oldest_or_none(node)
        if req is None:
            raise IllegalStateError(f"there are no in-flight requests for node {node}")
        return req

    def last_sent(self, node: str) -> InFlightRequest:
        return self._queue(node)[-1]

    def complete_last_sent(self, node: str) -> InFlightRequest:
        """Remove and return the newest request to ``node`` (a fire-and-forget send that completed)."""
        req = self._queue(node).pop()
        self._count -= 1
        return req

    def oldest(self, node: str) -> InFlightRequest:
        return self._queue(node)[0]

    def take_oldest_or_none(self, node: str) -> InFlightRequest | None:
        """Remove and return the oldest request to ``node``, or None when none is in flight (the NetworkClient's call
        per response received, taken before it is decoded: :meth:`put_back_oldest` returns it if the response cannot be)."""
        q = self._requests.get(node)
        if not q:
            return None
        self._count -= 1
        return q.popleft()

    def put_back_oldest(self, request: InFlightRequest) -> None:
        """Undo :meth:`take_oldest_or_none`: ``request`` is the oldest to its node again."""
        q = self._requests.get(request.destination)
        if q is None:
            q = self._requests[request.destination] = deque()
        q.appendleft(request)
        self._count += 1

    def newest_or_none(self, node: str) -> InFlightRequest | None:
        """The newest request to ``node``, None when none is in flight (one call per completed send)."""
        q = self._requests.get(node)
        return q[-1] if q else None

    def can_send_more(self, node: str) -> bool:
        q = self._requests.get(node)
        if not q:
            return True
        send = q[-1].send  # NetworkSend.completed() inlined: this runs for every request sent
        return send.written >= send.size and len(q) < self._max

    def count(self, node: str | None = None) -> int:
        if node is None:
            return self._count
        q = self._requests.get(node)
        return len(q) if q else 0

    def is_empty(self, node: str | None = None) -> bool:
        if node is None:
            return self._count == 0
        return not self._requests.get(node)

    def clear_all(self, node: str) -> list[InFlightRequest]:
        """Remove every request to ``node`` and return them oldest first."""
        q = self._requests.pop(node, None)
        if not q:
            return []
        self._count -= len(q)
        return list(q)

    def increment_throttle_time(self, node: str, throttle_time_ms: int) -> None:
        """Add broker-imposed throttle time to every outstanding request to ``node`` (it does not count
        toward their request timeout)."""
        for req in self._requests.get(node, ()):
            req.throttle_time_ms += throttle_time_ms

    def nodes_with_timed_out_requests(self, now_ms: int) -> list[str]:
        out: list[str] = []
        if now_ms <= self.no_timeout_until_ms:
            return out
        bound = _NEVER
        for node, q in self._requests.items():
            for req in q:  # time_elapsed_since_send_ms inlined
                elapsed = now_ms - req.send_time_ms
                timeout = req.request_timeout_ms
                if (elapsed if elapsed > 0 else 0) - req.throttle_time_ms > timeout:
                    out.append(node)
                    bound = _ALWAYS  # (its requests are cancelled by the caller; the next scan bounds them anew)
                    break
                deadline = req.send_time_ms + timeout if timeout >= 0 else _ALWAYS
                if deadline < bound:
                    bound = deadline
        self.no_timeout_until_ms = bound
        return out

    def complete_receives(
        self,
        receives: list[NetworkReceive],
        responses: list[ClientResponse],
        now_ms: int,
        decoders: dict[type, ResponseDecoder],
        new_client_response: Callable[..., ClientResponse],
        /,
    ) -> int | None:
        """Takes none: ``NetworkClient._handle_completed_receives`` is the reference of the kernel type's step
        (:meth:`InFlightRequestsApi.complete_receives`)."""
        return 0

    def __iter__(self) -> Iterator[InFlightRequest]:
        for q in self._requests.values():
            yield from q
