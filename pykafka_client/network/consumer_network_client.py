"""A thread-safe, future-returning layer over a KafkaClient (Java: ``consumer.internals.ConsumerNetworkClient``).

Used by the consumer (the user's thread drives ``poll``; the heartbeat thread sends and polls too) and
usable by anything that wants ``send(node, request) -> RequestFuture``.

Threads and locks:

* One re-entrant lock guards the KafkaClient and the unsent queues. It is the innermost lock: nothing
  here calls out to user code while holding it.
* Completion handlers never run under the lock: responses are moved to a pending-completion queue and
  fired after the lock is released, by whichever thread polls next (so a response read by the heartbeat
  thread completes a future the user thread waits for; :meth:`poll` wakes other pollers after firing).
* ``wakeup()`` sets an atomic flag and wakes the selector; the next wakeup-enabled ``poll`` raises
  :class:`WakeupException` exactly once. ``disconnect_async`` is a queue drained at the top of ``poll``.

Invariants:

* ``pending_request_count`` = unsent + in flight.
* An unsent request is failed with ``KafkaTimeoutError`` once older than its request timeout, or as
  disconnected when its node's connection fails; either way it is removed from the unsent queue first.
* A poll with nothing in flight never blocks longer than ``retry.backoff.ms``, and never longer than
  :data:`MAX_POLL_TIMEOUT_MS`.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable
from typing import Any, Protocol

from pykafka_client.errors import DisconnectError, KafkaTimeoutError, WakeupException
from pykafka_client.network.client_request import ClientRequest, RequestBody
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.kafka_client import KafkaClient
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.request_encoding import api_name
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.structs import Node
from pykafka_client.utils.time import Time, Timer

log = logging.getLogger(__name__)

MAX_POLL_TIMEOUT_MS = 5000
_FOREVER_MS = 2**62


class PollCondition(Protocol):
    """Lets a caller stop ``poll`` from blocking once what it waits for has happened."""

    def should_block(self) -> bool: ...


class RequestFutureCompletionHandler:
    """The callback attached to each request: records the outcome and queues itself for firing."""

    __slots__ = ("future", "_response", "_exception", "_pending")

    def __init__(self, pending: deque[RequestFutureCompletionHandler]) -> None:
        self.future: RequestFuture[ClientResponse] = RequestFuture()
        self._response: ClientResponse | None = None
        self._exception: BaseException | None = None
        self._pending = pending

    def __call__(self, response: ClientResponse) -> None:
        self._response = response
        self._pending.append(self)

    def on_failure(self, exception: BaseException) -> None:
        self._exception = exception
        self._pending.append(self)

    def fire_completion(self) -> None:
        response = self._response
        if self._exception is not None:
            self.future.raise_(self._exception)
        elif response is None:
            self.future.raise_(DisconnectError("request completed without a response"))
        elif response.authentication_exception is not None:
            self.future.raise_(response.authentication_exception)
        elif response.was_disconnected:
            log.debug("cancelled request %s: node %s disconnected", response.request_header, response.destination)
            cause = response.disconnect_exception
            msg = f"node {response.destination} disconnected" + (f": {cause}" if cause else "")
            if response.was_timed_out:
                msg = f"{api_name(response.api_key)} request to node {response.destination} timed out"
            error = DisconnectError(msg)
            error.__cause__ = cause
            self.future.raise_(error)
        elif response.version_mismatch is not None:
            self.future.raise_(response.version_mismatch)
        else:
            self.future.complete(response)


class UnsentRequests:
    """Per-node FIFO queues of requests not yet handed to the KafkaClient (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._unsent: dict[Node, deque[ClientRequest]] = {}

    def put(self, node: Node, request: ClientRequest) -> None:
        with self._lock:
            self._unsent.setdefault(node, deque()).append(request)

    def request_count(self, node: Node | None = None) -> int:
        with self._lock:
            if node is not None:
                q = self._unsent.get(node)
                return len(q) if q else 0
            return sum(len(q) for q in self._unsent.values())

    def has_requests(self, node: Node | None = None) -> bool:
        return self.request_count(node) > 0

    def nodes(self) -> list[Node]:
        with self._lock:
            return list(self._unsent)

    def peek(self, node: Node) -> ClientRequest | None:
        with self._lock:
            q = self._unsent.get(node)
            return q[0] if q else None

    def pop(self, node: Node) -> None:
        with self._lock:
            q = self._unsent.get(node)
            if q:
                q.popleft()

    def remove(self, node: Node) -> list[ClientRequest]:
        with self._lock:
            q = self._unsent.pop(node, None)
            return list(q) if q else []

    def remove_expired_requests(self, now_ms: int) -> list[ClientRequest]:
        expired: list[ClientRequest] = []
        with self._lock:
            for q in self._unsent.values():
                while q and max(0, now_ms - q[0].created_time_ms) > q[0].request_timeout_ms:
                    expired.append(q.popleft())
        return expired

    def clean(self) -> None:
        with self._lock:
            for node in [n for n, q in self._unsent.items() if not q]:
                del self._unsent[node]

    def all_requests(self) -> Iterable[ClientRequest]:
        with self._lock:
            return [r for q in self._unsent.values() for r in q]


class ConsumerNetworkClient:
    """``send(node, body) -> RequestFuture[ClientResponse]`` over a KafkaClient, safe for two threads."""

    def __init__(
        self,
        client: KafkaClient,
        metadata: Metadata,
        time: Time,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
        max_poll_timeout_ms: int = MAX_POLL_TIMEOUT_MS,
    ) -> None:
        self.client = client
        self.metadata = metadata
        self.time = time
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.max_poll_timeout_ms = min(max_poll_timeout_ms, MAX_POLL_TIMEOUT_MS)
        self.unsent = UnsentRequests()
        self._lock = threading.RLock()
        self._pending_completion: deque[RequestFutureCompletionHandler] = deque()
        self._pending_disconnects: deque[Node] = deque()
        self._wakeup = False

    # --- sending -------------------------------------------------------------------------------

    def send(
        self,
        node: Node,
        body: RequestBody,
        request_timeout_ms: int | None = None,
        *,
        oldest_allowed_version: int | None = None,
        latest_allowed_version: int | None = None,
    ) -> RequestFuture[ClientResponse]:
        """Queue ``body`` for ``node``; the future completes with the ClientResponse, or fails with
        DisconnectError / KafkaTimeoutError / AuthenticationError / UnsupportedVersionError."""
        now = self.time.hi_res_clock_ms()
        handler = RequestFutureCompletionHandler(self._pending_completion)
        timeout = self.request_timeout_ms if request_timeout_ms is None else request_timeout_ms
        # Not under the lock: a thread blocked in poll() holds it, and this send must be able to wake
        # it. new_client_request only draws a correlation id, which is thread-safe.
        request = self.client.new_client_request(
            node.id_string,
            body,
            now,
            True,
            timeout,
            handler,
            oldest_allowed_version=oldest_allowed_version,
            latest_allowed_version=latest_allowed_version,
        )
        self.unsent.put(node, request)
        # Wake a poller blocked in the selector so that the request goes out now.
        self.client.wakeup()
        return handler.future

    def least_loaded_node(self) -> Node | None:
        with self._lock:
            return self.client.least_loaded_node(self.time.hi_res_clock_ms()).node

    def unreachable_reason(self) -> str | None:
        """Why no broker can be reached, for a timeout's message (see ``NetworkClient.unreachable_reason``)."""
        return self.client.unreachable_reason(self.time.hi_res_clock_ms())

    def has_ready_nodes(self, now_ms: int) -> bool:
        with self._lock:
            return self.client.has_ready_nodes(now_ms)

    # --- metadata ------------------------------------------------------------------------------

    def await_metadata_update(self, timer: Timer) -> bool:
        """Request a metadata update and poll until it lands; False if ``timer`` expires first."""
        version = self.metadata.request_update()
        while True:
            self.poll(timer)
            if self.metadata.update_version() != version or timer.is_expired():
                break
        return self.metadata.update_version() > version

    # --- wakeup --------------------------------------------------------------------------------

    def wakeup(self) -> None:
        """Make the next wakeup-enabled poll (in any thread) raise WakeupException, once."""
        log.debug("received user wakeup")
        self._wakeup = True
        self.client.wakeup()

    def maybe_trigger_wakeup(self) -> None:
        if self._wakeup:
            self._wakeup = False
            raise WakeupException("woken up by wakeup()")

    # --- polling -------------------------------------------------------------------------------

    def poll_future(self, future: RequestFuture[Any], timer: Timer | None = None, disable_wakeup: bool = False) -> bool:
        """Poll until ``future`` is done or ``timer`` expires (forever without a timer); True if done."""
        t = timer if timer is not None else self.time.timer(_FOREVER_MS)
        while True:
            self.poll(t, future, disable_wakeup)
            if future.is_done() or t.is_expired():
                break
        return future.is_done()

    def poll(self, timer: Timer, poll_condition: PollCondition | None = None, disable_wakeup: bool = False) -> None:
        """Send what can be sent, do I/O for at most the timer's remaining time (less when nothing is
        in flight or ``poll_condition`` says not to block) and fire completions outside the lock."""
        # Handlers completed by a previous poll (possibly in another thread) fire first.
        self._fire_pending_completed_requests()
        with self._lock:
            self._handle_pending_disconnects()
            poll_delay_ms = self.try_send(timer.current_time_ms())
            if not self._pending_completion and (poll_condition is None or poll_condition.should_block()):
                poll_timeout = min(timer.remaining_ms(), poll_delay_ms)
                if self.client.in_flight_request_count() == 0:
                    poll_timeout = min(poll_timeout, self.retry_backoff_ms)
                self.client.poll(poll_timeout, timer.current_time_ms())
            else:
                self.client.poll(0, timer.current_time_ms())
            timer.update()
            # Unsent requests to nodes whose connection failed must be failed before the next ready()
            # resets the connection state.
            self.check_disconnects(timer.current_time_ms())
            if not disable_wakeup:
                self.maybe_trigger_wakeup()
            # A connection may have completed or buffer space freed up.
            self.try_send(timer.current_time_ms())
            self.fail_expired_requests(timer.current_time_ms())
            self.unsent.clean()
        self._fire_pending_completed_requests()
        self.metadata.maybe_throw_any_exception()

    def poll_no_wakeup(self) -> None:
        """Do whatever I/O is possible without blocking and never raise WakeupException."""
        self.poll(self.time.timer(0), None, True)

    def pending_request_count(self, node: Node | None = None) -> int:
        with self._lock:
            if node is None:
                return self.unsent.request_count() + self.client.in_flight_request_count()
            return self.unsent.request_count(node) + self.client.in_flight_request_count(node.id_string)

    def has_pending_requests(self, node: Node | None = None) -> bool:
        return self.pending_request_count(node) > 0

    def try_send(self, now_ms: int) -> int:
        """Hand queued requests to the client while their node is ready; returns the poll delay."""
        poll_delay_ms = self.max_poll_timeout_ms
        for node in self.unsent.nodes():
            request = self.unsent.peek(node)
            if request is not None:
                poll_delay_ms = min(poll_delay_ms, self.client.poll_delay_ms(node, now_ms))
            while request is not None:
                if not self.client.ready(node, now_ms):
                    break  # try the next node
                self.client.send(request, now_ms)
                self.unsent.pop(node)
                request = self.unsent.peek(node)
        return poll_delay_ms

    def check_disconnects(self, now_ms: int) -> None:
        """Complete unsent requests to nodes whose connection failed, as disconnected."""
        for node in self.unsent.nodes():
            if self.client.connection_failed(node):
                # Remove first: callbacks may look at the unsent queues (coordinator failover).
                requests = self.unsent.remove(node)
                auth = self.client.authentication_exception(node)
                for request in requests:
                    response = ClientResponse(
                        request.make_header(request.latest_allowed_version or 0),
                        request.callback,
                        request.destination,
                        request.created_time_ms,
                        now_ms,
                        was_disconnected=True,
                        authentication_exception=auth,
                    )
                    if request.callback is not None:
                        request.callback(response)

    def fail_expired_requests(self, now_ms: int) -> None:
        for request in self.unsent.remove_expired_requests(now_ms):
            handler = request.callback
            if isinstance(handler, RequestFutureCompletionHandler):
                handler.on_failure(
                    KafkaTimeoutError(
                        f"{api_name(request.api_key)} request to node {request.destination} was not sent within"
                        f" {request.request_timeout_ms} ms: the node never became ready (see the connection warnings)"
                    )
                )

    def _fail_unsent_requests(self, node: Node, exception: BaseException) -> None:
        with self._lock:
            for request in self.unsent.remove(node):
                handler = request.callback
                if isinstance(handler, RequestFutureCompletionHandler):
                    handler.on_failure(exception)

    def disconnect_async(self, node: Node) -> None:
        """Fail ``node``'s unsent and in-flight requests with DisconnectError on the next poll."""
        self._pending_disconnects.append(node)
        self.client.wakeup()

    def _handle_pending_disconnects(self) -> None:
        while self._pending_disconnects:
            node = self._pending_disconnects.popleft()
            self._fail_unsent_requests(node, DisconnectError(f"disconnected from node {node.id} on request"))
            self.client.disconnect(node.id_string)

    def _fire_pending_completed_requests(self) -> None:
        fired = False
        while True:
            try:
                handler = self._pending_completion.popleft()
            except IndexError:
                break
            handler.fire_completion()
            fired = True
        if fired:
            # Another thread may be blocked in poll waiting for one of these futures.
            self.client.wakeup()

    # --- node state ----------------------------------------------------------------------------

    def is_unavailable(self, node: Node) -> bool:
        with self._lock:
            return self.client.connection_failed(node) and self.client.connection_delay(
                node, self.time.hi_res_clock_ms()
            ) > 0

    def connection_failed(self, node: Node) -> bool:
        with self._lock:
            return self.client.connection_failed(node)

    def close(self) -> None:
        with self._lock:
            self.client.close()
