"""librdkafka (confluent-kafka) authenticating against our server-side SASL mechanisms.

The echo server answers only the pre-authentication APIs, so the client gives up right after
authenticating; what is checked is the server's view: authenticated principal or failed auth.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from pykafka_client.network.transport.selectable import ChannelState

from .test_sasl import sasl_server

confluent_kafka = pytest.importorskip("confluent_kafka")
admin = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(60)]


def wait_for(condition: Callable[[], bool], deadline_s: float = 15.0) -> None:
    end = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError("condition not reached before the deadline")
        time.sleep(0.02)


def start_client(port: int, mechanism: str, password: str) -> object:
    client = admin.AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": "alice",
            "sasl.password": password,
            "log_level": 0,
        }
    )
    return client  # librdkafka connects to the bootstrap server as soon as the client exists


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_librdkafka_authenticates(mechanism: str) -> None:
    with sasl_server() as server:
        client = start_client(server.port, mechanism, "alice-secret")
        try:
            wait_for(lambda: server.selector.metrics.successful_authentication_total >= 1)
            assert server.selector.metrics.failed_authentication_total == 0
        finally:
            del client


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_librdkafka_wrong_password_fails(mechanism: str) -> None:
    with sasl_server() as server:
        client = start_client(server.port, mechanism, "wrong")
        try:
            wait_for(
                lambda: any(d.state is ChannelState.AUTHENTICATION_FAILED for d in server.disconnect_snapshot().values())
            )
            assert server.selector.metrics.successful_authentication_total == 0
        finally:
            del client
