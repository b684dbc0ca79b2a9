"""``mini-broker --generate-test-certificate DIR`` (the README's secured-broker quickstart): the CA and broker
certificate it writes serve a SASL_SSL listener that our client verifies, by IP and by ``localhost``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_broker.__main__ import main
from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


def test_generated_certificate_serves_a_sasl_ssl_listener(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    certs = tmp_path / "certs"
    assert main(["--generate-test-certificate", str(certs)]) == 0
    assert str(certs / "ca.pem") in capsys.readouterr().out
    config = {"listeners": "SASL_SSL://127.0.0.1:0", "ssl.keystore.type": "PEM",
              "ssl.keystore.location": str(certs / "broker.pem"), "sasl.enabled.mechanisms": "PLAIN",
              "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS, "num.network.threads": 1}
    with MiniBroker(config) as broker:
        port = broker.listener_bootstrap("SASL_SSL").rsplit(":", 1)[1]
        for host in ("127.0.0.1", "localhost"):
            client = {"bootstrap.servers": f"{host}:{port}", "security.protocol": "SASL_SSL",
                      "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem"),
                      "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
            with AdminClient(client) as admin:
                assert len(admin.describe_cluster(timeout=10).nodes) == 1


def test_missing_openssl_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["--generate-test-certificate", str(tmp_path / "certs")]) == 1
    assert "'openssl' command is not on PATH" in capsys.readouterr().err
