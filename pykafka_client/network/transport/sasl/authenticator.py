"""SASL authenticators that run inside a channel before it is ready (KIP-43 / KIP-152).

Java: ``common.security.authenticator.SaslClientAuthenticator`` / ``SaslServerAuthenticator``. The
client sends ``SaslHandshakeRequest`` v1 naming its mechanism, then each mechanism token in a
``SaslAuthenticateRequest`` until the mechanism completes; the server answers each. Both sides are
driven by the Selector through :meth:`authenticate` whenever the socket is ready, and never block.

Errors: a mechanism the server has not enabled -> :class:`~pykafka_client.errors.UnsupportedSaslMechanismError`;
failed credentials -> :class:`~pykafka_client.errors.SaslAuthenticationError` carrying the server's
message. The server writes its error response before failing, so the client sees the reason.

Messages are the generated protocol classes (:mod:`pykafka_client.network.transport.sasl.wire`). The server side
also answers the ApiVersions request Java clients send before the handshake (``api_versions_handler``,
default: the SASL APIs only) and accepts SaslAuthenticate v0-v2.

Re-authentication (KIP-368), client side: the broker answers the session lifetime (``connections.max.reauth.ms``)
in SaslAuthenticate v1+; :meth:`SaslClientAuthenticator.begin_reauthentication` runs the handshake and the
mechanism again, with a fresh mechanism, on the same connection (the Selector decides when: see
:class:`~pykafka_client.network.transport.selector.Selector`). Not done: GSSAPI, OAUTHBEARER with a token from an
OAuth server (the unsecured test token is done: :mod:`~pykafka_client.network.transport.sasl.oauthbearer`),
SaslHandshake v0 (unframed tokens).
"""

from __future__ import annotations

import enum
import re
from typing import Callable, Mapping

from pykafka_client.errors import (
    ConfigurationError,
    IllegalSaslStateError,
    SaslAuthenticationError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
    for_code,
)
from pykafka_client.network.transport.channel import PeerClosedError
from pykafka_client.network.transport.network_receive import FrameReader
from pykafka_client.network.transport.network_send import SendWriter, framed_send
from pykafka_client.network.transport.sasl import wire
from pykafka_client.network.transport.sasl.mechanism import (
    SaslClientMechanism,
    SaslServerMechanism,
    SaslServerMechanismFactory,
)
from pykafka_client.network.transport.sasl.oauthbearer import OAUTHBEARER, OAuthBearerClient, unsecured_login_token
from pykafka_client.network.transport.sasl.plain import PLAIN, PlainClient
from pykafka_client.network.transport.sasl.scram import ScramClient, ScramMechanism
from pykafka_client.network.transport.transport_layer import TransportLayer
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.types import Chunk, Message
from pykafka_client.utils.time import SYSTEM_TIME

#: Largest SASL frame accepted during authentication (Java ``sasl.server.max.receive.size`` default).
MAX_SASL_RECEIVE_SIZE = 524_288

UNSUPPORTED_SASL_MECHANISM = UnsupportedSaslMechanismError.code
SASL_AUTHENTICATION_FAILED = SaslAuthenticationError.code
ILLEGAL_SASL_STATE = IllegalSaslStateError.code


class _FrameIO:
    """One outgoing frame at a time and one incoming frame at a time over a transport."""

    def __init__(self, connection_id: str) -> None:
        self._id = connection_id
        self._reader = FrameReader(connection_id, MAX_SASL_RECEIVE_SIZE)
        self._out: SendWriter | None = None

    def queue(self, frame: list[Chunk]) -> None:
        self._out = SendWriter(framed_send(self._id, frame))

    def pending_write(self) -> bool:
        return self._out is not None

    def flush(self, transport: TransportLayer) -> bool:
        """True once nothing is left to write."""
        if self._out is not None:
            self._out.write_to(transport)
            if self._out.completed():
                self._out = None
        return self._out is None

    def receive(self, transport: TransportLayer) -> memoryview | None:
        while True:
            n = self._reader.read_from(transport)
            if n < 0:
                raise PeerClosedError(f"connection {self._id} closed by the peer during SASL authentication")
            if self._reader.complete():
                return self._reader.take().payload
            if n == 0:
                return None


class SaslState(enum.Enum):
    SEND_HANDSHAKE_REQUEST = "SEND_HANDSHAKE_REQUEST"
    RECEIVE_HANDSHAKE_RESPONSE = "RECEIVE_HANDSHAKE_RESPONSE"
    INTERMEDIATE = "INTERMEDIATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class SaslClientAuthenticator:
    """Client side; one per connection."""

    def __init__(self, connection_id: str, mechanism: SaslClientMechanism, client_id: str | None = None,
                 new_mechanism: Callable[[], SaslClientMechanism] | None = None) -> None:
        self._mechanism = mechanism
        #: a fresh mechanism for each re-authentication (None: this connection cannot re-authenticate)
        self._new_mechanism = new_mechanism
        #: how many times the connection authenticated (re-authentications included)
        self.authentications = 0
        self._client_id = client_id
        self._io = _FrameIO(connection_id)
        self._state = SaslState.SEND_HANDSHAKE_REQUEST
        self._next_correlation_id = wire.MIN_RESERVED_CORRELATION_ID
        self._expected_correlation_id = -1
        self.session_lifetime_ms = 0

    @property
    def state(self) -> SaslState:
        return self._state

    def complete(self) -> bool:
        return self._state is SaslState.COMPLETE

    def wants_write(self) -> bool:
        return self._io.pending_write() or self._state is SaslState.SEND_HANDSHAKE_REQUEST

    def principal(self) -> str | None:
        return None

    def _correlation_id(self) -> int:
        cid = self._next_correlation_id
        self._next_correlation_id = (
            cid + 1 if cid < wire.MAX_RESERVED_CORRELATION_ID else wire.MIN_RESERVED_CORRELATION_ID
        )
        self._expected_correlation_id = cid
        return cid

    def authenticate(self, transport: TransportLayer) -> None:
        try:
            self._step(transport)
        except BaseException:
            self._state = SaslState.FAILED
            raise

    def _step(self, transport: TransportLayer) -> None:
        while True:
            if not self._io.flush(transport):
                return
            if self._state is SaslState.SEND_HANDSHAKE_REQUEST:
                self._io.queue(
                    wire.handshake_request(self._mechanism.mechanism_name, self._correlation_id(), self._client_id)
                )
                self._state = SaslState.RECEIVE_HANDSHAKE_RESPONSE
                continue
            if self._state in (SaslState.COMPLETE, SaslState.FAILED):
                return
            payload = self._io.receive(transport)
            if payload is None:
                return
            if self._state is SaslState.RECEIVE_HANDSHAKE_RESPONSE:
                handshake = wire.decode_handshake_response(payload, self._expected_correlation_id)
                error_code, enabled = handshake.error_code, handshake.mechanisms
                if error_code == UNSUPPORTED_SASL_MECHANISM:
                    raise UnsupportedSaslMechanismError(
                        f"Client SASL mechanism '{self._mechanism.mechanism_name}' not enabled in the server, "
                        f"enabled mechanisms are {enabled}"
                    )
                if error_code != 0:
                    raise for_code(error_code)(f"SASL handshake failed with error code {error_code}")
                self._send_token(self._mechanism.evaluate_challenge(b""))
                self._state = SaslState.INTERMEDIATE
                continue
            response = wire.decode_authenticate_response(payload, self._expected_correlation_id)
            if response.error_code != 0:
                cls = for_code(response.error_code)
                raise cls(response.error_message or f"SASL authentication failed with error code {response.error_code}")
            self.session_lifetime_ms = response.session_lifetime_ms
            if self._mechanism.is_complete():
                self._completed()
                return
            token = self._mechanism.evaluate_challenge(bytes(response.auth_bytes))
            if self._mechanism.is_complete() and token is None:
                self._completed()
                return
            self._send_token(token)

    def _completed(self) -> None:
        self._state = SaslState.COMPLETE
        self.authentications += 1

    def can_reauthenticate(self) -> bool:
        """Authenticated, with a session lifetime from the broker and a way to make a fresh mechanism."""
        return self._state is SaslState.COMPLETE and self.session_lifetime_ms > 0 and self._new_mechanism is not None

    def begin_reauthentication(self) -> None:
        """Start over on the same connection (KIP-368): SaslHandshake, then the mechanism's exchange with a fresh
        mechanism; the channel is not ready until it completes. Only with no request in flight on the channel
        (the Selector's caller ensures it), so every frame read until then is a SASL one."""
        if not self.can_reauthenticate():
            raise IllegalSaslStateError("re-authentication needs a completed authentication with a session lifetime")
        assert self._new_mechanism is not None
        self._mechanism = self._new_mechanism()
        self.session_lifetime_ms = 0
        self._state = SaslState.SEND_HANDSHAKE_REQUEST

    def _send_token(self, token: bytes | None) -> None:
        if token is None:
            raise IllegalSaslStateError(f"{self._mechanism.mechanism_name} produced no token before completing")
        self._io.queue(wire.authenticate_request(token, self._correlation_id(), self._client_id))


#: Answers an ApiVersions request during authentication: (header, body or None when the version is
#: unsupported) -> the response frame pieces. Default: :func:`wire.sasl_api_versions_response`.
ApiVersionsHandler = Callable[[wire.RequestHeader, "Message | None"], "list[Chunk]"]


class SaslServerAuthenticator:
    """Server side; one per accepted connection. ``mechanisms`` maps each enabled mechanism name to a
    factory of fresh :class:`SaslServerMechanism` objects."""

    def __init__(
        self,
        connection_id: str,
        mechanisms: Mapping[str, SaslServerMechanismFactory],
        api_versions_handler: ApiVersionsHandler | None = None,
    ) -> None:
        self._factories = dict(mechanisms)
        self._api_versions_handler = api_versions_handler or wire.sasl_api_versions_response
        self._io = _FrameIO(connection_id)
        self._state = SaslState.RECEIVE_HANDSHAKE_RESPONSE  # waiting for the handshake request
        self._mechanism: SaslServerMechanism | None = None
        self._pending_failure: BaseException | None = None

    @property
    def state(self) -> SaslState:
        return self._state

    def complete(self) -> bool:
        return self._state is SaslState.COMPLETE and not self._io.pending_write()

    def wants_write(self) -> bool:
        return self._io.pending_write()

    def principal(self) -> str | None:
        return self._mechanism.authorization_id() if self._mechanism is not None else None

    def authenticate(self, transport: TransportLayer) -> None:
        try:
            self._step(transport)
        except BaseException:
            self._state = SaslState.FAILED
            raise

    def _fail_after_response(self, frame: list[Chunk], error: BaseException) -> None:
        self._io.queue(frame)
        self._pending_failure = error

    def _step(self, transport: TransportLayer) -> None:
        while True:
            if not self._io.flush(transport):
                return
            if self._pending_failure is not None:
                raise self._pending_failure
            if self._state in (SaslState.COMPLETE, SaslState.FAILED):
                return
            payload = self._io.receive(transport)
            if payload is None:
                return
            header, _ = wire.decode_request_header(payload)
            if header.request_api_key == ApiKey.API_VERSIONS and self._mechanism is None:
                try:
                    _, body = wire.decode_request(payload)
                except UnsupportedVersionError:
                    self._io.queue(self._api_versions_handler(header, None))
                else:
                    self._io.queue(self._api_versions_handler(header, body))
                continue
            if self._mechanism is None:
                self._handle_handshake(header, payload)
            else:
                self._handle_authenticate(header, payload)

    @staticmethod
    def _expect(header: wire.RequestHeader, api_key: ApiKey, versions: tuple[int, int], during: str) -> None:
        if header.request_api_key != api_key or not versions[0] <= header.request_api_version <= versions[1]:
            raise IllegalSaslStateError(
                f"Unexpected Kafka request of type {header.request_api_key} v{header.request_api_version} during {during}"
            )

    def _handle_handshake(self, header: wire.RequestHeader, payload: memoryview) -> None:
        self._expect(header, ApiKey.SASL_HANDSHAKE, wire.SERVER_HANDSHAKE_VERSIONS, "SASL handshake")
        _, body = wire.decode_request(payload)
        assert isinstance(body, wire.SaslHandshakeRequest)
        mechanism = body.mechanism
        enabled = list(self._factories)
        factory = self._factories.get(mechanism)
        if factory is None:
            self._fail_after_response(
                wire.handshake_response(header, UNSUPPORTED_SASL_MECHANISM, enabled),
                UnsupportedSaslMechanismError(f"Unsupported SASL mechanism {mechanism}, enabled are {enabled}"),
            )
            return
        self._mechanism = factory()
        self._io.queue(wire.handshake_response(header, 0, enabled))

    def _handle_authenticate(self, header: wire.RequestHeader, payload: memoryview) -> None:
        assert self._mechanism is not None
        self._expect(header, ApiKey.SASL_AUTHENTICATE, wire.SERVER_AUTHENTICATE_VERSIONS, "SASL authentication")
        _, body = wire.decode_request(payload)
        assert isinstance(body, wire.SaslAuthenticateRequest)
        try:
            challenge = self._mechanism.evaluate_response(bytes(body.auth_bytes))
        except (SaslAuthenticationError, IllegalSaslStateError) as e:
            response = wire.authenticate_response(header, e.code, e.message or str(e), b"")
            self._fail_after_response(response, e)
            return
        self._io.queue(wire.authenticate_response(header, 0, None, challenge))
        if self._mechanism.is_complete():
            self._state = SaslState.COMPLETE


# --- configuration -----------------------------------------------------------------------------------

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def jaas_options(jaas: str) -> dict[str, str]:
    """The ``key="value"`` options of a ``sasl.jaas.config`` login module line."""
    return {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _JAAS_OPTION.findall(jaas)}


def parse_jaas_credentials(jaas: str) -> tuple[str | None, str | None]:
    """``username`` and ``password`` options of a ``sasl.jaas.config`` login module line."""
    options = jaas_options(jaas)
    return options.get("username"), options.get("password")


def client_mechanism_from_config(config: Mapping[str, object]) -> Callable[[], SaslClientMechanism]:
    """A factory of client mechanisms for ``sasl.mechanism`` with the credentials of ``config``
    (``sasl.jaas.config``, or ``sasl.username`` / ``sasl.password``)."""
    name = str(config.get("sasl.mechanism", "GSSAPI")).upper()
    if name == OAUTHBEARER:
        return _oauthbearer_from_config(config)
    username = config.get("sasl.username")
    password = config.get("sasl.password")
    jaas = config.get("sasl.jaas.config")
    if jaas is not None and (username is None or password is None):
        ju, jp = parse_jaas_credentials(str(jaas))
        username = username if username is not None else ju
        password = password if password is not None else jp
    scram = ScramMechanism.for_mechanism_name(name)
    if name != PLAIN and scram is None:
        raise ConfigurationError(
            f"sasl.mechanism={name} is not supported: use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
        )
    if username is None or password is None:
        raise ConfigurationError(f"sasl.mechanism={name} needs sasl.jaas.config (or sasl.username and sasl.password)")
    user, pw = str(username), str(password)
    if scram is not None:
        mech = scram
        return lambda: ScramClient(mech, user, pw)
    return lambda: PlainClient(user, pw)


def _oauthbearer_from_config(config: Mapping[str, object]) -> Callable[[], SaslClientMechanism]:
    """OAUTHBEARER with Kafka's unsecured token, made from the ``unsecuredLogin*`` options of ``sasl.jaas.config``
    at each authentication (a fresh ``iat``/``exp`` for each re-authentication)."""
    jaas = config.get("sasl.jaas.config")
    if jaas is None:
        raise ConfigurationError("sasl.mechanism=OAUTHBEARER needs sasl.jaas.config, e.g. org.apache.kafka.common."
                                 "security.oauthbearer.OAuthBearerLoginModule required "
                                 'unsecuredLoginStringClaim_sub="alice";')
    options = jaas_options(str(jaas))

    def token() -> tuple[str, dict[str, str]]:
        return unsecured_login_token(options, SYSTEM_TIME.milliseconds())

    token()  # a bad option fails at configuration, not at the first connection
    return lambda: OAuthBearerClient(token)


def client_authenticator_factory(config: Mapping[str, object]) -> Callable[[str, str | None], SaslClientAuthenticator]:
    """The channel builder's authenticator factory for a SASL client."""
    new_mechanism = client_mechanism_from_config(config)
    client_id = config.get("client.id")
    cid = None if client_id is None else str(client_id)
    return lambda connection_id, host: SaslClientAuthenticator(connection_id, new_mechanism(), cid, new_mechanism)


def server_authenticator_factory(
    mechanisms: Mapping[str, SaslServerMechanismFactory], api_versions_handler: ApiVersionsHandler | None = None
) -> Callable[[str, str | None], SaslServerAuthenticator]:
    """The channel builder's authenticator factory for a SASL listener."""
    return lambda connection_id, host: SaslServerAuthenticator(connection_id, mechanisms, api_versions_handler)
