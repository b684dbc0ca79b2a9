"""OAUTHBEARER with Kafka's unsecured JWT validator on a MiniBroker (SASL_PLAINTEXT and SASL_SSL): our producer
and consumer with ``OAuthBearerLoginModule`` ``unsecuredLoginStringClaim_sub`` and confluent-kafka with
librdkafka's unsecured JWS (``sasl.oauthbearer.config``) produce and read back; the principal is the token's
``sub`` (an ACL on it decides); a token without the required scope and an expired session fail; the session
lifetime in the SaslAuthenticate response is bounded by the token's ``exp``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.security.authorizer import STANDARD_AUTHORIZER
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import NewTopic
from pykafka_client.errors import SaslAuthenticationError, TopicAuthorizationFailedError
from pykafka_client.network.transport.sasl.oauthbearer import client_initial_response, unsecured_jws
from pykafka_client.protocol.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from tests.integration.transport.certs import Pki

from .conftest import confluent_round_trip, keystore
from .raw_client import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

LOGIN = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
VALIDATOR_JAAS = f'{LOGIN} unsecuredValidatorRequiredScope="kafka" unsecuredValidatorAllowableClockSkewMs="1000";'
FAST = {"request.timeout.ms": 5000, "retry.backoff.ms": 50}


@pytest.fixture(scope="module")
def broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniBroker]:
    directory = tmp_path_factory.mktemp("oauth")
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "num.network.threads": 1, "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore(pki, directory)),
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": VALIDATOR_JAAS,
        "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config": VALIDATOR_JAAS,
        "connection.failed.authentication.delay.ms": 0, "group.initial.rebalance.delay.ms": 0,
        "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS;User:root",
    }
    with MiniBroker(config) as b:
        yield b


def ours(broker: MiniBroker, pki: Pki, protocol: str, sub: str, scope: str = "kafka", **extra: str) -> dict[str, object]:
    jaas = f'{LOGIN} unsecuredLoginStringClaim_sub="{sub}" unsecuredLoginStringClaim_scope="{scope}"'
    jaas += "".join(f' {k}="{v}"' for k, v in extra.items()) + ";"
    config: dict[str, object] = {"bootstrap.servers": broker.listener_bootstrap(protocol), "security.protocol": protocol,
                                 "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": jaas, **FAST}
    if protocol == "SASL_SSL":
        config.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca)})
    return config


def _topic() -> str:
    return f"oauth-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_our_clients_produce_and_consume_as_the_tokens_subject(broker: MiniBroker, pki: Pki, protocol: str) -> None:
    topic = _topic()
    root = ours(broker, pki, protocol, "root")
    with AdminClient(root) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)], timeout=30)
    with KafkaProducer({**ours(broker, pki, protocol, "root"), "max.block.ms": 10000}) as producer:
        producer.send(topic, b"token-auth").result(timeout=30)
    with KafkaConsumer(ours(broker, pki, protocol, "root")) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning([tp])
        values: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while not values and time.monotonic() < deadline:
            values = [r.value for r in consumer.poll(0.5)]
    assert values == [b"token-auth"]
    # the principal is User:<sub>: dave, with no ACL, may not write; with one, he may
    with KafkaProducer({**ours(broker, pki, protocol, "dave"), "max.block.ms": 5000, "delivery.timeout.ms": 8000,
                        "enable.idempotence": "false"}) as dave:
        with pytest.raises(TopicAuthorizationFailedError):
            dave.send(topic, b"x").result(timeout=30)
    with AdminClient(root) as admin:
        admin.create_acls([AclBinding(ResourcePattern(ResourceType.TOPIC, topic), AccessControlEntry(
            "User:dave", "*", op, AclPermissionType.ALLOW)) for op in (AclOperation.WRITE, AclOperation.DESCRIBE)],
            timeout=30)
    with KafkaProducer({**ours(broker, pki, protocol, "dave"), "enable.idempotence": "false"}) as dave:
        assert dave.send(topic, b"from dave").result(timeout=30).offset == 1


def test_a_token_without_the_required_scope_fails(broker: MiniBroker, pki: Pki) -> None:
    with pytest.raises(SaslAuthenticationError), \
            AdminClient(ours(broker, pki, "SASL_PLAINTEXT", "root", scope="other")) as admin:
        admin.list_topics(timeout=10)


def test_session_lifetime_is_the_tokens_remaining_life(broker: MiniBroker) -> None:
    port = int(broker.listener_bootstrap("SASL_PLAINTEXT").rsplit(":", 1)[1])
    client = RawClient(port)
    try:
        assert client.handshake("OAUTHBEARER").error_code == 0
        now = time.time()
        response = client.authenticate(client_initial_response(unsecured_jws(
            {"sub": "root", "scope": "kafka", "iat": now, "exp": now + 30})))
        assert response is not None and response.error_code == 0
        assert 20_000 <= response.session_lifetime_ms <= 30_000  # the configured bound: exp - now
        assert client.metadata() is not None
    finally:
        client.close()
    # an expired token: the JSON error challenge, the \x01 acknowledgement, then the failure and the close
    client = RawClient(port)
    try:
        assert client.handshake("OAUTHBEARER").error_code == 0
        challenge = client.authenticate(client_initial_response(unsecured_jws(
            {"sub": "root", "scope": "kafka", "iat": now - 120, "exp": now - 60})))
        assert challenge is not None and challenge.error_code == 0
        assert b"invalid_token" in bytes(challenge.auth_bytes)
        failed = client.authenticate(b"\x01")
        assert failed is not None and failed.error_code == SaslAuthenticationError.code
    finally:
        client.close()


@pytest.mark.interop
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_confluent_kafka_with_librdkafkas_unsecured_jws(broker: MiniBroker, pki: Pki, protocol: str,
                                                       tmp_path: Path) -> None:
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    topic = _topic()
    with AdminClient(ours(broker, pki, protocol, "root")) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)], timeout=30)
    conf: dict[str, Any] = {"bootstrap.servers": broker.listener_bootstrap(protocol), "security.protocol": protocol,
            "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=root scope=kafka lifeSeconds=600", "log_level": 0}
    if protocol == "SASL_SSL":
        conf["ssl.ca.location"] = str(pki.ca)
    confluent_round_trip(conf, topic, b"from librdkafka")
    # without the required scope librdkafka's token is refused
    errors: list[object] = []
    admin = ck_admin.AdminClient({**conf, "sasl.oauthbearer.config": "principal=root scope=other",
                                  "error_cb": errors.append})
    with pytest.raises(ck.KafkaException):
        admin.list_topics(timeout=3)
    admin.poll(1)
    assert any(e.code() == ck.KafkaError._AUTHENTICATION for e in errors)  # type: ignore[attr-defined]


def test_our_producer_gets_a_fresh_token_after_the_session_ends(broker: MiniBroker, pki: Pki) -> None:
    """A 2 s token: the broker's session ends at its exp (no connections.max.reauth.ms here), the producer
    reconnects with a new token (new iat/exp) and delivers; an old token would be refused as expired."""
    topic = _topic()
    with AdminClient(ours(broker, pki, "SASL_PLAINTEXT", "root")) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)], timeout=30)
    config = {**ours(broker, pki, "SASL_PLAINTEXT", "root", unsecuredLoginLifetimeSeconds="2"), "linger.ms": 0}
    with KafkaProducer(config) as producer:
        producer.send(topic, b"before").result(timeout=30)
        time.sleep(2.5)  # past the token's exp (the configured bound)
        assert producer.send(topic, b"after").result(timeout=30).offset == 1
