"""The broker's SASL/OAUTHBEARER with Kafka's unsecured JWT validator (``OAuthBearerUnsecuredValidatorCallbackHandler``),
for tests and local development: tokens are unsigned JWS (``{"alg": "none"}``), so anyone can mint one.

Options, from the login module of ``listener.name.<listener>.oauthbearer.sasl.jaas.config`` (or
``sasl.jaas.config``), as Kafka's:

* ``unsecuredValidatorPrincipalClaimName`` (default ``sub``): the claim holding the principal's name;
* ``unsecuredValidatorScopeClaimName`` (default ``scope``): the claim holding the token's scope (a
  space-separated string or a list);
* ``unsecuredValidatorRequiredScope``: comma-separated scope values every token must have;
* ``unsecuredValidatorAllowableClockSkewMs`` (default 0): the clock skew tolerated on ``iat`` and ``exp``.

A token is valid when its header's ``alg`` is ``none``, the principal claim is a non-empty string, ``exp`` is a
number not in the past, ``iat`` (when present) is a number not in the future and before ``exp``, and its scope
holds every required value. An invalid token is answered as Kafka's server does: a JSON error
(``{"status":"invalid_token"}``, or ``insufficient_scope`` with the required ``scope``) as the challenge, then
the failure once the client acknowledges with ``\\x01``. A valid one completes with the principal ``User:<sub>``
(the authorization id) and its ``exp`` as the credential's expiry, which bounds the session lifetime
(:class:`~mini_broker.security.sasl_authenticator.SaslServerSession`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pykafka_client.errors import ConfigurationError, IllegalSaslStateError, SaslAuthenticationError
from pykafka_client.network.transport.sasl.oauthbearer import (
    OAUTHBEARER,
    SEPARATOR,
    parse_client_initial_response,
    parse_unsecured_jws,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UnsecuredValidatorOptions:
    principal_claim_name: str = "sub"
    scope_claim_name: str = "scope"
    required_scope: tuple[str, ...] = ()
    allowable_clock_skew_ms: int = 0

    @classmethod
    def from_jaas_options(cls, options: Mapping[str, str], key: str) -> UnsecuredValidatorOptions:
        skew_text = options.get("unsecuredValidatorAllowableClockSkewMs", "0")
        try:
            skew = int(skew_text)
        except ValueError as e:
            raise ConfigurationError(f"{key}: unsecuredValidatorAllowableClockSkewMs={skew_text!r} is not an "
                                     "integer number of milliseconds") from e
        if skew < 0:
            raise ConfigurationError(f"{key}: unsecuredValidatorAllowableClockSkewMs must not be negative")
        required = tuple(s.strip() for s in options.get("unsecuredValidatorRequiredScope", "").split(",") if s.strip())
        return cls(options.get("unsecuredValidatorPrincipalClaimName", "sub").strip() or "sub",
                   options.get("unsecuredValidatorScopeClaimName", "scope").strip() or "scope", required, skew)


@dataclass(frozen=True)
class ValidatedToken:
    principal: str
    expiration_ms: int
    scope: tuple[str, ...]


class InvalidTokenError(Exception):
    """Why a token is refused, and the OAuth error status the server answers with."""

    def __init__(self, reason: str, status: str = "invalid_token", scope: str | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.scope = scope


def _number(claims: Mapping[str, object], name: str, required: bool) -> float | None:
    value = claims.get(name)
    if value is None:
        if required:
            raise InvalidTokenError(f"the token has no '{name}' claim")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidTokenError(f"the token's '{name}' claim is not a number")
    return float(value)


def validate_unsecured_token(token: str, options: UnsecuredValidatorOptions, now_ms: int) -> ValidatedToken:
    """The principal, expiry and scope of a valid unsecured token; InvalidTokenError otherwise."""
    try:
        header, claims = parse_unsecured_jws(token)
    except ValueError as e:
        raise InvalidTokenError(str(e)) from e
    if header.get("alg") != "none":
        raise InvalidTokenError(f"the token's alg is {header.get('alg')!r}, the unsecured validator takes 'none'")
    principal = claims.get(options.principal_claim_name)
    if not isinstance(principal, str) or not principal.strip():
        raise InvalidTokenError(f"the token has no principal: its '{options.principal_claim_name}' claim is not a "
                                "non-empty string")
    exp = _number(claims, "exp", required=True)
    assert exp is not None
    iat = _number(claims, "iat", required=False)
    skew = options.allowable_clock_skew_ms
    exp_ms = int(exp * 1000)
    if now_ms > exp_ms + skew:
        raise InvalidTokenError("the token has expired (its 'exp' is in the past)")
    if iat is not None:
        iat_ms = int(iat * 1000)
        if iat_ms > now_ms + skew:
            raise InvalidTokenError("the token is issued in the future (its 'iat' is after now)")
        if exp_ms <= iat_ms:
            raise InvalidTokenError("the token's 'exp' is not after its 'iat'")
    raw_scope = claims.get(options.scope_claim_name)
    if raw_scope is None:
        scope: tuple[str, ...] = ()
    elif isinstance(raw_scope, str):
        scope = tuple(raw_scope.split())
    elif isinstance(raw_scope, list) and all(isinstance(s, str) for s in raw_scope):
        scope = tuple(raw_scope)
    else:
        raise InvalidTokenError(f"the token's '{options.scope_claim_name}' claim is neither a string nor a list of "
                                "strings")
    missing = [s for s in options.required_scope if s not in scope]
    if missing:
        raise InvalidTokenError(f"the token's scope lacks {missing}", status="insufficient_scope",
                                scope=" ".join(options.required_scope))
    return ValidatedToken(principal.strip(), exp_ms, scope)


class OAuthBearerServer:
    """Server side of one OAUTHBEARER exchange (a :class:`SaslServerMechanism` with a credential expiry)."""

    mechanism_name = OAUTHBEARER

    def __init__(self, options: UnsecuredValidatorOptions, now_ms: Callable[[], int]) -> None:
        self._options = options
        self._now_ms = now_ms
        self._complete = False
        self._error: str | None = None  # the reason of the error challenge sent, until the client acknowledges it
        self._token: ValidatedToken | None = None

    def evaluate_response(self, response: bytes) -> bytes:
        if self._complete:
            raise IllegalSaslStateError("OAUTHBEARER authentication already complete")
        if self._error is not None:
            if response != SEPARATOR.encode():
                raise SaslAuthenticationError("OAUTHBEARER: the client did not acknowledge the error with \\x01")
            raise SaslAuthenticationError(f"OAUTHBEARER token refused: {self._error}")
        token, authorization_id, _extensions = parse_client_initial_response(response)
        try:
            validated = validate_unsecured_token(token, self._options, self._now_ms())
        except InvalidTokenError as e:
            self._error = str(e)
            body: dict[str, str] = {"status": e.status}
            if e.scope is not None:
                body["scope"] = e.scope
            return json.dumps(body, separators=(",", ":")).encode()
        if authorization_id and authorization_id != validated.principal:
            raise SaslAuthenticationError(f"OAUTHBEARER authorization id {authorization_id!r} is not the token's "
                                          f"principal {validated.principal!r}")
        self._token = validated
        self._complete = True
        return b""

    def is_complete(self) -> bool:
        return self._complete

    def authorization_id(self) -> str | None:
        return self._token.principal if self._token is not None else None

    def credential_expiration_ms(self) -> int | None:
        """The token's ``exp`` in epoch milliseconds (bounds the session lifetime)."""
        return self._token.expiration_ms if self._token is not None else None
