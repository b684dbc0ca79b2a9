"""A connect to a closed loopback port over the real Selector: the warning names host:port and says
"connection refused" (issue 9 item 6)."""

from __future__ import annotations

import logging
import socket
import time

import pytest

from pykafka_client.network.metadata import Metadata
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.transport.selector import Selector
from pykafka_client.utils.time import SYSTEM_TIME

pytestmark = pytest.mark.integration


def _closed_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_refused_connection_warning_names_host_port_and_says_connection_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = _closed_loopback_port()
    metadata = Metadata(100, 1000, 300_000)
    metadata.bootstrap([("127.0.0.1", port)])
    client = NetworkClient(Selector(time=SYSTEM_TIME), metadata, time=SYSTEM_TIME)
    caplog.set_level(logging.WARNING, logger="pykafka_client")
    try:
        deadline = time.monotonic() + 10
        while not caplog.records and time.monotonic() < deadline:
            client.poll(50, SYSTEM_TIME.hi_res_clock_ms())
    finally:
        client.close()
    messages = [r.getMessage() for r in caplog.records]
    assert messages, "no warning about the refused connection"
    assert f"node -1 (127.0.0.1:{port})" in messages[0], messages
    assert "connection refused" in messages[0], messages
