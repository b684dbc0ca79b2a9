"""The queue between network threads and request handler threads (Kafka: ``kafka.network.RequestChannel``).

* Requests: one bounded queue of ``queued.max.requests``. :meth:`RequestChannel.send_request` blocks while it
  is full; the calling Processor then stops reading all its sockets, kernel buffers fill and TCP flow
  control pushes back on clients. There is no explicit reject.
* Callbacks: a second bounded queue for work that must run on a handler thread (completions of delayed
  operations that started elsewhere); handlers poll it before the request queue.
* Responses: routed to the owning Processor's unbounded response queue (``Processor.enqueue_response``),
  which wakes that Processor's selector.

Response kinds mirror Kafka: :class:`SendResponse` (write bytes), :class:`NoOpResponse` (nothing to write;
unmute the channel: acks=0 produce), :class:`CloseConnectionResponse` (close the channel: acks=0 produce
errors, bad requests), :class:`StartThrottlingResponse` / :class:`EndThrottlingResponse` (a client quota's
throttle begins / ends: the channel's ``THROTTLE_STARTED`` / ``THROTTLE_ENDED`` mute events, KIP-219).
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Final, Protocol, Union

from pykafka_client.network.transport.positional_new import positional_new
from pykafka_client.network.transport.selectable import NetworkSend
from pykafka_client.protocol.records import _native

if TYPE_CHECKING:
    from mini_broker.metrics import BrokerMetrics


#: a request's principal until the Processor sets the channel's (Kafka's ``KafkaPrincipal.ANONYMOUS``)
ANONYMOUS_PRINCIPAL = "ANONYMOUS"


@dataclass(eq=False, slots=True)
class RequestContext:
    """Who sent a request and how: the parsed header fields and the connection. (Slotted: the parser builds one per
    request with :data:`new_request_context`, without the Python ``__init__``.)"""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    connection_id: str
    client_address: str
    listener_name: str
    header_version: int = 1
    #: who sent it (the channel's principal; set by the Processor): the ``user`` of client quotas
    principal: str = ANONYMOUS_PRINCIPAL


@dataclass(eq=False, slots=True)
class Request:
    """A decoded request plus bookkeeping for metrics. ``body`` is the generated request object. (Slotted: the parser
    builds one per request with :data:`new_request`, without the Python ``__init__``.)

    Timestamps (monotonic ns) follow Kafka's RequestChannel.Request: start (complete receive), dequeue
    (a handler took it), api_local_complete (the handler returned), response_complete (the response was
    put on the processor queue), response_dequeue (the processor started sending it)."""

    processor_id: int
    context: RequestContext
    body: object
    size: int
    start_time_ns: int
    request_dequeue_time_ns: int = -1
    api_local_complete_time_ns: int = -1
    api_remote_complete_time_ns: int = -1
    response_complete_time_ns: int = -1
    response_dequeue_time_ns: int = -1

    @property
    def connection_id(self) -> str:
        return self.context.connection_id


#: ``RequestContext(*values)`` from every field's value in field order (api key, api version, correlation id, client id,
#: connection id, client address, listener name, header version, principal): the kernel's slots constructor (no
#: Python frame: one context per request) when it is loaded, else the class
new_request_context: Callable[..., RequestContext] = positional_new(RequestContext)
#: ``Request(*values)`` from every field's value in field order (processor id, context, body, size, start time, then
#: the five later timestamps, -1 until set), as :data:`new_request_context`
new_request: Callable[..., Request] = positional_new(Request)


class ShutdownRequest:
    """Sentinel telling one handler thread to exit."""


class WakeupRequest:
    """Sentinel that makes a handler poll the callback queue."""


@dataclass(eq=False)
class CallbackRequest:
    """Work to run on a handler thread on behalf of ``original`` (an async completion)."""

    fn: Callable[[], None]
    original: Request


BaseRequest = Union[Request, ShutdownRequest, WakeupRequest, CallbackRequest]

SHUTDOWN = ShutdownRequest()
WAKEUP = WakeupRequest()


@dataclass(eq=False)
class Response:
    """Base of the response kinds; ``request`` is the request it answers. (No slots of its own, no ``__dict__``:
    a :class:`SendResponse` is slotted; the other kinds, plain dataclasses, have a ``__dict__``.)"""

    __slots__ = ()
    request: Request


class SendResponse(Response, NetworkSend):
    """Bytes to write: ``buffers`` are the frame pieces including the 4-byte size prefix (bytes or
    FileRegion for zero-copy); ``size`` their total length; ``body`` the response object (for logs).

    It is itself the :class:`NetworkSend` the processor hands to its selector, addressed to the request's
    connection (``destination``): one object per response, not a response and a send made from it. (Slotted: one
    per answer, built by :data:`new_send_response` without this ``__init__`` where the kernel is loaded.)"""

    __slots__ = ("request", "body", "on_complete")
    body: object
    on_complete: Callable[[], None] | None

    def __init__(self, request: Request, buffers: list[object] | None = None, size: int = 0, body: object = None,
                 on_complete: Callable[[], None] | None = None) -> None:
        self.request = request
        self.destination = request.context.connection_id
        self.buffers = buffers if buffers is not None else []
        self.size = size
        self.written = 0
        self.extra = None
        self.body = body
        self.on_complete = on_complete

    def __repr__(self) -> str:
        return (f"SendResponse(connection_id={self.destination!r}, size={self.size}, written={self.written}, "
                f"body={type(self.body).__name__})")


def _new_send_response_reference(request: Request, destination: str, buffers: list[object], size: int, written: int,
                                 extra: object, body: object, on_complete: Callable[[], None] | None) -> SendResponse:
    """:data:`new_send_response`'s reference: ``SendResponse(request, buffers, size, body, on_complete)``, whose
    ``destination`` is the request's connection id, ``written`` 0 and ``extra`` None (the values given for them are
    those; the kernel's constructor sets each slot to its value)."""
    return SendResponse(request, buffers, size, body, on_complete)


def _send_response_constructor() -> Callable[..., SendResponse]:
    kernel = _native.loaded_kernel()
    if kernel is None:
        return _new_send_response_reference
    made: Callable[..., SendResponse] = kernel.slots_constructor(SendResponse, SEND_RESPONSE_SLOTS)
    return made


#: the slots :data:`new_send_response` sets, in the order of its arguments
SEND_RESPONSE_SLOTS: Final = ("request", "destination", "buffers", "size", "written", "extra", "body", "on_complete")
#: ``new_send_response(request, request.context.connection_id, buffers, size, 0, None, body, on_complete)`` is
#: ``SendResponse(request, buffers, size, body, on_complete)`` without its Python ``__init__`` (the kernel's slots
#: constructor, one answer each request) when the kernel is loaded, else :func:`_new_send_response_reference`
new_send_response: Callable[..., SendResponse] = _send_response_constructor()


@dataclass(eq=False)
class NoOpResponse(Response):
    """No bytes to write; the processor just unmutes the channel (acks=0 produce)."""


@dataclass(eq=False)
class CloseConnectionResponse(Response):
    """Close the channel instead of answering."""


@dataclass(eq=False)
class StartThrottlingResponse(Response):
    """A quota throttles the request's channel: it stays muted past its response until EndThrottling."""


@dataclass(eq=False)
class EndThrottlingResponse(Response):
    """The channel's throttle time is over: unmute it if its response has gone out."""


class ResponseSink(Protocol):
    """What RequestChannel needs from a Processor."""

    def enqueue_response(self, response: Response) -> None: ...


class RequestChannel:
    """Bounded request queue + callback queue + routing of responses to processors. Thread-safe."""

    def __init__(self, queue_size: int, metrics: BrokerMetrics | None = None) -> None:
        if queue_size < 1:
            raise ValueError("queue_size must be >= 1")
        self.queue_size = queue_size
        self._request_queue: queue.Queue[BaseRequest] = queue.Queue(maxsize=queue_size)
        self._callback_queue: queue.Queue[CallbackRequest] = queue.Queue(maxsize=queue_size)
        self._processors: dict[int, ResponseSink] = {}
        self._lock = threading.Lock()
        self.metrics = metrics

    # --- processors ------------------------------------------------------------------------------

    def add_processor(self, processor_id: int, processor: ResponseSink) -> None:
        with self._lock:
            if processor_id in self._processors:
                raise ValueError(f"processor {processor_id} already registered")
            self._processors[processor_id] = processor

    def remove_processor(self, processor_id: int) -> None:
        with self._lock:
            self._processors.pop(processor_id, None)

    # --- requests --------------------------------------------------------------------------------

    def send_request(self, request: BaseRequest, timeout: float | None = None) -> None:
        """Put a request; blocks while the queue is full (backpressure). With ``timeout`` (seconds) raises
        ``queue.Full`` when no slot opened in time (used by processors so they can notice shutdown)."""
        self._request_queue.put(request, timeout=timeout)

    def send_callback_request(self, request: CallbackRequest) -> None:
        self._callback_queue.put(request)
        try:
            self._request_queue.put_nowait(WAKEUP)
        except queue.Full:
            pass  # a handler will get to the callback queue when it next polls

    def receive_request(self, timeout_ms: int) -> BaseRequest | None:
        """Next callback if any, else the next request within ``timeout_ms``, else None."""
        if self._callback_queue.queue:  # lock-free peek: most of the time there is none, and a miss raises
            try:
                return self._callback_queue.get_nowait()
            except queue.Empty:
                pass
        try:
            req = self._request_queue.get(timeout=timeout_ms / 1000.0)
        except queue.Empty:
            return None
        if isinstance(req, WakeupRequest):
            try:
                return self._callback_queue.get_nowait()
            except queue.Empty:
                return None
        return req

    def send_shutdown_request(self) -> None:
        self._request_queue.put(SHUTDOWN)

    def request_queue_size(self) -> int:
        return self._request_queue.qsize()

    def clear(self) -> None:
        """Drop every queued request (shutdown)."""
        for q in (self._request_queue, self._callback_queue):
            while True:
                try:
                    q.get_nowait()
                except queue.Empty:
                    break

    # --- responses -------------------------------------------------------------------------------

    def send_response(self, response: Response) -> None:
        """Hand a response to the processor that owns the request's connection. If that processor is
        gone (shutdown), the response is dropped."""
        processor = self._processors.get(response.request.processor_id)  # one dict read: atomic, no lock needed
        if processor is not None:
            processor.enqueue_response(response)
