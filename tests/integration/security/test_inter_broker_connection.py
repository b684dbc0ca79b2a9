"""A broker's outgoing inter-broker connection (``BrokerConnection`` with ``InterBrokerSecurity``, what the replica
fetchers and transaction senders use) against a MiniBroker's SASL_SSL listener: TLS verified against the trust
store, SASL with the broker's own ``username``/``password`` from the listener's JAAS configuration for
``sasl.mechanism.inter.broker.protocol``, a wrong password refused, a configuration without credentials refused
at startup, and KIP-368 re-authentication on the same connection before the session lifetime ends (the broker's
clock is a MockTime here, the listener's ``connections.max.reauth.ms`` a minute)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.cluster.broker_connection import BrokerConnection
from mini_broker.config import KafkaConfig
from mini_broker.security.inter_broker import InterBrokerSecurity
from pykafka_client.errors import ConfigurationError, SaslAuthenticationError
from pykafka_client.protocol.messages import MetadataRequest, MetadataResponse
from pykafka_client.utils.time import MockTime
from tests.integration.transport.certs import Pki

from .conftest import PASSWORD, USER, add_scram_users, secure_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

REAUTH_MS = 60_000


@pytest.fixture(scope="module")
def broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniBroker]:
    config = secure_config(pki, tmp_path_factory.mktemp("inter-broker"),
                           **{"listener.name.sasl_ssl.connections.max.reauth.ms": REAUTH_MS})
    with MiniBroker(config) as b:
        add_scram_users(b)
        yield b


def own_config(pki: Pki, directory: Path, mechanism: str, password: str = PASSWORD) -> KafkaConfig:
    """The configuration of a broker whose inter-broker listener is SASL_SSL, logging in as USER."""
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    return KafkaConfig(secure_config(pki, directory, **{
        "inter.broker.listener.name": "SASL_SSL",
        "sasl.mechanism.inter.broker.protocol": mechanism,
        f"listener.name.sasl_ssl.{mechanism.lower()}.sasl.jaas.config":
            f'org.apache.kafka.common.security.{module} required username="{USER}" password="{password}";',
    }))


def metadata(conn: BrokerConnection) -> MetadataResponse:
    answer = conn.send_and_receive(MetadataRequest(topics=[]), 1, 10.0)
    assert isinstance(answer, MetadataResponse)
    return answer


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_connection_authenticates_and_re_authenticates_on_the_same_socket(
        broker: MiniBroker, pki: Pki, tmp_path: Path, mechanism: str) -> None:
    time = MockTime()
    security = InterBrokerSecurity.from_config(own_config(pki, tmp_path, mechanism), time)
    assert security.listener == "SASL_SSL" and security.ssl_context is not None
    host, port = broker.listener_bootstrap("SASL_SSL").rsplit(":", 1)
    conn = BrokerConnection(lambda: (host, int(port)), "broker-7-fetcher", security)
    try:
        assert metadata(conn).brokers
        assert conn.authentications == 1
        time.sleep(REAUTH_MS * 0.5)
        metadata(conn)
        assert conn.authentications == 1  # far from the end of the session
        time.sleep(REAUTH_MS * 0.4)  # 90% of the lifetime the broker answered
        assert metadata(conn).brokers
        assert conn.authentications == 2  # the same connection, authenticated again
    finally:
        conn.close()


def test_a_wrong_broker_password_is_refused(broker: MiniBroker, pki: Pki, tmp_path: Path) -> None:
    security = InterBrokerSecurity.from_config(own_config(pki, tmp_path, "PLAIN", "wrong"), MockTime())
    host, port = broker.listener_bootstrap("SASL_SSL").rsplit(":", 1)
    conn = BrokerConnection(lambda: (host, int(port)), "broker-7-fetcher", security)
    with pytest.raises(SaslAuthenticationError, match="inter-broker authentication"):
        metadata(conn)


def test_missing_broker_credentials_fail_at_startup(pki: Pki, tmp_path: Path) -> None:
    config = KafkaConfig(secure_config(pki, tmp_path, **{"inter.broker.listener.name": "SASL_SSL",
                                                          "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"}))
    with pytest.raises(ConfigurationError, match=r"listener\.name\.sasl_ssl\.scram-sha-256\.sasl\.jaas\.config"):
        InterBrokerSecurity.from_config(config, MockTime())
    gssapi = KafkaConfig(secure_config(pki, tmp_path, **{"inter.broker.listener.name": "SASL_SSL"}))
    with pytest.raises(ConfigurationError, match=r"sasl\.mechanism\.inter\.broker\.protocol=GSSAPI"):
        InterBrokerSecurity.from_config(gssapi, MockTime())
