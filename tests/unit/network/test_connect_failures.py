"""The last connection error of each node, recorded by NetworkClient and read back in a typed way
(issue 22 item 2): refused, name not resolved, setup timeout, closed during the ApiVersions handshake;
logged at WARNING once per node, not at every retry; forgotten once the node is ready."""

from __future__ import annotations

import logging
import socket

import pytest

from pykafka_client.network.connect_failure import ConnectFailureCause
from pykafka_client.network.transport.selectable import ChannelState
from pykafka_client.protocol.api_keys import ApiKey
from tests.unit.network.harness import Harness


def _refuse_all(h: Harness) -> None:
    for n in h.nodes:
        h.selector.refused.add(("127.0.0.1", n.port))


def _spin(h: Harness, polls: int) -> None:
    """Let the client retry: poll, then ask for every node again (as a caller waiting for one would)."""
    for _ in range(polls):
        for n in h.nodes:
            h.client.ready(n, h.now)
        h.client.poll(100, h.now)


def test_a_refused_connect_is_recorded_with_the_address_and_the_cause() -> None:
    h = Harness()
    h.selector.refused.add(("127.0.0.1", h.node.port))
    assert not h.client.ready(h.node, h.now)
    failure = h.client.last_connect_failure(h.node)
    assert failure is not None
    assert failure.cause is ConnectFailureCause.REFUSED
    assert failure.node_id == h.node.id_string
    assert failure.address == f"localhost:{h.node.port}"
    assert failure.resolved_address == f"127.0.0.1:{h.node.port}"
    assert isinstance(failure.error, ConnectionRefusedError)
    assert failure.describe() == f"localhost:{h.node.port} (127.0.0.1:{h.node.port}): connection refused"


def test_retries_that_fail_the_same_way_warn_once(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness(reconnect_backoff_ms=50, reconnect_backoff_max_ms=50)
    _refuse_all(h)
    caplog.set_level(logging.DEBUG, logger="pykafka_client")
    _spin(h, 50)
    attempts = len(h.selector.connect_attempts)
    assert attempts > 3 * len(h.nodes), attempts  # it did retry
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == len(h.nodes), warnings  # one per node, not one per attempt
    for n in h.nodes:
        assert sum(f"127.0.0.1:{n.port}" in w and "connection refused" in w for w in warnings) == 1


def test_a_name_that_does_not_resolve_is_recorded_as_such() -> None:
    def resolver(host: str) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    h = Harness(resolver=resolver)
    assert not h.client.ready(h.node, h.now)
    failure = h.client.last_connect_failure(h.node.id_string)
    assert failure is not None
    assert failure.cause is ConnectFailureCause.NAME_NOT_RESOLVED
    assert failure.resolved_address is None
    assert failure.describe() == f"localhost:{h.node.port}: name not resolved (Name or service not known)"


def test_a_connect_that_never_completes_is_recorded_as_timed_out() -> None:
    h = Harness(socket_connection_setup_timeout_ms=1000, socket_connection_setup_timeout_max_ms=1000)
    h.selector.server_connection_blocked(h.node.id_string)
    h.client.ready(h.node, h.now)
    h.time.sleep(2000)
    h.poll(0)
    failure = h.client.last_connect_failure(h.node)
    assert failure is not None and failure.cause is ConnectFailureCause.TIMED_OUT
    assert "not connected within 1000 ms" in failure.detail and "socket.connection.setup.timeout.ms" in failure.detail


def test_a_connection_closed_before_the_api_versions_answer_is_recorded() -> None:
    """A listener that accepts and then hangs up (not Kafka, or another security.protocol)."""
    h = Harness()
    h.client.ready(h.node, h.now)
    h.poll(0)  # connected: ApiVersions goes out
    h.poll(0)
    assert h.selector.unanswered(h.node.id_string, ApiKey.API_VERSIONS)
    h.selector.server_disconnect(h.node.id_string, ChannelState.READY)
    h.poll(0)
    failure = h.client.last_connect_failure(h.node)
    assert failure is not None and failure.cause is ConnectFailureCause.CLOSED_DURING_SETUP
    assert "before the broker answered ApiVersions" in failure.detail


def test_a_listener_that_never_answers_api_versions_is_recorded_as_timed_out() -> None:
    h = Harness(request_timeout_ms=1000)
    h.client.ready(h.node, h.now)
    h.poll(0)
    h.poll(0)
    assert h.selector.unanswered(h.node.id_string, ApiKey.API_VERSIONS)
    h.time.sleep(1001)
    h.poll(0)
    failure = h.client.last_connect_failure(h.node)
    assert failure is not None and failure.cause is ConnectFailureCause.TIMED_OUT
    assert "no answer to ApiVersions within request.timeout.ms" in failure.detail


def test_the_record_is_forgotten_once_the_node_is_ready_and_a_dropped_ready_connection_records_nothing() -> None:
    h = Harness(reconnect_backoff_ms=10, reconnect_backoff_max_ms=10)
    h.selector.refused.add(("127.0.0.1", h.node.port))
    h.client.ready(h.node, h.now)
    assert h.client.last_connect_failure(h.node) is not None
    h.selector.refused.clear()
    h.time.sleep(20)
    h.await_ready()
    assert h.client.last_connect_failure(h.node) is None
    h.selector.server_disconnect(h.node.id_string)
    h.poll(0)
    assert h.client.last_connect_failure(h.node) is None


def test_unreachable_reason_names_every_address_tried_and_its_error() -> None:
    h = Harness()
    _refuse_all(h)
    assert h.client.unreachable_reason() is None  # nothing tried yet
    _spin(h, 3)
    reason = h.client.unreachable_reason()
    assert reason is not None
    assert reason.startswith("could not connect to any broker: ")
    for n in h.nodes:
        assert f"localhost:{n.port} (127.0.0.1:{n.port}): connection refused" in reason
    assert "bootstrap.servers" in reason


def test_unreachable_reason_is_none_while_a_node_is_ready() -> None:
    h = Harness()
    h.selector.refused.add(("127.0.0.1", h.nodes[1].port))
    h.client.ready(h.nodes[1], h.now)
    assert h.client.unreachable_reason() is not None
    h.await_ready(h.nodes[0])
    assert h.client.unreachable_reason() is None


def test_unreachable_reason_counts_a_connect_still_in_progress() -> None:
    h = Harness(n_nodes=2)
    h.selector.refused.add(("127.0.0.1", h.nodes[0].port))
    h.selector.server_connection_blocked(h.nodes[1].id_string)
    h.client.ready(h.nodes[0], h.now)
    h.client.ready(h.nodes[1], h.now)
    h.time.sleep(300)
    reason = h.client.unreachable_reason()
    assert reason is not None
    assert f"127.0.0.1:{h.nodes[0].port}): connection refused" in reason
    assert f"localhost:{h.nodes[1].port}: not connected yet after 300 ms" in reason
