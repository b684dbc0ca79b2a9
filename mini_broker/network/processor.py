"""A network thread of the socket server (Kafka: ``SocketServer.Processor``); see
:mod:`mini_broker.network.socket_server` for the threads, the loop order and the one-in-flight invariant.

The Processor owns one transport Selector (server role) and the connections its Acceptor hands it. It keeps
one request in flight per connection through the channel's own mute state machine (KafkaChannel's
``ChannelMuteState``): it only sends the channel events (``REQUEST_RECEIVED``, ``RESPONSE_SENT``) and asks
the selector to mute or unmute.
"""

from __future__ import annotations

import collections
import logging
import queue
import socket
import struct
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Final, Protocol

from mini_broker.config import EndPoint, KafkaConfig
from mini_broker.network.connection_quotas import INT_MAX, ConnectionQuotas
from mini_broker.network.request_channel import (
    CloseConnectionResponse,
    EndThrottlingResponse,
    NoOpResponse,
    Request,
    RequestChannel,
    Response,
    SendResponse,
    StartThrottlingResponse,
)
from mini_broker.security.principal_mapping import NoMatchingRuleError
from mini_broker.security.sasl_authenticator import DelayedAuthFailures, SaslServerSession
from pykafka_client.network.transport.channel import ANONYMOUS, ChannelMuteEvent, ChannelMuteState, KafkaChannel
from pykafka_client.network.transport.selectable import DisconnectInfo, NetworkReceive, NetworkSend
from pykafka_client.network.transport.server_channel_path import ServerChannelPathApi
from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import SYSTEM_TIME, Time, nanoseconds_clock

if TYPE_CHECKING:
    from mini_broker.metrics import BrokerMetrics, RequestInstruments, RequestObserver

log = logging.getLogger(__name__)

#: (a module constant: an Enum member read through its class costs a metaclass attribute lookup)
_NOT_MUTED: Final = ChannelMuteState.NOT_MUTED
CONNECTION_QUEUE_SIZE: Final = 20
SASL_HANDSHAKE_KEY: Final = 17
POLL_TIMEOUT_MS: Final = 300
#: at most this many frames a round handled from read-ahead bytes of connections answered within the round (without
#: another poll: see _process_completed_receives); the other connections' I/O waits for the next poll meanwhile
READ_AHEAD_FRAMES_PER_ROUND: Final = 8
#: the steps of a response whose failure :meth:`Processor.response_step_failed` handles: its send (the dequeue, the
#: write, the request frame's release: the connection closed), its completion (metrics and callback: logged only), the
#: channel's unmute and read-ahead after it (the connection closed)
RESPONSE_STEP_SEND: Final = 0
RESPONSE_STEP_COMPLETION: Final = 1
RESPONSE_STEP_UNMUTE: Final = 2


class _ResponsePath(Protocol):
    """The kernel's ProcessorResponsePath (``records/kernel/broker_response_path.c.h``)."""

    def send_responses(self) -> None:
        """Send the response queue's leading SendResponses whose connection is open, as
        :meth:`Processor._process_new_responses` and :meth:`Processor._response_sent` do (a step that raises goes to
        :meth:`Processor.response_step_failed`); stops at the first other response, left at the head."""
        ...


class ServerSelector(Protocol):
    """The part of the transport Selector a Processor uses (server role)."""

    def register(self, connection_id: str, sock: socket.socket) -> None: ...

    def send(self, send: NetworkSend) -> None: ...

    def send_completing(self, send: NetworkSend) -> bool:
        """:meth:`send`; True when the send went out whole at once (then no poll reports it)."""
        ...

    def poll(self, timeout_ms: int) -> object: ...

    def completed_sends(self) -> list[NetworkSend]: ...

    def completed_receives(self) -> list[NetworkReceive]: ...

    def disconnected(self) -> dict[str, DisconnectInfo]: ...

    def mute(self, connection_id: str) -> None: ...

    def unmute(self, connection_id: str) -> None: ...

    def mute_channel(self, channel: KafkaChannel, request_received: bool = False) -> None:
        """:meth:`mute` of a channel the caller holds (no lookup by id); with ``request_received`` the channel's
        ``REQUEST_RECEIVED`` mute event too, in the same step."""
        ...

    def unmute_channel(self, channel: KafkaChannel, response_sent: bool = False) -> bool:
        """:meth:`unmute` of a channel the caller holds; whether it is unmuted now. With ``response_sent`` the
        channel's ``RESPONSE_SENT`` mute event first, in the same step."""
        ...

    def read_buffered(self, channel: KafkaChannel) -> bool:
        """Read the bytes an unmuted channel has buffered as a poll would: its frames join
        :meth:`completed_receives`; False when it had none."""
        ...

    def channel(self, connection_id: str) -> KafkaChannel | None:
        """The open channel (its mute state machine), None once closed."""
        ...

    def compiled_server_path(self) -> ServerChannelPathApi | None:
        """:meth:`send_completing`, :meth:`mute_channel`, :meth:`unmute_channel` and :meth:`read_buffered` compiled
        (the kernel's ServerChannelPath), or None: the selector's own are taken."""
        ...

    def open_channels(self) -> Mapping[str, KafkaChannel]:
        """The open channels by id, a read-only view that follows them as they open and close (:meth:`channel`'s
        answers without a call)."""
        ...

    def close_channel(self, connection_id: str) -> None: ...

    def lowest_priority_channel(self) -> KafkaChannel | None:
        """The channel to close first when over ``max.connections`` (the least recently active)."""
        ...

    def wakeup(self) -> None: ...

    def close(self) -> None: ...


@dataclass(eq=False, slots=True)
class _Conn:
    connection_id: str
    remote_ip: str
    remote_address: str
    # frames the transport handed out while a request was in flight, processed in order after unmute
    pending: collections.deque[NetworkReceive] | None = None
    # gives the in-flight request's frame memory back to the pool (set when the selector has a pool)
    inflight_release: Callable[[], None] | None = None
    # who the peer is, known from its first request on (authentication is over by then)
    principal: str | None = None

    def release_memory(self) -> None:
        """Give back the pool memory of the in-flight frame and of every frame still pending."""
        release, self.inflight_release = self.inflight_release, None
        if release is not None:
            release()
        if self.pending:
            for receive in self.pending:
                release_frame(receive)
            self.pending.clear()


def release_frame(receive: NetworkReceive) -> None:
    """Give a frame's pool memory back (a no-op for frames read without a pool)."""
    if callable(receive.extra):
        receive.extra()


class RequestParser(Protocol):
    """Turns a frame payload into a Request (or raises to close the connection), and handles the requests
    :meth:`handles_inline` picks on the network thread itself (:meth:`handle`). Provided by KafkaApis."""

    def parse_request(self, processor_id: int, connection_id: str, client_address: str, listener_name: str,
                      payload: memoryview, start_time_ns: int) -> Request: ...

    def handles_inline(self, request: Request) -> bool:
        """Whether :meth:`handle` answers ``request`` on the network thread (no request queue)."""
        ...

    def handle(self, request: Request) -> None:
        """Handle a request :meth:`handles_inline` picked now, in the calling network thread."""
        ...

    def complete_response_metrics(self, response: Response, now_ns: int) -> None: ...

    def response_metrics_parts(self) -> tuple[logging.Logger, dict[int, tuple[BrokerMetrics, RequestInstruments,
                                                                           RequestObserver | None]]] | None:
        """What a compiled :meth:`complete_response_metrics` reads (KafkaApis.response_metrics_parts), or None: it is
        always called."""
        ...


class Processor:
    """A network thread: owns a Selector and the connections the Acceptor hands it."""

    def __init__(self, processor_id: int, listener: EndPoint, config: KafkaConfig, channel: RequestChannel,
                 quotas: ConnectionQuotas, parser: RequestParser, selector: ServerSelector, time: Time = SYSTEM_TIME,
                 metrics: BrokerMetrics | None = None, *, auth_failures: DelayedAuthFailures | None = None,
                 principal_mapper: Callable[[str], str] | None = None,
                 disconnect_listeners: Sequence[Callable[[str], None]] = ()) -> None:
        self.id = processor_id
        # told the id of each connection that closes, but at shutdown (Kafka's ConnectionDisconnectListener)
        self._disconnect_listeners = tuple(disconnect_listeners)
        self.listener = listener
        self._config = config
        self._channel = channel
        self._quotas = quotas
        self._parser = parser
        self.selector = selector
        #: the per-request channel steps (send_completing, mute_channel, unmute_channel, read_buffered): the kernel's
        #: compiled path of the selector, or the selector itself (their reference)
        compiled = selector.compiled_server_path()
        self._steps: ServerChannelPathApi = compiled if compiled is not None else selector
        #: the selector's open channels by id (a request's channel is looked up twice: no call each time)
        self._open_channels = selector.open_channels()
        #: the common SendResponse's steps of _process_new_responses and _response_sent compiled (the kernel's
        #: ProcessorResponsePath, see _compiled_responses), or None: the reference's loop alone
        self._compiled_responses: _ResponsePath | None = None
        self._time = time
        # the monotonic clock, read several times per request (the C clock itself for the system time)
        self._now_ns = nanoseconds_clock(time)
        self._metrics = metrics
        # failed SASL authentications answered and closed after connection.failed.authentication.delay.ms
        self._auth_failures = auth_failures
        # a TLS client certificate's DN -> principal name (ssl.principal.mapping.rules)
        self._principal_mapper = principal_mapper
        self._sasl_listener = config.listener_security_protocol(listener.listener_name).startswith("SASL_")
        # (socket, remote ip as counted by ConnectionQuotas: the same string must be given back to dec())
        self._new_connections: queue.Queue[tuple[socket.socket, str]] = queue.Queue(CONNECTION_QUEUE_SIZE)
        # appended by any thread, popped by this one: deque appends and pops are thread-safe, no lock (Kafka's
        # ConcurrentLinkedQueue)
        self._response_queue: collections.deque[Response] = collections.deque()
        self._inflight: dict[str, SendResponse] = {}
        self._conns: dict[str, _Conn] = {}
        self._ready: collections.deque[str] = collections.deque()  # conns with pending frames to process
        self._handled_inline = False
        #: frames read ahead that _response_sent (or the compiled response path) may still add to the completed
        #: receives being gone through (0 outside _process_completed_receives: none)
        self.read_ahead_budget = 0
        #: True from just before _poll looks at the response queue until its wait is over: while it is False the
        #: thread has not yet looked at the queue for its next wait, so a response appended then needs no wake-up
        self._in_wait = False
        self._index = 0
        self._running = True
        self._compiled_responses = self._compiled_response_path(compiled)
        self._thread = threading.Thread(target=self.run, name=f"data-plane-network-thread-{listener.listener_name}-{processor_id}",
                                        daemon=True)
        self.stopped = threading.Event()

    # --- called from other threads ---------------------------------------------------------------

    def accept(self, sock: socket.socket, may_block: bool, remote_ip: str = "?") -> bool:
        """Queue a new connection; returns False if the queue is full and ``may_block`` is False."""
        item = (sock, remote_ip)
        try:
            if may_block:
                while self._running:
                    try:
                        self._new_connections.put(item, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                else:
                    return False
            else:
                self._new_connections.put_nowait(item)
        except queue.Full:
            return False
        self.selector.wakeup()
        return True

    def enqueue_response(self, response: Response) -> None:
        self._response_queue.append(response)
        if self._in_wait:
            # the processor is in (or about to enter) its poll's wait: wake it. Otherwise it is running its round
            # (on this thread too, for an inline-handled request) and looks at the queue before it polls again, so
            # no wake-up write (nor the read that drains it): see _poll for why no response is missed.
            self.selector.wakeup()

    def start(self) -> None:
        self._thread.start()

    def initiate_shutdown(self) -> None:
        self._running = False
        self.selector.wakeup()

    def join(self, timeout: float | None = None) -> None:
        if self._thread.ident is None:  # never started
            self._close_all()
            return
        self._thread.join(timeout)

    def connection_count(self) -> int:
        return len(self._conns)

    # --- the loop ----------------------------------------------------------------------------------

    def run(self) -> None:
        selector = self.selector
        try:
            while self._running:
                try:
                    # the steps with nothing to do are skipped by a look at their input (a round per request
                    # and one per response: the checks cost less than the calls)
                    if self._new_connections.queue:  # lock-free peek, as in _configure_new_connections
                        self._configure_new_connections()
                    if self._response_queue:
                        self._process_new_responses()
                    self._poll()
                    self._process_completed_receives()
                    if selector.completed_sends():
                        self._process_completed_sends()
                    if selector.disconnected():
                        self._process_disconnected()
                    if self._quotas.limited:  # no finite connection limit: nothing can be in excess
                        self._close_excess_connections()
                    if self._auth_failures:  # None, or nothing waiting: nothing to do
                        self._complete_failed_authentications()
                except Exception:
                    # per-channel errors are handled below; this is the last line of defence
                    log.exception("event=processor_error processor=%s", self.id)
        finally:
            self._close_all()
            self.stopped.set()

    def _next_connection_id(self, sock: socket.socket) -> tuple[str, str]:
        local = sock.getsockname()
        remote = sock.getpeername()
        self._index = 0 if self._index == INT_MAX else self._index + 1
        cid = f"{local[0]}:{local[1]}-{remote[0]}:{remote[1]}-{self.id}-{self._index}"
        return cid, f"{remote[0]}:{remote[1]}"

    def _configure_new_connections(self) -> None:
        if not self._new_connections.queue:  # lock-free peek: the usual case, and a miss costs a raise
            return
        for _ in range(CONNECTION_QUEUE_SIZE):
            try:
                sock, remote_ip = self._new_connections.get_nowait()
            except queue.Empty:
                return
            try:
                cid, remote_addr = self._next_connection_id(sock)  # raises if the peer is already gone
                self.selector.register(cid, sock)
                self._conns[cid] = _Conn(cid, remote_ip, remote_addr)
                log.debug("event=connection_registered processor=%s connection=%s", self.id, cid)
            except Exception as e:
                log.info("event=connection_register_failed processor=%s remote=%s error=%r", self.id, remote_ip, e)
                self._quotas.dec(remote_ip, self.listener.listener_name)
                try:
                    sock.close()
                except OSError:
                    pass

    def _process_new_responses(self) -> None:
        """Send (or act on) every queued response, those queued meanwhile too, in order (Kafka's
        processNewResponses). One frame for the lot: a response is handled in the loop's body."""
        responses = self._response_queue
        conns = self._conns
        compiled = self._compiled_responses
        while responses:
            if compiled is not None:
                # the leading common SendResponses (their connection open), each as the body below and
                # _response_sent do it; the first other one (if any) is left at the head for the body below
                compiled.send_responses()
                if not responses:
                    return
            resp = responses.popleft()
            cid = resp.request.context.connection_id
            try:
                resp.request.response_dequeue_time_ns = self._now_ns()
                conn = conns.get(cid)
                if conn is None:
                    log.debug("event=response_dropped reason=connection_closed connection=%s", cid)
                    continue
                if resp.__class__ is SendResponse or isinstance(resp, SendResponse):
                    if self._steps.send_completing(resp):  # a SendResponse is its own NetworkSend
                        # written whole at once: complete it now (unmute in this round, not after another poll)
                        self._response_sent(conn, resp)
                    else:
                        self._inflight[cid] = resp
                elif isinstance(resp, NoOpResponse):
                    self._parser.complete_response_metrics(resp, self._now_ns())
                    self._response_sent(conn)
                elif isinstance(resp, CloseConnectionResponse):
                    self._parser.complete_response_metrics(resp, self._now_ns())
                    self._close(cid, "close_connection_response")
                elif isinstance(resp, StartThrottlingResponse):
                    channel = self.selector.channel(cid)
                    if channel is not None:
                        channel.handle_channel_mute_event(ChannelMuteEvent.THROTTLE_STARTED)
                elif isinstance(resp, EndThrottlingResponse):
                    self._throttle_ended(conn)
                else:
                    raise TypeError(f"unknown response type {type(resp).__name__}")
            except Exception as e:
                self.response_step_failed(RESPONSE_STEP_SEND, cid, e)

    def response_step_failed(self, step: int, cid: str, error: Exception) -> None:
        """A response's step for connection ``cid`` raised ``error``: logged, and the connection closed unless the
        step is :data:`RESPONSE_STEP_COMPLETION` (the response's metrics and callback; the unmute goes on). For the
        reference's steps and the compiled response path's alike."""
        if step == RESPONSE_STEP_COMPLETION:
            log.warning("event=send_completion_failed connection=%s error=%r", cid, error)
        elif step == RESPONSE_STEP_UNMUTE:
            log.info("event=unmute_failed connection=%s error=%r", cid, error)
            self._close(cid, "unmute_failed")
        else:
            log.warning("event=response_failed connection=%s error=%r", cid, error)
            self._close(cid, "response_failed")

    def _compiled_response_path(self, steps: ServerChannelPathApi | None) -> _ResponsePath | None:
        """The kernel's ProcessorResponsePath over this processor (held weakly) and its lent parts, where the channel
        steps are compiled (``steps``: the selector's ServerChannelPath) and the open channels are a dict; else None."""
        kernel = _native.kernel
        if kernel is None or steps is None or type(self._open_channels) is not dict:
            return None
        parts = self._parser.response_metrics_parts()
        request_log, instruments = parts if parts is not None else (None, None)
        path: _ResponsePath = kernel.ProcessorResponsePath(
            self, self._parser, self._response_queue, self._conns, self._inflight, self._ready, self._open_channels,
            steps, self._now_ns, SendResponse, request_log, instruments)
        return path

    def _poll(self) -> None:
        # the flag is raised before the queue is looked at (a response appended before the look is seen by it and
        # the poll does not wait; one appended after it sees the flag and wakes the wait), and lowered after the
        # wait (a response appended then is processed at the start of the next round, before any wait)
        self._in_wait = True
        try:
            has_pending = bool(self._new_connections.queue) or bool(self._ready) or bool(self._response_queue)
            timeout = 0 if has_pending else POLL_TIMEOUT_MS
            deadline = self._auth_failures.next_deadline_ns() if self._auth_failures else None
            if deadline is not None:
                timeout = max(0, min(timeout, (deadline - self._now_ns() + 999_999) // 1_000_000))
            t0 = self._now_ns()
            self.selector.poll(timeout)
        finally:
            self._in_wait = False
        if self._metrics is not None:
            now = self._now_ns()
            self._metrics.network_processor_idle.record(now - t0, now)

    def _process_completed_receives(self) -> None:
        self._handled_inline = False
        channel_of = self._open_channels.get
        # The list may grow while it is gone through: the answer of an inline-handled request goes out at once
        # (below), and when it unmutes its connection the frame read ahead after it joins the list (the selector's
        # read_buffered, see _response_sent), a bounded number a round: handled in turn, without another poll.
        self.read_ahead_budget = READ_AHEAD_FRAMES_PER_ROUND
        try:
            self._process_receives(channel_of)
        finally:
            self.read_ahead_budget = 0
        # frames that waited for an unmute
        for _ in range(len(self._ready)):
            cid = self._ready.popleft()
            conn = self._conns.get(cid)
            if conn is None or not conn.pending:
                continue
            channel = channel_of(cid)
            if channel is not None and channel.is_muted():
                continue
            receive = conn.pending.popleft()
            self._handle_receive(conn, receive, channel)
        if self._handled_inline and self._response_queue:
            # answers of inline-handled requests go out now rather than after another poll round (those answered
            # within _process_receives are out already: no call for an empty queue)
            self._process_new_responses()

    def _process_receives(self, channel_of: Callable[[str], KafkaChannel | None]) -> None:
        responses = self._response_queue
        compiled = self._compiled_responses
        for receive in self.selector.completed_receives():
            conn = self._conns.get(receive.source)
            if conn is None:
                release_frame(receive)
                continue
            channel = None if conn.pending else channel_of(conn.connection_id)
            if conn.pending or (channel is not None and channel.mute_state is not _NOT_MUTED):  # (is_muted())
                if conn.pending is None:
                    conn.pending = collections.deque()
                conn.pending.append(receive)
                continue
            self._handle_receive(conn, receive, channel)
            if responses:
                # an inline-handled request's answer (and any other queued): out now, which may unmute its
                # connection and read its next frame into this list (the compiled path's first, as
                # _process_new_responses begins, without its frame: the usual answer is all there is)
                if compiled is not None:
                    compiled.send_responses()
                if responses:
                    self._process_new_responses()

    def _handle_receive(self, conn: _Conn, receive: NetworkReceive, channel: KafkaChannel | None) -> None:
        """Parse and hand over (or handle inline) a frame of ``conn``; ``channel`` is its open channel as looked up
        just before (None: closed under us)."""
        cid = conn.connection_id
        if not self._running:
            release_frame(receive)
            return
        session = self._sasl_session(cid) if self._sasl_listener else None
        if session is not None and self._sasl_session_event(conn, session, receive):
            release_frame(receive)
            return
        try:
            request = self._parser.parse_request(self.id, cid, conn.remote_address, self.listener.listener_name,
                                                 receive.payload, self._now_ns())
        except Exception as e:
            log.info("event=invalid_request connection=%s listener=%s error=%r", cid, self.listener.listener_name, e)
            release_frame(receive)
            self._close(cid, "invalid_request")
            return
        if callable(receive.extra):
            conn.inflight_release = receive.extra
        # mute before handing the request over: one request in flight per connection
        if channel is None:  # closed under us (its disconnect is reported): nobody to answer
            self._close(cid, "channel_closed")
            return
        try:
            request.context.principal = conn.principal if conn.principal is not None else self._principal(conn, channel)
        except NoMatchingRuleError as e:
            log.info("event=principal_not_mapped connection=%s listener=%s error=%s", cid, self.listener.listener_name, e)
            self._close(cid, "principal_not_mapped")
            return
        self._steps.mute_channel(channel, True)  # and REQUEST_RECEIVED
        if self._parser.handles_inline(request):
            # handled on this thread (what a handler thread would do; no frame of its own): its answer is queued here
            self._handled_inline = True
            request.request_dequeue_time_ns = self._now_ns()
            try:
                self._parser.handle(request)
            except Exception:
                log.exception("event=request_failed api_key=%s api_version=%s correlation_id=%s connection=%s",
                              request.context.api_key, request.context.api_version, request.context.correlation_id,
                              cid)
                self.enqueue_response(CloseConnectionResponse(request))
            return
        while self._running:
            try:
                self._channel.send_request(request, timeout=0.2)
                return
            except queue.Full:
                continue  # backpressure: block this processor until a handler frees a slot

    # --- security -----------------------------------------------------------------------------------

    def _sasl_session(self, cid: str) -> SaslServerSession | None:
        channel = self.selector.channel(cid)
        auth = channel.authenticator if channel is not None else None
        return auth if isinstance(auth, SaslServerSession) else None

    def _sasl_session_event(self, conn: _Conn, session: SaslServerSession, receive: NetworkReceive) -> bool:
        """A SaslHandshake on an authenticated connection starts a re-authentication (KIP-368); any other request
        after the session lifetime closes the connection (Kafka's expired-session check). True when handled."""
        payload = receive.payload
        api_key = struct.unpack_from(">h", payload, 0)[0] if len(payload) >= 2 else -1
        cid = conn.connection_id
        if api_key == SASL_HANDSHAKE_KEY:
            try:
                session.begin_reauthentication(bytes(payload))
            except Exception as e:
                log.info("event=reauthentication_failed connection=%s error=%r", cid, e)
                self._close(cid, "reauthentication_failed")
                return True
            channel = self.selector.channel(cid)
            if channel is not None:
                channel.begin_reauthentication()  # not ready (no request read) until the session completes again
            self.selector.unmute(cid)  # re-reads the channel's interest: the handshake response is to be written
            return True
        if session.session_expired(self._now_ns()):
            log.info("event=session_expired connection=%s listener=%s: the client did not re-authenticate within "
                     "connections.max.reauth.ms", cid, self.listener.listener_name)
            self._close(cid, "authentication_session_expired")
            return True
        return False

    def _principal(self, conn: _Conn, channel: KafkaChannel) -> str:
        """The channel's principal, the TLS DN mapped by ssl.principal.mapping.rules; cached once authenticated."""
        name = channel.principal()
        if channel.authenticator is None and name != ANONYMOUS and self._principal_mapper is not None:
            name = self._principal_mapper(name)
        conn.principal = name
        return name

    def _complete_failed_authentications(self) -> None:
        """Answer and close the connections whose failed authentication has waited out its delay."""
        if self._auth_failures is None:
            return
        for cid in self._auth_failures.due(self._now_ns()):
            channel = self.selector.channel(cid)
            auth = channel.authenticator if channel is not None else None
            if channel is not None and isinstance(auth, SaslServerSession):
                auth.send_failure_response(channel.transport)
            self._close(cid, "authentication_failed")

    def _process_completed_sends(self) -> None:
        for send in self.selector.completed_sends():
            resp = self._inflight.pop(send.destination, None)
            if resp is not None:
                self._response_sent(self._conns.get(send.destination), resp)

    def _throttle_ended(self, conn: _Conn) -> None:
        """``THROTTLE_ENDED``, then unmute if the response has gone out (Kafka ``tryUnmuteChannel``)."""
        channel = self.selector.channel(conn.connection_id)
        if channel is None:
            return
        channel.handle_channel_mute_event(ChannelMuteEvent.THROTTLE_ENDED)
        self._try_unmute(conn, channel)

    def _try_unmute(self, conn: _Conn, channel: KafkaChannel) -> None:
        if self._steps.unmute_channel(channel) and conn.pending:
            self._ready.append(conn.connection_id)

    def _response_sent(self, conn: _Conn | None, sent: SendResponse | None = None) -> None:
        """The response of ``conn``'s request is done (``sent``: it went out whole; its metrics and callback
        first; ``conn`` None: closed meanwhile, nothing more): ``RESPONSE_SENT`` to the channel's mute machine, then
        unmute if it allows (Kafka ``tryUnmuteChannel``); frames that waited are processed next, or a frame read ahead
        joins the completed receives being gone through (see :meth:`_process_completed_receives`)."""
        if sent is not None:
            try:
                self._parser.complete_response_metrics(sent, self._now_ns())
                if sent.on_complete is not None:
                    sent.on_complete()
            except Exception as e:
                self.response_step_failed(RESPONSE_STEP_COMPLETION, sent.destination, e)
        if conn is None:
            return
        cid = conn.connection_id
        release, conn.inflight_release = conn.inflight_release, None
        if release is not None:
            release()
        channel = self._open_channels.get(cid)
        if channel is None:
            return
        try:
            if self._steps.unmute_channel(channel, True):  # after RESPONSE_SENT
                if conn.pending:
                    self._ready.append(cid)
                elif self.read_ahead_budget > 0 and self._steps.read_buffered(channel):
                    # (only while the completed receives are gone through: the frame joins them)
                    self.read_ahead_budget -= 1
        except Exception as e:
            self.response_step_failed(RESPONSE_STEP_UNMUTE, cid, e)

    def _process_disconnected(self) -> None:
        for cid, info in self.selector.disconnected().items():
            conn = self._conns.pop(cid, None)
            self._inflight.pop(cid, None)
            if conn is not None:
                conn.release_memory()
                self._quotas.dec(conn.remote_ip, self.listener.listener_name)
                log.debug("event=disconnected connection=%s state=%s", cid, info.state.name)
                self._tell_disconnected(cid)

    def _tell_disconnected(self, cid: str) -> None:
        for listener in self._disconnect_listeners:
            try:
                listener(cid)
            except Exception:
                log.exception("event=disconnect_listener_failed connection=%s", cid)

    def _close_excess_connections(self) -> None:
        """Over the listener's (or the broker-wide) limit, e.g. after it was lowered: close this
        processor's lowest-priority (least recently active) channel (Kafka ``closeExcessConnections``)."""
        if not self._quotas.max_connections_exceeded(self.listener.listener_name):
            return
        channel = self.selector.lowest_priority_channel()
        if channel is not None:
            log.info("event=connection_closed_excess connection=%s listener=%s", channel.id, self.listener.listener_name)
            self._quotas.record_excess_closed()
            self._close(channel.id, "max_connections_exceeded")

    def _close(self, cid: str, reason: str) -> None:
        conn = self._conns.pop(cid, None)
        self._inflight.pop(cid, None)
        try:
            self.selector.close_channel(cid)
        except Exception as e:
            log.debug("event=close_failed connection=%s error=%r", cid, e)
        if conn is not None:
            conn.release_memory()
            self._quotas.dec(conn.remote_ip, self.listener.listener_name)
            log.debug("event=connection_closed connection=%s reason=%s", cid, reason)
            if reason != "shutdown":
                self._tell_disconnected(cid)

    def _close_all(self) -> None:
        for cid in list(self._conns):
            self._close(cid, "shutdown")
        while True:
            try:
                sock, remote_ip = self._new_connections.get_nowait()
            except queue.Empty:
                break
            self._quotas.dec(remote_ip, self.listener.listener_name)
            close_quietly(sock)
        try:
            self.selector.close()
        except Exception as e:
            log.debug("event=selector_close_failed processor=%s error=%r", self.id, e)


def close_quietly(sock: socket.socket) -> None:
    try:
        # RST rather than FIN so a rejected client sees the close at once
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
