"""The MockClient double behaves as documented (other issues' tests rely on it)."""

from __future__ import annotations

import pytest

from pykafka_client.errors import IllegalStateError
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.kafka_client import KafkaClient
from pykafka_client.network.node_api_versions import NodeApiVersions
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import HeartbeatRequest, HeartbeatResponse
from pykafka_client.structs import Node
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient

NODE = Node(0, "h", 1)


def setup() -> tuple[MockTime, MockClient, list[ClientResponse]]:
    time = MockTime()
    client = MockClient(time)
    return time, client, []


def send(client: MockClient, time: MockTime, out: list[ClientResponse], request_timeout_ms: int | None = None) -> None:
    assert client.ready(NODE, time.hi_res_clock_ms())
    req = client.new_client_request(
        "0", HeartbeatRequest(group_id="g"), time.hi_res_clock_ms(), True, request_timeout_ms, out.append
    )
    client.send(req, time.hi_res_clock_ms())


def test_is_a_kafka_client() -> None:
    client: KafkaClient = MockClient(MockTime())
    assert client.active()


def test_prepared_response_and_matcher_failing_loudly() -> None:
    time, client, out = setup()
    client.prepare_response(HeartbeatResponse(error_code=0), matcher=lambda body: body.group_id == "g")
    send(client, time, out)
    client.poll(0, time.hi_res_clock_ms())
    assert len(out) == 1 and out[0].response_body.error_code == 0
    client.prepare_response(HeartbeatResponse(), matcher=lambda body: body.group_id == "other")
    with pytest.raises(AssertionError, match="matcher"):
        send(client, time, out)


def test_respond_disconnect_and_request_timeout_emulation() -> None:
    time, client, out = setup()
    send(client, time, out)
    assert client.in_flight_request_count() == 1
    client.respond(HeartbeatResponse(error_code=27))
    client.poll(0, time.hi_res_clock_ms())
    assert out[-1].response_body.error_code == 27
    send(client, time, out)
    client.disconnect("0")
    client.poll(0, time.hi_res_clock_ms())
    assert out[-1].was_disconnected
    send(client, time, out, request_timeout_ms=100)
    time.sleep(100)
    client.poll(0, time.hi_res_clock_ms())
    assert out[-1].was_disconnected and client.in_flight_request_count() == 0


def test_connection_scripting() -> None:
    time, client, _out = setup()
    now = time.hi_res_clock_ms
    client.backoff(NODE, 100)
    assert not client.ready(NODE, now()) and client.connection_failed(NODE)
    assert client.connection_delay(NODE, now()) == 100
    time.sleep(100)
    assert client.ready(NODE, now())
    client.throttle(NODE, 50)
    assert not client.is_ready(NODE, now()) and client.poll_delay_ms(NODE, now()) == 50
    time.sleep(50)
    assert client.is_ready(NODE, now())
    other = Node(1, "h", 2)
    client.delay_ready(other, 30)
    assert not client.ready(other, now())
    time.sleep(30)
    assert client.ready(other, now())
    client.set_unreachable(other, 1000)
    assert not client.ready(other, now())
    client.authentication_failed(NODE, 200)
    assert client.authentication_exception(NODE) is not None and not client.ready(NODE, now())
    with pytest.raises(IllegalStateError):
        client.send(client.new_client_request("0", HeartbeatRequest(), now()), now())


def test_pending_authentication_error_and_version_mismatch() -> None:
    time, client, out = setup()
    client.create_pending_authentication_error(NODE, 100)
    send(client, time, out)
    client.poll(0, time.hi_res_clock_ms())
    assert out[-1].authentication_exception is not None
    time.sleep(100)
    client.node_api_versions = NodeApiVersions.create({ApiKey.HEARTBEAT: (9, 9)})
    client.prepare_response(HeartbeatResponse())
    send(client, time, out)
    client.poll(0, time.hi_res_clock_ms())
    assert out[-1].version_mismatch is not None
    client.node_api_versions = NodeApiVersions.create()
    client.prepare_unsupported_version_response()
    send(client, time, out)
    client.poll(0, time.hi_res_clock_ms())
    assert out[-1].version_mismatch is not None
