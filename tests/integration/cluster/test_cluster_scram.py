"""SCRAM credentials on a 3-broker MiniCluster: kept in the controller's metadata image (Kafka KRaft:
UserScramCredentialsRecord in the metadata log), not in a broker's data dir, so a credential created through one
broker authenticates on every broker's SASL_PLAINTEXT listener, survives a restart of the whole cluster (the
controller's image is persisted), and a deletion through another broker ends it everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import AdminClient
from pykafka_client.admin import ScramMechanismType, UserScramCredentialDeletion, UserScramCredentialUpsertion
from pykafka_client.network.transport.sasl.scram import ScramClient, ScramMechanism
from tests.integration.security.raw_client import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

OVERRIDES = {"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512", "connection.failed.authentication.delay.ms": 0}
EXTRA = "SASL_PLAINTEXT://127.0.0.1:0"


def sasl_bootstrap(cluster: MiniCluster, broker_id: int) -> str:
    return cluster.listener_bootstrap(broker_id, "SASL_PLAINTEXT")


def authenticates(bootstrap: str, user: str, password: str, mechanism: str) -> bool:
    """A full SCRAM exchange with that one broker: True when it accepts the proof and its signature verifies."""
    scram = ScramMechanism.for_mechanism_name(mechanism)
    assert scram is not None
    client = RawClient(int(bootstrap.rsplit(":", 1)[1]))
    try:
        assert client.handshake(mechanism).error_code == 0
        scram_client = ScramClient(scram, user, password)
        first = client.authenticate(scram_client.evaluate_challenge(b"") or b"")
        if first is None or first.error_code != 0:
            return False
        final = client.authenticate(scram_client.evaluate_challenge(bytes(first.auth_bytes)) or b"")
        if final is None or final.error_code != 0:
            return False
        scram_client.evaluate_challenge(bytes(final.auth_bytes))  # raises on a bad server signature
        return scram_client.is_complete() and client.metadata() is not None
    finally:
        client.close()


def everywhere(cluster: MiniCluster, user: str, password: str, mechanism: str) -> list[bool]:
    """Whether each broker authenticates the user, once every broker applied the controller's latest change (an
    alteration is answered after the other brokers applied it only within the controller's 5 s propagation
    bound, which a loaded box can pass)."""
    cluster.wait_for_metadata()
    return [authenticates(sasl_bootstrap(cluster, i), user, password, mechanism) for i in sorted(cluster.brokers)]


def test_a_credential_created_through_one_broker_authenticates_on_all_and_survives_a_restart(tmp_path: Path) -> None:
    data = str(tmp_path / "cluster")
    with MiniCluster(3, data_dir=data, overrides=OVERRIDES, extra_listeners=EXTRA) as cluster:
        with AdminClient({"bootstrap.servers": cluster.brokers[0].bootstrap}) as admin:
            admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion("erin", "SCRAM-SHA-512", "erin-secret", iterations=8192)], timeout=30)
        assert everywhere(cluster, "erin", "erin-secret", "SCRAM-SHA-512") == [True, True, True]
        assert not authenticates(sasl_bootstrap(cluster, 2), "erin", "wrong", "SCRAM-SHA-512")
        # every broker describes it (the image, not the data dir of broker 0)
        with AdminClient({"bootstrap.servers": cluster.brokers[2].bootstrap}) as admin:
            described = admin.describe_user_scram_credentials(["erin"], timeout=30)["erin"]
        assert [(i.mechanism, i.iterations) for i in described.credential_infos] == [
            (ScramMechanismType.SCRAM_SHA_512, 8192)]
    assert not list(Path(data).glob("broker-*/__scram_credentials.json"))

    with MiniCluster(3, data_dir=data, overrides=OVERRIDES, extra_listeners=EXTRA) as cluster:
        assert everywhere(cluster, "erin", "erin-secret", "SCRAM-SHA-512") == [True, True, True]
        with AdminClient({"bootstrap.servers": cluster.brokers[1].bootstrap}) as admin:
            admin.alter_user_scram_credentials([UserScramCredentialDeletion("erin", "SCRAM-SHA-512")], timeout=30)
        assert everywhere(cluster, "erin", "erin-secret", "SCRAM-SHA-512") == [False, False, False]
