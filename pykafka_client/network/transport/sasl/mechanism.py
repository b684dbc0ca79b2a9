"""The sans-IO SASL mechanism interfaces (Java: ``javax.security.sasl.SaslClient`` / ``SaslServer``).

A mechanism only turns tokens into tokens; the authenticators in
:mod:`pykafka_client.network.transport.sasl.authenticator` carry them in SaslHandshake / SaslAuthenticate frames.
"""

from __future__ import annotations

from typing import Callable, Protocol


class SaslClientMechanism(Protocol):
    """Client side of one mechanism run.

    ``evaluate_challenge(b"")`` gives the initial response; each server token is fed back the same
    way. It returns ``None`` when there is nothing more to send. Failures raise
    :class:`~pykafka_client.errors.SaslAuthenticationError` (bad server data, wrong signature) or
    :class:`~pykafka_client.errors.IllegalSaslStateError` (called in the wrong state).
    """

    @property
    def mechanism_name(self) -> str: ...

    def evaluate_challenge(self, challenge: bytes) -> bytes | None: ...

    def is_complete(self) -> bool: ...


class SaslServerMechanism(Protocol):
    """Server side of one mechanism run: ``evaluate_response(client token) -> server token``.
    Failed authentication raises :class:`~pykafka_client.errors.SaslAuthenticationError`."""

    @property
    def mechanism_name(self) -> str: ...

    def evaluate_response(self, response: bytes) -> bytes: ...

    def is_complete(self) -> bool: ...

    def authorization_id(self) -> str | None: ...


SaslServerMechanismFactory = Callable[[], SaslServerMechanism]
