"""TLS: the Selector as client and as server (SslTransportLayer both ways) over loopback."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykafka_client.errors import ConfigurationError, InvalidReceiveError, SslAuthenticationError
from pykafka_client.network.transport.channel_builder import Mode, create_channel_builder
from pykafka_client.network.transport.network_send import FileRegion, size_prefixed
from pykafka_client.network.transport.selectable import ChannelState
from pykafka_client.network.transport.selector import Selector
from pykafka_client.network.transport.ssl_factory import create_ssl_context

from .certs import KEY_PASSWORD, Pki, make_pki
from .harness import ClientRecorder, EchoServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def server_config(cert: Path, key: Path, **extra: object) -> dict[str, object]:
    return {"security.protocol": "SSL", "ssl.certificate.location": str(cert), "ssl.key.location": str(key), **extra}


def tls_server(config: dict[str, object]) -> EchoServer:
    return EchoServer(channel_builder=create_channel_builder(config, Mode.SERVER))


def tls_client(config: dict[str, object]) -> ClientRecorder:
    return ClientRecorder(Selector(channel_builder=create_channel_builder(config), max_receives_per_channel_per_poll=16))


@pytest.fixture
def server(pki: Pki) -> Iterator[EchoServer]:
    with tls_server(server_config(pki.server_cert, pki.server_key)) as s:
        yield s


def connect(client: ClientRecorder, port: int, cid: str = "0") -> None:
    client.selector.connect(cid, ("127.0.0.1", port))
    client.poll_until(lambda: cid in client.connected or cid in client.disconnected)


def test_tls_round_trip_with_hostname_verification(pki: Pki, server: EchoServer) -> None:
    client = tls_client({"security.protocol": "SSL", "ssl.truststore.location": str(pki.ca)})
    try:
        connect(client, server.port)
        assert client.connected == ["0"], client.disconnected
        big = bytes(range(256)) * 4096  # 1 MiB: many TLS records, partial writes
        client.selector.send(size_prefixed("0", [b"small"]))
        client.poll_until(lambda: len(client.sends) == 1)
        client.selector.send(size_prefixed("0", [b"a", b"b", big]))
        client.poll_until(lambda: len(client.sends) == 2)
        with tempfile.TemporaryFile() as f:
            f.write(b"xx" + big)
            f.flush()
            client.selector.send(size_prefixed("0", [FileRegion(f, 2, len(big))]))  # pread path under TLS
            client.poll_until(lambda: len(client.receives) == 3)
        assert [bytes(r.payload) for r in client.receives] == [b"small", b"ab" + big, big]
    finally:
        client.selector.close()


def test_hostname_mismatch_fails_with_host_in_message(pki: Pki) -> None:
    with tls_server(server_config(pki.wrong_host_cert, pki.wrong_host_key)) as server:
        client = tls_client({"security.protocol": "SSL", "ssl.truststore.location": str(pki.ca)})
        try:
            connect(client, server.port)
            info = client.disconnected["0"]
            assert info.state is ChannelState.AUTHENTICATION_FAILED
            assert isinstance(info.exception, SslAuthenticationError)
            assert "127.0.0.1" in str(info.exception)
            assert "ostname mismatch" in str(info.exception) or "IP address mismatch" in str(info.exception)
            assert client.selector.metrics.failed_authentication_total == 1
        finally:
            client.selector.close()


def test_hostname_verification_can_be_disabled(pki: Pki) -> None:
    with tls_server(server_config(pki.wrong_host_cert, pki.wrong_host_key)) as server:
        client = tls_client(
            {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca), "ssl.endpoint.identification.algorithm": ""}
        )
        try:
            connect(client, server.port)
            assert client.connected == ["0"], client.disconnected
        finally:
            client.selector.close()


def test_untrusted_ca_fails(pki: Pki, server: EchoServer) -> None:
    client = tls_client({"security.protocol": "SSL", "ssl.truststore.location": str(pki.other_ca)})
    try:
        connect(client, server.port)
        info = client.disconnected["0"]
        assert info.state is ChannelState.AUTHENTICATION_FAILED
        assert "certificate verification failed" in str(info.exception)
    finally:
        client.selector.close()


def test_mutual_tls(pki: Pki) -> None:
    config = server_config(pki.server_cert, pki.server_key, **{"ssl.client.auth": "required", "ssl.truststore.location": str(pki.ca)})
    with tls_server(config) as server:
        good = tls_client(
            {
                "security.protocol": "SSL",
                "ssl.truststore.location": str(pki.ca),
                "ssl.certificate.location": str(pki.client_cert),
                "ssl.key.location": str(pki.client_key),
                "ssl.key.password": KEY_PASSWORD,
            }
        )
        anonymous = tls_client({"security.protocol": "SSL", "ssl.truststore.location": str(pki.ca)})
        try:
            connect(good, server.port)
            assert good.connected == ["0"]
            good.selector.send(size_prefixed("0", [b"mtls"]))
            good.poll_until(lambda: len(good.receives) == 1)
            assert bytes(good.receives[0].payload) == b"mtls"
            assert list(server.principals.values()) == ["CN=client-1"]

            # Without a certificate the server refuses (with TLS 1.3 the client learns it on first read).
            connect(anonymous, server.port)
            if "0" not in anonymous.disconnected:  # may already be: connected and refused in one poll
                anonymous.selector.send(size_prefixed("0", [b"x"]))
                anonymous.poll_until(lambda: "0" in anonymous.disconnected)
            assert anonymous.receives == []
            anonymous.poll_until(
                lambda: any(d.state is ChannelState.AUTHENTICATION_FAILED for d in server.disconnect_snapshot().values())
            )
        finally:
            good.selector.close()
            anonymous.selector.close()


def test_plaintext_client_to_tls_server_fails_cleanly(server: EchoServer) -> None:
    client = ClientRecorder(Selector())
    try:
        connect(client, server.port)
        assert client.connected == ["0"]  # TCP only: plaintext has no handshake
        client.selector.send(size_prefixed("0", [b"hello?"]))
        client.poll_until(lambda: "0" in client.disconnected)
        assert client.receives == []
        client.poll_until(lambda: len(server.disconnect_snapshot()) == 1)
        (info,) = server.disconnect_snapshot().values()
        assert info.state is ChannelState.AUTHENTICATION_FAILED
        assert isinstance(info.exception, SslAuthenticationError)
    finally:
        client.selector.close()


def test_tls_client_to_plaintext_server_fails_cleanly() -> None:
    with EchoServer() as server:
        client = tls_client({"security.protocol": "SSL"})
        try:
            connect(client, server.port)
            assert client.connected == []
            # The server rejects the ClientHello as a frame size and closes: an SSL error (failed
            # handshake) or, when the close comes as a reset, a plain disconnect during the handshake.
            info = client.disconnected["0"]
            assert (info.state is ChannelState.AUTHENTICATION_FAILED and isinstance(info.exception, SslAuthenticationError)) or (
                info.state is ChannelState.AUTHENTICATE and isinstance(info.exception, ConnectionError)
            )
            client.poll_until(
                lambda: any(isinstance(d.exception, InvalidReceiveError) for d in server.disconnect_snapshot().values())
            )
        finally:
            client.selector.close()


def test_bad_ssl_configuration_names_the_key(pki: Pki) -> None:
    with pytest.raises(ConfigurationError, match=r"ssl\.truststore\.location"):
        create_ssl_context({"ssl.truststore.location": "/nonexistent/ca.pem"}, server_side=False)
    with pytest.raises(ConfigurationError, match=r"ssl\.keystore\.location"):
        create_ssl_context({}, server_side=True)
    with pytest.raises(ConfigurationError, match="could not be loaded"):
        create_ssl_context(
            {"ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.client_key), "ssl.key.password": "wrong"},
            server_side=False,
        )
    with pytest.raises(ConfigurationError, match=r"security\.protocol"):
        create_channel_builder({"security.protocol": "TLS"})
