"""``ssl.principal.mapping.rules`` on a MiniBroker's SSL listener with ``ssl.client.auth=required``: a client
certificate whose DN matches a rule is served as the mapped principal; a DN that matches no rule has no principal,
and the broker closes the connection (Kafka's behaviour) instead of serving the DN as it is."""

from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.protocol.headers import encode_request
from pykafka_client.protocol.messages import ApiVersionsRequest
from tests.doubles.frames import frame_bytes
from tests.integration.transport.certs import Pki

from .conftest import secure_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniBroker]:
    # SSL_STRICT: only CN=client-1 maps (to "one"); SSL_OTHER: only a CN=admin DN maps, client-1's DN matches nothing
    config = secure_config(pki, tmp_path_factory.mktemp("mapping"), **{
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL_STRICT://127.0.0.1:0,SSL_OTHER://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL_STRICT:SSL,SSL_OTHER:SSL",
        "ssl.client.auth": "required",
        "listener.name.ssl_strict.ssl.principal.mapping.rules": "RULE:^CN=client-1$/one/",
        "listener.name.ssl_other.ssl.principal.mapping.rules": "RULE:^CN=admin$/admin/",
    })
    with MiniBroker(config) as b:
        yield b


def api_versions_over_tls(pki: Pki, bootstrap: str) -> bytes | None:
    """Handshake with the client certificate, send ApiVersions; the response frame, or None when the broker closed
    the connection instead."""
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.load_cert_chain(str(pki.client_cert), str(pki.client_key), password="s3cret")
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=host) as tls:
        tls.sendall(frame_bytes(encode_request(ApiVersionsRequest(), 0, 1, "mapping-test")))
        head = b""
        try:
            while len(head) < 4:
                chunk = tls.recv(4 - len(head))
                if not chunk:
                    return None
                head += chunk
        except (ConnectionResetError, ssl.SSLError):
            return None
        (size,) = struct.unpack(">i", head)
        body = b""
        while len(body) < size:
            chunk = tls.recv(size - len(body))
            if not chunk:
                return None
            body += chunk
        return body


def test_a_dn_that_matches_a_rule_is_served(broker: MiniBroker, pki: Pki) -> None:
    assert api_versions_over_tls(pki, broker.listener_bootstrap("SSL_STRICT")) is not None


def test_a_dn_that_matches_no_rule_closes_the_connection(broker: MiniBroker, pki: Pki) -> None:
    assert api_versions_over_tls(pki, broker.listener_bootstrap("SSL_OTHER")) is None
    # the broker goes on serving the other listeners
    assert api_versions_over_tls(pki, broker.listener_bootstrap("SSL_STRICT")) is not None
