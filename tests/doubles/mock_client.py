"""A scriptable KafkaClient (Java: ``clients.MockClient``) for ConsumerNetworkClient, the producer's
Sender, the coordinators and the admin client.

Script responses before the code under test sends:

* ``prepare_response(body, matcher=None, node=None, disconnected=False)``: the next request sent (to
  ``node`` if given) is answered with ``body``. ``matcher(request_body) -> bool`` is checked at send
  time and a mismatch raises ``AssertionError`` naming both sides (fail loudly, never silently skip).
  ``prepare_unsupported_version_response(matcher)`` answers with a version mismatch.
* ``respond(body)`` / ``respond_from(body, node)`` answer a request already sent (oldest first);
  ``disconnect(node)`` completes outstanding requests to ``node`` as disconnected.

Connection behaviour per node (``ready()`` connects instantly otherwise):
``backoff(node, ms)``, ``throttle(node, ms)``, ``delay_ready(node, ms)``, ``set_unreachable(node, ms)``,
``authentication_failed(node, backoff_ms)``, ``create_pending_authentication_error(node, backoff_ms)``
(the next send to the node fails authentication), and ``reset()``.

Answers by request type, in any order (for flows where several requests are in flight at once, as
the consumer's fetches, ListOffsets and group requests are): ``Script(client).add(RequestType, answer)``
answers the next request of that type, now if one is in flight or else when it is sent. ``answer`` is
a response body, ``fn(request_body) -> response body``, a ``DisconnectError`` (the request completes
as disconnected) or None (the request stays unanswered). Prepared (FIFO) responses are matched first. ``script.requests(RequestType)`` lists
the request bodies it answered; ``add(..., repeat=True)`` answers every request of the type.
Unscripted requests stay in flight (``pending()``).

Other: ``prepare_metadata_update(response)`` is applied to the Metadata on the next poll where an
update is due; ``enable_blocking_until_wakeup(n)`` makes the next ``n`` polls block until ``wakeup()``
(for cross-thread wakeup tests); requests not answered within their request timeout are completed as
disconnected by ``poll`` (request-timeout emulation). All responses complete (callbacks run) in ``poll``.
With ``advance_time_on_poll=True`` a poll that delivers nothing sleeps its timeout on the MockTime,
as MockSelector does, so blocking calls reach their deadlines without a ticking clock.
"""

from __future__ import annotations

import enum
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pykafka_client.errors import AuthenticationError, DisconnectError, IllegalStateError, UnsupportedVersionError
from pykafka_client.network.client_request import ClientRequest, RequestBody, RequestCompletionHandler
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.kafka_client import LeastLoadedNode
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.node_api_versions import NodeApiVersions
from pykafka_client.protocol.api_keys import CLIENT_SUPPORTED_VERSIONS, ApiKey
from pykafka_client.protocol.messages import MetadataResponse
from pykafka_client.structs import Node
from pykafka_client.utils.time import MockTime

RequestMatcher = Callable[[Any], bool]
_MAX = 2**63 - 1


class _State(enum.Enum):
    CONNECTING = 1
    CONNECTED = 2
    DISCONNECTED = 3


@dataclass
class _ConnectionState:
    state: _State = _State.DISCONNECTED
    throttled_until_ms: int = 0
    ready_delayed_until_ms: int = 0
    backing_off_until_ms: int = 0
    unreachable_until_ms: int = 0
    auth_exception: BaseException | None = None

    def not_throttled(self, now: int) -> bool:
        return self.throttled_until_ms <= now

    def is_backing_off(self, now: int) -> bool:
        return self.backing_off_until_ms > now

    def is_ready(self, now: int) -> bool:
        return self.state is _State.CONNECTED and self.not_throttled(now)

    def ready(self, now: int) -> bool:
        if self.state is _State.CONNECTED:
            return self.not_throttled(now)
        if self.state is _State.CONNECTING:
            if self.ready_delayed_until_ms > now:
                return False
            self.state = _State.CONNECTED
            self.auth_exception = None
            return self.ready(now)
        if self.is_backing_off(now):
            return False
        if self.unreachable_until_ms > now:
            self.backing_off_until_ms = max(self.backing_off_until_ms, now + 100)
            return False
        self.state = _State.CONNECTING
        return self.ready(now)

    def connection_delay(self, now: int) -> int:
        if self.state is not _State.DISCONNECTED:
            return _MAX
        if self.is_backing_off(now):
            return self.backing_off_until_ms - now
        return 0

    def poll_delay_ms(self, now: int) -> int:
        return self.connection_delay(now) if self.not_throttled(now) else self.throttled_until_ms - now


@dataclass
class _FutureResponse:
    node: Node | None
    body: Any
    disconnected: bool
    matcher: RequestMatcher | None
    unsupported: bool = False


@dataclass
class _PendingAuth:
    backoff_ms: int


@dataclass
class MockClient:
    """Implements :class:`pykafka_client.network.kafka_client.KafkaClient`; see the module doc."""

    time: MockTime
    metadata: Metadata | None = None
    node_api_versions: NodeApiVersions = field(default_factory=NodeApiVersions.create)
    default_request_timeout_ms: int = 30_000
    advance_time_on_poll: bool = False

    def __post_init__(self) -> None:
        self._correlation = 0
        self._states: dict[str, _ConnectionState] = {}
        self.requests: deque[ClientRequest] = deque()
        self._responses: deque[ClientResponse] = deque()
        self._future_responses: deque[_FutureResponse] = deque()
        self._metadata_updates: deque[MetadataResponse] = deque()
        self._pending_auth: dict[str, _PendingAuth] = {}
        self._cond = threading.Condition()
        self._blocking_wakeups = 0
        self.wakeups = 0
        self.poll_timeouts: list[int] = []
        self.sent: list[ClientRequest] = []
        self._active = True
        self._nodes: list[Node] = []
        self._scripts: list[Script] = []

    # --- scripting -----------------------------------------------------------------------------

    def prepare_response(
        self,
        body: Any,
        matcher: RequestMatcher | None = None,
        node: Node | None = None,
        disconnected: bool = False,
    ) -> None:
        self._future_responses.append(_FutureResponse(node, body, disconnected, matcher))

    def prepare_response_from(self, body: Any, node: Node, matcher: RequestMatcher | None = None,
                              disconnected: bool = False) -> None:
        self.prepare_response(body, matcher, node, disconnected)

    def prepare_unsupported_version_response(self, matcher: RequestMatcher | None = None) -> None:
        self._future_responses.append(_FutureResponse(None, None, False, matcher, unsupported=True))

    def prepare_metadata_update(self, response: MetadataResponse) -> None:
        self._metadata_updates.append(response)

    def respond(self, body: Any, disconnected: bool = False) -> None:
        """Answer the oldest request already sent."""
        if not self.requests:
            raise AssertionError("respond(): no request has been sent")
        self._answer(self.requests.popleft(), body, disconnected)

    def respond_from(self, body: Any, node: Node, disconnected: bool = False) -> None:
        for request in list(self.requests):
            if request.destination == node.id_string:
                self.requests.remove(request)
                self._answer(request, body, disconnected)
                return
        raise AssertionError(f"respond_from(): no request was sent to node {node.id}")

    def _answer(self, request: ClientRequest, body: Any, disconnected: bool) -> None:
        version = self._version(request)
        self._responses.append(
            ClientResponse(
                request.make_header(version),
                request.callback,
                request.destination,
                request.created_time_ms,
                self.time.hi_res_clock_ms(),
                was_disconnected=disconnected,
                response_body=None if disconnected else body,
            )
        )

    def has_in_flight_request(self) -> bool:
        return bool(self.requests)

    def pending(self) -> list[ClientRequest]:
        """Requests sent and not answered yet, oldest first."""
        return list(self.requests)

    def _answer_scripted(self) -> None:
        for request in list(self.requests):
            for script in self._scripts:
                found, answer = script.take(request.body)
                if not found:
                    continue
                if answer is None:  # consumed, and the request stays unanswered
                    break
                self.requests.remove(request)
                if isinstance(answer, DisconnectError):
                    self._answer(request, None, True)
                elif isinstance(answer, BaseException):
                    raise AssertionError(f"MockClient can fail a request only by disconnecting it, not with {answer!r}")
                else:
                    self._answer(request, answer, False)
                break

    # --- connection scripting ------------------------------------------------------------------

    def _state(self, node_id: str) -> _ConnectionState:
        return self._states.setdefault(node_id, _ConnectionState())

    def backoff(self, node: Node, duration_ms: int) -> None:
        self._state(node.id_string).backing_off_until_ms = self.time.hi_res_clock_ms() + duration_ms

    def throttle(self, node: Node, duration_ms: int) -> None:
        self._state(node.id_string).throttled_until_ms = self.time.hi_res_clock_ms() + duration_ms

    def delay_ready(self, node: Node, duration_ms: int) -> None:
        self._state(node.id_string).ready_delayed_until_ms = self.time.hi_res_clock_ms() + duration_ms

    def set_unreachable(self, node: Node, duration_ms: int) -> None:
        self.disconnect(node.id_string)
        self._state(node.id_string).unreachable_until_ms = self.time.hi_res_clock_ms() + duration_ms

    def authentication_failed(self, node: Node, backoff_ms: int) -> None:
        state = self._state(node.id_string)
        state.auth_exception = AuthenticationError(f"authentication with node {node.id} failed (mock)")
        state.state = _State.DISCONNECTED
        state.backing_off_until_ms = self.time.hi_res_clock_ms() + backoff_ms

    def create_pending_authentication_error(self, node: Node, backoff_ms: int) -> None:
        self._pending_auth[node.id_string] = _PendingAuth(backoff_ms)

    def reset(self) -> None:
        self._states.clear()
        self.requests.clear()
        self._responses.clear()
        self._future_responses.clear()
        self._metadata_updates.clear()

    def enable_blocking_until_wakeup(self, num_blocking_wakeups: int) -> None:
        with self._cond:
            self._blocking_wakeups = num_blocking_wakeups

    # --- KafkaClient ---------------------------------------------------------------------------

    def is_ready(self, node: Node, now_ms: int) -> bool:
        return self._state(node.id_string).is_ready(now_ms)

    def ready(self, node: Node, now_ms: int) -> bool:
        return self._state(node.id_string).ready(now_ms)

    def connection_delay(self, node: Node, now_ms: int) -> int:
        return self._state(node.id_string).connection_delay(now_ms)

    def poll_delay_ms(self, node: Node, now_ms: int) -> int:
        return self._state(node.id_string).poll_delay_ms(now_ms)

    def connection_failed(self, node: Node) -> bool:
        return self._state(node.id_string).is_backing_off(self.time.hi_res_clock_ms())

    def authentication_exception(self, node: Node) -> BaseException | None:
        return self._state(node.id_string).auth_exception

    def unreachable_reason(self, now_ms: int | None = None) -> str | None:
        return None  # scripted connections never fail for a reason a user could fix

    def _version(self, request: ClientRequest) -> int:
        key = ApiKey(request.api_key)
        lo, hi = CLIENT_SUPPORTED_VERSIONS[key]
        if request.oldest_allowed_version is not None:
            lo = max(lo, request.oldest_allowed_version)
        if request.latest_allowed_version is not None:
            hi = min(hi, request.latest_allowed_version)
        return self.node_api_versions.latest_usable_version(key, lo, hi)

    def send(self, request: ClientRequest, now_ms: int) -> None:
        if not self._state(request.destination).is_ready(now_ms):
            raise IllegalStateError(f"cannot send {request} since the destination is not ready")
        self.sent.append(request)
        pending_auth = self._pending_auth.pop(request.destination, None)
        if pending_auth is not None:
            node = Node(int(request.destination), "mock", 0)
            self.authentication_failed(node, pending_auth.backoff_ms)
            self._responses.append(
                ClientResponse(
                    request.make_header(0),
                    request.callback,
                    request.destination,
                    request.created_time_ms,
                    now_ms,
                    was_disconnected=True,
                    authentication_exception=self._state(request.destination).auth_exception,
                )
            )
            return
        for prepared in list(self._future_responses):
            if prepared.node is not None and prepared.node.id_string != request.destination:
                continue
            self._future_responses.remove(prepared)
            try:
                version = self._version(request)
            except UnsupportedVersionError as e:
                self._responses.append(
                    ClientResponse(request.make_header(0), request.callback, request.destination,
                                   request.created_time_ms, now_ms, version_mismatch=e)
                )
                return
            mismatch: UnsupportedVersionError | None = None
            if prepared.unsupported:
                mismatch = UnsupportedVersionError(f"API {request.api_key} with version {version}")
            if prepared.matcher is not None and not prepared.matcher(request.body):
                raise AssertionError(
                    f"request matcher did not match the next-in-line request {request.body!r}"
                    f" (prepared response {prepared.body!r})"
                )
            self._responses.append(
                ClientResponse(
                    request.make_header(version),
                    request.callback,
                    request.destination,
                    request.created_time_ms,
                    self.time.hi_res_clock_ms(),
                    was_disconnected=prepared.disconnected,
                    version_mismatch=mismatch,
                    response_body=None if (prepared.disconnected or mismatch) else prepared.body,
                )
            )
            return
        self.requests.append(request)
        self._answer_scripted()

    def poll(self, timeout_ms: int, now_ms: int) -> list[ClientResponse]:
        self.poll_timeouts.append(int(timeout_ms))
        self._maybe_await_wakeup()
        self._answer_scripted()
        self._check_timeout_of_pending_requests(now_ms)
        if self.metadata is not None and self.metadata.time_to_next_update(now_ms) == 0:
            if self._metadata_updates and self.least_loaded_node(now_ms).node is not None:
                self.metadata.update(0, self._metadata_updates.popleft(), False, now_ms)
        out: list[ClientResponse] = []
        while self._responses:
            response = self._responses.popleft()
            response.on_complete()
            out.append(response)
        if not out and self.advance_time_on_poll and timeout_ms > 0:
            self.time.sleep(int(timeout_ms))
        return out

    def _maybe_await_wakeup(self) -> None:
        with self._cond:
            remaining = self._blocking_wakeups
            if remaining <= 0:
                return
            waited = 0
            while self._blocking_wakeups == remaining:
                if waited >= 6:
                    raise AssertionError("MockClient.poll blocked for 60 s waiting for wakeup()")
                self._cond.wait(10)
                waited += 1

    def _check_timeout_of_pending_requests(self, now_ms: int) -> None:
        while self.requests and now_ms - self.requests[0].created_time_ms >= self.requests[0].request_timeout_ms:
            request = self.requests[0]
            self.disconnect(request.destination)

    def disconnect(self, node_id: str, allow_late_responses: bool = False) -> None:
        now = self.time.hi_res_clock_ms()
        for request in list(self.requests):
            if request.destination == node_id:
                self._responses.append(
                    ClientResponse(request.make_header(0), request.callback, request.destination,
                                   request.created_time_ms, now, was_disconnected=True)
                )
                if not allow_late_responses:
                    self.requests.remove(request)
        self._state(node_id).state = _State.DISCONNECTED

    def close_node(self, node_id: str) -> None:
        self._states.pop(node_id, None)
        self.requests = deque(r for r in self.requests if r.destination != node_id)

    def close(self, node_id: str | None = None) -> None:
        if node_id is not None:
            self.close_node(node_id)
        else:
            self._active = False

    def set_nodes(self, nodes: list[Node]) -> None:
        """Nodes for least_loaded_node when no Metadata is attached."""
        self._nodes = list(nodes)

    def least_loaded_node(self, now_ms: int) -> LeastLoadedNode:
        nodes = list(self.metadata.fetch().nodes) if self.metadata is not None else self._nodes
        for node in nodes:
            if not self._state(node.id_string).is_backing_off(now_ms):
                return LeastLoadedNode(node, self.is_ready(node, now_ms))
        return LeastLoadedNode(None, False)

    def in_flight_request_count(self, node_id: str | None = None) -> int:
        if node_id is None:
            return len(self.requests)
        return sum(1 for r in self.requests if r.destination == node_id)

    def has_in_flight_requests(self, node_id: str | None = None) -> bool:
        return self.in_flight_request_count(node_id) > 0

    def has_ready_nodes(self, now_ms: int) -> bool:
        return any(s.is_ready(now_ms) for s in self._states.values())

    def wakeup(self) -> None:
        self.wakeups += 1
        with self._cond:
            if self._blocking_wakeups > 0:
                self._blocking_wakeups -= 1
                self._cond.notify_all()

    def new_client_request(
        self,
        node_id: str,
        body: RequestBody,
        created_time_ms: int,
        expect_response: bool = True,
        request_timeout_ms: int | None = None,
        callback: RequestCompletionHandler | None = None,
        *,
        oldest_allowed_version: int | None = None,
        latest_allowed_version: int | None = None,
    ) -> ClientRequest:
        with self._cond:
            cid = self._correlation
            self._correlation += 1
        return ClientRequest(
            node_id, body, cid, "mock-client", created_time_ms, expect_response,
            self.default_request_timeout_ms if request_timeout_ms is None else request_timeout_ms,
            callback, oldest_allowed_version, latest_allowed_version,
        )

    def initiate_close(self) -> None:
        self._active = False

    def active(self) -> bool:
        return self._active


class Script:
    """Answers to requests by type, consumed in order; see the module doc."""

    def __init__(self, client: MockClient) -> None:
        self.entries: list[tuple[type, Any, bool]] = []
        self.seen: list[Any] = []
        client._scripts.append(self)

    def add(self, request_type: type, answer: Any, *, repeat: bool = False) -> Script:
        """Answer the next request of ``request_type`` (every one with ``repeat=True``)."""
        self.entries.append((request_type, answer, repeat))
        return self

    def take(self, body: Any) -> tuple[bool, Any]:
        for i, (request_type, answer, repeat) in enumerate(self.entries):
            if isinstance(body, request_type):
                if not repeat:
                    del self.entries[i]
                self.seen.append(body)
                if callable(answer) and not isinstance(answer, (type, BaseException)):
                    return True, answer(body)
                return True, answer
        return False, None

    def requests(self, request_type: type) -> list[Any]:
        return [b for b in self.seen if isinstance(b, request_type)]


_B = TypeVar("_B", bound=RequestBody)


def body_as(request: ClientRequest, kind: type[_B]) -> _B:
    """A sent request's body, checked to be a ``kind`` (and typed as one for the test)."""
    body = request.body
    assert isinstance(body, kind), f"expected a {kind.__name__}, the request is a {type(body).__name__}"
    return body
