"""Per-node connection state machine (Java: ``clients.ClusterConnectionStates``).

States: DISCONNECTED -> CONNECTING -> CHECKING_API_VERSIONS -> READY, plus AUTHENTICATION_FAILED
(which counts as disconnected). All times are monotonic milliseconds passed in by the caller.

Invariants:

* Reconnect backoff is exponential with 20% jitter and grows with every failure before READY;
  READY resets it. With ``reconnect.backoff.max.ms == reconnect.backoff.ms`` it is constant.
* The connection-setup timeout applies while CONNECTING; it doubles (jitter 20%) after each failed
  attempt, capped by ``socket.connection.setup.timeout.max.ms``, and resets once a connection is
  established.
* A host may resolve to several addresses: each ``connecting`` moves to the next one; the list is
  re-resolved when exhausted or after an established connection drops, and the address tried last
  is skipped first after a re-resolution (when there is a choice).
* ``disconnected`` on a node that is already disconnected does not restart the backoff window.
* The last failed connection attempt of a node (:class:`~pykafka_client.network.connect_failure.ConnectFailure`,
  set by ``connect_failed``) is kept until the node is READY.
"""

from __future__ import annotations

import enum
import random
import socket
from collections.abc import Callable, Mapping

from pykafka_client.errors import IllegalStateError
from pykafka_client.network.connect_failure import ConnectFailure
from pykafka_client.network.exponential_backoff import ExponentialBackoff

#: Java ``Long.MAX_VALUE``: "no timer, wait for network events".
MAX_DELAY_MS = 2**63 - 1

RECONNECT_BACKOFF_EXP_BASE = 2
RECONNECT_BACKOFF_JITTER = 0.2
CONNECTION_SETUP_TIMEOUT_EXP_BASE = 2
CONNECTION_SETUP_TIMEOUT_JITTER = 0.2

#: ``resolve(host) -> addresses`` (IP strings, in preference order). Raises OSError on failure.
HostResolver = Callable[[str], list[str]]


def default_host_resolver(host: str) -> list[str]:
    """Resolve ``host`` with ``socket.getaddrinfo`` (TCP), de-duplicated, in the resolver's order."""
    infos = socket.getaddrinfo(host, None, 0, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    out: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        ip = str(sockaddr[0])
        if ip not in out:
            out.append(ip)
    if not out:
        raise socket.gaierror(f"no addresses for {host}")
    return out


class ConnectionState(enum.Enum):
    DISCONNECTED = "DISCONNECTED"
    CONNECTING = "CONNECTING"
    CHECKING_API_VERSIONS = "CHECKING_API_VERSIONS"
    READY = "READY"
    AUTHENTICATION_FAILED = "AUTHENTICATION_FAILED"

    def is_disconnected(self) -> bool:
        return self in (ConnectionState.DISCONNECTED, ConnectionState.AUTHENTICATION_FAILED)

    def is_connected(self) -> bool:
        return self in (ConnectionState.CHECKING_API_VERSIONS, ConnectionState.READY)


# (a module constant: a member read through its Enum class is a metaclass attribute lookup, several times a
# global's, and the I/O thread reads it on every request)
_READY = ConnectionState.READY


class NodeConnectionState:
    """What is known about one node's connection."""

    __slots__ = (
        "state",
        "last_connect_attempt_ms",
        "failed_attempts",
        "failed_connect_attempts",
        "reconnect_backoff_ms",
        "connection_setup_timeout_ms",
        "authentication_exception",
        "throttle_until_time_ms",
        "host",
        "_resolver",
        "_addresses",
        "_address_index",
        "last_attempted_address",
        "last_failure",
    )

    def __init__(
        self,
        state: ConnectionState,
        last_connect_attempt_ms: int,
        reconnect_backoff_ms: int,
        connection_setup_timeout_ms: int,
        host: str,
        resolver: HostResolver,
    ) -> None:
        self.state = state
        self.last_connect_attempt_ms = last_connect_attempt_ms
        self.failed_attempts = 0
        self.failed_connect_attempts = 0
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.connection_setup_timeout_ms = connection_setup_timeout_ms
        self.authentication_exception: BaseException | None = None
        self.throttle_until_time_ms = 0
        self.host = host
        self._resolver = resolver
        self._addresses: list[str] = []
        self._address_index = 0
        self.last_attempted_address: str | None = None
        # why the last connection attempt failed; None once the node was ready
        self.last_failure: ConnectFailure | None = None

    def current_address(self) -> str:
        """The address to connect to now; resolves (again) if the list is empty. Raises OSError."""
        if not self._addresses:
            self._addresses = list(self._resolver(self.host))
            if not self._addresses:
                raise socket.gaierror(f"no addresses for {self.host}")
            self._address_index = 0
            # After a re-resolution don't go straight back to the address that just failed.
            if len(self._addresses) > 1 and self._addresses[0] == self.last_attempted_address:
                self._address_index = 1
        self.last_attempted_address = self._addresses[self._address_index]
        return self.last_attempted_address

    def move_to_next_address(self) -> None:
        """Advance to the next resolved address; past the last one, force a re-resolution."""
        if not self._addresses:
            return
        self._address_index = (self._address_index + 1) % len(self._addresses)
        if self._address_index == 0:
            self._addresses = []

    def clear_addresses(self) -> None:
        self._addresses = []

    def __repr__(self) -> str:
        return (
            f"NodeState({self.state.name}, last_attempt={self.last_connect_attempt_ms}, "
            f"failed={self.failed_attempts}, backoff={self.reconnect_backoff_ms}, "
            f"setup_timeout={self.connection_setup_timeout_ms}, throttle_until={self.throttle_until_time_ms})"
        )


class ClusterConnectionStates:
    """The connection state of every node this client has tried to talk to, keyed by node id string."""

    def __init__(
        self,
        reconnect_backoff_ms: int,
        reconnect_backoff_max_ms: int,
        connection_setup_timeout_ms: int,
        connection_setup_timeout_max_ms: int,
        host_resolver: HostResolver = default_host_resolver,
        rng: random.Random | None = None,
    ) -> None:
        self._node_state: dict[str, NodeConnectionState] = {}
        self._connecting_nodes: set[str] = set()
        self._resolver = host_resolver
        self._reconnect_backoff = ExponentialBackoff(
            reconnect_backoff_ms, RECONNECT_BACKOFF_EXP_BASE, reconnect_backoff_max_ms, RECONNECT_BACKOFF_JITTER, rng
        )
        self._connection_setup_timeout = ExponentialBackoff(
            connection_setup_timeout_ms,
            CONNECTION_SETUP_TIMEOUT_EXP_BASE,
            connection_setup_timeout_max_ms,
            CONNECTION_SETUP_TIMEOUT_JITTER,
            rng,
        )

    # --- queries -------------------------------------------------------------------------------

    def _state(self, node_id: str) -> NodeConnectionState:
        state = self._node_state.get(node_id)
        if state is None:
            raise IllegalStateError(f"no entry found for connection {node_id}")
        return state

    def node_state(self, node_id: str) -> NodeConnectionState | None:
        return self._node_state.get(node_id)

    def node_states(self) -> Mapping[str, NodeConnectionState]:
        """Every node's state by id: these states' own mapping (read-only), which follows the nodes as they come and
        go (the kernel's ``SendReadiness`` reads a node's in it)."""
        return self._node_state

    def can_connect(self, node_id: str, now_ms: int) -> bool:
        """True if we may start a connection attempt now (never seen, or disconnected past its backoff)."""
        state = self._node_state.get(node_id)
        if state is None:
            return True
        return state.state.is_disconnected() and now_ms - state.last_connect_attempt_ms >= state.reconnect_backoff_ms

    def is_blacked_out(self, node_id: str, now_ms: int) -> bool:
        state = self._node_state.get(node_id)
        return (
            state is not None
            and state.state.is_disconnected()
            and now_ms - state.last_connect_attempt_ms < state.reconnect_backoff_ms
        )

    def connection_delay(self, node_id: str, now_ms: int) -> int:
        """Ms until a connection attempt is allowed: 0 if unknown, the remaining backoff if disconnected,
        the setup timeout while connecting, MAX_DELAY_MS otherwise (wait for network events)."""
        state = self._node_state.get(node_id)
        if state is None:
            return 0
        if state.state is ConnectionState.CONNECTING:
            return state.connection_setup_timeout_ms
        if state.state.is_disconnected():
            waited = now_ms - state.last_connect_attempt_ms
            return max(state.reconnect_backoff_ms - waited, 0)
        return MAX_DELAY_MS

    def is_connecting(self, node_id: str) -> bool:
        state = self._node_state.get(node_id)
        return state is not None and state.state is ConnectionState.CONNECTING

    def is_checking_api_versions(self, node_id: str) -> bool:
        state = self._node_state.get(node_id)
        return state is not None and state.state is ConnectionState.CHECKING_API_VERSIONS

    def is_preparing_connection(self, node_id: str) -> bool:
        state = self._node_state.get(node_id)
        return state is not None and state.state in (
            ConnectionState.CONNECTING,
            ConnectionState.CHECKING_API_VERSIONS,
        )

    def is_ready(self, node_id: str, now_ms: int) -> bool:
        state = self._node_state.get(node_id)
        return state is not None and state.state is _READY and state.throttle_until_time_ms <= now_ms

    def has_ready_nodes(self, now_ms: int) -> bool:
        return any(
            s.state is ConnectionState.READY and s.throttle_until_time_ms <= now_ms for s in self._node_state.values()
        )

    def is_connected(self, node_id: str) -> bool:
        state = self._node_state.get(node_id)
        return state is not None and state.state.is_connected()

    def is_disconnected(self, node_id: str) -> bool:
        state = self._node_state.get(node_id)
        return state is not None and state.state.is_disconnected()

    def authentication_exception(self, node_id: str) -> BaseException | None:
        state = self._node_state.get(node_id)
        return state.authentication_exception if state is not None else None

    def last_connect_failure(self, node_id: str) -> ConnectFailure | None:
        """Why the last connection attempt to ``node_id`` failed, or None (never failed, or ready since)."""
        state = self._node_state.get(node_id)
        return state.last_failure if state is not None else None

    def connection_state(self, node_id: str) -> ConnectionState:
        return self._state(node_id).state

    def last_connect_attempt_ms(self, node_id: str) -> int:
        state = self._node_state.get(node_id)
        return state.last_connect_attempt_ms if state is not None else 0

    def connection_setup_timeout_ms(self, node_id: str) -> int:
        return self._state(node_id).connection_setup_timeout_ms

    def reconnect_backoff_ms(self, node_id: str) -> int:
        return self._state(node_id).reconnect_backoff_ms

    def throttle_delay_ms(self, node_id: str, now_ms: int) -> int:
        state = self._node_state.get(node_id)
        if state is None or state.throttle_until_time_ms <= now_ms:
            return 0
        return state.throttle_until_time_ms - now_ms

    def poll_delay_ms(self, node_id: str, now_ms: int) -> int:
        """The throttle delay of a connected node, else its connection delay."""
        throttle = self.throttle_delay_ms(node_id, now_ms)
        if self.is_connected(node_id) and throttle > 0:
            return throttle
        return self.connection_delay(node_id, now_ms)

    def is_connection_setup_timeout(self, node_id: str, now_ms: int) -> bool:
        state = self._state(node_id)
        if state.state is not ConnectionState.CONNECTING:
            raise IllegalStateError(f"node {node_id} is not in the CONNECTING state")
        return now_ms - state.last_connect_attempt_ms > state.connection_setup_timeout_ms

    def has_connecting_nodes(self) -> bool:
        """True while a connection is being set up (what the connection-setup timeout covers)."""
        return bool(self._connecting_nodes)

    def nodes_with_connection_setup_timeout(self, now_ms: int) -> list[str]:
        return [n for n in sorted(self._connecting_nodes) if self.is_connection_setup_timeout(n, now_ms)]

    def current_address(self, node_id: str) -> str:
        return self._state(node_id).current_address()

    def __len__(self) -> int:
        return len(self._node_state)

    # --- transitions ---------------------------------------------------------------------------

    def connecting(self, node_id: str, now_ms: int, host: str) -> None:
        """A connection attempt to ``host`` starts now."""
        state = self._node_state.get(node_id)
        if state is not None and state.host == host:
            state.last_connect_attempt_ms = now_ms
            state.state = ConnectionState.CONNECTING
            state.move_to_next_address()
            self._connecting_nodes.add(node_id)
            return
        # New node, or its host name changed: start from scratch.
        self._node_state[node_id] = NodeConnectionState(
            ConnectionState.CONNECTING,
            now_ms,
            self._reconnect_backoff.backoff(0),
            self._connection_setup_timeout.backoff(0),
            host,
            self._resolver,
        )
        self._connecting_nodes.add(node_id)

    def disconnected(self, node_id: str, now_ms: int) -> None:
        """The connection failed or was closed: start (or grow) the reconnect backoff."""
        state = self._state(node_id)
        state.last_connect_attempt_ms = now_ms
        self._update_reconnect_backoff(state)
        if state.state is ConnectionState.CONNECTING:
            self._update_connection_setup_timeout(state)
            self._connecting_nodes.discard(node_id)
        else:
            self._reset_connection_setup_timeout(state)
            if state.state.is_connected():
                # An established connection dropped: the node's addresses may have changed.
                state.clear_addresses()
        state.state = ConnectionState.DISCONNECTED

    def connect_failed(self, node_id: str, failure: ConnectFailure) -> None:
        """Remember why the connection to ``node_id`` could not be set up (kept until it is ready)."""
        self._state(node_id).last_failure = failure

    def checking_api_versions(self, node_id: str) -> None:
        """The channel is ready and the ApiVersions request is being sent."""
        state = self._state(node_id)
        state.state = ConnectionState.CHECKING_API_VERSIONS
        self._reset_connection_setup_timeout(state)
        self._connecting_nodes.discard(node_id)

    def ready(self, node_id: str) -> None:
        state = self._state(node_id)
        state.state = ConnectionState.READY
        state.authentication_exception = None
        state.last_failure = None
        self._reset_reconnect_backoff(state)
        self._reset_connection_setup_timeout(state)
        self._connecting_nodes.discard(node_id)

    def authentication_failed(self, node_id: str, now_ms: int, exception: BaseException | None) -> None:
        state = self._state(node_id)
        state.authentication_exception = exception
        state.state = ConnectionState.AUTHENTICATION_FAILED
        state.last_connect_attempt_ms = now_ms
        self._update_reconnect_backoff(state)

    def throttle(self, node_id: str, throttle_until_time_ms: int) -> None:
        state = self._node_state.get(node_id)
        if state is not None:
            state.throttle_until_time_ms = max(state.throttle_until_time_ms, throttle_until_time_ms)

    def remove(self, node_id: str) -> None:
        self._node_state.pop(node_id, None)
        self._connecting_nodes.discard(node_id)

    # --- backoff bookkeeping -------------------------------------------------------------------

    def _reset_reconnect_backoff(self, state: NodeConnectionState) -> None:
        state.failed_attempts = 0
        state.reconnect_backoff_ms = self._reconnect_backoff.backoff(0)

    def _update_reconnect_backoff(self, state: NodeConnectionState) -> None:
        state.reconnect_backoff_ms = self._reconnect_backoff.backoff(state.failed_attempts)
        state.failed_attempts += 1

    def _reset_connection_setup_timeout(self, state: NodeConnectionState) -> None:
        state.failed_connect_attempts = 0
        state.connection_setup_timeout_ms = self._connection_setup_timeout.backoff(0)

    def _update_connection_setup_timeout(self, state: NodeConnectionState) -> None:
        state.failed_connect_attempts += 1
        state.connection_setup_timeout_ms = self._connection_setup_timeout.backoff(state.failed_connect_attempts)
