"""TLS listener configuration forms: inline PEM (``ssl.keystore.certificate.chain`` / ``ssl.keystore.key``,
``ssl.truststore.certificates``), an encrypted key in a PEM keystore file (``ssl.key.password``),
``ssl.client.auth=requested`` (a certificate is the principal, none is ANONYMOUS) and configuration errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.network.request_channel import Request
from pykafka_client import AdminClient
from pykafka_client.errors import ConfigurationError
from tests.integration.transport.certs import KEY_PASSWORD, Pki

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _principals(broker: MiniBroker) -> list[str]:
    apis = broker.apis
    assert apis is not None
    seen: list[str] = []
    original: Callable[[Request], None] = apis.handle

    def spy(request: Request) -> None:
        seen.append(request.context.principal)
        original(request)

    apis.handle = spy  # type: ignore[method-assign]
    return seen


def _client(broker: MiniBroker, pki: Pki, with_certificate: bool) -> dict[str, object]:
    config: dict[str, object] = {"bootstrap.servers": broker.listener_bootstrap("SSL"), "security.protocol": "SSL",
                                 "ssl.truststore.location": str(pki.ca)}
    if with_certificate:
        config.update({"ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.client_key),
                       "ssl.key.password": KEY_PASSWORD})
    return config


def test_inline_pem_and_client_auth_requested(pki: Pki) -> None:
    config = {
        "listeners": "SSL://127.0.0.1:0", "num.network.threads": 1,
        "ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.keystore.certificate.chain": pki.server_cert.read_text(),
        "listener.name.ssl.ssl.keystore.key": pki.server_key.read_text(),
        "listener.name.ssl.ssl.truststore.certificates": pki.ca.read_text(),
        "ssl.client.auth": "requested",
    }
    with MiniBroker(config) as broker:
        seen = _principals(broker)
        with AdminClient(_client(broker, pki, with_certificate=False)) as admin:
            admin.list_topics(timeout=30)
        assert set(seen) == {"ANONYMOUS"}
        seen.clear()
        with AdminClient(_client(broker, pki, with_certificate=True)) as admin:
            admin.list_topics(timeout=30)
        assert set(seen) == {"CN=client-1"}  # DEFAULT mapping: the whole distinguished name


def test_encrypted_key_in_a_pem_keystore_file(pki: Pki, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pki.server_key.read_bytes(), None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"store-pw"))
    keystore = tmp_path / "keystore.pem"
    keystore.write_bytes(encrypted + pki.server_cert.read_bytes())
    config = {"listeners": "SSL://127.0.0.1:0", "num.network.threads": 1, "ssl.keystore.type": "PEM",
              "ssl.keystore.location": str(keystore), "ssl.key.password": "store-pw"}
    with MiniBroker(config) as broker, AdminClient(_client(broker, pki, with_certificate=False)) as admin:
        admin.list_topics(timeout=30)
    with pytest.raises(ConfigurationError, match=r"ssl\.keystore\.location"):
        MiniBroker({**config, "ssl.key.password": "wrong"}).start()


@pytest.mark.parametrize(("extra", "message"), [
    ({}, "has no key"),
    ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "/x.jks"}, "PEM only"),
    ({"ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----"}, "go together"),
    ({"ssl.client.auth": "sometimes", "ssl.keystore.location": "KEYSTORE"}, "ssl.client.auth"),
])
def test_bad_tls_configuration_names_the_key(pki: Pki, tmp_path: Path, extra: dict[str, str], message: str) -> None:
    keystore = tmp_path / "ks.pem"
    keystore.write_text(pki.server_key.read_text() + pki.server_cert.read_text())
    config = {"listeners": "SSL://127.0.0.1:0", "num.network.threads": 1,
              **{k: (str(keystore) if v == "KEYSTORE" else v) for k, v in extra.items()}}
    with pytest.raises(ConfigurationError, match=message):
        MiniBroker(config).start()


def test_sasl_listener_without_users_or_with_unknown_mechanism_fails_to_start() -> None:
    with pytest.raises(ConfigurationError, match=r"plain\.sasl\.jaas\.config"):
        MiniBroker({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN"}).start()
    with pytest.raises(ConfigurationError, match="GSSAPI"):
        MiniBroker({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}).start()
