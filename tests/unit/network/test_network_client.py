"""NetworkClient contract (statements 2-30, 34) on a MockSelector and MockTime."""

from __future__ import annotations

import socket

import pytest

from pykafka_client.errors import AuthenticationError, IllegalArgumentError, IllegalStateError, UnsupportedVersionError
from pykafka_client.network.api_versions_handshake import ApiVersionsHandshake
from pykafka_client.network.cluster_connection_states import MAX_DELAY_MS
from pykafka_client.network.in_flight_requests import InFlightRequests
from pykafka_client.network.network_client import (
    SASL_MAX_RESERVED_CORRELATION_ID,
    SASL_MIN_RESERVED_CORRELATION_ID,
    NetworkClient,
)
from pykafka_client.network.transport.selectable import (
    POLL_COMPLETED_RECEIVES,
    POLL_COMPLETED_SENDS,
    POLL_DISCONNECTED,
    POLL_REAUTHENTICATION_SCHEDULED,
    NetworkSend,
)
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import CLIENT_SUPPORTED_VERSIONS, ApiKey
from pykafka_client.protocol.messages import ApiVersionsResponse, HeartbeatRequest, HeartbeatResponse
from pykafka_client.structs import Node
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_selector import MockSelector
from tests.doubles.responses import api_versions_response, metadata_response
from tests.unit.network.harness import Harness

API_VERSIONS_MAX = CLIENT_SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]


def test_s02_ready_node_has_max_connection_delay() -> None:
    h = Harness()
    assert h.client.connection_delay(h.node, h.now) == 0
    h.await_ready()
    assert h.client.connection_delay(h.node, h.now) == MAX_DELAY_MS


def test_s03_connection_delay_after_disconnect_is_reconnect_backoff_then_zero() -> None:
    h = Harness(reconnect_backoff_ms=100, reconnect_backoff_max_ms=10_000)
    h.await_ready()
    h.selector.server_disconnect(h.node.id_string)
    h.poll()
    delay = h.client.connection_delay(h.node, h.now)
    assert 80 <= delay <= 120
    assert not h.client.can_connect(h.node, h.now)
    h.time.sleep(delay)
    assert h.client.connection_delay(h.node, h.now) == 0
    assert h.client.can_connect(h.node, h.now)


def test_s04_failures_before_ready_keep_doubling_the_backoff() -> None:
    h = Harness(reconnect_backoff_ms=100, reconnect_backoff_max_ms=100_000)
    delays = []
    for _ in range(4):
        assert not h.client.ready(h.node, h.now)
        h.poll()  # connected -> ApiVersions queued
        h.poll()  # ApiVersions written
        assert h.selector.unanswered(h.node.id_string, ApiKey.API_VERSIONS)
        h.selector.server_disconnect(h.node.id_string)
        assert h.poll() == []  # statement 16: the internal request does not surface
        delay = h.client.connection_delay(h.node, h.now)
        delays.append(delay)
        h.time.sleep(delay)
    for i, d in enumerate(delays):
        assert 100 * 2**i * 0.8 <= d <= 100 * 2**i * 1.2
    # A successful connection resets it.
    h.await_ready()
    h.selector.server_disconnect(h.node.id_string)
    h.poll()
    assert 80 <= h.client.connection_delay(h.node, h.now) <= 120


def test_s05_no_exponential_backoff_when_max_equals_base() -> None:
    h = Harness(reconnect_backoff_ms=200, reconnect_backoff_max_ms=200)
    for _ in range(3):
        h.await_ready()
        h.selector.server_disconnect(h.node.id_string)
        h.poll()
        assert h.client.connection_delay(h.node, h.now) == 200
        h.time.sleep(200)


def test_s06_disconnect_of_disconnected_node_does_not_restart_backoff() -> None:
    h = Harness(reconnect_backoff_ms=100, reconnect_backoff_max_ms=100)
    h.await_ready()
    h.client.disconnect(h.node.id_string)
    assert h.client.connection_delay(h.node, h.now) == 100
    h.time.sleep(60)
    h.client.disconnect(h.node.id_string)
    assert h.client.connection_delay(h.node, h.now) == 40


def test_s07_connection_setup_timeout_closes_the_connecting_node() -> None:
    h = Harness(socket_connection_setup_timeout_ms=1000, socket_connection_setup_timeout_max_ms=1000)
    h.selector.server_connection_blocked(h.node.id_string)
    assert not h.client.ready(h.node, h.now)
    h.poll()
    assert h.client.connection_states.is_connecting(h.node.id_string)
    assert not h.client.connection_failed(h.node)
    h.time.sleep(1001)
    h.poll()
    assert h.client.connection_failed(h.node)
    assert h.node.id_string in h.selector.closed_ids


def test_s08_channel_never_ready_does_not_hang_in_checking_api_versions() -> None:
    h = Harness(socket_connection_setup_timeout_ms=1000, socket_connection_setup_timeout_max_ms=1000)
    h.selector.channel_not_ready(h.node.id_string)
    h.client.ready(h.node, h.now)
    for _ in range(5):
        h.poll()
    assert not h.client.connection_states.is_checking_api_versions(h.node.id_string)
    assert h.selector.unanswered(h.node.id_string) == []
    h.time.sleep(1001)
    h.poll()
    assert h.client.connection_failed(h.node)


def test_s09_close_forgets_node_and_drops_in_flight_without_callbacks() -> None:
    h = Harness()
    h.await_ready()
    h.send()
    h.poll()
    h.client.close(h.node.id_string)
    assert h.client.in_flight_request_count() == 0
    assert h.client.connection_states.node_state(h.node.id_string) is None
    assert h.poll() == [] and h.callbacks == []
    # A fresh connection may start at once.
    assert h.client.can_connect(h.node, h.now)
    h.await_ready()


def test_s09_close_connecting_node() -> None:
    h = Harness()
    h.selector.server_connection_blocked(h.node.id_string)
    h.client.ready(h.node, h.now)
    h.client.close_node(h.node.id_string)
    assert h.client.connection_states.node_state(h.node.id_string) is None
    h.selector.server_connection_unblocked(h.node.id_string)
    h.await_ready()


def test_s10_authentication_failure_sets_state_and_exception() -> None:
    h = Harness(reconnect_backoff_ms=100, reconnect_backoff_max_ms=100)
    h.client.ready(h.node, h.now)
    err = AuthenticationError("SASL failed")
    h.selector.server_authentication_failed(h.node.id_string, err)
    h.poll()
    assert h.client.authentication_exception(h.node) is err
    assert h.client.connection_failed(h.node)
    assert not h.client.can_connect(h.node, h.now)
    h.time.sleep(100)
    h.await_ready()
    assert h.client.authentication_exception(h.node) is None


def test_s11_failed_connection_to_first_address_tries_the_next() -> None:
    h = Harness(resolver=lambda host: ["10.0.0.1", "10.0.0.2"], reconnect_backoff_ms=50, reconnect_backoff_max_ms=50)
    h.selector.refused.add(("10.0.0.1", h.node.port))
    assert not h.client.ready(h.node, h.now)
    assert h.client.connection_failed(h.node)
    h.time.sleep(50)
    h.await_ready()
    assert [a for _, a in h.selector.connect_attempts] == [("10.0.0.1", 9092), ("10.0.0.2", 9092)]


def test_s11_reconnect_after_address_change_re_resolves() -> None:
    answers = {"localhost": ["10.0.0.1"]}
    h = Harness(resolver=lambda host: answers[host], reconnect_backoff_ms=50, reconnect_backoff_max_ms=50)
    h.await_ready()
    answers["localhost"] = ["10.0.0.7"]
    h.selector.server_disconnect(h.node.id_string)
    h.poll()
    h.time.sleep(50)
    h.await_ready()
    assert h.selector.connect_attempts[-1][1] == ("10.0.0.7", 9092)


def test_s12_dns_lookup_failure_makes_ready_return_false() -> None:
    def resolver(host: str) -> list[str]:
        raise socket.gaierror("no such host")

    h = Harness(resolver=resolver)
    bad = Node(7, "no-such-host.invalid", 9092)
    assert h.client.ready(bad, h.now) is False
    assert h.client.connection_failed(bad)


def test_s13_send_to_unready_node_raises() -> None:
    h = Harness()
    with pytest.raises(IllegalStateError):
        h.send()


def test_s14_api_versions_first_and_ready_only_on_success() -> None:
    h = Harness()
    h.client.ready(h.node, h.now)
    h.poll()
    h.poll()
    first = h.selector.sent_requests[0]
    assert first.api_key == ApiKey.API_VERSIONS and first.api_version == API_VERSIONS_MAX
    assert first.header_version == headers.request_header_version(ApiKey.API_VERSIONS, API_VERSIONS_MAX)
    assert not h.client.is_ready(h.node, h.now)
    h.selector.respond(h.node.id_string, api_versions_response())
    h.poll()
    assert h.client.is_ready(h.node, h.now)
    assert h.client.api_versions.get(h.node.id_string) is not None


def test_s14_api_versions_error_disconnects() -> None:
    h = Harness()
    h.client.ready(h.node, h.now)
    h.poll()
    h.poll()
    h.selector.respond(h.node.id_string, api_versions_response(error_code=41))  # CLUSTER_AUTHORIZATION_FAILED
    assert h.poll() == []
    assert h.client.connection_failed(h.node)
    assert h.node.id_string in h.selector.closed_ids


@pytest.mark.parametrize("advertised", [2, None])
def test_s15_unsupported_version_retries_with_broker_max_else_v0(advertised: int | None) -> None:
    h = Harness()
    h.client.ready(h.node, h.now)
    h.poll()
    h.poll()
    keys = [] if advertised is None else [ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=2)]
    # The broker answers an ApiVersions version it does not know with a v0 body.
    h.selector.respond(h.node.id_string, ApiVersionsResponse(error_code=35, api_keys=keys), version=0)
    h.poll()  # parse, queue the retry and send it
    h.poll()
    retry = h.selector.last_request(h.node.id_string)
    assert retry.api_key == ApiKey.API_VERSIONS
    assert retry.api_version == (advertised if advertised is not None else 0)
    h.selector.respond(h.node.id_string, api_versions_response())
    h.poll()
    assert h.client.is_ready(h.node, h.now)


def test_s16_client_disconnect_after_internal_api_versions_surfaces_nothing() -> None:
    h = Harness()
    h.client.ready(h.node, h.now)
    h.poll()
    h.poll()
    h.client.disconnect(h.node.id_string)
    assert h.poll() == []
    assert h.client.in_flight_request_count() == 0


def test_s17_version_mismatch_never_hits_the_wire_and_completes_on_next_poll() -> None:
    h = Harness()
    h.await_ready(api_versions=api_versions_response({ApiKey.HEARTBEAT: (9, 12)}))
    sent_before = len(h.selector.sent_requests)
    h.send()
    t0 = h.now
    responses = h.client.poll(10_000, h.now)
    assert h.now == t0  # returned at once, no selector wait
    assert len(responses) == 1 and isinstance(responses[0].version_mismatch, UnsupportedVersionError)
    assert h.callbacks == responses
    h.poll()
    assert len(h.selector.sent_requests) == sent_before


def test_s17_latest_usable_version_is_min_of_maxes() -> None:
    h = Harness()
    h.await_ready(api_versions=api_versions_response({ApiKey.HEARTBEAT: (0, 2)}))
    h.send()
    h.poll()
    assert h.selector.last_request().api_version == 2


def test_version_choice_follows_the_allowed_range_and_the_node_reconnecting_with_other_versions() -> None:
    h = Harness()
    h.await_ready(api_versions=api_versions_response({ApiKey.HEARTBEAT: (0, 2)}))
    versions = []
    for latest in (None, 1, None):
        h.send(latest_allowed_version=latest)
        h.poll()
        versions.append(h.selector.last_request().api_version)
        h.selector.respond(h.node.id_string, HeartbeatResponse(error_code=0))
        h.poll()
    assert versions == [2, 1, 2]
    h.client.disconnect(h.node.id_string)
    h.poll()
    h.time.sleep(10_000)  # past the reconnect backoff
    h.await_ready(api_versions=api_versions_response({ApiKey.HEARTBEAT: (0, 1)}))
    h.send()
    h.poll()
    assert h.selector.last_request().api_version == 1  # the new connection's versions, not the choice made before


def test_an_answered_request_is_freed_without_the_cyclic_collector() -> None:
    """Nothing keeps a request (its body, its callback: a producer's record batches) once its response was handled:
    the in-flight request and its NetworkSend do not reference each other, so they are freed at once, not at the
    next full collection."""
    import gc
    import weakref

    from pykafka_client.network.client_response import ClientResponse

    calls: list[bool] = []

    class Callback:  # weak-referenceable; keeps no response (a response holds its callback)
        def __call__(self, response: ClientResponse) -> None:
            calls.append(response.was_disconnected)

    h = Harness()
    h.await_ready()
    callback = Callback()
    ref = weakref.ref(callback)
    gc.disable()
    try:
        h.client.send(h.client.new_client_request(
            h.node.id_string, HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), h.now, callback=callback,
        ), h.now)
        del callback
        h.poll()
        h.selector.respond(h.node.id_string, HeartbeatResponse(error_code=0))
        h.poll()
        h.poll()  # the mock selector lets go of the sends completed by the poll before
        assert calls == [False]
        assert ref() is None, "an answered request is kept alive by a reference cycle"
    finally:
        gc.enable()


def test_s18_simple_request_response_via_callback_and_return_value() -> None:
    h = Harness()
    h.await_ready()
    req = h.send()
    h.poll()
    sent = h.selector.respond(h.node.id_string, HeartbeatResponse(error_code=0))
    assert sent.correlation_id == req.correlation_id and sent.client_id == "test-client"
    responses = h.poll()
    assert len(responses) == 1 and h.callbacks == responses
    r = responses[0]
    assert isinstance(r.response_body, HeartbeatResponse)
    assert r.request_header.correlation_id == req.correlation_id
    assert not r.was_disconnected and r.request_latency_ms >= 0


def test_s19_correlation_ids_are_unique_and_skip_sasl_range() -> None:
    h = Harness()
    ids = [h.client.next_correlation_id() for _ in range(100)]
    assert len(set(ids)) == 100
    h.client.correlation_ids.next_id = SASL_MIN_RESERVED_CORRELATION_ID - 2
    more = [h.client.next_correlation_id() for _ in range(5)]
    assert more[:2] == [SASL_MIN_RESERVED_CORRELATION_ID - 2, SASL_MIN_RESERVED_CORRELATION_ID - 1]
    assert not any(SASL_MIN_RESERVED_CORRELATION_ID <= c <= SASL_MAX_RESERVED_CORRELATION_ID for c in more)
    assert all(-(2**31) <= c < 2**31 for c in more)
    assert more[2] == -(2**31)


def test_s20_responses_matched_fifo_and_fire_and_forget_completes_on_send() -> None:
    h = Harness()
    h.await_ready()
    a = h.send()
    h.poll()
    b = h.send()
    h.poll()
    h.selector.respond(h.node.id_string, HeartbeatResponse(error_code=0))
    h.selector.respond(h.node.id_string, HeartbeatResponse(error_code=27))
    responses = h.poll()
    assert [r.request_header.correlation_id for r in responses] == [a.correlation_id, b.correlation_id]
    assert [r.response_body.error_code for r in responses] == [0, 27]
    ff = h.request(expect_response=False)
    h.client.send(ff, h.now)
    done = h.poll()
    assert len(done) == 1 and done[0].response_body is None and not done[0].was_disconnected
    assert h.client.in_flight_request_count() == 0


def test_s20_response_with_wrong_correlation_id_closes_only_that_connection() -> None:
    h = Harness()
    h.await_ready(h.nodes[0])
    h.await_ready(h.nodes[1])
    h.send(h.nodes[0])
    h.send(h.nodes[1])
    h.poll()
    h.selector.respond("0", HeartbeatResponse(), correlation_id=424242)
    h.selector.respond("1", HeartbeatResponse())
    responses = {r.destination: r for r in h.poll()}
    assert responses["0"].was_disconnected and responses["0"].disconnect_exception is not None
    assert responses["1"].response_body is not None
    assert h.client.connection_failed(h.nodes[0]) and not h.client.connection_failed(h.nodes[1])


def test_s21_max_in_flight_per_connection() -> None:
    h = Harness(max_in_flight_requests_per_connection=2)
    h.await_ready()
    h.send()
    # The first send is not fully written yet: nothing more may be sent.
    assert not h.client.is_ready(h.node, h.now)
    h.poll()
    assert h.client.is_ready(h.node, h.now)
    h.send()
    h.poll()
    assert not h.client.is_ready(h.node, h.now)
    with pytest.raises(IllegalStateError):
        h.send()
    h.selector.respond(h.node.id_string, HeartbeatResponse())
    h.poll()
    assert h.client.is_ready(h.node, h.now)


def test_s23_request_timeout_closes_connection_and_marks_in_flight_timed_out() -> None:
    h = Harness(request_timeout_ms=1000)
    h.await_ready()
    a = h.send()
    h.poll()
    b = h.send(request_timeout_ms=5000)
    h.poll()
    h.time.sleep(1000)
    assert h.poll() == []  # strictly greater than the timeout
    h.time.sleep(1)
    responses = h.poll()
    assert [r.request_header.correlation_id for r in responses] == [a.correlation_id, b.correlation_id]
    assert all(r.was_disconnected and r.was_timed_out for r in responses)
    assert h.node.id_string in h.selector.closed_ids
    assert h.client.connection_failed(h.node)
    assert h.metadata.update_requested()  # statement 30


def test_s24_server_disconnect_fails_all_in_flight_in_send_order() -> None:
    h = Harness()
    h.await_ready()
    sent = []
    for _ in range(3):
        sent.append(h.send())
        h.poll()
    h.selector.server_disconnect(h.node.id_string)
    responses = h.poll()
    assert [r.request_header.correlation_id for r in responses] == [s.correlation_id for s in sent]
    assert all(r.was_disconnected and not r.was_timed_out for r in responses)
    assert h.client.in_flight_request_count() == 0


def test_s25_throttle_time_makes_node_not_ready_for_kip219_versions() -> None:
    h = Harness()
    h.await_ready()
    h.send()
    h.poll()
    h.selector.respond(h.node.id_string, HeartbeatResponse(throttle_time_ms=100))
    h.poll()
    assert not h.client.is_ready(h.node, h.now)
    assert h.client.throttle_delay_ms(h.node, h.now) == 100
    assert h.client.poll_delay_ms(h.node, h.now) == 100
    h.time.sleep(40)
    assert h.client.throttle_delay_ms(h.node, h.now) == 60
    h.time.sleep(60)
    assert h.client.is_ready(h.node, h.now) and h.client.throttle_delay_ms(h.node, h.now) == 0


def test_throttling_is_warned_once_a_minute_per_node_with_a_count(caplog: pytest.LogCaptureFixture) -> None:
    """A client held to a quota is throttled on every response; the WARNING must not flood the log."""
    h = Harness()
    h.await_ready()
    with caplog.at_level("WARNING", logger="pykafka_client.network"):
        for _ in range(5):
            h.send()
            h.poll()
            h.selector.respond(h.node.id_string, HeartbeatResponse(throttle_time_ms=100))
            h.poll()
            h.time.sleep(100)
        h.time.sleep(60_000)
        h.send()
        h.poll()
        h.selector.respond(h.node.id_string, HeartbeatResponse(throttle_time_ms=100))
        h.poll()
    lines = [r.getMessage() for r in caplog.records if "throttles this client" in r.getMessage()]
    assert len(lines) == 2, lines
    assert "throttled 4 more time(s)" in lines[1]


def test_s25_no_client_throttling_for_old_versions() -> None:
    h = Harness()
    h.await_ready(api_versions=api_versions_response({ApiKey.HEARTBEAT: (0, 1)}))
    h.send()
    h.poll()
    h.selector.respond(h.node.id_string, HeartbeatResponse(throttle_time_ms=100))
    h.poll()
    assert h.client.throttle_delay_ms(h.node, h.now) == 0
    assert h.client.is_ready(h.node, h.now)


def test_s26_throttle_time_does_not_count_toward_request_timeout() -> None:
    h = Harness(request_timeout_ms=1000)
    h.await_ready()
    h.send()
    h.poll()
    h.send()
    h.poll()
    h.selector.respond(h.node.id_string, HeartbeatResponse(throttle_time_ms=500))
    h.poll()
    # The second request has been waiting 1001 ms, of which 500 throttled: not timed out yet.
    h.time.sleep(1001)
    assert h.poll() == []
    h.time.sleep(500)
    responses = h.poll()
    assert len(responses) == 1 and responses[0].was_timed_out


def test_s27_least_loaded_node_preferences() -> None:
    h = Harness(n_nodes=3, reconnect_backoff_ms=100, reconnect_backoff_max_ms=100)
    # Nothing connected: some connectable node.
    lln = h.client.least_loaded_node(h.now)
    assert lln.node is not None and not lln.at_least_one_connection_ready
    h.await_ready(h.nodes[0])
    h.await_ready(h.nodes[1])
    h.send(h.nodes[0])
    h.poll()
    # Ready with 0 in flight wins.
    assert h.client.least_loaded_node(h.now).node == h.nodes[1]
    h.send(h.nodes[1])
    h.poll()
    h.send(h.nodes[1])
    h.poll()
    # Both busy: fewest in flight.
    assert h.client.least_loaded_node(h.now).node == h.nodes[0]
    # Throttled nodes are not ready.
    h.selector.respond("0", HeartbeatResponse(throttle_time_ms=1000))
    h.poll()
    lln = h.client.least_loaded_node(h.now)
    assert lln.node == h.nodes[1]


def test_s27_connecting_beats_connectable_and_oldest_attempt_first() -> None:
    h = Harness(n_nodes=3, reconnect_backoff_ms=100, reconnect_backoff_max_ms=100)
    h.selector.server_connection_blocked("2")
    h.client.ready(h.nodes[2], h.now)
    assert h.client.least_loaded_node(h.now).node == h.nodes[2]
    h.client.close_node("2")
    # Disconnected nodes past their backoff: the one whose last attempt is oldest.
    for n in (h.nodes[1], h.nodes[0]):
        h.selector.refused.add(("127.0.0.1", n.port))
        h.client.ready(n, h.now)
        h.time.sleep(10)
    h.client.close_node("2")
    h.time.sleep(200)
    picks = {h.client.least_loaded_node(h.now).node for _ in range(10)}
    assert picks == {h.nodes[2]}  # never tried beats both
    h.selector.refused.add(("127.0.0.1", 9094))
    h.client.ready(h.nodes[2], h.now)
    h.time.sleep(200)
    assert h.client.least_loaded_node(h.now).node == h.nodes[1]


def test_s27_no_node_available_during_backoff() -> None:
    h = Harness(n_nodes=1, reconnect_backoff_ms=1000, reconnect_backoff_max_ms=1000)
    h.selector.refused.add(("127.0.0.1", 9092))
    h.client.ready(h.node, h.now)
    assert h.client.least_loaded_node(h.now).node is None


def test_s28_metadata_update_due_makes_every_node_not_ready() -> None:
    h = Harness()
    h.await_ready(h.nodes[0])
    h.await_ready(h.nodes[1])
    h.time.sleep(1000)
    h.metadata.request_update()
    assert not h.client.is_ready(h.nodes[0], h.now)
    assert not h.client.is_ready(h.nodes[1], h.now)
    h.poll()  # sends the metadata request: no longer "due"
    assert any(r.api_key == ApiKey.METADATA for r in h.selector.unanswered())
    assert h.client.is_ready(h.nodes[0], h.now) or h.client.is_ready(h.nodes[1], h.now)


def test_s29_poll_blocks_at_most_min_of_timeout_metadata_and_request_timeout() -> None:
    h = Harness(request_timeout_ms=700)
    h.await_ready()
    h.client.poll(10_000, h.now)
    assert h.selector.poll_timeouts[-1] == 700
    h.client.poll(50, h.now)
    assert h.selector.poll_timeouts[-1] == 50
    # Metadata expiring in 300 ms bounds the poll.
    h.metadata.update(0, metadata_response(h.nodes, {"t": 3}), False, h.now - 299_700)
    h.client.poll(10_000, h.now)
    assert h.selector.poll_timeouts[-1] == 300


def test_s30_server_disconnect_requests_metadata_update() -> None:
    h = Harness()
    h.await_ready()
    assert not h.metadata.update_requested()
    h.selector.server_disconnect(h.node.id_string)
    h.poll()
    assert h.metadata.update_requested()


def test_s34_auth_failure_on_one_node_keeps_metadata_request_to_another() -> None:
    h = Harness()
    h.await_ready(h.nodes[0])
    h.time.sleep(1000)
    h.metadata.request_update()
    h.poll()
    md = h.selector.unanswered(api_key=ApiKey.METADATA)
    assert len(md) == 1 and md[0].destination == "0"
    version_before = h.metadata.update_version()
    h.client.ready(h.nodes[1], h.now)
    h.selector.server_authentication_failed("1")
    h.poll()
    assert h.client.authentication_exception(h.nodes[1]) is not None
    h.selector.respond("0", metadata_response(h.nodes, {"t": 3}))
    h.poll()
    assert h.metadata.update_version() == version_before + 1
    with pytest.raises(AuthenticationError):
        h.metadata.maybe_throw_any_exception()


def test_close_makes_client_inactive() -> None:
    h = Harness()
    h.client.close()
    assert not h.client.active() and h.selector.closed
    with pytest.raises(Exception, match="no longer active"):
        h.poll()


def test_rebootstrap_when_no_known_broker_is_reachable() -> None:
    resolver = {"localhost": ["127.0.0.1"], "bootstrap.example": ["10.9.9.9"]}
    h = Harness(resolver=lambda host: resolver[host], reconnect_backoff_ms=1000, reconnect_backoff_max_ms=1000)
    h.metadata.bootstrap([("bootstrap.example", 9999)])
    h.metadata.update(0, metadata_response(h.nodes, {"t": 3}), False, h.now)
    for n in h.nodes:
        h.selector.refused.add(("127.0.0.1", n.port))
    h.time.sleep(1000)
    h.metadata.request_update()

    def answer_api_versions(sel: MockSelector) -> None:
        for r in sel.unanswered(api_key=ApiKey.API_VERSIONS):
            sel.respond(r.destination, api_versions_response())

    h.selector.on_poll = answer_api_versions
    for _ in range(100):
        h.client.poll(50, h.now)
        if h.selector.unanswered(api_key=ApiKey.METADATA):
            break
    assert [n.id for n in h.metadata.fetch().nodes] == [-1]
    md = h.selector.unanswered(api_key=ApiKey.METADATA)
    assert md and md[0].destination == "-1"
    assert h.selector.connect_attempts[-1][1] == ("10.9.9.9", 9999)
    # The bootstrap broker answers: the cluster is known again.
    h.selector.respond("-1", metadata_response(h.nodes, {"t": 3}))
    h.poll()
    assert len(h.metadata.fetch().nodes) == 3


def test_rebootstrap_disabled_with_strategy_none() -> None:
    h = Harness(reconnect_backoff_ms=1000, reconnect_backoff_max_ms=1000, metadata_recovery_strategy="none")
    for n in h.nodes:
        h.selector.refused.add(("127.0.0.1", n.port))
    h.time.sleep(1000)
    h.metadata.request_update()
    for _ in range(100):
        h.client.poll(50, h.now)
    assert len(h.metadata.fetch().nodes) == 3
    assert not h.selector.unanswered(api_key=ApiKey.METADATA)


def test_network_client_implements_kafka_client_protocol() -> None:
    from pykafka_client.network.kafka_client import KafkaClient

    client: KafkaClient = Harness().client
    assert client.active()


def test_s27_least_loaded_node_starts_at_a_random_offset() -> None:
    h = Harness(n_nodes=3)
    picks = {h.client.least_loaded_node(h.now).node for _ in range(30)}
    assert len(picks) > 1  # equally good candidates: no fixed preference


def test_rebootstrap_after_trigger_when_metadata_keeps_failing() -> None:
    h = Harness(request_timeout_ms=1000, metadata_recovery_rebootstrap_trigger_ms=5000)

    def answer_api_versions_only(sel: MockSelector) -> None:
        for r in sel.unanswered(api_key=ApiKey.API_VERSIONS):
            sel.respond(r.destination, api_versions_response())

    h.selector.on_poll = answer_api_versions_only
    h.await_ready()
    h.time.sleep(1000)
    h.metadata.request_update()
    start = h.now
    rebootstrapped_at = None
    while h.now - start < 20_000:
        h.client.poll(100, h.now)
        if [n.id for n in h.metadata.fetch().nodes] == [-1]:
            rebootstrapped_at = h.now
            break
    assert rebootstrapped_at is not None
    assert rebootstrapped_at - start > 5000
    assert not h.client.connection_states.is_connected("0")


def test_send_refused_by_transport_leaves_nothing_in_flight() -> None:
    h = Harness()
    h.await_ready()

    def refuse(send: object) -> None:
        raise IllegalStateError("channel is gone")

    h.selector.send = refuse  # type: ignore[method-assign]
    with pytest.raises(IllegalStateError):
        h.send()
    assert h.client.in_flight_request_count() == 0


def test_reauthentication_waits_for_the_connection_to_have_no_request_in_flight() -> None:
    """KIP-368, client side: a session due for re-authentication is re-authenticated on the same connection at
    the first poll that finds no request in flight on it; an idle poll does not wait past the due time."""
    h = Harness()
    h.await_ready()
    node = h.node.id_string
    due = h.now + 1000
    h.selector.reauthentication_due_at(node, due)
    h.poll(5000)  # idle: the poll waits only until the session is due, then re-authenticates
    assert h.selector.reauthentications == [(node, due)]

    h.selector.reauthentication_due_at(node, h.now + 1000)
    h.send()
    h.poll()
    h.time.sleep(1000)
    h.poll()
    assert len(h.selector.reauthentications) == 1  # due, but a request is in flight
    h.selector.respond(node, HeartbeatResponse())
    h.poll()
    assert [cid for cid, _ in h.selector.reauthentications] == [node, node]
    assert len(h.callbacks) == 1  # the response was delivered
    assert h.client.connection_states.is_ready(node, h.now)  # the same connection, not a reconnect
    assert len(h.selector.connect_attempts) == 1


def test_a_raising_completion_callback_is_logged_and_the_other_responses_still_complete(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = Harness()
    h.await_ready()

    def fail(response: object) -> None:
        raise RuntimeError("callback failed")

    first = h.client.new_client_request(
        h.node.id_string, HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), h.now, callback=fail
    )
    h.client.send(first, h.now)
    h.poll()  # written
    h.send()
    h.poll()
    h.selector.respond(h.node.id_string, HeartbeatResponse(error_code=0))
    h.selector.respond(h.node.id_string, HeartbeatResponse(error_code=0))
    with caplog.at_level("ERROR", logger="pykafka_client.network.network_client"):
        responses = h.poll()
    assert [r.request_header.correlation_id for r in responses] == [first.correlation_id, first.correlation_id + 1]
    assert h.callbacks == responses[1:]
    assert "uncaught error in request completion" in caplog.text


def test_send_refuses_a_node_that_is_not_ready_and_sends_nothing() -> None:
    h = Harness()
    with pytest.raises(IllegalStateError):
        h.send()
    assert h.client.in_flight_request_count() == 0
    h.await_ready()
    h.send()
    assert h.client.in_flight_request_count() == 1


# --- is_ready() answered once for the send that follows it ------------------------------------------------------


def test_a_send_after_ready_at_the_same_time_is_checked_again_after_another_send() -> None:
    """is_ready()'s answer serves the one send that follows it: a second send at the same time asks again (the first
    filled the node's in-flight room)."""
    h = Harness(max_in_flight_requests_per_connection=1)
    h.await_ready()
    assert h.client.ready(h.node, h.now)
    h.send()
    with pytest.raises(IllegalStateError):
        h.send()  # the same node and time as ready(), but the in-flight request fills the connection
    assert h.client.in_flight_request_count() == 1


def test_a_send_after_ready_is_checked_again_after_a_poll_that_lost_the_connection() -> None:
    h = Harness()
    h.await_ready()
    assert h.client.ready(h.node, h.now)
    h.selector.server_disconnect(h.node.id_string)
    h.poll()
    with pytest.raises(IllegalStateError):
        h.send()


def _answer_throttled_for_100_ms(h: Harness) -> None:
    """A request answered with a throttle time of 100 ms: the node is not ready until now + 100."""
    h.send()
    h.poll()
    h.selector.respond(h.node.id_string, HeartbeatResponse(throttle_time_ms=100))
    h.poll()


@pytest.mark.parametrize("change", ["disconnect", "close", "poll_throttled"])
def test_ready_answer_does_not_outlive_a_change_of_the_node(change: str) -> None:
    """A send at the time of a ready() answer is checked again when the client changed the node in between."""
    h = Harness()
    h.await_ready()
    if change == "poll_throttled":
        _answer_throttled_for_100_ms(h)
        h.time.sleep(100)
    assert h.client.ready(h.node, h.now)
    if change == "disconnect":
        h.client.disconnect(h.node.id_string)
    elif change == "close":
        h.client.close(h.node.id_string)
    else:
        _answer_throttled_for_100_ms(h)  # throttled again until now + 100
    with pytest.raises(IllegalStateError):
        h.send()


def test_a_send_at_another_time_than_the_ready_answer_is_checked_again() -> None:
    """The answer holds for the time it was asked at: a node throttled until t is ready at t, not before it."""
    h = Harness()
    h.await_ready()
    _answer_throttled_for_100_ms(h)
    later = h.now + 100
    assert h.client.is_ready(h.node, later)
    with pytest.raises(IllegalStateError):
        h.client.send(h.request(), h.now)  # before the throttle's end
    h.client.send(h.request(), later)


def test_the_selector_poll_says_which_results_have_entries() -> None:
    """NetworkClient asks only for the selector results the poll reports (a bit per result): each result is still
    handled when its bit is set."""
    h = Harness()
    h.await_ready()
    h.send()
    assert h.selector.poll(0) == POLL_COMPLETED_SENDS
    h.selector.respond(h.node.id_string, HeartbeatResponse())
    assert h.selector.poll(0) == POLL_COMPLETED_RECEIVES
    h.selector.server_disconnect(h.node.id_string)
    h.selector.reauthentication_due_at(h.nodes[1].id_string, h.now + 10)
    assert h.selector.poll(0) == POLL_DISCONNECTED | POLL_REAUTHENTICATION_SCHEDULED


def test_the_send_after_a_ready_answer_at_the_same_time_does_not_ask_again() -> None:
    """The Sender's ready() then send(): the node's readiness (connection state, channel, in-flight room) is asked once."""
    h = Harness()
    h.await_ready()
    asked: list[str] = []
    is_channel_ready = h.selector.is_channel_ready

    def counted(connection_id: str) -> bool:
        asked.append(connection_id)
        return is_channel_ready(connection_id)

    h.selector.is_channel_ready = counted  # type: ignore[method-assign]
    assert h.client.ready(h.node, h.now)
    h.send()
    assert asked == [h.node.id_string]
    h.poll()
    h.send()  # no ready() answer since the poll: asked
    assert asked == [h.node.id_string, h.node.id_string]


def test_a_manual_metadata_updater_never_rebootstraps() -> None:
    """The poll asks the updater whether to rebootstrap (Java's MetadataUpdater.needsRebootstrap): a fixed node list
    never does, whatever the strategy, and its connections stay up."""
    from pykafka_client.network.metadata_updater import ManualMetadataUpdater

    time = MockTime()
    selector = MockSelector(time)
    node = Node(0, "localhost", 9092)
    updater = ManualMetadataUpdater([node])
    assert not updater.needs_rebootstrap(10**9, 0)
    client = NetworkClient(
        selector, metadata_updater=updater, time=time, metadata_recovery_rebootstrap_trigger_ms=0,
        host_resolver=lambda host: ["127.0.0.1"],
    )
    for _ in range(5):
        if client.ready(node, time.hi_res_clock_ms()):
            break
        if selector.unanswered(node.id_string, ApiKey.API_VERSIONS):
            selector.respond(node.id_string, api_versions_response())
        client.poll(1, time.hi_res_clock_ms())
    assert client.ready(node, time.hi_res_clock_ms())
    time.sleep(1000)
    client.poll(0, time.hi_res_clock_ms())
    assert client.ready(node, time.hi_res_clock_ms()) and updater.fetch_nodes() == [node]


def test_completed_sends_looked_at_only_once_a_request_expects_no_response(monkeypatch: pytest.MonkeyPatch) -> None:
    """A completed send completes a request only if it expects no response: a client that never sent one (a producer
    with acks=1 or all, a consumer) does not look at the completed sends; one that sent one completes it on send."""
    h = Harness()
    looked: list[int] = []
    completed_sends = h.selector.completed_sends
    def looked_at() -> list[NetworkSend]:
        looked.append(1)
        return completed_sends()

    monkeypatch.setattr(h.selector, "completed_sends", looked_at)
    h.await_ready()
    a = h.send()
    assert h.poll() == []
    h.selector.respond(h.node.id_string, HeartbeatResponse(error_code=0))
    assert [r.request_header.correlation_id for r in h.poll()] == [a.correlation_id]
    assert looked == []
    ff = h.request(expect_response=False)
    h.client.send(ff, h.now)
    done = h.poll()
    assert looked == [1] and [r.request_header.correlation_id for r in done] == [ff.correlation_id]
    assert done[0].response_body is None and h.client.in_flight_request_count() == 0


def test_poll_scans_for_timed_out_requests_only_past_the_earliest_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(request_timeout_ms=1000)
    h.await_ready()
    # the reference's (the kernel's type has the same no_timeout_until_ms, test_in_flight_requests_native, and no
    # method to wrap)
    in_flight = h.client.in_flight_requests = InFlightRequests(h.client.in_flight_requests.max_in_flight_requests_per_connection)
    scans: list[int] = []
    scan = in_flight.nodes_with_timed_out_requests
    def scanned(now: int) -> list[str]:
        scans.append(now)
        return scan(now)

    monkeypatch.setattr(in_flight, "nodes_with_timed_out_requests", scanned)
    sent_at = h.now
    h.send()
    h.poll()
    h.time.sleep(1000)
    assert h.poll() == [] and scans == []  # at the deadline: not timed out, no scan
    h.time.sleep(1)
    responses = h.poll()
    assert scans == [sent_at + 1001] and len(responses) == 1 and responses[0].was_timed_out


def test_unparsable_response_completes_every_request_in_flight_as_disconnected_in_order() -> None:
    """The response's request, taken out to be decoded, is put back first: it completes as disconnected, oldest
    first, with the others in flight to the node."""
    h = Harness()
    h.await_ready()
    a, b = h.send(), None
    h.poll()
    b = h.send()
    h.poll()
    h.selector.respond(h.node.id_string, HeartbeatResponse(), correlation_id=424242)
    responses = h.poll()
    assert [r.request_header.correlation_id for r in responses] == [a.correlation_id, b.correlation_id]
    assert all(r.was_disconnected and r.disconnect_exception is not None for r in responses)
    assert h.client.in_flight_request_count() == 0


def test_steady_polls_ask_no_handshake_nor_connection_setup_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once no connection waits for its ApiVersions request and none is being set up, a poll asks about neither; a
    connect begun (or a node connected) makes the polls ask again until the handshake went out and the node is up."""
    h = Harness()
    asked: list[str] = []
    has_due, has_connecting = ApiVersionsHandshake.has_due, h.client.connection_states.has_connecting_nodes
    def due(self: ApiVersionsHandshake) -> bool:
        asked.append("due")
        return has_due(self)

    def connecting() -> bool:
        asked.append("connecting")
        return has_connecting()

    monkeypatch.setattr(ApiVersionsHandshake, "has_due", due)
    monkeypatch.setattr(h.client.connection_states, "has_connecting_nodes", connecting)
    h.await_ready()
    h.poll()
    asked.clear()
    h.send()
    h.poll()
    h.poll()
    assert asked == []
    other = h.nodes[1]
    assert not h.client.ready(other, h.now)  # begins to connect
    h.poll()
    assert "connecting" in asked
    h.await_ready(other)
    h.poll()
    asked.clear()
    h.poll()
    assert asked == []


def test_ready_answers_as_is_ready_and_connects_only_a_node_that_may_connect() -> None:
    """ready() asks is_ready()'s questions (metadata update due, connection READY and not throttled, channel ready,
    room in flight) itself; when the answer is no it starts a connection only where one may start."""
    h = Harness(max_in_flight_requests_per_connection=1)
    h.await_ready(h.nodes[0])
    node, other = h.nodes[0], h.nodes[1]
    assert h.client.is_ready(node, h.now) and h.client.ready(node, h.now)
    h.send(node)  # the one request in flight the connection may have
    assert not h.client.is_ready(node, h.now) and not h.client.ready(node, h.now)
    assert h.client.connection_states.is_ready(node.id_string, h.now)  # still connected: no new connection
    h.poll()  # (the send completes)
    h.selector.respond(node.id_string, HeartbeatResponse())
    h.poll()
    assert h.client.is_ready(node, h.now) and h.client.ready(node, h.now)
    h.time.sleep(1000)
    h.metadata.request_update()  # every node is not ready while an update is due
    assert not h.client.is_ready(node, h.now) and not h.client.ready(node, h.now)
    assert h.client.connection_states.is_ready(node.id_string, h.now)
    assert not h.client.ready(other, h.now)  # never connected: ready() starts its connection, is_ready() does not
    assert h.client.connection_states.is_connecting(other.id_string)
    with pytest.raises(IllegalArgumentError):
        h.client.ready(Node(5, "", 9092), h.now)
    with pytest.raises(IllegalArgumentError):
        h.client.ready(Node(5, "host", -1), h.now)
