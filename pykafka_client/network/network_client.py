"""Asynchronous request/response I/O with many brokers over one Selectable (Java: ``clients.NetworkClient``).

Not thread-safe: one thread drives it (the producer's Sender, or ConsumerNetworkClient under its lock).
:meth:`NetworkClient.wakeup` is the only method safe to call from another thread.

What one :meth:`NetworkClient.poll` does, in order: hand back requests aborted at send time (version
mismatch) without touching the network; maybe start a metadata refresh; poll the selector for at most
``min(timeout, metadata timeout, request.timeout.ms)``; then process completed sends (fire-and-forget
requests complete), completed receives (FIFO per connection), disconnects, new connections (queue the
ApiVersions handshake), ApiVersions sends for channels that became ready, connection-setup timeouts,
request timeouts and rebootstrap; finally run every completion callback.

Invariants:

* A node is READY only after a successful ApiVersions exchange; until then only the internal
  ApiVersions request is sent to it. Internal requests (ApiVersions, metadata) never surface as user
  responses.
* Each request is sent at the highest version both sides support within its allowed range; a request
  with no common version never hits the wire and completes with ``version_mismatch`` on the next poll.
* Correlation ids are 32-bit, unique, and skip the range reserved for SASL (``2**31-8 .. 2**31-1``).
* A response that cannot be parsed (garbage, unknown correlation id, trailing bytes) closes only that
  connection; its in-flight requests complete as disconnected with ``disconnect_exception`` set.
* A disconnect or a request timeout requests a metadata update.
* A connection that fails before its node is READY is recorded as the node's ConnectFailure (address and
  cause: refused, name not resolved, timed out, closed during the handshake) and logged at WARNING once per
  node and cause, not at every retry; :meth:`NetworkClient.unreachable_reason` turns the records into the
  reason a caller's timeout gives when no broker could be reached.
* A request that cannot be built at the chosen version (no common version, or a field the version lacks)
  never hits the wire: it completes with the error on the next poll and is logged at WARNING.

Where the parts live: version choice and frame encoding in :mod:`.request_encoding`; the ApiVersions
handshake state machine in :mod:`.api_versions_handshake`; metadata refresh in :mod:`.metadata_updater`;
disconnect and timeout handling in :mod:`.connection_failures` (a mixin of NetworkClient); node choice
in :mod:`.node_selection`; correlation ids in :mod:`.correlation_ids`.
"""

from __future__ import annotations

import enum
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass

from pykafka_client.errors import (
    DisconnectError,
    IllegalArgumentError,
    IllegalStateError,
    ProtocolError,
)
from pykafka_client.network.api_versions import ApiVersions, should_client_throttle
from pykafka_client.network.api_versions_handshake import ApiVersionsHandshake, Outcome, decode_response
from pykafka_client.network.client_poll_state import ClientPollState, PollState
from pykafka_client.network.client_request import ClientRequest, RequestBody, RequestCompletionHandler
from pykafka_client.network.client_response import ClientResponse, RequestHeaderInfo
from pykafka_client.network.client_send_state import MAX_VERSIONS_CHOSEN, ClientSendState, SendState
from pykafka_client.network.cluster_connection_states import (
    MAX_DELAY_MS,
    ClusterConnectionStates,
    ConnectionState,
    HostResolver,
    default_host_resolver,
)
from pykafka_client.network.connect_failure import ConnectFailure, describe_unreachable
from pykafka_client.network.connection_failures import ConnectionFailures
from pykafka_client.network.correlation_ids import (
    SASL_MAX_RESERVED_CORRELATION_ID,
    SASL_MIN_RESERVED_CORRELATION_ID,
    CorrelationIds,
)
from pykafka_client.network.error_text import classify_connect_error, describe_connect_error, describe_error
from pykafka_client.network.in_flight_requests import InFlightRequest, InFlightRequestsApi, new_in_flight_requests
from pykafka_client.network.kafka_client import LeastLoadedNode
from pykafka_client.network.log_rate_limiter import LogRateLimiter
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.metadata_updater import (
    DefaultMetadataUpdater,
    ManualMetadataUpdater,
    MetadataRecoveryStrategy,
    MetadataUpdater,
)
from pykafka_client.network.node_selection import least_loaded_node
from pykafka_client.network.request_encoding import (
    RequestEncoder,
    ResponseDecoder,
    allowed_version_range,
    api_name,
    choose_version,
    compiled_codecs,
    encode_reference_frame,
    encode_request_frame,
)
from pykafka_client.network.transport.positional_new import positional_new
from pykafka_client.network.transport.selectable import (
    POLL_ALL,
    POLL_COMPLETED_RECEIVES,
    POLL_COMPLETED_SENDS,
    POLL_CONNECTED,
    POLL_DISCONNECTED,
    POLL_REAUTHENTICATION_SCHEDULED,
    ChannelState,
    DisconnectInfo,
    NetworkReceive,
    NetworkSend,
    Selectable,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.headers import decode_response as decode_response_frame
from pykafka_client.protocol.messages import ApiVersionsResponse, MetadataResponse
from pykafka_client.protocol.records import _native
from pykafka_client.structs import Node
from pykafka_client.utils.time import SYSTEM_TIME, Time, nanoseconds_clock

__all__ = [
    "SASL_MAX_RESERVED_CORRELATION_ID",
    "SASL_MIN_RESERVED_CORRELATION_ID",
    "DefaultMetadataUpdater",
    "ManualMetadataUpdater",
    "MetadataRecoveryStrategy",
    "MetadataUpdater",
    "NetworkClient",
]

log = logging.getLogger(__name__)

#: At most one throttling WARNING per node in this interval (the rest are counted into the next one).
THROTTLE_WARNING_INTERVAL_MS = 60_000

class _State(enum.Enum):
    ACTIVE = 1
    CLOSING = 2
    CLOSED = 3


# (a module constant: a member read through its Enum class is a metaclass attribute lookup, several times a
# global's, and the I/O thread reads it on every request)
_ACTIVE = _State.ACTIVE
_REBOOTSTRAP = MetadataRecoveryStrategy.REBOOTSTRAP
_new_tuple = tuple.__new__
_API_VERSIONS = int(ApiKey.API_VERSIONS)
# the per-request objects from every field's value, without the Python frame of their __init__
_new_client_request = positional_new(ClientRequest)
_new_network_send = positional_new(NetworkSend)
_new_in_flight_request = positional_new(InFlightRequest)
_new_client_response = positional_new(ClientResponse)


def report_poll_error(error: OSError) -> None:
    """A selector's poll raised ``error``: logged, and the poll goes on as if every result had entries (the reference
    poll's and the kernel's ClientPollPath's)."""
    log.error("unexpected error while polling the network, polling goes on: %s", describe_error(error))


def report_callback_error(error: Exception) -> None:
    """A request's completion callback raised ``error``: logged with its traceback, the other callbacks run (the
    reference poll's and the kernel's ClientPollPath's)."""
    log.error("uncaught error in request completion", exc_info=error)


def _add_to(ids: set[str] | None, node_id: str) -> set[str]:
    """``ids`` with ``node_id`` added (a new set when None)."""
    if ids is None:
        return {node_id}
    ids.add(node_id)
    return ids


@dataclass(slots=True)
class _Paths:
    """The fixed parts of a client that its request and poll paths read, in one attribute (a NetworkClient's instance
    keeps at most 30 attributes: CPython 3.11's limit for the shared keys that keep every ``self.x`` read cheap)."""

    #: the monotonic clock in ns (the C clock itself for the system time): the poll reads it in ms, as
    #: hi_res_clock_ms() does, once per poll
    clock_ns: Callable[[], int]
    #: the compiled encoders and response decoders by request type (none while the kernel is off): a request of such a
    #: type is encoded by its encoder, and the in-flight requests complete the receives its decoder takes
    encoders: dict[type, RequestEncoder]
    decoders: dict[type, ResponseDecoder]
    #: the kernel's send of a request on a real Selector: the in-flight add and the frame's write in one call (None:
    #: the add and selector.send(), its reference)
    send: Callable[[InFlightRequestsApi, InFlightRequest, NetworkSend], None] | None
    #: can_send_request()'s three questions in one kernel call (None: asked one by one, the reference)
    can_send: Callable[[InFlightRequestsApi, str, int], bool] | None
    #: the requests' correlation ids
    correlation_ids: CorrelationIds
    #: a client held to a quota is throttled on every response: say so once a minute per node, with a count
    throttle_warnings: LogRateLimiter


class NetworkClient(ConnectionFailures):
    """The real :class:`~pykafka_client.network.kafka_client.KafkaClient`."""

    #: what the kernel's request and poll paths (ClientPollPath, ClientSendPath, sender_send_round) read of the client
    #: on every request, in slots: read at their offsets, not through the instance dict (the base class gives the
    #: instance its ``__dict__`` and ``__weakref__``, which hold the rest)
    __slots__ = (
        "selector", "client_id", "in_flight_requests", "default_request_timeout_ms", "api_versions",
        "metadata_recovery_strategy", "send_state", "metadata_updater",
    )

    def __init__(
        self,
        selector: Selectable,
        metadata: Metadata | None = None,
        *,
        metadata_updater: MetadataUpdater | None = None,
        client_id: str = "pykafka-client",
        max_in_flight_requests_per_connection: int = 5,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        socket_send_buffer_bytes: int = 131_072,
        socket_receive_buffer_bytes: int = 65_536,
        request_timeout_ms: int = 30_000,
        socket_connection_setup_timeout_ms: int = 10_000,
        socket_connection_setup_timeout_max_ms: int = 30_000,
        time: Time = SYSTEM_TIME,
        discover_broker_versions: bool = True,
        api_versions: ApiVersions | None = None,
        metadata_recovery_strategy: MetadataRecoveryStrategy | str = MetadataRecoveryStrategy.REBOOTSTRAP,
        metadata_recovery_rebootstrap_trigger_ms: int = 300_000,
        host_resolver: HostResolver = default_host_resolver,
        rng: random.Random | None = None,
    ) -> None:
        self.selector = selector
        self.client_id = client_id
        self.time = time
        self._rng = rng if rng is not None else random.Random()
        self.in_flight_requests = new_in_flight_requests(max_in_flight_requests_per_connection)
        self.connection_states = ClusterConnectionStates(
            reconnect_backoff_ms,
            reconnect_backoff_max_ms,
            socket_connection_setup_timeout_ms,
            socket_connection_setup_timeout_max_ms,
            host_resolver,
            self._rng,
        )
        self.socket_send_buffer_bytes = socket_send_buffer_bytes
        self.socket_receive_buffer_bytes = socket_receive_buffer_bytes
        self.default_request_timeout_ms = request_timeout_ms
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.discover_broker_versions = discover_broker_versions
        self.api_versions = api_versions if api_versions is not None else ApiVersions()
        self.metadata_recovery_strategy = MetadataRecoveryStrategy(metadata_recovery_strategy)
        self.rebootstrap_trigger_ms = metadata_recovery_rebootstrap_trigger_ms
        #: the aborted sends and the poll's flags (:class:`ClientPollState`, or the kernel's ClientPollPath, which is then
        #: also this client's poll: :meth:`_new_poll_state`, once the client is built)
        self.poll_state: PollState = ClientPollState()
        self._handshake = ApiVersionsHandshake()
        codecs = compiled_codecs()
        compiled_send = getattr(selector, "compiled_send", None)
        self._paths = _Paths(
            nanoseconds_clock(time),
            codecs.encoders,
            codecs.decoders,
            compiled_send() if compiled_send is not None else None,
            self._new_compiled_can_send(),
            CorrelationIds(),
            LogRateLimiter(THROTTLE_WARNING_INTERVAL_MS),
        )
        # node id -> "ip:port" of the address last connected to, for log messages.
        self._node_addresses: dict[str, str] = {}
        # node id -> "host:port" as the bootstrap list or the metadata names the node.
        self._node_host_ports: dict[str, str] = {}
        self._state = _State.ACTIVE
        #: the ready cache, the versions chosen, whether active (:class:`ClientSendState`, or the kernel's
        #: ClientSendPath, which is then also this client's ready and send: :meth:`_new_send_state`)
        self.send_state: SendState = self._new_send_state()
        self.metadata = metadata
        if metadata_updater is None:
            if metadata is None:
                raise IllegalArgumentError("either metadata or metadata_updater must be given")
            metadata_updater = DefaultMetadataUpdater(
                metadata, self, request_timeout_ms, reconnect_backoff_ms, self.metadata_recovery_strategy
            )
        self.metadata_updater = metadata_updater
        self.poll_state = self._new_poll_state()

    def _new_compiled_can_send(self) -> Callable[[InFlightRequestsApi, str, int], bool] | None:
        """The kernel's ``SendReadiness.can_send`` over this client's connection states and its Selector's open channels
        (:meth:`can_send_request` in one call); None without the kernel, or for a selector without open channels to
        read (any but a real Selector)."""
        kernel = _native.kernel
        open_channels = getattr(self.selector, "open_channels", None)
        if kernel is None or open_channels is None:
            return None
        channels = open_channels()
        node_states = self.connection_states.node_states()
        if type(channels) is not dict or type(node_states) is not dict:
            return None
        readiness = kernel.SendReadiness(node_states, ConnectionState.READY, channels, ChannelState.READY)
        can_send: Callable[[InFlightRequestsApi, str, int], bool] = readiness.can_send
        return can_send

    def _new_send_state(self) -> SendState:
        """The kernel's ClientSendPath when the kernel is on, the selector a real Selector (its compiled send and
        readiness made) and this class's ready, poll_delay_ms, new_client_request and send (_do_send) NetworkClient's:
        this client's ready, poll_delay_ms, new_client_request and send are then the path's (instance attributes: no
        Python frame on their common case, the rest through the methods below, the reference); else the reference
        state."""
        kernel = _native.kernel
        paths = self._paths
        if (
            kernel is None or paths.send is None or paths.can_send is None
            or type(self).ready is not NetworkClient.ready or type(self).send is not NetworkClient.send
            or type(self)._do_send is not NetworkClient._do_send
            or type(self).new_client_request is not NetworkClient.new_client_request
            or type(self).poll_delay_ms is not NetworkClient.poll_delay_ms
        ):
            return ClientSendState()
        path: SendState = kernel.ClientSendPath(
            self, NetworkClient.ready, NetworkClient._do_send, paths.can_send, paths.send, paths.encoders,
            encode_request_frame, encode_reference_frame, _new_network_send, _new_in_flight_request, RequestHeaderInfo,
            NetworkClient.new_client_request, paths.correlation_ids, _new_client_request, NetworkClient.poll_delay_ms,
            MAX_DELAY_MS,
        )
        # (the path holds this client weakly: no cycle through these bound methods of it)
        self.ready = path.ready  # type: ignore[attr-defined,method-assign]  # the compiled ready, its reference the method
        self.send = path.send  # type: ignore[attr-defined,method-assign]  # the compiled send, its reference _do_send
        self.new_client_request = path.new_client_request  # type: ignore[attr-defined,method-assign]  # (its reference the method)
        self.poll_delay_ms = path.poll_delay_ms  # type: ignore[attr-defined,method-assign]  # (its reference the method)
        return path

    def _new_poll_state(self) -> PollState:
        """The kernel's ClientPollPath when the kernel is on and this class's poll, complete_poll and
        _handle_completed_receives are NetworkClient's: this client's poll is then the path's (an instance attribute:
        its common case in one call, the rest through the methods, the reference); else the reference state."""
        kernel = _native.kernel
        if (
            kernel is None
            or type(self).poll is not NetworkClient.poll
            or type(self).complete_poll is not NetworkClient.complete_poll
            or type(self)._handle_completed_receives is not NetworkClient._handle_completed_receives
        ):
            return ClientPollState()
        # the selector's compiled poll (a real Selector's, the kernel's SelectorPoll), else its poll method
        compiled_poll = getattr(self.selector, "compiled_poll", None)
        path: PollState = kernel.ClientPollPath(
            self, NetworkClient.poll, NetworkClient.complete_poll, NetworkClient._handle_completed_receives,
            self._paths.clock_ns, self._paths.decoders, _new_client_response, POLL_COMPLETED_SENDS,
            POLL_COMPLETED_RECEIVES, POLL_ALL, _REBOOTSTRAP,
            report_poll_error, report_callback_error, compiled_poll() if compiled_poll is not None else None,
        )
        # (the path holds this client weakly: no cycle through this bound method of it)
        self.poll = path.poll  # type: ignore[attr-defined,method-assign]  # the compiled poll, its reference the method
        return path

    # --- connection management -----------------------------------------------------------------

    def ready(self, node: Node, now_ms: int) -> bool:
        """True if ``node`` can take a request now; otherwise start connecting if allowed."""
        if not node.host or node.port < 0:  # node.is_empty(), inlined: the Sender asks once per iteration
            raise IllegalArgumentError(f"cannot connect to empty node {node}")
        node_id = str(node.id)
        # is_ready() inlined (the same questions in the same order): one frame less per iteration; no update can be
        # due before the updater's deadline (read, not asked: the common case)
        updater = self.metadata_updater
        if now_ms < updater.update_deadline.no_update_before_ms or not updater.is_update_due(now_ms):
            can_send = self._paths.can_send
            if (
                can_send(self.in_flight_requests, node_id, now_ms) if can_send is not None else (
                    self.connection_states.is_ready(node_id, now_ms)
                    and self.selector.is_channel_ready(node_id)
                    and self.in_flight_requests.can_send_more(node_id)
                )
            ):
                state = self.send_state
                state.ready_node = node_id
                state.ready_at_ms = now_ms
                return True
        if self.connection_states.can_connect(node_id, now_ms):
            self.initiate_connect(node, now_ms)
        return False

    def can_connect(self, node: Node, now_ms: int) -> bool:
        return self.connection_states.can_connect(node.id_string, now_ms)

    def is_ready(self, node: Node, now_ms: int) -> bool:
        """Ready and able to take another request; False for every node while a metadata update is due."""
        updater = self.metadata_updater
        if now_ms >= updater.update_deadline.no_update_before_ms and updater.is_update_due(now_ms):
            return False
        node_id = str(node.id)  # (the Sender's per-iteration question is ready(), which asks these without frames)
        if self.can_send_request(node_id, now_ms):
            state = self.send_state
            state.ready_node = node_id
            state.ready_at_ms = now_ms
            return True
        return False

    def can_send_request(self, node_id: str, now_ms: int) -> bool:
        can_send = self._paths.can_send
        if can_send is not None:
            return can_send(self.in_flight_requests, node_id, now_ms)
        return (
            self.connection_states.is_ready(node_id, now_ms)
            and self.selector.is_channel_ready(node_id)
            and self.in_flight_requests.can_send_more(node_id)
        )

    def connection_delay(self, node: Node, now_ms: int) -> int:
        return self.connection_states.connection_delay(node.id_string, now_ms)

    def throttle_delay_ms(self, node: Node, now_ms: int) -> int:
        return self.connection_states.throttle_delay_ms(node.id_string, now_ms)

    def poll_delay_ms(self, node: Node, now_ms: int) -> int:
        return self.connection_states.poll_delay_ms(node.id_string, now_ms)

    def connection_failed(self, node: Node) -> bool:
        return self.connection_states.is_disconnected(node.id_string)

    def authentication_exception(self, node: Node) -> BaseException | None:
        return self.connection_states.authentication_exception(node.id_string)

    def is_any_node_connecting(self) -> bool:
        return any(self.connection_states.is_connecting(n.id_string) for n in self.metadata_updater.fetch_nodes())

    def has_ready_nodes(self, now_ms: int) -> bool:
        return self.connection_states.has_ready_nodes(now_ms)

    def initiate_connect(self, node: Node, now_ms: int) -> None:
        node_id = node.id_string
        self.send_state.ready_node = None
        self._node_host_ports[node_id] = f"{node.host}:{node.port}"
        resolved: str | None = None
        self.poll_state.may_be_connecting = True
        try:
            self.connection_states.connecting(node_id, now_ms, node.host)
            address = self.connection_states.current_address(node_id)
            resolved = self._node_addresses[node_id] = f"{address}:{node.port}"
            log.debug("initiating connection to node %s using address %s", node, address)
            self.selector.connect(
                node_id, (address, node.port), self.socket_send_buffer_bytes, self.socket_receive_buffer_bytes
            )
        except OSError as e:
            self._node_addresses.setdefault(node_id, f"{node.host}:{node.port}")
            self.connection_states.disconnected(node_id, now_ms)
            self._record_connect_failure(
                node_id, now_ms, classify_connect_error(e), describe_connect_error(e), e, resolved
            )
            self.metadata_updater.handle_server_disconnect(now_ms, node_id, None)

    def last_connect_failure(self, node: Node | str) -> ConnectFailure | None:
        """Why the last connection attempt to ``node`` (a Node or its id string) failed; None if it never
        failed or has been ready since."""
        return self.connection_states.last_connect_failure(node if isinstance(node, str) else node.id_string)

    def unreachable_reason(self, now_ms: int | None = None) -> str | None:
        """Why no broker can be reached, for the message of a timeout: every known node (the bootstrap
        servers until metadata arrived) with its last connection error, or how long it has been connecting.
        None when a known node is ready, or when no connection was tried (nothing to explain).

        Safe to call from another thread than the one driving the client (it only reads)."""
        now = self.time.hi_res_clock_ms() if now_ms is None else now_ms
        states = self.connection_states
        failures: list[ConnectFailure] = []
        connecting: list[str] = []
        for node in self.metadata_updater.fetch_nodes():
            node_id = node.id_string
            state = states.node_state(node_id)
            if state is None:
                continue
            if state.state is ConnectionState.READY:
                return None
            failure = state.last_failure
            if failure is not None:
                failures.append(failure)
            elif state.state is ConnectionState.CONNECTING:
                waited = now - state.last_connect_attempt_ms
                connecting.append(f"{node.host}:{node.port}: not connected yet after {waited} ms")
        if not failures and not connecting:
            return None
        return describe_unreachable(failures, connecting)

    def disconnect(self, node_id: str) -> None:
        """Close the connection to ``node_id``; its in-flight requests complete as disconnected on the
        next poll. A node already disconnected keeps its backoff window."""
        if self.connection_states.node_state(node_id) is None or self.connection_states.is_disconnected(node_id):
            return
        log.info("disconnecting from %s as the client asked", self._node_label(node_id))
        self.send_state.ready_node = None
        self.selector.close_channel(node_id)
        now = self.time.hi_res_clock_ms()
        self._cancel_in_flight_requests(node_id, now, self.poll_state.aborted_sends, timed_out=False)
        self.connection_states.disconnected(node_id, now)
        self._forget_versions(node_id)

    def close_node(self, node_id: str) -> None:
        """Forget everything about ``node_id``: in-flight requests are dropped without callbacks."""
        self.send_state.ready_node = None
        self.selector.close_channel(node_id)
        now = self.time.hi_res_clock_ms()
        self._cancel_in_flight_requests(node_id, now, None, timed_out=False)
        self.connection_states.remove(node_id)
        self._forget_versions(node_id)

    def close(self, node_id: str | None = None) -> None:
        """``close(node_id)`` is :meth:`close_node`; ``close()`` closes the client and its selector."""
        if node_id is not None:
            self.close_node(node_id)
            return
        if self._state is _State.ACTIVE:
            self._state = _State.CLOSING
            self.send_state.active = False
        if self._state is _State.CLOSING:
            self._state = _State.CLOSED
            self.send_state.ready_node = None
            self.selector.close()
            self.metadata_updater.close()
        else:
            log.debug("NetworkClient already closed")

    def initiate_close(self) -> None:
        if self._state is _State.ACTIVE:
            self._state = _State.CLOSING
            self.send_state.active = False
            self.wakeup()

    def active(self) -> bool:
        return self._state is _State.ACTIVE

    def _ensure_active(self) -> None:
        if not self.active():
            raise DisconnectError(f"NetworkClient is no longer active, state is {self._state.name}")

    def wakeup(self) -> None:
        """Interrupt a poll blocked in another thread."""
        self.selector.wakeup()

    # --- requests ------------------------------------------------------------------------------

    @property
    def correlation_ids(self) -> CorrelationIds:
        """The ids this client's requests draw (tests and diagnostics set the next one: ``next_id``)."""
        return self._paths.correlation_ids

    def next_correlation_id(self) -> int:
        """Thread-safe (ConsumerNetworkClient.send draws ids without holding its lock)."""
        return self._paths.correlation_ids.next()

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
        # self.next_correlation_id(), without its calls: the counter's C draw, next() only where it wraps
        ids = self._paths.correlation_ids
        correlation_id = ids.next_or_none()
        if correlation_id is None:
            correlation_id = ids.next()
        return _new_client_request(  # (every field, positional: no __init__ frame)
            node_id,
            body,
            correlation_id,
            self.client_id,
            created_time_ms,
            expect_response,
            self.default_request_timeout_ms if request_timeout_ms is None else request_timeout_ms,
            callback,
            oldest_allowed_version,
            latest_allowed_version,
        )


    def send_internal_request(
        self,
        body: RequestBody,
        node_id: str,
        now_ms: int,
        latest_allowed_version: int | None = None,
        *,
        oldest_allowed_version: int | None = None,
    ) -> None:
        request = self.new_client_request(
            node_id,
            body,
            now_ms,
            True,
            oldest_allowed_version=oldest_allowed_version,
            latest_allowed_version=latest_allowed_version,
        )
        self._do_send(request, now_ms, True)

    def _do_send(self, request: ClientRequest, now_ms: int, is_internal: bool = False) -> None:
        """Queue ``request`` for its node, which must be ready (else IllegalStateError) unless the request is
        internal (ApiVersions, metadata). Public as :meth:`send` (the same function: no call in between)."""
        if self._state is not _ACTIVE:
            self._ensure_active()
        node_id = request.destination
        state = self.send_state
        if (
            not is_internal
            # unless is_ready() found the node ready at this time and nothing changed since
            and (node_id != state.ready_node or now_ms != state.ready_at_ms)
            and not (  # can_send_request(), inlined: once per request
                self._paths.can_send(self.in_flight_requests, node_id, now_ms)
                if self._paths.can_send is not None else (
                    self.connection_states.is_ready(node_id, now_ms)
                    and self.selector.is_channel_ready(node_id)
                    and self.in_flight_requests.can_send_more(node_id)
                )
            )
        ):
            raise IllegalStateError(f"attempt to send a request to node {node_id} which is not ready")
        state.ready_node = None  # the send changes what is_ready() found
        version: int | None = None
        body = request.body
        body_type = type(body)
        correlation_id = request.correlation_id
        client_id = request.client_id
        try:
            node_versions = self.api_versions.by_node.get(node_id)  # (the read-only view: no call of get())
            chosen_key = (node_id, body_type, request.oldest_allowed_version, request.latest_allowed_version)
            versions_chosen = state.versions_chosen
            chosen = versions_chosen.get(chosen_key)
            if chosen is not None and chosen[0] is node_versions:
                version = chosen[1]
            else:
                version = choose_version(request, node_versions)
                if len(versions_chosen) >= MAX_VERSIONS_CHOSEN:
                    versions_chosen.clear()
                versions_chosen[chosen_key] = (node_versions, version)
            # a request type with a compiled encoder (registered with compiled_codecs) through it, the reference
            # encoder when it declines; any other through the general encoder
            encoder = self._paths.encoders.get(body_type)
            if encoder is None:
                pieces = encode_request_frame(body, version, correlation_id, client_id)
            else:
                encoded = encoder(body, version, correlation_id, client_id)
                pieces = (
                    encoded if encoded is not None else encode_reference_frame(body, version, correlation_id, client_id)
                )
        except Exception as e:  # any build/encode failure fails the request, see _fail_unencodable
            self._fail_unencodable(request, is_internal, version, e, now_ms)
            return
        send = _new_network_send(node_id, pieces, sum(map(len, pieces)), 0, None)  # (every field, positional)
        expect_response = request.expect_response
        in_flight = _new_in_flight_request(
            # request.make_header(version), without its calls (once per request sent): tuple.__new__ skips the
            # named tuple's Python __new__
            _new_tuple(RequestHeaderInfo, (int(body.API_KEY), version, client_id, correlation_id)),
            request.request_timeout_ms,
            request.created_time_ms,
            node_id,
            request.callback,
            expect_response,
            is_internal,
            body,
            send,
            now_ms,
            0,
        )
        if not expect_response:
            self.poll_state.fire_and_forget_sent = True
        # (send.extra stays unset: send -> in_flight -> send would be a cycle holding the request's record batches
        # until a full collection after the response, not freed as the response is handled)
        compiled_send = self._paths.send
        if compiled_send is not None:  # the add and the send below in one call
            compiled_send(self.in_flight_requests, in_flight, send)
            return
        self.in_flight_requests.add(in_flight)
        try:
            self.selector.send(send)
        except BaseException:
            # The transport refused the send: don't leave a request in flight that never went out.
            self.in_flight_requests.complete_last_sent(node_id)
            raise

    #: Queue ``request`` for its node, which must be ready (else IllegalStateError).
    send = _do_send

    def _fail_unencodable(
        self, request: ClientRequest, is_internal: bool, version: int | None, error: Exception, now_ms: int
    ) -> None:
        """The request cannot be built at the version negotiated with its node (no common version, or
        the body sets a field that version lacks). It never hits the wire: its callback completes with
        the error on the next poll (``version_mismatch``) and the failure is logged at WARNING."""
        node_id = request.destination
        lo, hi = allowed_version_range(request)
        at = f"v{version}" if version is not None else f"any version in {lo}-{hi}"
        log.warning(
            "cannot send %s %s to %s, the request fails: %s",
            api_name(request.api_key),
            at,
            self._node_label(node_id),
            describe_error(error),
        )
        header_version = hi if version is None else version
        response = ClientResponse(
            request.make_header(header_version), request.callback, node_id, now_ms, now_ms, version_mismatch=error
        )
        if not is_internal:
            self.poll_state.aborted_sends.append(response)
        elif request.api_key == ApiKey.METADATA:
            self.metadata_updater.handle_failed_request(now_ms, error)

    def in_flight_request_count(self, node_id: str | None = None) -> int:
        return self.in_flight_requests.count(node_id)

    def has_in_flight_requests(self, node_id: str | None = None) -> bool:
        return not self.in_flight_requests.is_empty(node_id)

    # --- poll ----------------------------------------------------------------------------------

    def poll(self, timeout_ms: int, now_ms: int) -> list[ClientResponse]:
        """Do I/O for at most ``timeout_ms`` and return the requests that completed."""
        if self._state is not _ACTIVE:
            self._ensure_active()
        state = self.poll_state
        if state.aborted_sends:
            # Version mismatches and client disconnects: complete at once, no network wait.
            responses, state.aborted_sends = state.aborted_sends, []
        else:
            responses = []
            updater = self.metadata_updater
            # (before the updater's deadline maybe_update() would do nothing and return the time to it: no call)
            no_update_before_ms = updater.update_deadline.no_update_before_ms
            if now_ms < no_update_before_ms:
                metadata_timeout = no_update_before_ms - now_ms
            else:
                metadata_timeout = updater.maybe_update(now_ms)
            selector = self.selector
            # (asked only when a session is to be re-authenticated: no call per poll otherwise)
            reauth_delay = selector.reauthentication_delay_ms() if selector.reauthentications_scheduled else None
            if reauth_delay is not None:
                if reauth_delay == 0:
                    self._maybe_begin_reauthentications()
                else:
                    timeout_ms = min(timeout_ms, reauth_delay)
            try:
                # at most the metadata timeout and request.timeout.ms, at least 0 (comparisons: no builtin call per poll)
                if metadata_timeout < timeout_ms:
                    timeout_ms = metadata_timeout
                if self.default_request_timeout_ms < timeout_ms:
                    timeout_ms = self.default_request_timeout_ms
                results = selector.poll(timeout_ms if timeout_ms > 0 else 0)
            except OSError as e:
                report_poll_error(e)
                results = POLL_ALL
            # time.hi_res_clock_ms(), without its frame
            self.complete_poll(results, responses, self._paths.clock_ns() // 1_000_000)
        self.send_state.ready_node = None  # the poll changed what is_ready() found (the callbacks' sends ask again)
        for response in responses:  # (inlined: once per poll)
            callback = response.callback  # response.on_complete(), one call less per response
            try:
                if callback is not None:
                    callback(response)
            except Exception as e:
                report_callback_error(e)
        return responses

    def complete_poll(self, results: int, responses: list[ClientResponse], now_ms: int) -> None:
        """What :meth:`poll` does after the selector's poll, whose ``POLL_*`` bits are ``results``, at ``now_ms``: the
        requests completed (appended to ``responses``) by completed sends and receives, disconnects and timeouts; new
        connections and their handshakes; rebootstrap; re-authentications. The kernel's poll (``ClientPollPath``) calls
        it for what is not its common case, with the bits of the completed sends and receives cleared once it handled
        those."""
        selector = self.selector
        state = self.poll_state
        # each handler only when its selector result has entries (the poll says which: no call for the empty ones)
        # a completed send completes a request only if it expects no response: none does unless one was sent
        if results & POLL_COMPLETED_SENDS and state.fire_and_forget_sent:
            self._handle_completed_sends(selector.completed_sends(), responses, now_ms)
        if results & POLL_COMPLETED_RECEIVES:
            # the answers a compiled decoder takes (unthrottled) in one step of the in-flight requests (the kernel's);
            # the rest (all of them with the reference InFlightRequests) through the reference
            receives = selector.completed_receives()
            left = self.in_flight_requests.complete_receives(
                receives, responses, now_ms, self._paths.decoders, _new_client_response
            )
            if left is not None:
                self._handle_completed_receives(receives, responses, now_ms, left)
        if results & POLL_DISCONNECTED:
            self._handle_disconnections(responses, now_ms)
        if results & POLL_CONNECTED:
            self._handle_connections()
        # a connection waits for its ApiVersions request, a connection is being set up: asked only after this
        # client connected (or began to connect) somewhere since the last poll that found none (no call per poll)
        if state.handshakes_may_be_due:
            if self._handshake.has_due():
                self._handle_initiate_api_version_requests(now_ms)
            state.handshakes_may_be_due = self._handshake.has_due()
        if state.may_be_connecting:
            if self.connection_states.has_connecting_nodes():
                self._handle_timed_out_connections(responses, now_ms)
            state.may_be_connecting = self.connection_states.has_connecting_nodes()
        in_flight = self.in_flight_requests
        if now_ms > in_flight.no_timeout_until_ms:  # (no call while no request can have timed out)
            timed_out = in_flight.nodes_with_timed_out_requests(now_ms)
            if timed_out:
                self._handle_timed_out_requests(timed_out, responses, now_ms)
        # (no rebootstrap before the deadline, read again: the responses handled may have moved it)
        updater = self.metadata_updater
        if (
            self.metadata_recovery_strategy is _REBOOTSTRAP
            and now_ms >= updater.update_deadline.no_update_before_ms
            and updater.needs_rebootstrap(now_ms, self.rebootstrap_trigger_ms)
        ):
            self._rebootstrap(responses, now_ms)
        if results & POLL_REAUTHENTICATION_SCHEDULED and selector.reauthentication_delay_ms() == 0:
            # before the callbacks send the next requests (a consumer's next fetch would keep it busy forever)
            self._maybe_begin_reauthentications()

    def _maybe_begin_reauthentications(self) -> None:
        """KIP-368: re-authenticate each connection whose SASL session is due, on the same connection, once it has
        no request in flight (a busy connection is taken at the next poll after its responses arrived; the
        requests queued meanwhile wait until the channel is ready again)."""
        for node_id in self.selector.reauthentications_due():
            if self.in_flight_requests.is_empty(node_id):
                log.debug("re-authenticating to node %s (its SASL session is near its end)", node_id)
                self.selector.begin_reauthentication(node_id)

    def _handle_completed_sends(self, sends: list[NetworkSend], responses: list[ClientResponse], now_ms: int) -> None:
        in_flight = self.in_flight_requests
        for send in sends:
            node_id = send.destination
            request = in_flight.newest_or_none(node_id)
            if request is not None and not request.expect_response and request.send is send:
                in_flight.complete_last_sent(node_id)
                responses.append(request.completed(None, now_ms))

    def _maybe_throttle(self, response: object, api_key: int, version: int, node_id: str, now_ms: int) -> None:
        throttle_ms = int(getattr(response, "throttle_time_ms", 0) or 0)
        if throttle_ms > 0 and should_client_throttle(api_key, version):
            self.in_flight_requests.increment_throttle_time(node_id, throttle_ms)
            self.connection_states.throttle(node_id, now_ms + throttle_ms)
            throttle_warnings = self._paths.throttle_warnings
            if throttle_warnings.should_log(node_id, now_ms):
                repeats = throttle_warnings.take_suppressed()
                log.warning(
                    "%s throttles this client for %d ms (a quota was exceeded); requests to it wait%s",
                    self._node_label(node_id),
                    throttle_ms,
                    f" (throttled {repeats} more time(s) in the last minute)" if repeats else "",
                )

    def _handle_completed_receives(
        self, receives: list[NetworkReceive], responses: list[ClientResponse], now_ms: int, start: int = 0
    ) -> None:
        """Complete the requests ``receives[start:]`` answer (the reference of the in-flight requests'
        ``complete_receives``, which handled those before ``start``: none of them closed a connection)."""
        failed: set[str] | None = None  # the connections closed on a response (a set only once one is)
        in_flight = self.in_flight_requests
        decoders = self._paths.decoders
        for receive in (receives if start == 0 else receives[start:]):
            source = receive.source
            if failed is not None and source in failed:
                continue
            # taken out before the response is decoded (one call less), put back if it cannot be: a connection closed
            # on a response it cannot parse completes that request as disconnected with the others
            req = in_flight.take_oldest_or_none(source)
            if req is None:
                self._close_on_protocol_error(
                    responses, source, now_ms, ProtocolError(f"unsolicited response from node {source}")
                )
                failed = _add_to(failed, source)
                continue
            try:
                header = req.header
                # a request type's compiled decoder first (registered with compiled_codecs; it may decline: None),
                # then the general decoders
                decoder = decoders.get(type(req.body))
                body = (
                    None if decoder is None else decoder(receive.payload, header.api_version, header.correlation_id)
                )
                if body is None:
                    # an ApiVersions response through the handshake's decoder (its v0 fallback, KIP-511); any other
                    # straight to the frame decoder (one call less per response)
                    body = (decode_response if header.api_key == _API_VERSIONS else decode_response_frame)(
                        receive.payload, header.api_key, header.api_version, header.correlation_id
                    )
            except ProtocolError as e:
                in_flight.put_back_oldest(req)
                log.warning(
                    "closing the connection to %s: cannot parse the response to %s v%d (correlation id %d): %s",
                    self._node_label(source),
                    api_name(req.header.api_key),
                    req.header.api_version,
                    req.header.correlation_id,
                    describe_error(e),
                )
                self._close_on_protocol_error(responses, source, now_ms, e)
                failed = _add_to(failed, source)
                continue
            except BaseException:
                in_flight.put_back_oldest(req)
                raise
            if getattr(body, "throttle_time_ms", 0):  # (most responses: no call to _maybe_throttle)
                self._maybe_throttle(body, req.header.api_key, req.header.api_version, source, now_ms)
            if req.is_internal_request and isinstance(body, MetadataResponse):
                self.metadata_updater.handle_successful_response(req.header, now_ms, body)
            elif req.is_internal_request and isinstance(body, ApiVersionsResponse):
                self._handle_api_versions_response(responses, req, now_ms, body)
            else:
                # req.completed(body, now_ms), inlined (every field, positional): once per response
                responses.append(_new_client_response(
                    req.header, req.callback, req.destination, req.created_time_ms, now_ms, False, False, None, None, body,
                    None,
                ))

    def _handle_api_versions_response(
        self, responses: list[ClientResponse], req: InFlightRequest, now_ms: int, body: ApiVersionsResponse
    ) -> None:
        node_id = req.destination
        result = self._handshake.on_response(node_id, req.header.api_version, body)
        self.poll_state.handshakes_may_be_due = True  # (a retry at another version is due at once)
        if result.outcome is Outcome.DISCONNECT:
            self.selector.close_channel(node_id)
            self._process_disconnection(responses, node_id, now_ms, DisconnectInfo(ChannelState.LOCAL_CLOSE))
        elif result.outcome is Outcome.READY:
            assert result.versions is not None
            self.api_versions.update(node_id, result.versions)
            self.connection_states.ready(node_id)
            log.debug("node %s is ready; API versions: %s", node_id, result.versions)

    def _handle_connections(self) -> None:
        for node_id in self.selector.connected():
            if self.connection_states.node_state(node_id) is None:
                continue
            if self.discover_broker_versions:
                self._handshake.connected(node_id)
                self.poll_state.handshakes_may_be_due = True
                log.debug("connected to node %s; fetching API versions", node_id)
            else:
                self.connection_states.ready(node_id)

    def _handle_initiate_api_version_requests(self, now_ms: int) -> None:
        def can_send(node_id: str) -> bool:
            return self.selector.is_channel_ready(node_id) and self.in_flight_requests.can_send_more(node_id)

        for node_id, version in self._handshake.due(can_send):
            # Only now does the node leave CONNECTING, so a channel that never becomes ready is still
            # covered by the connection-setup timeout.
            self.connection_states.checking_api_versions(node_id)
            self.send_internal_request(self._handshake.request(), node_id, now_ms, latest_allowed_version=version)

    # --- node selection ------------------------------------------------------------------------

    def least_loaded_node(self, now_ms: int) -> LeastLoadedNode:
        """See :func:`~pykafka_client.network.node_selection.least_loaded_node`."""
        nodes = self.metadata_updater.fetch_nodes()
        if not nodes:
            raise IllegalStateError("there are no nodes in the Kafka cluster")
        return least_loaded_node(
            nodes,
            self._rng.randrange(len(nodes)),
            now_ms,
            self.connection_states,
            self.in_flight_requests,
            self.selector.is_channel_ready,
            self.can_send_request,
        )
