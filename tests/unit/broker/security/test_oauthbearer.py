"""OAUTHBEARER with Kafka's unsecured tokens: the client's token from the ``unsecuredLogin*`` JAAS options and
its message (RFC 7628), the broker's unsecured validator (alg none, principal claim, exp/iat with the allowed
clock skew, required scope) and its error-challenge exchange, and the session lifetime bounded by the token's
``exp`` (SaslServerSession over an in-memory transport, MockTime)."""

from __future__ import annotations

import json

import pytest

from mini_broker.security.listener_security import api_versions_handler
from mini_broker.security.oauthbearer import (
    InvalidTokenError,
    OAuthBearerServer,
    UnsecuredValidatorOptions,
    validate_unsecured_token,
)
from mini_broker.security.sasl_authenticator import SaslServerSession
from pykafka_client.errors import ConfigurationError, SaslAuthenticationError
from pykafka_client.network.transport.sasl import wire
from pykafka_client.network.transport.sasl.authenticator import client_mechanism_from_config
from pykafka_client.network.transport.sasl.oauthbearer import (
    OAuthBearerClient,
    client_initial_response,
    parse_client_initial_response,
    parse_unsecured_jws,
    unsecured_jws,
    unsecured_login_token,
)
from pykafka_client.utils.time import MockTime

from .test_sasl_session import MemoryTransport, send

NOW_MS = 1_700_000_000_000
DEFAULTS = UnsecuredValidatorOptions()


def token(**claims: object) -> str:
    base: dict[str, object] = {"sub": "alice", "iat": NOW_MS / 1000, "exp": NOW_MS / 1000 + 60}
    base.update(claims)
    return unsecured_jws({k: v for k, v in base.items() if v is not None})


def test_login_token_from_jaas_options() -> None:
    options = {"unsecuredLoginStringClaim_sub": "alice", "unsecuredLoginNumberClaim_level": "3",
               "unsecuredLoginListClaim_scope": ",read,write", "unsecuredLoginLifetimeSeconds": "120",
               "unsecuredLoginExtension_traceId": "abc"}
    made, extensions = unsecured_login_token(options, NOW_MS)
    header, claims = parse_unsecured_jws(made)
    assert header == {"alg": "none"} and made.endswith(".")
    assert claims == {"sub": "alice", "level": 3, "scope": ["read", "write"], "iat": NOW_MS / 1000,
                      "exp": NOW_MS / 1000 + 120}
    assert extensions == {"traceId": "abc"}
    with pytest.raises(ConfigurationError, match="unsecuredLoginStringClaim_sub"):
        unsecured_login_token({"unsecuredLoginLifetimeSeconds": "60"}, NOW_MS)


def test_client_message_round_trips_and_the_config_builds_the_mechanism() -> None:
    message = client_initial_response("tok.en.", "alice", {"traceId": "abc"})
    assert message == b"n,a=alice,\x01auth=Bearer tok.en.\x01traceId=abc\x01\x01"
    assert parse_client_initial_response(message) == ("tok.en.", "alice", {"traceId": "abc"})
    with pytest.raises(SaslAuthenticationError):
        parse_client_initial_response(b"n,,\x01user=alice\x01\x01")
    factory = client_mechanism_from_config({
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                            'unsecuredLoginStringClaim_sub="bob";'})
    client = factory()
    first = client.evaluate_challenge(b"")
    assert first is not None
    sent, _, _ = parse_client_initial_response(first)
    assert parse_unsecured_jws(sent)[1]["sub"] == "bob"
    with pytest.raises(ConfigurationError, match=r"needs sasl\.jaas\.config"):
        client_mechanism_from_config({"sasl.mechanism": "OAUTHBEARER"})


@pytest.mark.parametrize(("bad", "reason"), [
    (token(exp=NOW_MS / 1000 - 1), "expired"),
    (token(iat=NOW_MS / 1000 + 5), "issued in the future"),
    (token(sub=None), "no principal"),
    (token(exp=None), "no 'exp'"),
    (token(exp="soon"), "not a number"),
    (token().rstrip(".") + ".c2ln", "signed"),
    ("not-a-jws", "3"),
])
def test_validator_refuses(bad: str, reason: str) -> None:
    with pytest.raises(InvalidTokenError, match=reason):
        validate_unsecured_token(bad, DEFAULTS, NOW_MS)


def test_validator_accepts_with_skew_scope_and_other_claim_names() -> None:
    valid = validate_unsecured_token(token(scope="read write"), DEFAULTS, NOW_MS)
    assert (valid.principal, valid.expiration_ms, valid.scope) == ("alice", NOW_MS + 60_000, ("read", "write"))
    skewed = UnsecuredValidatorOptions(allowable_clock_skew_ms=2000)
    assert validate_unsecured_token(token(iat=NOW_MS / 1000 - 9, exp=NOW_MS / 1000 - 1), skewed,
                                   NOW_MS).principal == "alice"
    options = UnsecuredValidatorOptions.from_jaas_options({
        "unsecuredValidatorPrincipalClaimName": "user", "unsecuredValidatorScopeClaimName": "roles",
        "unsecuredValidatorRequiredScope": "kafka,admin"}, "k")
    assert validate_unsecured_token(token(user="carol", roles=["admin", "kafka"]), options, NOW_MS).principal == "carol"
    with pytest.raises(InvalidTokenError) as refused:
        validate_unsecured_token(token(user="carol", roles=["kafka"]), options, NOW_MS)
    assert refused.value.status == "insufficient_scope" and refused.value.scope == "kafka admin"
    with pytest.raises(ConfigurationError, match="unsecuredValidatorAllowableClockSkewMs"):
        UnsecuredValidatorOptions.from_jaas_options({"unsecuredValidatorAllowableClockSkewMs": "x"}, "k")


def test_server_answers_an_invalid_token_with_a_json_error_then_fails() -> None:
    server = OAuthBearerServer(DEFAULTS, lambda: NOW_MS)
    client = OAuthBearerClient(lambda: (token(exp=NOW_MS / 1000 - 10), {}))
    first = client.evaluate_challenge(b"")
    assert first is not None
    challenge = server.evaluate_response(first)
    assert json.loads(challenge) == {"status": "invalid_token"} and not server.is_complete()
    ack = client.evaluate_challenge(challenge)
    assert ack == b"\x01"
    with pytest.raises(SaslAuthenticationError, match="expired"):
        server.evaluate_response(ack)


def test_server_accepts_a_valid_token() -> None:
    server = OAuthBearerServer(DEFAULTS, lambda: NOW_MS)
    assert server.evaluate_response(client_initial_response(token())) == b""
    assert server.is_complete() and server.authorization_id() == "alice"
    assert server.credential_expiration_ms() == NOW_MS + 60_000
    other = OAuthBearerServer(DEFAULTS, lambda: NOW_MS)
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        other.evaluate_response(client_initial_response(token(), authorization_id="mallory"))


def _session(time: MockTime, max_reauth_ms: int) -> SaslServerSession:
    return SaslServerSession("c1", {"OAUTHBEARER": lambda: OAuthBearerServer(DEFAULTS, time.milliseconds)},
                             api_versions_handler(lambda: [(17, 1, 1), (36, 0, 2)]), time, max_reauth_ms=max_reauth_ms)


@pytest.mark.parametrize(("max_reauth_ms", "expected"), [(0, 60_000), (10_000, 10_000), (600_000, 60_000)])
def test_session_lifetime_is_bounded_by_the_tokens_exp(max_reauth_ms: int, expected: int) -> None:
    time = MockTime()
    now_ms = time.milliseconds()
    s, t = _session(time, max_reauth_ms), MemoryTransport()
    send(t, wire.handshake_request("OAUTHBEARER", 1, "test"))
    s.authenticate(t)  # type: ignore[arg-type]
    t.frames()
    valid = unsecured_jws({"sub": "alice", "iat": now_ms / 1000, "exp": now_ms / 1000 + 60})
    send(t, wire.authenticate_request(client_initial_response(valid), 2, "test"))
    s.authenticate(t)  # type: ignore[arg-type]
    response = wire.decode_authenticate_response(memoryview(t.frames()[0]), 2)
    assert response.error_code == 0 and response.session_lifetime_ms == expected
    assert s.complete() and s.principal() == "alice"
    time.sleep(expected - 1)
    assert not s.session_expired(time.nanoseconds())
    time.sleep(1)
    assert s.session_expired(time.nanoseconds())
