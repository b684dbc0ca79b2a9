"""ConsumerNetworkClient over the real NetworkClient (on a MockSelector): outcomes map to future results."""

from __future__ import annotations

import logging

import pytest

from pykafka_client.errors import AuthenticationError, DisconnectError, IllegalArgumentError, UnsupportedVersionError
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import CreateTopicsRequest, HeartbeatRequest, HeartbeatResponse, LeaveGroupRequest
from tests.doubles.mock_selector import MockSelector
from tests.doubles.responses import api_versions_response
from tests.unit.network.harness import Harness


def env(api_versions: object = None) -> tuple[Harness, ConsumerNetworkClient]:
    h = Harness()
    versions = api_versions or api_versions_response()

    def answer(sel: MockSelector) -> None:
        for r in sel.unanswered(api_key=ApiKey.API_VERSIONS):
            sel.respond(r.destination, versions)
        for r in sel.unanswered(api_key=ApiKey.HEARTBEAT):
            sel.respond(r.destination, HeartbeatResponse(error_code=0))

    h.selector.on_poll = answer
    return h, ConsumerNetworkClient(h.client, h.metadata, h.time, 100, 5000)


def test_request_connects_handshakes_and_completes() -> None:
    h, cnc = env()
    f = cnc.send(h.node, HeartbeatRequest(group_id="g"))
    assert cnc.poll_future(f, h.time.timer(5000))
    assert isinstance(f.value().response_body, HeartbeatResponse)
    assert [r.api_key for r in h.selector.sent_requests] == [ApiKey.API_VERSIONS, ApiKey.HEARTBEAT]


def test_server_disconnect_fails_in_flight_future() -> None:
    h, cnc = env()
    h.selector.on_poll = None
    h.await_ready()
    f = cnc.send(h.node, HeartbeatRequest(group_id="g"))
    cnc.poll(h.time.timer(0))
    assert h.client.in_flight_request_count() == 1
    h.selector.server_disconnect(h.node.id_string)
    cnc.poll_future(f, h.time.timer(1000))
    assert isinstance(f.exception(), DisconnectError) and f.is_retriable()


def test_authentication_failure_fails_future() -> None:
    h, cnc = env()
    h.selector.on_poll = None
    f = cnc.send(h.node, HeartbeatRequest(group_id="g"))
    cnc.poll(h.time.timer(0))  # starts connecting
    h.selector.server_authentication_failed(h.node.id_string)
    # The failure also reaches the metadata as a fatal error, raised once from poll (statement 46).
    with pytest.raises(AuthenticationError):
        cnc.poll_future(f, h.time.timer(1000))
    assert isinstance(f.exception(), AuthenticationError)
    cnc.poll(h.time.timer(0))


def test_version_mismatch_fails_future_without_wire_bytes() -> None:
    h, cnc = env(api_versions_response({ApiKey.HEARTBEAT: (10, 11)}))
    f = cnc.send(h.node, HeartbeatRequest(group_id="g"))
    cnc.poll_future(f, h.time.timer(5000))
    assert isinstance(f.exception(), UnsupportedVersionError)
    assert [r.api_key for r in h.selector.sent_requests] == [ApiKey.API_VERSIONS]


# --- an encode failure on the send path fails the future and is logged at WARNING (issue 9 item 1) ----


def _unencodable_at_any_version() -> LeaveGroupRequest:
    # member_id exists only in v0-v2 and members only from v3: no version can carry both.
    return LeaveGroupRequest(group_id="g", member_id="m", members=[LeaveGroupRequest.MemberIdentity(member_id="m")])


def test_body_that_cannot_encode_at_the_negotiated_version_fails_future_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h, cnc = env(api_versions_response({ApiKey.LEAVE_GROUP: (0, 4)}))
    caplog.set_level(logging.DEBUG, logger="pykafka_client")
    f = cnc.send(h.node, _unencodable_at_any_version())
    assert cnc.poll_future(f, h.time.timer(5000))
    assert isinstance(f.exception(), UnsupportedVersionError)
    assert "MemberId" in str(f.exception())
    assert [r.api_key for r in h.selector.sent_requests] == [ApiKey.API_VERSIONS]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
    message = warnings[0].getMessage()
    assert "LEAVE_GROUP v4" in message
    assert f"node {h.node.id_string} (127.0.0.1:{h.node.port})" in message
    assert "UNSUPPORTED_VERSION" in message and message.count("UNSUPPORTED_VERSION") == 1


def test_any_exception_while_encoding_fails_future_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    h, cnc = env()
    caplog.set_level(logging.WARNING, logger="pykafka_client")
    bad = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name="t", num_partitions="three")])  # type: ignore[arg-type]
    f = cnc.send(h.node, bad)
    assert cnc.poll_future(f, h.time.timer(5000))
    assert isinstance(f.exception(), IllegalArgumentError)
    assert [r.api_key for r in h.selector.sent_requests] == [ApiKey.API_VERSIONS]
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "CREATE_TOPICS v" in warning.getMessage() and "cannot encode CreateTopicsRequest" in warning.getMessage()
    # The client is still usable afterwards.
    ok = cnc.send(h.node, HeartbeatRequest(group_id="g"))
    assert cnc.poll_future(ok, h.time.timer(5000)) and ok.succeeded()
