"""What NetworkClient does when a connection fails or is given up (the failure half of its poll).

Sources of a disconnect: the selector reports one (peer closed, I/O error, TLS/SASL failure, a connect
that was refused), a connection is not set up within its setup timeout, a request gets no response within
its request timeout, a response cannot be parsed, the ApiVersions handshake fails, or metadata has been
failing for so long that the client rebootstraps. Each ends in :meth:`ConnectionFailures._process_disconnection`:
the node's connection state backs off, its API versions are forgotten, its in-flight requests complete as
disconnected (or timed out), and the metadata updater hears about it.

A connection that fails before the node is ready (refused, name not resolved, setup timeout, closed or
unanswered during the ApiVersions handshake, authentication failed) is recorded as the node's
:class:`~pykafka_client.network.connect_failure.ConnectFailure` (kept until the node is ready) and logged at
WARNING the first time, and again only when the cause changes: retries of the same failure log at DEBUG.

A mixin of :class:`~pykafka_client.network.network_client.NetworkClient`, which owns the attributes declared
here.
"""

from __future__ import annotations

import logging

from pykafka_client.errors import AuthenticationError
from pykafka_client.network.api_versions import ApiVersions
from pykafka_client.network.api_versions_handshake import ApiVersionsHandshake
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.cluster_connection_states import ClusterConnectionStates, ConnectionState
from pykafka_client.network.connect_failure import ConnectFailure, ConnectFailureCause
from pykafka_client.network.error_text import classify_connect_error, describe_connect_error, describe_error
from pykafka_client.network.in_flight_requests import InFlightRequestsApi
from pykafka_client.network.metadata_updater import MetadataRecoveryStrategy, MetadataUpdater
from pykafka_client.network.transport.selectable import ChannelState, DisconnectInfo, Selectable
from pykafka_client.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)


class ConnectionFailures:
    selector: Selectable
    connection_states: ClusterConnectionStates
    in_flight_requests: InFlightRequestsApi
    metadata_updater: MetadataUpdater
    api_versions: ApiVersions
    metadata_recovery_strategy: MetadataRecoveryStrategy
    rebootstrap_trigger_ms: int
    _handshake: ApiVersionsHandshake
    _node_addresses: dict[str, str]
    _node_host_ports: dict[str, str]

    def _node_label(self, node_id: str) -> str:
        """``node 0 (host:port)`` for messages."""
        return f"node {node_id} ({self._node_address(node_id)})"

    def _node_address(self, node_id: str) -> str:
        """``host:port`` last used for ``node_id`` (or from the metadata), for messages."""
        address = self._node_addresses.get(node_id)
        if address is not None:
            return address
        for node in self.metadata_updater.fetch_nodes():
            if node.id_string == node_id:
                return f"{node.host}:{node.port}"
        return "address unknown"

    def _record_connect_failure(
        self,
        node_id: str,
        now_ms: int,
        cause: ConnectFailureCause,
        detail: str,
        error: BaseException | None,
        resolved_address: str | None,
        warn: bool = True,
    ) -> None:
        """Remember why ``node_id`` could not be connected; WARNING the first time (and when the cause
        changes), DEBUG for the retries that fail the same way."""
        previous = self.connection_states.last_connect_failure(node_id)
        address = self._node_host_ports.get(node_id) or self._node_address(node_id)
        failure = ConnectFailure(node_id, address, resolved_address, cause, detail, now_ms, error)
        self.connection_states.connect_failed(node_id, failure)
        repeated = previous is not None and previous.cause is cause
        log.log(
            logging.WARNING if warn and not repeated else logging.DEBUG,
            "cannot connect to %s: %s; check that a broker listens at %s (bootstrap.servers, or the broker's"
            " advertised.listeners); retrying after the reconnect backoff%s",
            self._node_label(node_id),
            detail,
            address,
            "" if repeated else " (further failures of this node that have the same cause are logged at DEBUG)",
        )

    def _setup_failure(
        self, node_id: str, info: DisconnectInfo, timed_out: bool
    ) -> tuple[ConnectFailureCause, str, BaseException | None] | None:
        """Why a disconnect of ``node_id`` (still in its pre-disconnect state) means it could not be set up,
        or None when it was ready (or we closed it ourselves)."""
        state = self.connection_states.node_state(node_id)
        if state is None or state.state not in (ConnectionState.CONNECTING, ConnectionState.CHECKING_API_VERSIONS):
            return None
        error = info.exception
        connecting = state.state is ConnectionState.CONNECTING
        if timed_out and connecting:
            return (
                ConnectFailureCause.TIMED_OUT,
                f"timed out: not connected within {state.connection_setup_timeout_ms} ms (the socket connection"
                " setup timeout, socket.connection.setup.timeout.ms)",
                error,
            )
        if timed_out:
            return (
                ConnectFailureCause.TIMED_OUT,
                "timed out: connected, but no answer to ApiVersions within request.timeout.ms (not a Kafka"
                " listener, or one with another security.protocol)",
                error,
            )
        if info.state is ChannelState.LOCAL_CLOSE and error is None:
            return None  # closed by this client (rebootstrap), not a failure of the broker
        if info.state is ChannelState.NOT_CONNECTED or connecting:
            return classify_connect_error(error), describe_connect_error(error), error
        because = f" ({describe_error(error)})" if error is not None else ""
        return (
            ConnectFailureCause.CLOSED_DURING_SETUP,
            f"connection closed before the broker answered ApiVersions{because}: not a Kafka listener, or one"
            " with another security.protocol",
            error,
        )

    def _forget_versions(self, node_id: str) -> None:
        self.api_versions.remove(node_id)
        self._handshake.forget(node_id)

    def _rebootstrap(self, responses: list[ClientResponse], now_ms: int) -> None:
        """Metadata updates failing for longer than metadata.recovery.rebootstrap.trigger.ms (the poll asks, with
        ``metadata.recovery.strategy=rebootstrap``): drop every connection to the known brokers and start again from
        bootstrap.servers."""
        updater = self.metadata_updater
        log.info("no metadata for %d ms: rebootstrapping", self.rebootstrap_trigger_ms)
        for node in updater.fetch_nodes():
            node_id = node.id_string
            if self.connection_states.is_preparing_connection(node_id) or self.connection_states.is_connected(node_id):
                self.selector.close_channel(node_id)
                self._process_disconnection(responses, node_id, now_ms, DisconnectInfo(ChannelState.LOCAL_CLOSE))
        updater.rebootstrap()

    def _close_on_protocol_error(
        self, responses: list[ClientResponse], node_id: str, now_ms: int, error: BaseException
    ) -> None:
        self.selector.close_channel(node_id)
        self._process_disconnection(responses, node_id, now_ms, DisconnectInfo(ChannelState.LOCAL_CLOSE, error))
        self.metadata_updater.request_update()

    def _handle_disconnections(self, responses: list[ClientResponse], now_ms: int) -> None:
        disconnected = self.selector.disconnected()
        for node_id, info in disconnected.items():
            if self.connection_states.node_state(node_id) is None:
                continue
            log.log(
                logging.DEBUG if info.state is ChannelState.NOT_CONNECTED else logging.INFO,
                "%s disconnected (channel state %s)",
                self._node_label(node_id),
                info.state.name,
            )
            self._process_disconnection(responses, node_id, now_ms, info)
        if disconnected:
            # A broker may be gone: refresh metadata.
            self.metadata_updater.request_update()

    def _handle_timed_out_connections(self, responses: list[ClientResponse], now_ms: int) -> None:
        for node_id in self.connection_states.nodes_with_connection_setup_timeout(now_ms):
            log.debug("disconnecting from %s: the connection was not set up in time", self._node_label(node_id))
            self.selector.close_channel(node_id)
            self._process_disconnection(
                responses, node_id, now_ms, DisconnectInfo(ChannelState.LOCAL_CLOSE), timed_out=True
            )

    def _handle_timed_out_requests(self, node_ids: list[str], responses: list[ClientResponse], now_ms: int) -> None:
        """``node_ids``: the nodes with a request past its timeout (``nodes_with_timed_out_requests``)."""
        for node_id in node_ids:
            log.info(
                "disconnecting from %s: a request got no response within its request timeout", self._node_label(node_id)
            )
            self.selector.close_channel(node_id)
            self._process_disconnection(
                responses, node_id, now_ms, DisconnectInfo(ChannelState.LOCAL_CLOSE), timed_out=True
            )
        if node_ids:
            self.metadata_updater.request_update()

    def _process_disconnection(
        self,
        responses: list[ClientResponse],
        node_id: str,
        now_ms: int,
        info: DisconnectInfo,
        timed_out: bool = False,
    ) -> None:
        setup_failure = self._setup_failure(node_id, info, timed_out)
        self.connection_states.disconnected(node_id, now_ms)
        self._forget_versions(node_id)
        auth_exception: BaseException | None = None
        resolved = self._node_addresses.get(node_id)
        if info.state is ChannelState.AUTHENTICATION_FAILED:
            auth_exception = info.exception or AuthenticationError(f"authentication with node {node_id} failed")
            self.connection_states.authentication_failed(node_id, now_ms, auth_exception)
            log.error(
                "authentication with %s failed: %s; check the sasl.* and ssl.* settings",
                self._node_label(node_id),
                describe_error(auth_exception),
            )
            self._record_connect_failure(
                node_id, now_ms, ConnectFailureCause.AUTHENTICATION_FAILED,
                f"authentication failed ({describe_error(auth_exception)})", auth_exception, resolved, warn=False,
            )
        elif setup_failure is not None:
            cause, detail, error = setup_failure
            self._record_connect_failure(node_id, now_ms, cause, detail, error, resolved)
        self._cancel_in_flight_requests(node_id, now_ms, responses, timed_out, auth_exception, info.exception)
        self.metadata_updater.handle_server_disconnect(now_ms, node_id, auth_exception)

    def _cancel_in_flight_requests(
        self,
        node_id: str,
        now_ms: int,
        responses: list[ClientResponse] | None,
        timed_out: bool,
        auth_exception: BaseException | None = None,
        cause: BaseException | None = None,
    ) -> None:
        for request in self.in_flight_requests.clear_all(node_id):
            if not request.is_internal_request:
                if responses is not None:
                    if timed_out:
                        responses.append(request.timed_out(now_ms))
                    else:
                        responses.append(request.disconnected(now_ms, auth_exception, cause))
            elif request.header.api_key == ApiKey.METADATA:
                self.metadata_updater.handle_failed_request(now_ms, None)
