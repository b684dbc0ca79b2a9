"""ConsumerNetworkClient contract (statements 35-47) on MockClient and MockTime."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pykafka_client.errors import (
    AuthenticationError,
    DisconnectError,
    InvalidTopicError,
    KafkaTimeoutError,
    TopicAuthorizationFailedError,
    WakeupException,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.consumer_network_client import MAX_POLL_TIMEOUT_MS, ConsumerNetworkClient
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.protocol.messages import HeartbeatRequest, HeartbeatResponse
from pykafka_client.structs import Node
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient
from tests.doubles.responses import metadata_response, nodes

NODE = Node(0, "localhost", 9092)
RETRY_BACKOFF_MS = 100
REQUEST_TIMEOUT_MS = 1000


class Env:
    def __init__(self, auto_tick_ms: int = 0) -> None:
        self.time = MockTime(auto_tick_ms)
        self.metadata = Metadata(RETRY_BACKOFF_MS, RETRY_BACKOFF_MS, 300_000)
        self.metadata.bootstrap([("localhost", 9092)])
        self.metadata.update(0, metadata_response(nodes(1), {"t": 1}), False, self.time.hi_res_clock_ms())
        self.client = MockClient(self.time, self.metadata)
        self.cnc = ConsumerNetworkClient(
            self.client, self.metadata, self.time, RETRY_BACKOFF_MS, REQUEST_TIMEOUT_MS
        )

    def send(self, node: Node = NODE) -> RequestFuture[ClientResponse]:
        return self.cnc.send(node, HeartbeatRequest(group_id="g", generation_id=1, member_id="m"))


def heartbeat(code: int = 0) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=code)


def test_s35_send_queues_wakes_and_returns_incomplete_future() -> None:
    e = Env()
    wakeups = e.client.wakeups
    f = e.send()
    assert not f.is_done()
    assert e.client.wakeups == wakeups + 1
    assert e.cnc.pending_request_count() == 1 and e.cnc.pending_request_count(NODE) == 1
    assert e.cnc.unsent.request_count(NODE) == 1
    e.cnc.poll(e.time.timer(0))
    assert e.cnc.unsent.request_count(NODE) == 0 and e.client.in_flight_request_count() == 1
    assert e.cnc.pending_request_count() == 1
    e.client.respond(heartbeat())
    e.cnc.poll_future(f)
    assert f.succeeded() and isinstance(f.value().response_body, HeartbeatResponse)
    assert e.cnc.pending_request_count() == 0


def test_s35_multi_send_completes_each_future() -> None:
    e = Env()
    e.client.prepare_response(heartbeat(0))
    e.client.prepare_response(heartbeat(27))
    f1, f2 = e.send(), e.send()
    e.cnc.poll_future(f1)
    e.cnc.poll_future(f2)
    assert f1.value().response_body.error_code == 0
    assert f2.value().response_body.error_code == 27


class CountingClient(MockClient):
    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.ready_calls = 0

    def ready(self, node: Node, now_ms: int) -> bool:
        self.ready_calls += 1
        return super().ready(node, now_ms)


def test_s36_try_send_stops_at_first_not_ready_node_checking_ready_once() -> None:
    e = Env()
    client = CountingClient(e.time, e.metadata)
    cnc = ConsumerNetworkClient(client, e.metadata, e.time, RETRY_BACKOFF_MS, REQUEST_TIMEOUT_MS)
    client.delay_ready(NODE, 1000)
    cnc.send(NODE, HeartbeatRequest())
    cnc.send(NODE, HeartbeatRequest())
    client.ready(NODE, e.time.hi_res_clock_ms())  # start connecting
    client.ready_calls = 0
    cnc.try_send(e.time.hi_res_clock_ms())
    assert client.ready_calls == 1
    assert cnc.unsent.request_count(NODE) == 2
    e.time.sleep(1000)
    cnc.try_send(e.time.hi_res_clock_ms())
    assert cnc.unsent.request_count(NODE) == 0 and client.in_flight_request_count() == 2


def test_s37_unsent_request_expires_with_timeout_error() -> None:
    e = Env()
    e.client.delay_ready(NODE, 10 * REQUEST_TIMEOUT_MS)
    e.client.ready(NODE, e.time.hi_res_clock_ms())
    f = e.send()
    e.cnc.poll(e.time.timer(0))
    assert not f.is_done() and e.cnc.unsent.request_count(NODE) == 1
    e.time.sleep(REQUEST_TIMEOUT_MS + 1)
    e.cnc.poll(e.time.timer(0))
    assert isinstance(f.exception(), KafkaTimeoutError)
    assert e.cnc.unsent.request_count(NODE) == 0 and e.cnc.pending_request_count() == 0


def test_s38_unsent_request_to_failed_node_completes_as_disconnected() -> None:
    e = Env()
    e.client.backoff(NODE, 500)  # the connection to NODE failed and is in backoff
    f = e.send()
    e.cnc.poll(e.time.timer(0))
    assert isinstance(f.exception(), DisconnectError)
    assert e.cnc.unsent.request_count(NODE) == 0


def test_s39_disconnect_async_fails_unsent_and_in_flight_and_wakes_poller() -> None:
    e = Env()
    in_flight = e.send()
    e.cnc.poll(e.time.timer(0))
    assert e.client.in_flight_request_count() == 1
    e.client.delay_ready(NODE, 0)
    unsent_node = Node(1, "localhost", 9093)
    e.client.delay_ready(unsent_node, 10_000)
    e.client.ready(unsent_node, e.time.hi_res_clock_ms())
    unsent = e.send(unsent_node)
    wakeups = e.client.wakeups
    e.cnc.disconnect_async(NODE)
    e.cnc.disconnect_async(unsent_node)
    assert e.client.wakeups == wakeups + 2
    e.cnc.poll(e.time.timer(0))
    assert isinstance(in_flight.exception(), DisconnectError)
    assert isinstance(unsent.exception(), DisconnectError)
    assert e.cnc.pending_request_count() == 0


class Condition:
    def __init__(self, block: bool) -> None:
        self.block = block

    def should_block(self) -> bool:
        return self.block


def test_s40_no_blocking_when_poll_condition_is_satisfied() -> None:
    e = Env()
    e.send()
    e.cnc.poll(e.time.timer(0))
    e.cnc.poll(e.time.timer(10_000), Condition(False))
    assert e.client.poll_timeouts[-1] == 0


def test_s41_blocks_for_remaining_timer_with_requests_in_flight() -> None:
    e = Env()
    e.send()
    e.cnc.poll(e.time.timer(0))
    assert e.client.in_flight_request_count() == 1
    e.cnc.poll(e.time.timer(3000), Condition(True))
    assert e.client.poll_timeouts[-1] == 3000
    e.cnc.poll(e.time.timer(60_000), Condition(True))
    assert e.client.poll_timeouts[-1] == MAX_POLL_TIMEOUT_MS


def test_s42_blocks_at_most_retry_backoff_without_requests_in_flight() -> None:
    e = Env()
    e.cnc.poll(e.time.timer(10_000))
    assert e.client.poll_timeouts[-1] == RETRY_BACKOFF_MS


def test_s43_wakeup_raises_once_and_queued_requests_survive() -> None:
    e = Env()
    e.client.prepare_response(heartbeat())
    f = e.send()
    e.cnc.wakeup()
    e.cnc.poll_no_wakeup()  # never raises
    with pytest.raises(WakeupException):
        e.cnc.poll(e.time.timer(0))
    e.cnc.poll(e.time.timer(0))  # exactly once
    e.cnc.poll_future(f)
    assert f.succeeded()


def test_s43_wakeup_from_another_thread_interrupts_a_blocked_poll() -> None:
    e = Env()
    e.client.enable_blocking_until_wakeup(1)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            e.cnc.poll(e.time.timer(1000))
        except WakeupException as ex:
            errors.append(ex)

    t = threading.Thread(target=run)
    t.start()
    e.cnc.wakeup()
    t.join(30)
    assert not t.is_alive() and len(errors) == 1


def test_s44_completion_handlers_run_outside_the_lock_and_wake_other_threads() -> None:
    e = Env()
    e.client.prepare_response(heartbeat())
    f = e.send()
    lock_free_in_handler: list[bool] = []

    def on_success(_: ClientResponse) -> None:
        result: list[bool] = []

        def probe_lock() -> None:
            got = e.cnc._lock.acquire(timeout=5)
            result.append(got)
            if got:
                e.cnc._lock.release()

        probe = threading.Thread(target=probe_lock)
        probe.start()
        probe.join()
        lock_free_in_handler.extend(result)

    f.add_callbacks(on_success)
    done = threading.Event()

    def waiter() -> None:
        if f.await_done(30_000):
            done.set()

    b = threading.Thread(target=waiter)
    b.start()
    e.cnc.poll(e.time.timer(0))  # thread A processes the response
    b.join(30)
    assert done.is_set() and lock_free_in_handler == [True]


def test_s45_auth_failure_fails_future_and_new_sends_during_backoff() -> None:
    e = Env()
    e.client.authentication_failed(NODE, 300)
    e.client.prepare_response(heartbeat())
    f = e.send()
    e.cnc.poll_future(f, e.time.timer(100))
    assert isinstance(f.exception(), AuthenticationError)
    g = e.send()
    e.cnc.poll_future(g, e.time.timer(100))
    assert isinstance(g.exception(), AuthenticationError)


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("auth", AuthenticationError),
        ("invalid_topic", InvalidTopicError),
        ("topic_auth", TopicAuthorizationFailedError),
        ("other", KafkaError),
    ],
)
def test_s46_fatal_metadata_errors_raised_from_poll_once(setup: str, expected: type[BaseException]) -> None:
    e = Env()
    now = e.time.hi_res_clock_ms()
    if setup == "auth":
        e.metadata.fatal_error(AuthenticationError("bad credentials"))
    elif setup == "invalid_topic":
        e.metadata.update(0, metadata_response(nodes(1), {}, topic_errors={"bad topic": 17}), False, now)
    elif setup == "topic_auth":
        e.metadata.update(0, metadata_response(nodes(1), {}, topic_errors={"secret": 29}), False, now)
    else:
        e.metadata.fatal_error(KafkaError("metadata failure"))
    with pytest.raises(expected):
        e.cnc.poll(e.time.timer(0))
    e.cnc.poll(e.time.timer(0))


def test_s47_await_metadata_update_false_when_timer_expires() -> None:
    e = Env(auto_tick_ms=1)
    assert e.cnc.await_metadata_update(e.time.timer(50)) is False
    e.time.sleep(RETRY_BACKOFF_MS)
    e.client.prepare_metadata_update(metadata_response(nodes(2), {"t": 2}))
    assert e.cnc.await_metadata_update(e.time.timer(1000)) is True
    assert len(e.metadata.fetch().nodes) == 2


def test_s35_send_from_another_thread_wakes_a_blocked_poll() -> None:
    e = Env()
    e.client.enable_blocking_until_wakeup(1)
    started = threading.Event()

    def poller() -> None:
        started.set()
        e.cnc.poll(e.time.timer(1000))  # blocks in the client until someone wakes it

    t = threading.Thread(target=poller)
    t.start()
    started.wait(10)
    sender = threading.Thread(target=e.send)  # must not wait for the poller's lock
    sender.start()
    sender.join(10)
    t.join(10)
    assert not sender.is_alive() and not t.is_alive()
    assert e.cnc.pending_request_count() == 1
