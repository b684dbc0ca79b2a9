"""SASL mechanisms, sans-IO: PLAIN and SCRAM-SHA-256/512 client and server state machines."""

from __future__ import annotations

import base64

import pytest

from pykafka_client.errors import ConfigurationError, IllegalSaslStateError, SaslAuthenticationError
from pykafka_client.network.transport.sasl.authenticator import client_mechanism_from_config, parse_jaas_credentials
from pykafka_client.network.transport.sasl.plain import PlainClient, PlainServer, mapping_verifier
from pykafka_client.network.transport.sasl.scram import (
    ScramClient,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    escape_username,
    unescape_username,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512

# RFC 7677 section 3.
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha256_client_matches_rfc7677() -> None:
    client = ScramClient(SHA256, "user", "pencil", lambda: RFC_CLIENT_NONCE)
    assert client.evaluate_challenge(b"") == RFC_CLIENT_FIRST
    assert client.evaluate_challenge(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not client.is_complete()
    assert client.evaluate_challenge(RFC_SERVER_FINAL) is None
    assert client.is_complete()


def test_scram_sha256_server_matches_rfc7677() -> None:
    credential = ScramCredential.from_password(SHA256, "pencil", 4096, RFC_SALT)
    server = ScramServer(SHA256, {"user": credential}, lambda: RFC_SERVER_NONCE)
    assert server.evaluate_response(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert server.evaluate_response(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.is_complete() and server.authorization_id() == "user"


def run_scram(mechanism: ScramMechanism, user: str, client_pw: str, server_pw: str) -> tuple[ScramClient, ScramServer]:
    server = ScramServer(mechanism, {user: ScramCredential.from_password(mechanism, server_pw)})
    client = ScramClient(mechanism, user, client_pw)
    token = client.evaluate_challenge(b"")
    while not client.is_complete():
        assert token is not None
        token = client.evaluate_challenge(server.evaluate_response(token))
    return client, server


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_scram_round_trip(mechanism: ScramMechanism) -> None:
    client, server = run_scram(mechanism, "alice,=weird", "pw", "pw")
    assert client.is_complete() and server.is_complete()
    assert server.authorization_id() == "alice,=weird"


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_scram_wrong_password_rejected_by_server(mechanism: ScramMechanism) -> None:
    with pytest.raises(SaslAuthenticationError, match="Invalid user credentials"):
        run_scram(mechanism, "alice", "wrong", "right")


def test_scram_unknown_user_rejected() -> None:
    server = ScramServer(SHA256, {})
    with pytest.raises(SaslAuthenticationError, match="Invalid user credentials"):
        server.evaluate_response(b"n,,n=bob,r=abc")


def test_scram_client_rejects_forged_server_signature() -> None:
    client = ScramClient(SHA256, "user", "pencil", lambda: RFC_CLIENT_NONCE)
    client.evaluate_challenge(b"")
    client.evaluate_challenge(RFC_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationError, match="Invalid server signature"):
        client.evaluate_challenge(b"v=" + base64.b64encode(b"\0" * 32))
    assert not client.is_complete()


def test_scram_client_rejects_nonce_not_extending_its_own() -> None:
    client = ScramClient(SHA256, "user", "pencil", lambda: "abc")
    client.evaluate_challenge(b"")
    with pytest.raises(SaslAuthenticationError, match="nonce"):
        client.evaluate_challenge(b"r=xyz123,s=QUJD,i=4096")


def test_scram_client_rejects_low_iteration_count() -> None:
    client = ScramClient(SHA512, "user", "pencil", lambda: "abc")
    client.evaluate_challenge(b"")
    with pytest.raises(SaslAuthenticationError, match="less than the minimum 4096"):
        client.evaluate_challenge(b"r=abcdef,s=QUJD,i=1")


def test_scram_client_reports_server_error() -> None:
    client = ScramClient(SHA256, "user", "pencil", lambda: RFC_CLIENT_NONCE)
    client.evaluate_challenge(b"")
    client.evaluate_challenge(RFC_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationError, match="failed with error: invalid-proof"):
        client.evaluate_challenge(b"e=invalid-proof")


@pytest.mark.parametrize(
    "bad",
    [b"", b"garbage", b"p=tls-unique,,n=u,r=x", b"n,,r=x,n=u", b"n,,n=u,r=x,m=ext", b"n,,n=u=99,r=x", b"\xff\xfe"],
)
def test_scram_server_rejects_malformed_client_first(bad: bytes) -> None:
    server = ScramServer(SHA256, {"u": ScramCredential.from_password(SHA256, "p")})
    with pytest.raises(SaslAuthenticationError):
        server.evaluate_response(bad)


def test_scram_server_rejects_tampered_client_final() -> None:
    credential = ScramCredential.from_password(SHA256, "pencil", 4096, RFC_SALT)
    server = ScramServer(SHA256, {"user": credential}, lambda: RFC_SERVER_NONCE)
    server.evaluate_response(RFC_CLIENT_FIRST)
    with pytest.raises(SaslAuthenticationError, match="nonce mismatch"):
        server.evaluate_response(RFC_CLIENT_FINAL.replace(b"k0,p", b"k1,p"))


def test_scram_out_of_state_call() -> None:
    client, server = run_scram(SHA256, "u", "p", "p")
    with pytest.raises(IllegalSaslStateError):
        client.evaluate_challenge(b"more")
    with pytest.raises(IllegalSaslStateError):
        server.evaluate_response(b"more")


def test_username_escaping_round_trips() -> None:
    assert escape_username("a=b,c") == "a=3Db=2Cc"
    assert unescape_username("a=3Db=2Cc") == "a=b,c"


def test_plain_round_trip_and_failures() -> None:
    verifier = mapping_verifier({"alice": "secret"})
    token = PlainClient("alice", "secret").evaluate_challenge(b"")
    assert token == b"\0alice\0secret"
    server = PlainServer(verifier)
    assert server.evaluate_response(token) == b""
    assert server.is_complete() and server.authorization_id() == "alice"
    with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
        PlainServer(verifier).evaluate_response(b"\0alice\0wrong")
    with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
        PlainServer(verifier).evaluate_response(b"\0mallory\0secret")
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        PlainServer(verifier).evaluate_response(b"bob\0alice\0secret")
    with pytest.raises(SaslAuthenticationError, match="3 tokens"):
        PlainServer(verifier).evaluate_response(b"alice\0secret")
    client = PlainClient("a", "b")
    client.evaluate_challenge(b"")
    with pytest.raises(IllegalSaslStateError):
        client.evaluate_challenge(b"")


def test_jaas_config_parsing() -> None:
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="al ice" password="p\\"w";'
    assert parse_jaas_credentials(jaas) == ("al ice", 'p"w')
    mech = client_mechanism_from_config({"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas})()
    assert mech.mechanism_name == "SCRAM-SHA-512"
    with pytest.raises(ConfigurationError, match="GSSAPI"):
        client_mechanism_from_config({"sasl.username": "u", "sasl.password": "p"})
    with pytest.raises(ConfigurationError, match=r"needs sasl\.jaas\.config"):
        client_mechanism_from_config({"sasl.mechanism": "PLAIN"})
