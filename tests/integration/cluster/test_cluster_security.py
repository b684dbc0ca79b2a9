"""Security on a 3-broker MiniCluster (one cluster shared by the module): every broker has a PLAINTEXT and a
SASL_SSL listener and the brokers talk to each other over SASL_SSL (``inter.broker.listener.name=SASL_SSL``,
PLAIN with the broker's own ``username``/``password`` from the listener's JAAS configuration).

* every listener is registered with the controller: a client bootstrapping from SASL_SSL sees the SASL_SSL
  ports of all brokers in Metadata and DescribeCluster, one bootstrapping from PLAINTEXT the PLAINTEXT ports
  (Kafka: the endpoints of the listener the request came in on);
* the controller's inter-broker endpoint of each broker is its SASL_SSL listener, and replication runs over it:
  ``acks=all`` with ``min.insync.replicas=3`` succeeds and the ISR stays whole;
* our producer, consumer (its group coordinator found over SASL_SSL) and admin, and confluent-kafka with
  SCRAM-SHA-256, produce and consume through the SASL_SSL listener;
* SASL_SSL sessions last ``connections.max.reauth.ms`` (short here): the brokers' replica fetchers and our clients
  re-authenticate (KIP-368) and replication with ``acks=all`` goes on across several lifetimes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer
from pykafka_client.admin import NewTopic, UserScramCredentialUpsertion

pytest.importorskip("cryptography")

from tests.integration.transport.certs import Pki, make_pki

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

BROKER_PASSWORD = "broker-secret"
REAUTH_MS = 2000
USER, PASSWORD = "alice", "alice-secret"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
        f'password="{BROKER_PASSWORD}" user_broker="{BROKER_PASSWORD}" user_{USER}="{PASSWORD}";')


def secured_overrides(pki: Pki, keystore: str) -> dict[str, object]:
    return {
        "inter.broker.listener.name": "SASL_SSL",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": keystore,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "connection.failed.authentication.delay.ms": 0,
        "listener.name.sasl_ssl.connections.max.reauth.ms": REAUTH_MS,
        "min.insync.replicas": 3,
        "group.initial.rebalance.delay.ms": 0,
    }


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def cluster(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniCluster]:
    keystore = tmp_path_factory.mktemp("keystore") / "broker.pem"
    keystore.write_text(pki.server_key.read_text() + pki.server_cert.read_text())
    # INFO: the brokers log each session they close as expired (event=session_expired)
    with MiniCluster(3, overrides=secured_overrides(pki, str(keystore)),
                     extra_listeners="SASL_SSL://127.0.0.1:0", log_level="INFO") as c:
        yield c


def listener_port(cluster: MiniCluster, broker_id: int, listener: str) -> int:
    return int(cluster.listener_bootstrap(broker_id, listener).rsplit(":", 1)[1])


def sasl_ssl_config(cluster: MiniCluster, pki: Pki, broker_id: int = 1, mechanism: str = "PLAIN") -> dict[str, object]:
    return {"bootstrap.servers": f"127.0.0.1:{listener_port(cluster, broker_id, 'SASL_SSL')}",
            "security.protocol": "SASL_SSL", "ssl.truststore.location": str(pki.ca),
            "sasl.mechanism": mechanism, "sasl.username": USER, "sasl.password": PASSWORD}


def test_metadata_shows_the_endpoints_of_the_listener_the_client_came_in_on(cluster: MiniCluster,
                                                                             pki: Pki) -> None:
    sasl_ports = {i: listener_port(cluster, i, "SASL_SSL") for i in range(3)}
    with AdminClient(sasl_ssl_config(cluster, pki)) as admin:
        nodes = admin.describe_cluster(timeout=30).nodes
    assert {n.id: n.port for n in nodes} == sasl_ports
    with AdminClient({"bootstrap.servers": cluster.brokers[2].bootstrap}) as admin:
        nodes = admin.describe_cluster(timeout=30).nodes
    assert {n.id: n.port for n in nodes} == {i: b.port for i, b in cluster.brokers.items()}
    # the controller knows every listener, and the inter-broker endpoint is the SASL_SSL one
    assert cluster.controller is not None
    for i, registration in cluster.controller.state.broker_registrations().items():
        assert registration.port == sasl_ports[i]
        assert {ep["name"]: ep["port"] for ep in registration.listeners} == {
            "PLAINTEXT": cluster.brokers[i].port, "SASL_SSL": sasl_ports[i]}


def test_our_clients_produce_and_consume_through_the_sasl_ssl_listener_replicated_over_sasl_ssl(
        cluster: MiniCluster, pki: Pki) -> None:
    config = sasl_ssl_config(cluster, pki)
    topic = f"secured-{uuid.uuid4().hex[:8]}"
    with AdminClient(config) as admin:
        admin.create_topics([NewTopic(topic, 2, 3)], timeout=30)
    values = [f"v{i}".encode() for i in range(20)]
    # acks=all with min.insync.replicas=3: every record is on both followers, which fetched it over SASL_SSL
    with KafkaProducer({**config, "acks": "all", "linger.ms": 0}) as producer:
        for f in [producer.send(topic, v) for v in values]:
            f.result(timeout=60)
    with KafkaConsumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe([topic])
        got: list[bytes | None] = []
        deadline = time.monotonic() + 60
        while len(got) < len(values) and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(0.5)]
        consumer.commit_sync()
    assert sorted(v for v in got if v is not None) == sorted(values)
    with AdminClient(config) as admin:
        described = admin.describe_topics([topic], timeout=30)[topic]
    assert all(len(p.isr) == 3 for p in described.partitions)
    assert all(p.leader is not None and p.leader.port == listener_port(cluster, p.leader.id, "SASL_SSL")
               for p in described.partitions)


def test_confluent_kafka_with_scram_through_the_sasl_ssl_listener(cluster: MiniCluster, pki: Pki) -> None:
    ck = pytest.importorskip("confluent_kafka")
    with AdminClient(sasl_ssl_config(cluster, pki)) as admin:
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion(USER, "SCRAM-SHA-256", PASSWORD)],
                                           timeout=30)
    cluster.wait_for_metadata()
    topic = f"ck-secured-{uuid.uuid4().hex[:8]}"
    conf: dict[str, Any] = {"bootstrap.servers": f"127.0.0.1:{listener_port(cluster, 0, 'SASL_SSL')}",
                            "security.protocol": "SASL_SSL", "ssl.ca.location": str(pki.ca),
                            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": USER, "sasl.password": PASSWORD}
    with AdminClient(sasl_ssl_config(cluster, pki, 0)) as admin:
        admin.create_topics([NewTopic(topic, 1, 3)], timeout=30)
    producer = ck.Producer({**conf, "acks": "all"})
    producer.produce(topic, b"from-confluent")
    assert producer.flush(60) == 0
    metadata = producer.list_topics(timeout=30)
    assert {b.port for b in metadata.brokers.values()} == {listener_port(cluster, i, "SASL_SSL") for i in range(3)}
    consumer = ck.Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        message = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.error() is None and message.value() == b"from-confluent"
    finally:
        consumer.close()


def test_replication_and_our_clients_go_on_across_several_session_lifetimes(cluster: MiniCluster, pki: Pki) -> None:
    config = sasl_ssl_config(cluster, pki, 2)
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    with AdminClient(config) as admin:
        admin.create_topics([NewTopic(topic, 3, 3)], timeout=30)
    sent = 0
    logged = {i: len(b.output) for i, b in cluster.brokers.items()}
    with KafkaProducer({**config, "acks": "all", "linger.ms": 0, "delivery.timeout.ms": 30000}) as producer:
        until = time.monotonic() + 2.5 * REAUTH_MS / 1000  # the configured bound: several session lifetimes
        while time.monotonic() < until:
            producer.send(topic, f"r{sent}".encode()).result(timeout=30)  # on all three replicas each time
            sent += 1
            time.sleep(0.05)
    with AdminClient(config) as admin:
        described = admin.describe_topics([topic], timeout=30)[topic]
    assert all(len(p.isr) == 3 for p in described.partitions)
    assert sent > 10
    # no session ran out: the replica fetchers (inter-broker, SASL_SSL) and our producer re-authenticated in time
    expired = [line for i, b in cluster.brokers.items() for line in b.output[logged[i]:] if "event=session_expired" in line]
    assert expired == []
