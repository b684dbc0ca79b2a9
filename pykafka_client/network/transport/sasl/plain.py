"""SASL/PLAIN (RFC 4616): ``authzid NUL authcid NUL password`` in one client message.

Java: ``common.security.plain.internals.PlainSaslServer`` and the JDK PLAIN client. The client sends an
empty authorization id, as Kafka's does; the server accepts an empty one or one equal to the user name.
"""

from __future__ import annotations

import hmac
from typing import Callable, Mapping

from pykafka_client.errors import IllegalSaslStateError, SaslAuthenticationError

PLAIN = "PLAIN"


class PlainClient:
    """Client side: one message, then complete."""

    mechanism_name = PLAIN

    def __init__(self, username: str, password: str, authorization_id: str = "") -> None:
        self._token = f"{authorization_id}\0{username}\0{password}".encode()
        self._complete = False

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._complete:
            raise IllegalSaslStateError("PLAIN authentication already complete")
        if challenge:
            raise IllegalSaslStateError("PLAIN expects an empty initial challenge")
        self._complete = True
        return self._token

    def is_complete(self) -> bool:
        return self._complete


PasswordVerifier = Callable[[str, str], bool]


def mapping_verifier(users: Mapping[str, str]) -> PasswordVerifier:
    """A verifier over ``{username: password}`` with a constant-time comparison."""

    def verify(username: str, password: str) -> bool:
        expected = users.get(username)
        return expected is not None and hmac.compare_digest(expected.encode(), password.encode())

    return verify


class PlainServer:
    """Server side: checks the single client message against a password verifier."""

    mechanism_name = PLAIN

    def __init__(self, verifier: PasswordVerifier) -> None:
        self._verify = verifier
        self._complete = False
        self._authorization_id: str | None = None

    def evaluate_response(self, response: bytes) -> bytes:
        if self._complete:
            raise IllegalSaslStateError("PLAIN authentication already complete")
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Authentication failed: invalid UTF-8 in SASL/PLAIN message") from None
        tokens = text.split("\0")
        if len(tokens) != 3:
            raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authzid, username, password = tokens
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        if not self._verify(username, password):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an authorization id that is different from username")
        self._authorization_id = username
        self._complete = True
        return b""

    def is_complete(self) -> bool:
        return self._complete

    def authorization_id(self) -> str | None:
        return self._authorization_id
