"""ConsumerNetworkClient over a real NetworkClient and Selector against Tansu, driven by two threads
(the consumer's user thread and heartbeat thread share one CNC)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from pykafka_client.errors import WakeupException
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.network.transport.selector import Selector
from pykafka_client.protocol.messages import MetadataRequest, MetadataResponse
from pykafka_client.utils.time import SYSTEM_TIME
from tests.integration.tansu import TansuBroker

pytestmark = pytest.mark.integration


@pytest.fixture
def cnc(tansu_broker: TansuBroker) -> Iterator[ConsumerNetworkClient]:
    md = Metadata()
    md.bootstrap([("127.0.0.1", tansu_broker.port)])
    client = NetworkClient(Selector(time=SYSTEM_TIME), md, time=SYSTEM_TIME)
    c = ConsumerNetworkClient(client, md, SYSTEM_TIME, retry_backoff_ms=50, request_timeout_ms=10_000)
    assert c.await_metadata_update(SYSTEM_TIME.timer(15_000))
    try:
        yield c
    finally:
        c.close()


def test_two_threads_share_one_client(cnc: ConsumerNetworkClient) -> None:
    node = cnc.metadata.fetch().nodes[0]
    errors: list[BaseException] = []
    counts = [0, 0]

    def worker(idx: int, n: int) -> None:
        try:
            for _ in range(n):
                f = cnc.send(node, MetadataRequest(topics=[]))
                if not cnc.poll_future(f, SYSTEM_TIME.timer(10_000), disable_wakeup=True):
                    raise AssertionError("request did not complete")
                assert isinstance(f.value().response_body, MetadataResponse)
                counts[idx] += 1
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i, 40)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert counts == [40, 40]
    assert cnc.pending_request_count() == 0


def test_future_awaited_in_one_thread_completed_by_another(cnc: ConsumerNetworkClient) -> None:
    node = cnc.metadata.fetch().nodes[0]
    future: RequestFuture[ClientResponse] = cnc.send(node, MetadataRequest(topics=[]))
    done = threading.Event()

    def waiter() -> None:
        if future.await_done(20_000):
            done.set()

    t = threading.Thread(target=waiter)
    t.start()
    cnc.poll_future(future, SYSTEM_TIME.timer(10_000))
    t.join(30)
    assert done.is_set() and future.succeeded()


def test_wakeup_interrupts_a_blocked_poll(cnc: ConsumerNetworkClient) -> None:
    raised = threading.Event()

    def blocked() -> None:
        timer = SYSTEM_TIME.timer(20_000)
        try:
            while not timer.is_expired():
                cnc.poll(timer, None)
        except WakeupException:
            raised.set()

    t = threading.Thread(target=blocked)
    t.start()
    cnc.wakeup()
    t.join(30)
    assert raised.is_set()
