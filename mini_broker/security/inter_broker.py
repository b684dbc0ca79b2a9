"""How a cluster broker connects to the other brokers' inter-broker listener (Kafka: the client side of
``ChannelBuilders`` for ``inter.broker.listener.name``): TLS with the listener's ``ssl.*`` settings (its trust
store to verify the other broker, its key store as the client certificate) and SASL with the broker's own
credentials, the ``username`` / ``password`` options of the listener's JAAS configuration for
``sasl.mechanism.inter.broker.protocol`` (``listener.name.<l>.<mechanism>.sasl.jaas.config``, as Kafka reads them).

The connections are blocking (the replica fetchers, transaction verification and marker senders each own one
and send one request at a time), so the SASL exchange is a blocking handshake right after connecting; before a
request that would reach the end of the session lifetime the broker answered (KIP-368), the same connection
authenticates again.
"""

from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Callable
from dataclasses import dataclass

from mini_broker.config import KafkaConfig
from mini_broker.security.jaas import parse_jaas_config
from mini_broker.security.listener_security import SASL_PROTOCOLS, SSL_PROTOCOLS, listener_ssl_context
from pykafka_client.errors import ConfigurationError, SaslAuthenticationError
from pykafka_client.network.transport.sasl import wire
from pykafka_client.network.transport.sasl.mechanism import SaslClientMechanism
from pykafka_client.network.transport.sasl.plain import PLAIN, PlainClient
from pykafka_client.network.transport.sasl.scram import ScramClient, ScramMechanism
from pykafka_client.protocol.types import Chunk
from pykafka_client.utils.time import Time

_SIZE = struct.Struct(">i")

#: re-authenticate once this share of the session lifetime has passed (the client side of KIP-368 re-authenticates
#: between 85% and 95% of it; a blocking connection has no background timer, so it checks before each request)
REAUTH_FRACTION = 0.85


@dataclass(frozen=True)
class _SaslLogin:
    mechanism: str
    username: str
    password: str

    def client(self) -> SaslClientMechanism:
        if self.mechanism == PLAIN:
            return PlainClient(self.username, self.password)
        scram = ScramMechanism.for_mechanism_name(self.mechanism)
        assert scram is not None  # checked when the configuration was read
        return ScramClient(scram, self.username, self.password)


def read_exact(sock: socket.socket, n: int) -> bytes:
    """``n`` bytes from a blocking socket; ConnectionError when the other side closes first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def send_frame(sock: socket.socket, chunks: list[Chunk]) -> None:
    """Send an encoded request (its in-memory chunks)."""
    sock.sendall(b"".join(c for c in chunks if isinstance(c, (bytes, bytearray, memoryview))))


def read_frame(sock: socket.socket) -> bytes:
    """One size-prefixed Kafka frame's payload."""
    return read_exact(sock, _SIZE.unpack(read_exact(sock, 4))[0])


class InterBrokerSecurity:
    """The security of this broker's outgoing inter-broker connections; build with :meth:`from_config`."""

    def __init__(self, listener: str, ssl_context: ssl.SSLContext | None, login: _SaslLogin | None,
                 time: Time) -> None:
        self.listener = listener
        self.ssl_context = ssl_context
        self._login = login
        self._time = time

    @classmethod
    def from_config(cls, config: KafkaConfig, time: Time) -> InterBrokerSecurity:
        """Reads the inter-broker listener's protocol, TLS settings and SASL login; ConfigurationError naming the
        key when something is missing."""
        listener = config.inter_broker_listener_name
        protocol = config.listener_security_protocol(listener)
        context = listener_ssl_context(config, listener, server_side=False) if protocol in SSL_PROTOCOLS else None
        login = _sasl_login(config, listener) if protocol in SASL_PROTOCOLS else None
        return cls(listener, context, login, time)

    @property
    def secured(self) -> bool:
        return self.ssl_context is not None or self._login is not None

    def connect(self, endpoint: tuple[str, int], timeout_s: float, client_id: str) -> SecuredSocket:
        """A connection to ``endpoint`` with TLS and SASL done (raises OSError, ssl.SSLError or
        SaslAuthenticationError)."""
        host = endpoint[0]
        sock: socket.socket = socket.create_connection(endpoint, timeout=timeout_s)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                sock = self.ssl_context.wrap_socket(sock, server_hostname=host)
            conn = SecuredSocket(sock, self._time)
            if self._login is not None:
                conn.authenticate(self._login, client_id)
            return conn
        except BaseException:
            sock.close()
            raise


class SecuredSocket:
    """A blocking socket to another broker, authenticated when its listener uses SASL."""

    def __init__(self, sock: socket.socket, time: Time) -> None:
        self.sock = sock
        self._time = time
        self._login: _SaslLogin | None = None
        self._reauth_at_ms: int | None = None
        #: how many times this connection authenticated (the first time included)
        self.authentications = 0

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def authenticate(self, login: _SaslLogin, client_id: str) -> None:
        """SaslHandshake then SaslAuthenticate rounds until the mechanism completes; remembers when to
        re-authenticate when the broker answered a session lifetime."""
        self._login = login
        handshake_id = wire.MIN_RESERVED_CORRELATION_ID
        send_frame(self.sock, wire.handshake_request(login.mechanism, handshake_id, client_id))
        answer = wire.decode_handshake_response(memoryview(read_frame(self.sock)), handshake_id)
        if answer.error_code:
            raise SaslAuthenticationError(
                f"the inter-broker listener does not enable {login.mechanism} (it offers {answer.mechanisms}); set "
                "sasl.mechanism.inter.broker.protocol to one of them")
        mechanism = login.client()
        token = mechanism.evaluate_challenge(b"")
        lifetime_ms = 0
        while token is not None:
            cid = wire.MIN_RESERVED_CORRELATION_ID + 1
            send_frame(self.sock, wire.authenticate_request(token, cid, client_id))
            response = wire.decode_authenticate_response(memoryview(read_frame(self.sock)), cid)
            if response.error_code:
                raise SaslAuthenticationError(
                    f"inter-broker authentication as {login.username!r} with {login.mechanism} failed: "
                    f"{response.error_message}; check the username/password of the inter-broker listener's "
                    f"{login.mechanism.lower()}.sasl.jaas.config")
            lifetime_ms = response.session_lifetime_ms
            token = mechanism.evaluate_challenge(bytes(response.auth_bytes)) if not mechanism.is_complete() else None
        self.authentications += 1
        self._reauth_at_ms = (self._time.milliseconds() + int(lifetime_ms * REAUTH_FRACTION)) if lifetime_ms > 0 else None

    def maybe_reauthenticate(self, client_id: str) -> None:
        """Authenticate again on this connection when the session is near its end (KIP-368)."""
        if self._login is not None and self._reauth_at_ms is not None and self._time.milliseconds() >= self._reauth_at_ms:
            self.authenticate(self._login, client_id)


def _sasl_login(config: KafkaConfig, listener: str) -> _SaslLogin:
    mechanism = str(config.get("sasl.mechanism.inter.broker.protocol") or "").strip().upper()
    if mechanism != PLAIN and ScramMechanism.for_mechanism_name(mechanism) is None:
        raise ConfigurationError(
            f"sasl.mechanism.inter.broker.protocol={mechanism}: a mini_broker authenticates to the inter-broker "
            f"listener {listener} with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; set one of them")
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    jaas = config.listener_value(listener, f"{mechanism.lower()}.sasl.jaas.config") or \
        config.listener_value(listener, "sasl.jaas.config")
    if not jaas:
        raise ConfigurationError(f"the inter-broker listener {listener} uses SASL {mechanism} but has no broker "
                                 f'credentials: set {key} with username="<broker user>" password="<its password>"')
    options = parse_jaas_config(str(jaas), key)[0].options
    username, password = options.get("username"), options.get("password")
    if not username or password is None:
        raise ConfigurationError(f'{key}: the broker authenticates to the other brokers with the username="..." and '
                                 'password="..." options of this login module; add them')
    return _SaslLogin(mechanism, username, password)


def connector(security: InterBrokerSecurity | None, time: Time
              ) -> Callable[[tuple[str, int], float, str], SecuredSocket]:
    """How a BrokerConnection opens its socket: through ``security``, or plain TCP without it."""
    if security is not None:
        return security.connect

    def plain(endpoint: tuple[str, int], timeout_s: float, client_id: str) -> SecuredSocket:
        sock = socket.create_connection(endpoint, timeout=timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return SecuredSocket(sock, time)
    return plain
