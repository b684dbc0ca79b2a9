"""Channel builders: turn a socket into a :class:`KafkaChannel` for a security protocol.

Java: ``common.network.ChannelBuilder``, ``PlaintextChannelBuilder``, ``SslChannelBuilder``,
``SaslChannelBuilder`` and ``ChannelBuilders``. A builder is made for one :class:`Mode` (client or
server) and one listener/security protocol; the Selector calls :meth:`ChannelBuilder.build_channel`
for each new connection (``connect``) or accepted socket (``register``).
"""

from __future__ import annotations

import enum
import socket
from typing import TYPE_CHECKING, Callable, Mapping, Protocol

from pykafka_client.errors import ConfigurationError
from pykafka_client.network.transport.channel import Authenticator, KafkaChannel
from pykafka_client.network.transport.network_receive import DEFAULT_MAX_RECEIVE_SIZE
from pykafka_client.network.transport.transport_layer import PlaintextTransportLayer, SslTransportLayer, TransportLayer

if TYPE_CHECKING:
    import ssl  # annotations only: the ssl module is loaded with an SSL context (ssl_factory)


class Mode(enum.Enum):
    CLIENT = "CLIENT"
    SERVER = "SERVER"


class SecurityProtocol(enum.Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @classmethod
    def for_name(cls, name: str) -> SecurityProtocol:
        try:
            return cls(name.upper())
        except ValueError:
            raise ConfigurationError(
                f"Invalid value {name!r} for configuration security.protocol: "
                f"must be one of {', '.join(p.value for p in cls)}"
            ) from None


class ChannelBuilder(Protocol):
    def build_channel(
        self,
        connection_id: str,
        sock: socket.socket,
        *,
        connecting: bool,
        host: str | None,
        max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE,
        remote_address: str | None = None,
    ) -> KafkaChannel: ...


#: Makes a fresh authenticator for a connection: (connection id, host) -> Authenticator.
AuthenticatorFactory = Callable[[str, "str | None"], Authenticator]


class DefaultChannelBuilder:
    """Plaintext or TLS transport, optionally followed by an authenticator (SASL)."""

    def __init__(
        self,
        mode: Mode,
        ssl_context: ssl.SSLContext | None = None,
        authenticator_factory: AuthenticatorFactory | None = None,
    ) -> None:
        self.mode = mode
        self.ssl_context = ssl_context
        self.authenticator_factory = authenticator_factory

    def build_channel(
        self,
        connection_id: str,
        sock: socket.socket,
        *,
        connecting: bool,
        host: str | None,
        max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE,
        remote_address: str | None = None,
    ) -> KafkaChannel:
        transport: TransportLayer
        if self.ssl_context is not None:
            transport = SslTransportLayer(
                sock,
                self.ssl_context,
                server_side=self.mode is Mode.SERVER,
                server_hostname=host,
                peer=remote_address or host or connection_id,
            )
        else:
            transport = PlaintextTransportLayer(sock)
        authenticator = (
            self.authenticator_factory(connection_id, host) if self.authenticator_factory is not None else None
        )
        return KafkaChannel(
            connection_id,
            transport,
            authenticator,
            max_receive_size=max_receive_size,
            connecting=connecting,
            remote_address=remote_address,
        )


def PlaintextChannelBuilder(mode: Mode = Mode.CLIENT) -> DefaultChannelBuilder:
    return DefaultChannelBuilder(mode)


def SslChannelBuilder(mode: Mode, ssl_context: ssl.SSLContext) -> DefaultChannelBuilder:
    return DefaultChannelBuilder(mode, ssl_context)


def create_channel_builder(
    config: Mapping[str, object],
    mode: Mode = Mode.CLIENT,
    *,
    server_authenticator_factory: AuthenticatorFactory | None = None,
) -> DefaultChannelBuilder:
    """The builder for ``security.protocol`` (default PLAINTEXT) with the ``ssl.*`` / ``sasl.*``
    keys of ``config``. A server-side SASL builder needs ``server_authenticator_factory``
    (e.g. from :func:`pykafka_client.network.transport.sasl.server_authenticator_factory`)."""
    protocol = SecurityProtocol.for_name(str(config.get("security.protocol", "PLAINTEXT")))
    ssl_context: ssl.SSLContext | None = None
    if protocol in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL):
        from pykafka_client.network.transport.ssl_factory import create_ssl_context

        ssl_context = create_ssl_context(config, server_side=mode is Mode.SERVER)
    factory: AuthenticatorFactory | None = None
    if protocol in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL):
        if mode is Mode.SERVER:
            if server_authenticator_factory is None:
                raise ConfigurationError(f"a server-side {protocol.value} listener needs a SASL authenticator factory")
            factory = server_authenticator_factory
        else:
            from pykafka_client.network.transport.sasl.authenticator import client_authenticator_factory

            factory = client_authenticator_factory(config)
    return DefaultChannelBuilder(mode, ssl_context, factory)
