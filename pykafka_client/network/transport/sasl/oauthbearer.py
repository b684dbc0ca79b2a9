"""SASL/OAUTHBEARER (RFC 7628, KIP-255), client side, with Kafka's unsecured token for tests.

The client's one message is the GS2 header and key/value pairs: ``n,[a=<authzid>],`` ``\\x01auth=Bearer <token>``
(``\\x01<extension>=<value>`` ...) ``\\x01\\x01``. The server answers an empty token on success; on an invalid
token it answers a JSON error (``{"status": "invalid_token", ...}``), the client acknowledges it with ``\\x01``
and the server then fails the authentication.

Tokens: Kafka's ``OAuthBearerUnsecuredLoginCallbackHandler`` makes an unsigned JWS (header ``{"alg": "none"}``,
empty signature) from the login module's options in ``sasl.jaas.config``
(``org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice";``):
``unsecuredLoginStringClaim_<name>``, ``unsecuredLoginNumberClaim_<name>``, ``unsecuredLoginListClaim_<name>``
(the first character separates the items), ``unsecuredLoginPrincipalClaimName`` (default ``sub``),
``unsecuredLoginLifetimeSeconds`` (default 3600), ``unsecuredLoginScopeClaimName`` (default ``scope``) and
``unsecuredLoginExtension_<name>`` (SASL extensions). :func:`parse_unsecured_jws` reads such a token back.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from pykafka_client.errors import ConfigurationError, IllegalSaslStateError, SaslAuthenticationError

OAUTHBEARER = "OAUTHBEARER"
#: The ``auth`` key's value prefix in the client message
BEARER = "Bearer "
SEPARATOR = "\x01"
DEFAULT_LIFETIME_SECONDS = 3600
_EXTENSION_KEY = re.compile(r"^[A-Za-z]+$")
_EXTENSION_VALUE = re.compile(r"^[\x21-\x7E \t\r\n]+$")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def unsecured_jws(claims: Mapping[str, Any]) -> str:
    """An unsigned compact JWS: ``base64url({"alg":"none"}).base64url(claims).`` (empty signature)."""
    header = _b64url(json.dumps({"alg": "none"}, separators=(",", ":")).encode())
    payload = _b64url(json.dumps(dict(claims), separators=(",", ":")).encode())
    return f"{header}.{payload}."


def parse_unsecured_jws(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, claims) of an unsigned compact JWS; ValueError saying what is malformed."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError(f"the token has {len(parts)} dot-separated parts, a compact JWS has 3")
    if parts[2]:
        raise ValueError("the token is signed; the unsecured validator accepts only unsigned tokens")
    try:
        header = json.loads(_b64url_decode(parts[0]))
        claims = json.loads(_b64url_decode(parts[1]))
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"the token's header or claims are not base64url-encoded JSON: {e}") from e
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise ValueError("the token's header and claims must be JSON objects")
    return header, claims


def unsecured_login_token(options: Mapping[str, str], now_ms: int) -> tuple[str, dict[str, str]]:
    """(token, SASL extensions) from the ``unsecuredLogin*`` options of the login module (Kafka's unsecured
    login callback handler). ConfigurationError names a bad option."""
    principal_claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
    try:
        lifetime_s = int(options.get("unsecuredLoginLifetimeSeconds", str(DEFAULT_LIFETIME_SECONDS)))
    except ValueError as e:
        raise ConfigurationError("sasl.jaas.config: unsecuredLoginLifetimeSeconds must be an integer") from e
    iat = now_ms / 1000.0
    claims: dict[str, Any] = {"iat": iat, "exp": iat + lifetime_s}
    extensions: dict[str, str] = {}
    for key, value in options.items():
        name = key.split("_", 1)[1] if "_" in key else ""
        if key.startswith("unsecuredLoginStringClaim_") and name:
            claims[name] = value
        elif key.startswith("unsecuredLoginNumberClaim_") and name:
            try:
                claims[name] = float(value) if "." in value else int(value)
            except ValueError as e:
                raise ConfigurationError(f"sasl.jaas.config: {key}={value!r} is not a number") from e
        elif key.startswith("unsecuredLoginListClaim_") and name:
            claims[name] = [item for item in value[1:].split(value[0])] if value else []
        elif key.startswith("unsecuredLoginExtension_") and name:
            if name == "auth" or not _EXTENSION_KEY.match(name) or not _EXTENSION_VALUE.match(value):
                raise ConfigurationError(f"sasl.jaas.config: invalid SASL extension {key}={value!r} (a name of "
                                         "letters other than 'auth', a printable value)")
            extensions[name] = value
    principal = claims.get(principal_claim)
    if not isinstance(principal, str) or not principal.strip():
        raise ConfigurationError(f"sasl.jaas.config: the unsecured OAUTHBEARER token needs a principal: set "
                                 f'unsecuredLoginStringClaim_{principal_claim}="<name>"')
    return unsecured_jws(claims), extensions


def client_initial_response(token: str, authorization_id: str = "", extensions: Mapping[str, str] | None = None) -> bytes:
    """The client's message (RFC 7628 section 3.1)."""
    gs2 = f"n,a={authorization_id}," if authorization_id else "n,,"
    pairs = [f"auth={BEARER}{token}", *(f"{k}={v}" for k, v in sorted((extensions or {}).items()))]
    return (gs2 + SEPARATOR + SEPARATOR.join(pairs) + SEPARATOR + SEPARATOR).encode()


def parse_client_initial_response(message: bytes) -> tuple[str, str, dict[str, str]]:
    """(token, authorization id, extensions) of a client message; SaslAuthenticationError when malformed."""
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SaslAuthenticationError("OAUTHBEARER client message is not UTF-8") from e
    gs2, sep, rest = text.partition(SEPARATOR)
    if not sep or not rest.endswith(SEPARATOR + SEPARATOR):
        raise SaslAuthenticationError("OAUTHBEARER client message is not a GS2 header and \\x01-separated pairs")
    flags = gs2.split(",")
    if len(flags) != 3 or flags[0] not in ("n", "y") or flags[2] != "":
        raise SaslAuthenticationError(f"OAUTHBEARER client message has an invalid GS2 header {gs2!r}")
    authorization_id = flags[1][2:] if flags[1].startswith("a=") else ""
    pairs: dict[str, str] = {}
    for item in rest[:-2].split(SEPARATOR):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise SaslAuthenticationError(f"OAUTHBEARER client message has an invalid key/value pair {item!r}")
        pairs[key] = value
    auth = pairs.pop("auth", None)
    if auth is None or not auth.startswith(BEARER) or not auth[len(BEARER):].strip():
        raise SaslAuthenticationError("OAUTHBEARER client message has no 'auth=Bearer <token>'")
    return auth[len(BEARER):].strip(), authorization_id, pairs


class OAuthBearerClient:
    """Client side: the token message, then (if the server sent an error) the ``\\x01`` acknowledgement."""

    mechanism_name = OAUTHBEARER

    def __init__(self, token_provider: Callable[[], tuple[str, dict[str, str]]]) -> None:
        self._token_provider = token_provider
        self._sent = False
        self._complete = False

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._complete:
            raise IllegalSaslStateError("OAUTHBEARER authentication already complete")
        if not self._sent:
            if challenge:
                raise IllegalSaslStateError("OAUTHBEARER expects an empty initial challenge")
            token, extensions = self._token_provider()
            self._sent = True
            return client_initial_response(token, extensions=extensions)
        if challenge:
            return SEPARATOR.encode()  # the server's error: acknowledge, it fails the exchange next
        self._complete = True
        return None

    def is_complete(self) -> bool:
        return self._complete
