"""Our producer, consumer and admin client against a MiniBroker's SSL, SASL_PLAINTEXT and SASL_SSL listeners
(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), the principal each request carries, and the failures: wrong password,
missing client certificate."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer
from pykafka_client.admin import NewTopic
from pykafka_client.errors import SaslAuthenticationError, SslAuthenticationError

from .conftest import PASSWORD, USER, client_config, watching_requests

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CASES = [("SSL", None)] + [(p, m) for p in ("SASL_PLAINTEXT", "SASL_SSL")
                           for m in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")]


@pytest.fixture
def principals(secure_broker: MiniBroker) -> Iterator[list[tuple[str, str]]]:
    """(listener, principal) of every request the broker handles while the test runs."""
    seen: list[tuple[str, str]] = []
    with watching_requests(secure_broker, lambda r: seen.append((r.context.listener_name, r.context.principal))):
        yield seen


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_produce_consume_admin_over_secured_listener(secure_broker: MiniBroker, pki: object, protocol: str,
                                                     mechanism: str | None,
                                                     principals: list[tuple[str, str]]) -> None:
    config = client_config(secure_broker, pki, protocol, mechanism)  # type: ignore[arg-type]
    topic = f"sec-{protocol.lower()}-{(mechanism or 'tls').lower()}-{uuid.uuid4().hex[:6]}"
    with AdminClient(config) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)], timeout=30)
        assert topic in admin.list_topics(timeout=30)
    with KafkaProducer({**config, "linger.ms": 0}) as producer:
        producer.send(topic, b"secret-value").result(timeout=30)
    with KafkaConsumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe([topic])
        values: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while not values and time.monotonic() < deadline:
            values = [r.value for r in consumer.poll(0.5)]
        assert values == [b"secret-value"]
    # every request on this listener came from the authenticated principal (TLS: the certificate's CN, mapped)
    mine = {p for listener, p in principals if listener == protocol}
    assert mine == {"client-1" if protocol == "SSL" else USER}


@pytest.mark.parametrize(("protocol", "mechanism"), [("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256"),
                                                     ("SASL_PLAINTEXT", "SCRAM-SHA-512")])
def test_wrong_password_fails_fast_with_sasl_authentication_error(secure_broker: MiniBroker, pki: object,
                                                                  protocol: str, mechanism: str) -> None:
    config = client_config(secure_broker, pki, protocol, mechanism, password="not-" + PASSWORD)  # type: ignore[arg-type]
    started = time.monotonic()
    with AdminClient(config) as admin, pytest.raises(SaslAuthenticationError) as info:
        admin.list_topics(timeout=60)
    # the generic message: it does not say whether the user exists
    assert f"invalid credentials with SASL mechanism {mechanism}" in str(info.value)
    assert time.monotonic() - started < 30, "an authentication failure must not be retried until the timeout"
    with KafkaProducer({**config, "linger.ms": 0, "max.block.ms": 60000}) as producer, \
            pytest.raises(SaslAuthenticationError):
        producer.send("anything", b"x").result(timeout=60)


def test_unknown_user_gets_the_same_answer_as_a_wrong_password(secure_broker: MiniBroker, pki: object) -> None:
    config = client_config(secure_broker, pki, "SASL_PLAINTEXT", "SCRAM-SHA-256")  # type: ignore[arg-type]
    config["sasl.username"] = "nobody"
    with AdminClient(config) as admin, pytest.raises(SaslAuthenticationError) as info:
        admin.list_topics(timeout=60)
    assert "nobody" not in str(info.value) and "exist" not in str(info.value)


def test_ssl_client_auth_required_rejects_a_client_without_certificate(secure_broker: MiniBroker,
                                                                        pki: object) -> None:
    config = client_config(secure_broker, pki, "SSL", with_certificate=False)  # type: ignore[arg-type]
    with AdminClient(config) as admin, pytest.raises(SslAuthenticationError):
        admin.list_topics(timeout=60)


def test_plaintext_listener_still_serves_anonymous(secure_broker: MiniBroker,
                                                   principals: list[tuple[str, str]]) -> None:
    with AdminClient({"bootstrap.servers": secure_broker.listener_bootstrap("PLAINTEXT")}) as admin:
        admin.list_topics(timeout=30)
    assert {p for listener, p in principals if listener == "PLAINTEXT"} == {"ANONYMOUS"}
