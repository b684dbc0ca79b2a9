"""SASL over real loopback connections: client authenticators against the server-side mechanisms."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykafka_client.errors import SaslAuthenticationError, UnsupportedSaslMechanismError
from pykafka_client.network.transport.channel_builder import Mode, create_channel_builder
from pykafka_client.network.transport.network_send import size_prefixed
from pykafka_client.network.transport.sasl import (
    PlainServer,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    mapping_verifier,
    server_authenticator_factory,
)
from pykafka_client.network.transport.sasl.mechanism import SaslServerMechanismFactory
from pykafka_client.network.transport.selectable import ChannelState
from pykafka_client.network.transport.selector import Selector

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


def _call(sock: socket.socket, frame_pieces: list[object]) -> bytes:
    sock.sendall(b"".join(bytes(p) for p in frame_pieces))  # type: ignore[call-overload]
    size = struct.unpack(">i", _recv_exact(sock, 4))[0]
    return _recv_exact(sock, size)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def test_java_style_client_api_versions_then_flexible_authenticate(server: EchoServer) -> None:
    """ApiVersions v3 before the handshake and SaslAuthenticate v2 (flexible), as Java clients send."""
    from pykafka_client.protocol.api_keys import ApiKey
    from pykafka_client.protocol.headers import decode_response, encode_request
    from pykafka_client.protocol.messages import (
        ApiVersionsRequest,
        ApiVersionsResponse,
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
        SaslHandshakeRequest,
        SaslHandshakeResponse,
    )

    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        raw = _call(sock, list(encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3, 1, "c")))
        versions = decode_response(raw, ApiKey.API_VERSIONS, 3, 1)
        assert isinstance(versions, ApiVersionsResponse) and versions.error_code == 0
        ranges = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert ranges[ApiKey.SASL_AUTHENTICATE] == (0, 2)

        future = struct.pack(">hhih", ApiKey.API_VERSIONS, 99, 2, 1) + b"c" + b"\x00" + b"\x01\x01\x00"
        raw = _call(sock, [struct.pack(">i", len(future)), future])
        unsupported = decode_response(raw, ApiKey.API_VERSIONS, 0, 2)
        assert isinstance(unsupported, ApiVersionsResponse) and unsupported.error_code == 35

        raw = _call(sock, list(encode_request(SaslHandshakeRequest(mechanism="PLAIN"), 1, 3, "c")))
        handshake = decode_response(raw, ApiKey.SASL_HANDSHAKE, 1, 3)
        assert isinstance(handshake, SaslHandshakeResponse) and handshake.error_code == 0
        assert handshake.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

        token = b"\0bob\0bob-secret"
        raw = _call(sock, list(encode_request(SaslAuthenticateRequest(auth_bytes=token), 2, 4, "c")))
        auth = decode_response(raw, ApiKey.SASL_AUTHENTICATE, 2, 4)
        assert isinstance(auth, SaslAuthenticateResponse) and auth.error_code == 0

        assert _call(sock, [b"\0\0\0\x05", b"hello"]) == b"hello"  # authenticated: the echo API answers
