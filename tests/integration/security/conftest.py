"""Fixtures of the mini_broker security tests.

``pki`` (module scope): a test CA, a server certificate for 127.0.0.1 and a client certificate (CN=client-1),
generated at test time (tests/integration/transport/certs.py, with ``cryptography``).

``secure_broker`` (module scope): one MiniBroker with four listeners (PLAINTEXT, SSL with ``ssl.client.auth=
required``, SASL_PLAINTEXT and SASL_SSL, each SASL listener with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512),
PLAIN users from the JAAS config and SCRAM credentials stored before the clients connect:
``USER`` / ``PASSWORD`` for every mechanism. One network thread per listener keeps it light.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.network.request_channel import Request

pytest.importorskip("cryptography")

from tests.integration.transport.certs import Pki, make_pki

USER = "alice"
PASSWORD = "alice-secret"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        f'password="admin-secret" user_admin="admin-secret" user_{USER}="{PASSWORD}";')


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def keystore(pki: Pki, directory: Path) -> Path:
    """A PEM keystore file: the server's key and certificate in one file (ssl.keystore.location)."""
    path = directory / "broker-keystore.pem"
    path.write_text(pki.server_key.read_text() + pki.server_cert.read_text())
    return path


def secure_config(pki: Pki, directory: Path, **extra: object) -> dict[str, object]:
    config: dict[str, object] = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "num.network.threads": 1,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore(pki, directory)),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]+)$/$1/L,DEFAULT",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": 0,
        "group.initial.rebalance.delay.ms": 0,
    }
    config.update(extra)
    return config


def add_scram_users(broker: MiniBroker) -> None:
    for mechanism in MECHANISMS[1:]:
        broker.add_scram_credential(USER, PASSWORD, mechanism)


@pytest.fixture(scope="module")
def secure_broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniBroker]:
    with MiniBroker(secure_config(pki, tmp_path_factory.mktemp("broker-conf"))) as broker:
        add_scram_users(broker)
        yield broker


def client_config(broker: MiniBroker, pki: Pki, protocol: str, mechanism: str | None = None,
                  password: str = PASSWORD, with_certificate: bool = True) -> dict[str, object]:
    """Our client's configuration (Kafka property names) for a listener of ``broker``."""
    config: dict[str, object] = {"bootstrap.servers": broker.listener_bootstrap(protocol),
                                 "security.protocol": protocol}
    if "SSL" in protocol:
        config["ssl.truststore.location"] = str(pki.ca)
        if protocol == "SSL" and with_certificate:
            config["ssl.certificate.location"] = str(pki.client_cert)
            config["ssl.key.location"] = str(pki.client_key)
            config["ssl.key.password"] = "s3cret"
    if mechanism is not None:
        config.update({"sasl.mechanism": mechanism, "sasl.username": USER, "sasl.password": password})
    return config


def confluent_round_trip(conf: dict[str, Any], topic: str, value: bytes) -> None:
    """confluent-kafka with ``conf`` produces ``value`` to partition 0 of ``topic`` and reads it back."""
    ck = pytest.importorskip("confluent_kafka")
    producer = ck.Producer(conf)
    producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = ck.Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        message = None
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.error() is None and message.value() == value
    finally:
        consumer.close()


@contextlib.contextmanager
def watching_requests(broker: MiniBroker, record: Callable[[Request], None]) -> Iterator[None]:
    """``record(request)`` for every request ``broker`` handles inside the block (before it is handled)."""
    apis = broker.apis
    assert apis is not None
    original: Callable[[Request], None] = apis.handle

    def spy(request: Request) -> None:
        record(request)
        original(request)

    apis.handle = spy  # type: ignore[method-assign]
    try:
        yield
    finally:
        del apis.handle
