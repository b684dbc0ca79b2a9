"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), client and server, sans-IO.

Java: ``common.security.scram.internals.{ScramSaslClient, ScramSaslServer, ScramFormatter,
ScramMessages, ScramMechanism}``. No channel binding (GS2 header ``n,,``), as in Kafka. Passwords are
used as their UTF-8 bytes (Kafka does not apply SASLprep either).

Message flow: client-first ``n,,n=<user>,r=<cnonce>`` -> server-first ``r=<cnonce+snonce>,s=<salt>,i=<n>``
-> client-final ``c=biws,r=<nonce>,p=<proof>`` -> server-final ``v=<signature>`` (or ``e=<error>``).
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Callable, Mapping

from pykafka_client.errors import IllegalSaslStateError, SaslAuthenticationError

GS2_HEADER = "n,,"


class ScramMechanism(enum.Enum):
    """A SCRAM mechanism: its SASL name, hash and minimum iteration count (Kafka: 4096)."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", "sha256", 4096)
    SCRAM_SHA_512 = ("SCRAM-SHA-512", "sha512", 4096)

    def __init__(self, mechanism_name: str, hash_name: str, min_iterations: int) -> None:
        self.mechanism_name = mechanism_name
        self.hash_name = hash_name
        self.min_iterations = min_iterations

    @classmethod
    def for_mechanism_name(cls, name: str) -> ScramMechanism | None:
        for m in cls:
            if m.mechanism_name == name:
                return m
        return None


# --- formatter (RFC 5802 section 3) ----------------------------------------------------------------


def hi(mechanism: ScramMechanism, password: bytes, salt: bytes, iterations: int) -> bytes:
    """SaltedPassword = Hi(password, salt, i) = PBKDF2-HMAC(password, salt, i)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password, salt, iterations)


def hmac_of(mechanism: ScramMechanism, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, mechanism.hash_name).digest()


def h(mechanism: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, data).digest()


def xor(a: bytes, b: bytes) -> bytes:
    if len(a) != len(b):
        raise SaslAuthenticationError("SCRAM proof has the wrong length")
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def client_key(mechanism: ScramMechanism, salted_password: bytes) -> bytes:
    return hmac_of(mechanism, salted_password, b"Client Key")


def server_key(mechanism: ScramMechanism, salted_password: bytes) -> bytes:
    return hmac_of(mechanism, salted_password, b"Server Key")


def escape_username(username: str) -> str:
    """saslname: ``=`` -> ``=3D``, ``,`` -> ``=2C``."""
    return username.replace("=", "=3D").replace(",", "=2C")


def unescape_username(saslname: str) -> str:
    out = []
    i = 0
    while i < len(saslname):
        c = saslname[i]
        if c == "=":
            code = saslname[i : i + 3]
            if code == "=3D":
                out.append("=")
            elif code == "=2C":
                out.append(",")
            else:
                raise SaslAuthenticationError(f"Invalid SCRAM username encoding: {saslname!r}")
            i += 3
        elif c == ",":
            raise SaslAuthenticationError(f"Invalid SCRAM username: {saslname!r}")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_attributes(message: str, what: str) -> list[tuple[str, str]]:
    """``a=v,b=w`` -> [(a, v), (b, w)]; each attribute is one letter."""
    attrs: list[tuple[str, str]] = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=" or not part[0].isalpha():
            raise SaslAuthenticationError(f"Invalid SCRAM {what}: {message!r}")
        attrs.append((part[0], part[2:]))
    return attrs


def _b64decode(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise SaslAuthenticationError(f"Invalid base64 in SCRAM {what}") from None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _decode(token: bytes, what: str) -> str:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationError(f"Invalid UTF-8 in SCRAM {what}") from None


def generate_nonce() -> str:
    """A printable nonce without ``,`` (RFC 5802 ``c-nonce``)."""
    return secrets.token_urlsafe(24)


# --- client -----------------------------------------------------------------------------------------


class _ClientState(enum.Enum):
    SEND_CLIENT_FIRST_MESSAGE = 1
    RECEIVE_SERVER_FIRST_MESSAGE = 2
    RECEIVE_SERVER_FINAL_MESSAGE = 3
    COMPLETE = 4
    FAILED = 5


class ScramClient:
    """Client side of one SCRAM exchange (see the module docstring)."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        nonce_generator: Callable[[], str] = generate_nonce,
    ) -> None:
        self.mechanism = mechanism
        self._username = username
        self._password = password.encode("utf-8")
        self._nonce_generator = nonce_generator
        self._state = _ClientState.SEND_CLIENT_FIRST_MESSAGE
        self._client_nonce = ""
        self._client_first_bare = ""
        self._expected_server_signature = b""

    @property
    def mechanism_name(self) -> str:
        return self.mechanism.mechanism_name

    def is_complete(self) -> bool:
        return self._state is _ClientState.COMPLETE

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        try:
            if self._state is _ClientState.SEND_CLIENT_FIRST_MESSAGE:
                if challenge:
                    raise IllegalSaslStateError("SCRAM expects an empty initial challenge")
                self._client_nonce = self._nonce_generator()
                self._client_first_bare = f"n={escape_username(self._username)},r={self._client_nonce}"
                self._state = _ClientState.RECEIVE_SERVER_FIRST_MESSAGE
                return (GS2_HEADER + self._client_first_bare).encode("utf-8")
            if self._state is _ClientState.RECEIVE_SERVER_FIRST_MESSAGE:
                token = self._client_final_message(_decode(challenge, "server-first-message"))
                self._state = _ClientState.RECEIVE_SERVER_FINAL_MESSAGE
                return token
            if self._state is _ClientState.RECEIVE_SERVER_FINAL_MESSAGE:
                self._verify_server_final(_decode(challenge, "server-final-message"))
                self._state = _ClientState.COMPLETE
                return None
            raise IllegalSaslStateError(f"Unexpected challenge in SCRAM client state {self._state.name}")
        except BaseException:
            self._state = _ClientState.FAILED
            raise

    def _client_final_message(self, server_first: str) -> bytes:
        attrs = dict(parse_attributes(server_first, "server-first-message"))
        if "m" in attrs:
            raise SaslAuthenticationError("SCRAM server-first-message requires an unsupported extension")
        try:
            nonce, salt_b64, iterations_text = attrs["r"], attrs["s"], attrs["i"]
        except KeyError as e:
            raise SaslAuthenticationError(f"Invalid SCRAM server-first-message, missing {e.args[0]}=") from None
        if not nonce.startswith(self._client_nonce) or len(nonce) == len(self._client_nonce):
            raise SaslAuthenticationError("Invalid server nonce: does not start with client nonce")
        try:
            iterations = int(iterations_text)
        except ValueError:
            raise SaslAuthenticationError(f"Invalid SCRAM iteration count {iterations_text!r}") from None
        if iterations < self.mechanism.min_iterations:
            raise SaslAuthenticationError(
                f"Requested iterations {iterations} is less than the minimum {self.mechanism.min_iterations} for {self.mechanism_name}"
            )
        salt = _b64decode(salt_b64, "salt")
        salted = hi(self.mechanism, self._password, salt, iterations)
        without_proof = f"c={_b64(GS2_HEADER.encode())},r={nonce}"
        auth_message = f"{self._client_first_bare},{server_first},{without_proof}".encode()
        ckey = client_key(self.mechanism, salted)
        signature = hmac_of(self.mechanism, h(self.mechanism, ckey), auth_message)
        proof = xor(ckey, signature)
        self._expected_server_signature = hmac_of(self.mechanism, server_key(self.mechanism, salted), auth_message)
        return f"{without_proof},p={_b64(proof)}".encode()

    def _verify_server_final(self, server_final: str) -> None:
        attrs = dict(parse_attributes(server_final, "server-final-message"))
        if "e" in attrs:
            raise SaslAuthenticationError(f"Sasl authentication using {self.mechanism_name} failed with error: {attrs['e']}")
        if "v" not in attrs:
            raise SaslAuthenticationError("Invalid SCRAM server-final-message: no verifier")
        signature = _b64decode(attrs["v"], "server signature")
        if not hmac.compare_digest(signature, self._expected_server_signature):
            raise SaslAuthenticationError("Invalid server signature in server final message")


# --- server -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScramCredential:
    """What a server stores per user and mechanism (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_password(
        cls, mechanism: ScramMechanism, password: str, iterations: int = 4096, salt: bytes | None = None
    ) -> ScramCredential:
        if iterations < mechanism.min_iterations:
            raise ValueError(f"iterations {iterations} below the minimum {mechanism.min_iterations}")
        salt = salt if salt is not None else secrets.token_bytes(32)
        salted = hi(mechanism, password.encode("utf-8"), salt, iterations)
        return cls(
            salt=salt,
            stored_key=h(mechanism, client_key(mechanism, salted)),
            server_key=server_key(mechanism, salted),
            iterations=iterations,
        )


class _ServerState(enum.Enum):
    RECEIVE_CLIENT_FIRST_MESSAGE = 1
    RECEIVE_CLIENT_FINAL_MESSAGE = 2
    COMPLETE = 3
    FAILED = 4


class ScramServer:
    """Server side of one SCRAM exchange against ``credentials`` (user name -> credential)."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        credentials: Mapping[str, ScramCredential],
        nonce_generator: Callable[[], str] = generate_nonce,
    ) -> None:
        self.mechanism = mechanism
        self._credentials = credentials
        self._nonce_generator = nonce_generator
        self._state = _ServerState.RECEIVE_CLIENT_FIRST_MESSAGE
        self._username: str | None = None
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._client_first_bare = ""
        self._server_first = ""

    @property
    def mechanism_name(self) -> str:
        return self.mechanism.mechanism_name

    def is_complete(self) -> bool:
        return self._state is _ServerState.COMPLETE

    def authorization_id(self) -> str | None:
        return self._username if self.is_complete() else None

    def evaluate_response(self, response: bytes) -> bytes:
        try:
            if self._state is _ServerState.RECEIVE_CLIENT_FIRST_MESSAGE:
                token = self._server_first_message(_decode(response, "client-first-message"))
                self._state = _ServerState.RECEIVE_CLIENT_FINAL_MESSAGE
                return token
            if self._state is _ServerState.RECEIVE_CLIENT_FINAL_MESSAGE:
                token = self._server_final_message(_decode(response, "client-final-message"))
                self._state = _ServerState.COMPLETE
                return token
            raise IllegalSaslStateError(f"Unexpected response in SCRAM server state {self._state.name}")
        except BaseException:
            self._state = _ServerState.FAILED
            raise

    def _server_first_message(self, client_first: str) -> bytes:
        parts = client_first.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise SaslAuthenticationError("Invalid SCRAM client-first-message: unsupported GS2 header (channel binding is not supported)")
        authzid = parts[1]
        if authzid and not authzid.startswith("a="):
            raise SaslAuthenticationError("Invalid SCRAM client-first-message: bad authorization id")
        self._client_first_bare = parts[2]
        attrs = parse_attributes(self._client_first_bare, "client-first-message")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r":
            raise SaslAuthenticationError("Invalid SCRAM client-first-message: expected n= then r=")
        if any(k == "m" for k, _ in attrs):
            raise SaslAuthenticationError("SCRAM client-first-message requires an unsupported extension")
        username = unescape_username(attrs[0][1])
        client_nonce = attrs[1][1]
        if not client_nonce:
            raise SaslAuthenticationError("Invalid SCRAM client-first-message: empty nonce")
        if authzid and unescape_username(authzid[2:]) != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an authorization id that is different from username")
        credential = self._credentials.get(username)
        if credential is None:
            raise SaslAuthenticationError("Authentication failed: Invalid user credentials")
        if credential.iterations < self.mechanism.min_iterations:
            raise SaslAuthenticationError(f"Iterations {credential.iterations} is less than the minimum {self.mechanism.min_iterations}")
        self._username = username
        self._credential = credential
        self._nonce = client_nonce + self._nonce_generator()
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        return self._server_first.encode("utf-8")

    def _server_final_message(self, client_final: str) -> bytes:
        assert self._credential is not None
        marker = client_final.rfind(",p=")
        if marker < 0:
            raise SaslAuthenticationError("Invalid SCRAM client-final-message: no proof")
        without_proof = client_final[:marker]
        attrs = dict(parse_attributes(without_proof, "client-final-message"))
        proof = _b64decode(client_final[marker + 3 :], "client proof")
        if attrs.get("c") != _b64(GS2_HEADER.encode()) and attrs.get("c") != _b64(b"y,,"):
            raise SaslAuthenticationError("Invalid SCRAM client-final-message: channel binding mismatch")
        if attrs.get("r") != self._nonce:
            raise SaslAuthenticationError("Invalid SCRAM client-final-message: nonce mismatch")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = hmac_of(self.mechanism, self._credential.stored_key, auth_message)
        computed_client_key = xor(proof, signature)
        if not hmac.compare_digest(h(self.mechanism, computed_client_key), self._credential.stored_key):
            raise SaslAuthenticationError("Authentication failed: Invalid user credentials")
        server_signature = hmac_of(self.mechanism, self._credential.server_key, auth_message)
        return f"v={_b64(server_signature)}".encode()
