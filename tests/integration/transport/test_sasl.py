"""SASL over real loopback connections: client authenticators against the server-side mechanisms."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykafka_client.errors import SaslAuthenticationError, UnsupportedSaslMechanismError
from pykafka_client.network.channel_builder import Mode, create_channel_builder
from pykafka_client.network.network_send import size_prefixed
from pykafka_client.network.sasl import (
    PlainServer,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    mapping_verifier,
    server_authenticator_factory,
)
from pykafka_client.network.sasl.mechanism import SaslServerMechanismFactory
from pykafka_client.network.selectable import ChannelState
from pykafka_client.network.selector import Selector

from .certs import Pki, make_pki
from .harness import ClientRecorder, EchoServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


def mechanisms(enabled: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")) -> dict[str, SaslServerMechanismFactory]:
    out: dict[str, SaslServerMechanismFactory] = {}
    for name in enabled:
        scram = ScramMechanism.for_mechanism_name(name)
        if scram is None:
            out[name] = lambda: PlainServer(mapping_verifier(USERS))
        else:
            creds = {u: ScramCredential.from_password(scram, p) for u, p in USERS.items()}
            out[name] = lambda m=scram, c=creds: ScramServer(m, c)  # type: ignore[misc]
    return out


def sasl_server(enabled: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), extra: dict[str, object] | None = None) -> EchoServer:
    config: dict[str, object] = {"security.protocol": "SASL_PLAINTEXT", **(extra or {})}
    builder = create_channel_builder(config, Mode.SERVER, server_authenticator_factory=server_authenticator_factory(mechanisms(enabled)))
    return EchoServer(channel_builder=builder)


@pytest.fixture
def server() -> Iterator[EchoServer]:
    with sasl_server() as s:
        yield s


def client_for(mechanism: str, user: str, password: str, **extra: object) -> ClientRecorder:
    config: dict[str, object] = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" password="{password}";',
        "client.id": "transport-test",
        **extra,
    }
    return ClientRecorder(Selector(channel_builder=create_channel_builder(config)))


def connect(client: ClientRecorder, port: int, cid: str = "0") -> None:
    client.selector.connect(cid, ("127.0.0.1", port))
    client.poll_until(lambda: cid in client.connected or cid in client.disconnected)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_authenticate_then_exchange_frames(server: EchoServer, mechanism: str) -> None:
    client = client_for(mechanism, "alice", "alice-secret")
    try:
        connect(client, server.port)
        assert client.connected == ["0"], client.disconnected
        assert client.selector.is_channel_ready("0")
        assert client.selector.metrics.successful_authentication_total == 1
        client.selector.send(size_prefixed("0", [b"after auth"]))
        client.poll_until(lambda: len(client.receives) == 1)
        assert bytes(client.receives[0].payload) == b"after auth"
        assert list(server.principals.values()) == ["alice"]
    finally:
        client.selector.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password(server: EchoServer, mechanism: str) -> None:
    client = client_for(mechanism, "alice", "not-her-password")
    try:
        connect(client, server.port)
        info = client.disconnected["0"]
        assert info.state is ChannelState.AUTHENTICATION_FAILED
        assert isinstance(info.exception, SaslAuthenticationError)
        assert "Authentication failed" in str(info.exception)  # the server's message reached the client
        client.poll_until(lambda: any(d.state is ChannelState.AUTHENTICATION_FAILED for d in server.disconnect_snapshot().values()))
    finally:
        client.selector.close()


def test_unsupported_mechanism() -> None:
    with sasl_server(("PLAIN",)) as server:
        client = client_for("SCRAM-SHA-512", "alice", "alice-secret")
        try:
            connect(client, server.port)
            info = client.disconnected["0"]
            assert info.state is ChannelState.AUTHENTICATION_FAILED
            assert isinstance(info.exception, UnsupportedSaslMechanismError)
            assert "SCRAM-SHA-512" in str(info.exception) and "PLAIN" in str(info.exception)
        finally:
            client.selector.close()


def test_server_rejects_requests_before_authentication(server: EchoServer) -> None:
    raw = socket.create_connection(("127.0.0.1", server.port))
    try:
        body = struct.pack(">hhih", 3, 12, 1, -1)  # a Metadata request instead of SaslHandshake
        raw.sendall(struct.pack(">i", len(body)) + body)
        assert raw.recv(100) == b""
    finally:
        raw.close()
    assert server.received == 0


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_sasl_ssl(pki: Pki) -> None:
    tls = {"ssl.certificate.location": str(pki.server_cert), "ssl.key.location": str(pki.server_key)}
    config: dict[str, object] = {"security.protocol": "SASL_SSL", **tls}
    builder = create_channel_builder(config, Mode.SERVER, server_authenticator_factory=server_authenticator_factory(mechanisms()))
    with EchoServer(channel_builder=builder) as server:
        client = client_for(
            "SCRAM-SHA-256", "bob", "bob-secret", **{"security.protocol": "SASL_SSL", "ssl.truststore.location": str(Path(pki.ca))}
        )
        try:
            connect(client, server.port)
            assert client.connected == ["0"], client.disconnected
            client.selector.send(size_prefixed("0", [b"tls+scram"]))
            client.poll_until(lambda: len(client.receives) == 1)
            assert bytes(client.receives[0].payload) == b"tls+scram"
        finally:
            client.selector.close()
