"""The broker's SASL authenticator (Kafka: ``SaslServerAuthenticator``), one per connection of a SASL_PLAINTEXT
or SASL_SSL listener. It runs inside the channel before the channel is ready, driven by the Processor's
selector, and never blocks:

* an ApiVersions request before the handshake is answered with the broker's full API list (Java clients and
  librdkafka send one first and keep its answer for the connection);
* ``SaslHandshake`` v1 picks an enabled mechanism (else UNSUPPORTED_SASL_MECHANISM and close), then each
  ``SaslAuthenticate`` (v0-v2) carries one mechanism token;
* success: the session lifetime (``connections.max.reauth.ms``, 0 = none, bounded by the credential's expiry
  when it has one, as an OAUTHBEARER token's ``exp``) goes in the last response (v1+);
  the Processor closes a connection whose session has expired when its next request is not a re-authentication;
* re-authentication (KIP-368): a ``SaslHandshake`` on an authenticated connection starts a new exchange
  (:meth:`SaslServerSession.begin_reauthentication`); it must use the same mechanism and prove the same
  principal, else it fails like a first authentication;
* failure: SASL_AUTHENTICATION_FAILED with a generic message (it never says whether the user exists), then
  the connection is closed. With ``connection.failed.authentication.delay.ms`` > 0 the response and the
  close wait that long (:class:`DelayedAuthFailures`, run by the Processor), which slows password guessing.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from pykafka_client.errors import (
    IllegalSaslStateError,
    SaslAuthenticationError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
)
from pykafka_client.network.transport.channel import PeerClosedError
from pykafka_client.network.transport.network_receive import FrameReader
from pykafka_client.network.transport.network_send import SendWriter, framed_send
from pykafka_client.network.transport.sasl import wire
from pykafka_client.network.transport.sasl.mechanism import SaslServerMechanism, SaslServerMechanismFactory
from pykafka_client.network.transport.transport_layer import TransportLayer
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.headers import encode_response
from pykafka_client.protocol.types import Chunk, Message
from pykafka_client.utils.time import Time

log = logging.getLogger(__name__)

#: Largest frame accepted while authenticating (Kafka ``sasl.server.max.receive.size`` default)
MAX_SASL_RECEIVE_SIZE = 524_288

#: Answers an ApiVersions request during authentication: (header, body or None for an unknown version) -> frame
ApiVersionsHandler = Callable[[wire.RequestHeader, "Message | None"], "list[Chunk]"]
#: Schedules a delayed failure: (connection id, delay ms)
FailureScheduler = Callable[[str, int], None]


def generic_failure_message(mechanism: str) -> str:
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


class SaslServerSession:
    """Server side of SASL on one connection (the channel's Authenticator), including re-authentication."""

    def __init__(self, connection_id: str, mechanisms: Mapping[str, SaslServerMechanismFactory],
                 api_versions_handler: ApiVersionsHandler, time: Time, *, max_reauth_ms: int = 0,
                 failure_delay_ms: int = 0, schedule_failure: FailureScheduler | None = None) -> None:
        self._id = connection_id
        self._factories = dict(mechanisms)
        self._api_versions = api_versions_handler
        self._time = time
        self._max_reauth_ms = max_reauth_ms
        self._failure_delay_ms = failure_delay_ms if schedule_failure is not None else 0
        self._schedule_failure = schedule_failure
        self._reader = FrameReader(connection_id, MAX_SASL_RECEIVE_SIZE)
        self._out: SendWriter | None = None
        self._mechanism: SaslServerMechanism | None = None
        self._complete = False
        self._principal: str | None = None
        self._mechanism_name: str | None = None  # of the first authentication (re-authentication must match)
        self._expiry_ns: int | None = None
        self._raise_after_flush: BaseException | None = None
        self._delayed_failure: list[Chunk] | None = None  # response held until the Processor releases it
        self.reauthentications = 0

    # --- Authenticator protocol --------------------------------------------------------------------

    def complete(self) -> bool:
        return self._complete and self._out is None

    def wants_write(self) -> bool:
        return self._out is not None

    def principal(self) -> str | None:
        return self._principal

    def authenticate(self, transport: TransportLayer) -> None:
        while True:
            if self._out is not None:
                self._out.write_to(transport)
                if not self._out.completed():
                    return
                self._out = None
            if self._raise_after_flush is not None:
                raise self._raise_after_flush
            if self._delayed_failure is not None:
                self._discard_input(transport)
                return
            if self._complete:
                return
            payload = self._receive(transport)
            if payload is None:
                return
            self._dispatch(payload)

    # --- session -------------------------------------------------------------------------------------

    @property
    def session_lifetime_ms(self) -> int:
        return self._max_reauth_ms

    def session_expired(self, now_ns: int) -> bool:
        """True once the session lifetime has passed (only with ``connections.max.reauth.ms`` > 0)."""
        return self._expiry_ns is not None and now_ns >= self._expiry_ns

    def begin_reauthentication(self, payload: bytes) -> None:
        """A SaslHandshake frame arrived on the authenticated connection: start re-authenticating with it."""
        if not self._complete:
            raise IllegalSaslStateError(f"re-authentication requested on {self._id} before it authenticated")
        self._complete = False
        self._mechanism = None
        self.reauthentications += 1
        self._dispatch(memoryview(payload))

    # --- delayed failure (run by the Processor) ---------------------------------------------------

    def failure_pending(self) -> bool:
        return self._delayed_failure is not None

    def send_failure_response(self, transport: TransportLayer) -> None:
        """Write the held failure response (a small frame: one non-blocking write) before the close."""
        frame, self._delayed_failure = self._delayed_failure, None
        if frame is None:
            return
        writer = SendWriter(framed_send(self._id, frame))
        try:
            writer.write_to(transport)
        except OSError as e:
            log.debug("event=sasl_failure_response_not_sent connection=%s error=%r", self._id, e)

    # --- internals -----------------------------------------------------------------------------------

    def _receive(self, transport: TransportLayer) -> memoryview | None:
        while True:
            n = self._reader.read_from(transport)
            if n < 0:
                raise PeerClosedError(f"connection {self._id} closed by the peer during SASL authentication")
            if self._reader.complete():
                return self._reader.take().payload
            if n == 0:
                return None

    def _discard_input(self, transport: TransportLayer) -> None:
        """While a failure waits out its delay: drop what the peer sends, notice when it goes away."""
        scratch = memoryview(bytearray(4096))
        while True:
            n = transport.read_into(scratch)
            if n < 0:
                raise PeerClosedError(f"connection {self._id} closed by the peer after a failed authentication")
            if n == 0:
                return

    def _queue(self, frame: list[Chunk]) -> None:
        self._out = SendWriter(framed_send(self._id, frame))

    def _fail(self, frame: list[Chunk], error: BaseException) -> None:
        self._complete = False
        self._principal = None if self.reauthentications == 0 else self._principal
        if self._failure_delay_ms > 0 and self._schedule_failure is not None:
            self._delayed_failure = frame
            self._schedule_failure(self._id, self._failure_delay_ms)
            return
        self._queue(frame)
        self._raise_after_flush = error

    def _dispatch(self, payload: memoryview) -> None:
        header, _ = wire.decode_request_header(payload)
        key, version = header.request_api_key, header.request_api_version
        if key == ApiKey.API_VERSIONS and self._mechanism is None and self.reauthentications == 0:
            try:
                _, body = wire.decode_request(payload)
            except UnsupportedVersionError:
                body = None
            self._queue(self._api_versions(header, body))
        elif key == ApiKey.SASL_HANDSHAKE and self._mechanism is None:
            self._handshake(header, payload)
        elif key == ApiKey.SASL_AUTHENTICATE and self._mechanism is not None:
            self._authenticate(header, payload)
        else:
            raise IllegalSaslStateError(f"Unexpected Kafka request (api key {key} v{version}) during SASL "
                                        f"authentication of {self._id}")

    def _handshake(self, header: wire.RequestHeader, payload: memoryview) -> None:
        lo, hi = wire.SERVER_HANDSHAKE_VERSIONS
        if not lo <= header.request_api_version <= hi:
            raise IllegalSaslStateError(f"SaslHandshake v{header.request_api_version} is not supported (v{lo}-v{hi}: "
                                        "the SASL tokens must be framed in SaslAuthenticate requests)")
        _, body = wire.decode_request(payload)
        assert isinstance(body, wire.SaslHandshakeRequest)
        enabled = list(self._factories)
        factory = self._factories.get(body.mechanism)
        if factory is None or (self._mechanism_name is not None and body.mechanism != self._mechanism_name):
            self._queue(wire.handshake_response(header, UnsupportedSaslMechanismError.code, enabled))
            self._raise_after_flush = UnsupportedSaslMechanismError(
                f"Unsupported SASL mechanism {body.mechanism} on {self._id}; enabled are {enabled}"
                + (f" (re-authentication must use {self._mechanism_name})" if self._mechanism_name else ""))
            return
        self._mechanism = factory()
        self._queue(wire.handshake_response(header, 0, enabled))

    def _authenticate(self, header: wire.RequestHeader, payload: memoryview) -> None:
        mechanism = self._mechanism
        assert mechanism is not None
        lo, hi = wire.SERVER_AUTHENTICATE_VERSIONS
        if not lo <= header.request_api_version <= hi:
            raise IllegalSaslStateError(f"SaslAuthenticate v{header.request_api_version} is not supported (v{lo}-v{hi})")
        _, body = wire.decode_request(payload)
        assert isinstance(body, wire.SaslAuthenticateRequest)
        name = mechanism.mechanism_name
        try:
            challenge = mechanism.evaluate_response(bytes(body.auth_bytes))
            if mechanism.is_complete():
                principal = mechanism.authorization_id()
                if self._principal is not None and principal != self._principal:
                    raise SaslAuthenticationError(f"re-authentication on {self._id} proved principal {principal}, "
                                                  f"not {self._principal}")
        except (SaslAuthenticationError, IllegalSaslStateError) as e:
            log.info("event=authentication_failed connection=%s mechanism=%s reason=%s", self._id, name, e)
            message = generic_failure_message(name)
            frame = wire.authenticate_response(header, SaslAuthenticationError.code, message, b"")
            self._fail(frame, SaslAuthenticationError(message))
            return
        if not mechanism.is_complete():
            self._queue(wire.authenticate_response(header, 0, None, challenge))
            return
        lifetime = self._session_lifetime_ms(mechanism)
        response = wire.SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=challenge,
                                                 session_lifetime_ms=lifetime if header.request_api_version >= 1 else 0)
        self._queue(encode_response(response, ApiKey.SASL_AUTHENTICATE, header.request_api_version, header.correlation_id))
        self._principal = mechanism.authorization_id()
        self._mechanism_name = name
        expires = lifetime > 0 or credential_expiration_ms(mechanism) is not None
        self._expiry_ns = self._time.nanoseconds() + lifetime * 1_000_000 if expires else None
        self._complete = True

    def _session_lifetime_ms(self, mechanism: SaslServerMechanism) -> int:
        """``connections.max.reauth.ms``, bounded by the credential's expiry when the mechanism has one (an
        OAUTHBEARER token's ``exp``): as Kafka, the smaller of the two, 0 at the least."""
        expiration_ms = credential_expiration_ms(mechanism)
        if expiration_ms is None:
            return self._max_reauth_ms
        remaining = max(0, expiration_ms - self._time.milliseconds())
        return min(remaining, self._max_reauth_ms) if self._max_reauth_ms > 0 else remaining


@runtime_checkable
class ExpiringCredentialMechanism(Protocol):
    """A server mechanism whose proven credential expires (OAUTHBEARER: the token's ``exp``)."""

    def credential_expiration_ms(self) -> int | None: ...


def credential_expiration_ms(mechanism: SaslServerMechanism) -> int | None:
    """When the credential ``mechanism`` proved expires (epoch ms), or None (PLAIN, SCRAM: it does not)."""
    if isinstance(mechanism, ExpiringCredentialMechanism):
        return mechanism.credential_expiration_ms()
    return None


class DelayedAuthFailures:
    """Connections whose failed authentication is answered and closed after a delay (one per Processor)."""

    def __init__(self, time: Time) -> None:
        self._time = time
        self._heap: list[tuple[int, int, str]] = []
        self._seq = itertools.count()

    def schedule(self, connection_id: str, delay_ms: int) -> None:
        heapq.heappush(self._heap, (self._time.nanoseconds() + delay_ms * 1_000_000, next(self._seq), connection_id))

    def due(self, now_ns: int) -> list[str]:
        """The connections whose delay is over (removed from the queue)."""
        out: list[str] = []
        while self._heap and self._heap[0][0] <= now_ns:
            out.append(heapq.heappop(self._heap)[2])
        return out

    def next_deadline_ns(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        """How many failed authentications wait for their delay (falsy when none: the network thread's per-round
        check is then one test)."""
        return len(self._heap)
