"""What the client's logs say: the library's root logger, connection failures, rate-limited warnings."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from pykafka_client.network.client_request import RequestHeaderInfo
from pykafka_client.network.log_rate_limiter import LogRateLimiter
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.metadata_updater import DefaultMetadataUpdater, MetadataRecoveryStrategy
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.utils.time import MockTime
from tests.doubles.responses import metadata_response, nodes
from tests.unit.network.harness import Harness


def test_library_root_logger_has_a_null_handler() -> None:
    import pykafka_client

    handlers = logging.getLogger(pykafka_client.__name__).handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


def test_importing_the_package_alone_prints_nothing_for_a_library_warning() -> None:
    """Without the NullHandler, logging's lastResort handler would print the warning on stderr."""
    code = (
        "import logging, pykafka_client\n"
        "logging.getLogger('pykafka_client.network.network_client').warning('must not reach stderr')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stderr == ""


# --- connection failures name host:port and say "connection refused" ---------------------------


def test_refused_connect_warning_names_host_port_and_says_connection_refused(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness()
    h.selector.refused.add(("127.0.0.1", h.node.port))
    caplog.set_level(logging.WARNING, logger="pykafka_client")
    assert not h.client.ready(h.node, h.now)
    (warning,) = [r.getMessage() for r in caplog.records]
    assert f"node {h.node.id} (127.0.0.1:{h.node.port}): connection refused" in warning


def test_connection_not_established_warning_names_host_port(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness(socket_connection_setup_timeout_ms=1000, socket_connection_setup_timeout_max_ms=1000)
    h.selector.server_connection_blocked(h.node.id_string)
    caplog.set_level(logging.INFO, logger="pykafka_client")
    h.client.ready(h.node, h.now)
    h.time.sleep(2000)
    h.poll(0)
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"127.0.0.1:{h.node.port}" in m and "setup timeout" in m for m in messages), messages


# --- repeated identical metadata warnings are rate-limited --------------------------------------


def _updater(time: MockTime, interval_ms: int = 60_000) -> DefaultMetadataUpdater:
    metadata = Metadata(0, 0, 300_000)
    metadata.bootstrap([("localhost", 9092)])
    return DefaultMetadataUpdater(
        metadata, None, 30_000, 50, MetadataRecoveryStrategy.NONE, metadata_warning_interval_ms=interval_ms  # type: ignore[arg-type]
    )


def _respond(updater: DefaultMetadataUpdater, time: MockTime, errors: dict[str, int]) -> None:
    header = RequestHeaderInfo(ApiKey.METADATA, 12, "c", 1)
    response = metadata_response(nodes(1), {"ok": 1}, topic_errors=errors)
    updater.handle_successful_response(header, time.hi_res_clock_ms(), response)


def test_identical_metadata_warnings_are_logged_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    time = MockTime()
    updater = _updater(time, interval_ms=10_000)
    caplog.set_level(logging.WARNING, logger="pykafka_client")
    for _ in range(5):
        _respond(updater, time, {"missing": 3})  # UNKNOWN_TOPIC_OR_PARTITION
        time.sleep(100)
    assert len(caplog.records) == 1
    assert "missing: UnknownTopicOrPartitionError" in caplog.records[0].getMessage()
    # A different error is a different message: logged at once.
    _respond(updater, time, {"other": 5})  # LEADER_NOT_AVAILABLE
    assert len(caplog.records) == 2 and "other: LeaderNotAvailableError" in caplog.records[1].getMessage()
    # After the interval the first one is logged again, saying how many repeats were held back.
    time.sleep(10_000)
    _respond(updater, time, {"missing": 3})
    assert len(caplog.records) == 3
    assert "repeated 4 times" in caplog.records[2].getMessage()


def test_log_rate_limiter_counts_suppressed_repeats() -> None:
    limiter = LogRateLimiter(1000)
    assert limiter.should_log("a", 0) and limiter.take_suppressed() == 0
    assert not limiter.should_log("a", 500)
    assert not limiter.should_log("a", 999)
    assert limiter.should_log("b", 999)
    assert limiter.should_log("a", 1000) and limiter.take_suppressed() == 2


def test_rebootstrap_is_logged_once_per_interval_while_no_broker_answers(caplog: pytest.LogCaptureFixture) -> None:
    """With every broker and the bootstrap address refusing, the client rebootstraps on each metadata attempt;
    the INFO line saying so must not repeat every reconnect backoff."""
    resolver = {"localhost": ["127.0.0.1"], "bootstrap.example": ["10.9.9.9"]}
    h = Harness(resolver=lambda host: resolver[host], reconnect_backoff_ms=1000, reconnect_backoff_max_ms=1000)
    h.metadata.bootstrap([("bootstrap.example", 9999)])
    h.metadata.update(0, metadata_response(h.nodes, {"t": 3}), False, h.now)
    for n in h.nodes:
        h.selector.refused.add(("127.0.0.1", n.port))
    h.selector.refused.add(("10.9.9.9", 9999))
    h.metadata.request_update()
    caplog.set_level(logging.INFO, logger="pykafka_client.network.metadata_updater")
    for _ in range(200):  # about 10 s of mock time: 56 lines before the fix
        h.client.poll(50, h.now)
    rebootstraps = [r for r in caplog.records if "rebootstrapping" in r.getMessage()]
    assert len(rebootstraps) == 1, [r.getMessage() for r in rebootstraps]
