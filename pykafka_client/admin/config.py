"""AdminClient configuration: Kafka's ``AdminClientConfig`` keys, names and defaults.

Unknown keys raise :class:`~pykafka_client.errors.ConfigurationError` naming the key. Values may be
given as Python values or as strings (``.properties`` style). ``ssl.*`` / ``sasl.*`` keys go to the
transport (:func:`pykafka_client.network.transport.channel_builder.create_channel_builder`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykafka_client.config import AbstractConfig, ConfigDef, ConfigType, at_least, non_empty_list, one_of
from pykafka_client.errors import ConfigurationError

_T = ConfigType

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

ADMIN_CONFIG = (
    ConfigDef()
    .define("bootstrap.servers", _T.LIST, None, non_empty_list, "host:port pairs used to discover the cluster", nullable=True)
    .define("client.id", _T.STRING, "", doc="logical name sent with every request")
    .define("client.dns.lookup", _T.STRING, "use_all_dns_ips", one_of("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"))
    .define("metadata.max.age.ms", _T.LONG, 300_000, at_least(0))
    .define("send.buffer.bytes", _T.INT, 131_072, at_least(-1))
    .define("receive.buffer.bytes", _T.INT, 65_536, at_least(-1))
    .define("reconnect.backoff.ms", _T.LONG, 50, at_least(0))
    .define("reconnect.backoff.max.ms", _T.LONG, 1000, at_least(0))
    .define("retry.backoff.ms", _T.LONG, 100, at_least(0))
    .define("retry.backoff.max.ms", _T.LONG, 1000, at_least(0))
    .define("request.timeout.ms", _T.INT, 30_000, at_least(0))
    .define("default.api.timeout.ms", _T.INT, 60_000, at_least(0))
    .define("socket.connection.setup.timeout.ms", _T.LONG, 10_000, at_least(0))
    .define("socket.connection.setup.timeout.max.ms", _T.LONG, 30_000, at_least(0))
    .define("connections.max.idle.ms", _T.LONG, 300_000)
    .define("retries", _T.INT, 2**31 - 1, at_least(0))
    .define("metadata.recovery.strategy", _T.STRING, "rebootstrap", one_of("none", "rebootstrap"))
    .define("metadata.recovery.rebootstrap.trigger.ms", _T.LONG, 300_000, at_least(0))
    .define("security.protocol", _T.STRING, "PLAINTEXT", one_of(*SECURITY_PROTOCOLS))
    .define("ssl.ca.location", _T.STRING, None, nullable=True)
    .define("ssl.certificate.location", _T.STRING, None, nullable=True)
    .define("ssl.key.location", _T.STRING, None, nullable=True)
    .define("ssl.key.password", _T.PASSWORD, None, nullable=True)
    .define("ssl.check.hostname", _T.BOOLEAN, True)
    .define("ssl.endpoint.identification.algorithm", _T.STRING, "https")
    .define("ssl.truststore.location", _T.STRING, None, nullable=True)
    .define("ssl.truststore.type", _T.STRING, None, nullable=True)
    .define("ssl.keystore.location", _T.STRING, None, nullable=True)
    .define("ssl.keystore.password", _T.PASSWORD, None, nullable=True)
    .define("ssl.keystore.type", _T.STRING, None, nullable=True)
    .define("ssl.enabled.protocols", _T.LIST, None, nullable=True)
    .define("ssl.cipher.suites", _T.LIST, None, nullable=True)
    .define("sasl.mechanism", _T.STRING, "GSSAPI")
    .define("sasl.username", _T.STRING, None, nullable=True)
    .define("sasl.password", _T.PASSWORD, None, nullable=True)
    .define("sasl.jaas.config", _T.PASSWORD, None, nullable=True)
)


class AdminClientConfig(AbstractConfig):
    """Parsed admin configuration (Java ``AdminClientConfig``)."""

    def __init__(self, originals: Mapping[str, Any]) -> None:
        super().__init__(ADMIN_CONFIG, originals)
        if not self.values["bootstrap.servers"]:
            raise ConfigurationError("Missing required configuration 'bootstrap.servers'")
        self.bootstrap_addresses = parse_bootstrap_servers(self.values["bootstrap.servers"])

    def security_config(self) -> dict[str, Any]:
        """The keys the transport reads (security.protocol, ssl.*, sasl.*), without unset ones."""
        return {
            k: v
            for k, v in self.values.items()
            if (k == "security.protocol" or k.startswith(("ssl.", "sasl."))) and v is not None
        }


def parse_bootstrap_servers(servers: list[str]) -> list[tuple[str, int]]:
    """``["host:port", "[::1]:9092"]`` -> ``[(host, port)]``; a bad entry raises ConfigurationError."""
    out: list[tuple[str, int]] = []
    for entry in servers:
        entry = entry.strip()
        if not entry:
            continue
        host, sep, port_s = entry.rpartition(":")
        if not sep or not host or not port_s.isdigit():
            raise ConfigurationError(f"Invalid url in bootstrap.servers: {entry!r}")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        port = int(port_s)
        if not 0 < port < 65536:
            raise ConfigurationError(f"Invalid port in bootstrap.servers: {entry!r}")
        out.append((host, port))
    if not out:
        raise ConfigurationError("No resolvable bootstrap urls given in bootstrap.servers")
    return out
