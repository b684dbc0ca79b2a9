"""confluent-kafka (librdkafka), kafka-python and aiokafka against MiniBroker's SSL (client certificate),
SASL_PLAINTEXT and SASL_SSL listeners with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512: each produces a record and
reads it back; a wrong password fails with the client's authentication error."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from tests.integration.transport.certs import KEY_PASSWORD, Pki

from .conftest import PASSWORD, USER, confluent_round_trip

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(120)]

CASES = [("SSL", None)] + [(p, m) for p in ("SASL_PLAINTEXT", "SASL_SSL")
                           for m in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")]
VALUE = b"interop-secret"


def _topic(client: str, protocol: str, mechanism: str | None) -> str:
    return f"{client}-{protocol}-{mechanism or 'tls'}-{uuid.uuid4().hex[:6]}".lower()


def _create(broker: MiniBroker, topic: str) -> None:
    from pykafka_client import AdminClient
    from pykafka_client.admin import NewTopic

    with AdminClient({"bootstrap.servers": broker.listener_bootstrap("PLAINTEXT")}) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)], timeout=30)


# --- confluent-kafka -------------------------------------------------------------------------------


def _confluent_config(broker: MiniBroker, pki: Pki, protocol: str, mechanism: str | None,
                      password: str = PASSWORD) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": broker.listener_bootstrap(protocol), "security.protocol": protocol,
                            "log_level": 0}
    if "SSL" in protocol:
        conf["ssl.ca.location"] = str(pki.ca)
    if protocol == "SSL":
        conf.update({"ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.client_key),
                     "ssl.key.password": KEY_PASSWORD})
    if mechanism:
        conf.update({"sasl.mechanism": mechanism, "sasl.username": USER, "sasl.password": password})
    return conf


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_confluent_kafka(secure_broker: MiniBroker, pki: Pki, protocol: str, mechanism: str | None) -> None:
    pytest.importorskip("confluent_kafka")
    topic = _topic("ck", protocol, mechanism)
    _create(secure_broker, topic)
    confluent_round_trip(_confluent_config(secure_broker, pki, protocol, mechanism), topic, VALUE)


def test_confluent_kafka_wrong_password(secure_broker: MiniBroker, pki: Pki) -> None:
    ck = pytest.importorskip("confluent_kafka")
    admin = pytest.importorskip("confluent_kafka.admin")
    errors: list[Any] = []
    client = admin.AdminClient({**_confluent_config(secure_broker, pki, "SASL_SSL", "SCRAM-SHA-512", "wrong"),
                                "error_cb": errors.append})
    with pytest.raises(ck.KafkaException):
        client.list_topics(timeout=2)
    client.poll(1)  # delivers the error callbacks
    assert any(e.code() == ck.KafkaError._AUTHENTICATION for e in errors)


# --- kafka-python ----------------------------------------------------------------------------------------


def _kafka_python_config(broker: MiniBroker, pki: Pki, protocol: str, mechanism: str | None,
                         password: str = PASSWORD) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap_servers": broker.listener_bootstrap(protocol), "security_protocol": protocol}
    if "SSL" in protocol:
        conf["ssl_cafile"] = str(pki.ca)
    if protocol == "SSL":
        conf.update({"ssl_certfile": str(pki.client_cert), "ssl_keyfile": str(pki.client_key),
                     "ssl_password": KEY_PASSWORD})
    if mechanism:
        conf.update({"sasl_mechanism": mechanism, "sasl_plain_username": USER, "sasl_plain_password": password})
    return conf


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_kafka_python(secure_broker: MiniBroker, pki: Pki, protocol: str, mechanism: str | None) -> None:
    kafka = pytest.importorskip("kafka")
    topic = _topic("kp", protocol, mechanism)
    _create(secure_broker, topic)
    conf = _kafka_python_config(secure_broker, pki, protocol, mechanism)
    producer = kafka.KafkaProducer(**conf)
    try:
        producer.send(topic, VALUE).get(timeout=30)
    finally:
        producer.close()
    consumer = kafka.KafkaConsumer(**conf, auto_offset_reset="earliest", consumer_timeout_ms=15000)
    try:
        consumer.assign([kafka.TopicPartition(topic, 0)])
        assert next(iter(consumer)).value == VALUE
    finally:
        consumer.close()


def test_kafka_python_wrong_password(secure_broker: MiniBroker, pki: Pki) -> None:
    kafka = pytest.importorskip("kafka")
    errors = pytest.importorskip("kafka.errors")
    # kafka-python 3.0 retries a bootstrap whose authentication failed until bootstrap_timeout_ms, then times out
    with pytest.raises((errors.SaslAuthenticationFailedError, errors.KafkaTimeoutError)):
        kafka.KafkaProducer(**_kafka_python_config(secure_broker, pki, "SASL_PLAINTEXT", "SCRAM-SHA-256", "wrong"), bootstrap_timeout_ms=3000)


# --- aiokafka --------------------------------------------------------------------------------------------


def _aiokafka_config(broker: MiniBroker, pki: Pki, protocol: str, mechanism: str | None,
                     password: str = PASSWORD) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap_servers": broker.listener_bootstrap(protocol), "security_protocol": protocol}
    if "SSL" in protocol:
        context = ssl.create_default_context(cafile=str(pki.ca))
        if protocol == "SSL":
            context.load_cert_chain(str(pki.client_cert), str(pki.client_key), KEY_PASSWORD)
        conf["ssl_context"] = context
    if mechanism:
        conf.update({"sasl_mechanism": mechanism, "sasl_plain_username": USER, "sasl_plain_password": password})
    return conf


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_aiokafka(secure_broker: MiniBroker, pki: Pki, protocol: str, mechanism: str | None) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    topic = _topic("ak", protocol, mechanism)
    _create(secure_broker, topic)
    conf = _aiokafka_config(secure_broker, pki, protocol, mechanism)

    async def go() -> bytes:
        producer = aiokafka.AIOKafkaProducer(**conf)
        await producer.start()
        try:
            await producer.send_and_wait(topic, VALUE)
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(**conf, auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([aiokafka.TopicPartition(topic, 0)])
            record = await consumer.getone()
            value: bytes = record.value
            return value
        finally:
            await consumer.stop()

    assert asyncio.run(asyncio.wait_for(go(), 60)) == VALUE


def test_aiokafka_wrong_password(secure_broker: MiniBroker, pki: Pki) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    errors = pytest.importorskip("aiokafka.errors")
    conf = _aiokafka_config(secure_broker, pki, "SASL_SSL", "PLAIN", "wrong")

    async def go() -> None:
        producer = aiokafka.AIOKafkaProducer(**conf)
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises((errors.KafkaConnectionError, errors.AuthenticationFailedError)):
        asyncio.run(asyncio.wait_for(go(), 60))
