"""What the producer, the consumer and the admin client share to reach the cluster (Java: ``ClientUtils``).

This module sits above the client core (:mod:`pykafka_client.network`) and below the three clients, which
import it and never each other:

* :func:`parse_bootstrap_servers` (Java ``ClientUtils.parseAndValidateAddresses``): the one reading of
  ``bootstrap.servers``;
* :func:`create_network_client` (Java ``ClientUtils.createNetworkClient``): the Selector with its channel
  builder for ``security.protocol`` / ``ssl.*`` / ``sasl.*``, the bootstrapped Metadata and the
  NetworkClient, from the shared keys of :mod:`pykafka_client.common_client_configs`.
"""

from __future__ import annotations

from collections.abc import Iterable

from pykafka_client.common_client_configs import security_config
from pykafka_client.config import AbstractConfig
from pykafka_client.errors import ConfigurationError
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.transport.selectable import Selectable
from pykafka_client.network.transport.selector import create_client_selector
from pykafka_client.utils.time import SYSTEM_TIME, Time


def parse_bootstrap_servers(servers: Iterable[str]) -> list[tuple[str, int]]:
    """``["host:port", "[::1]:9092"]`` -> ``[(host, port)]``.

    Entries are trimmed and empty ones skipped, as in Java. A malformed entry (no port, a port that is not
    a number or outside 1-65535) or a list with no entry raises ConfigurationError naming it.
    """
    if isinstance(servers, str):
        servers = servers.split(",")
    out: list[tuple[str, int]] = []
    for raw in servers:
        entry = raw.strip()
        if not entry:
            continue
        host, sep, port_text = entry.rpartition(":")
        if not sep or not host or not port_text.isdigit():
            raise ConfigurationError(f"Invalid url in bootstrap.servers: {entry!r} (expected host:port)")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        port = int(port_text)
        if not 0 < port < 65536:
            raise ConfigurationError(f"Invalid port in bootstrap.servers: {entry!r} (must be 1-65535)")
        out.append((host, port))
    if not out:
        raise ConfigurationError("No resolvable bootstrap urls given in bootstrap.servers: set it to host:port[,host:port]")
    return out


def create_network_client(
    config: AbstractConfig,
    metadata: Metadata,
    *,
    client_id: str,
    max_in_flight_requests_per_connection: int,
    time: Time = SYSTEM_TIME,
    selector: Selectable | None = None,
) -> NetworkClient:
    """Bootstrap ``metadata`` from ``bootstrap.servers`` and build the NetworkClient over a Selector for
    the configured security protocol (or over ``selector``, for tests).

    ``config`` is a client configuration holding the shared keys; ``client_id`` is the client's resolved
    id (Java generates ``producer-N`` / ``consumer-<group>-N`` / ``adminclient-N`` when ``client.id`` is
    empty); ``max_in_flight_requests_per_connection`` is the client's (the admin sends one at a time, the
    consumer up to 100, the producer its ``max.in.flight.requests.per.connection``).
    """
    metadata.bootstrap(parse_bootstrap_servers(config["bootstrap.servers"]))
    if selector is None:
        transport_config = {
            **security_config(config.values),
            "client.id": client_id,
            "connections.max.idle.ms": config["connections.max.idle.ms"],
        }
        selector = create_client_selector(transport_config, time)
    return NetworkClient(
        selector,
        metadata,
        client_id=client_id,
        max_in_flight_requests_per_connection=max_in_flight_requests_per_connection,
        reconnect_backoff_ms=config["reconnect.backoff.ms"],
        reconnect_backoff_max_ms=config["reconnect.backoff.max.ms"],
        socket_send_buffer_bytes=config["send.buffer.bytes"],
        socket_receive_buffer_bytes=config["receive.buffer.bytes"],
        request_timeout_ms=config["request.timeout.ms"],
        socket_connection_setup_timeout_ms=config["socket.connection.setup.timeout.ms"],
        socket_connection_setup_timeout_max_ms=config["socket.connection.setup.timeout.max.ms"],
        time=time,
        metadata_recovery_strategy=config["metadata.recovery.strategy"],
        metadata_recovery_rebootstrap_trigger_ms=config["metadata.recovery.rebootstrap.trigger.ms"],
    )
