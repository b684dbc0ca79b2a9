"""NetworkClient over the real Selector against independent brokers (Tansu, noida-db) and misbehaving peers."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pykafka_client.errors import ProtocolError
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.network_client import ManualMetadataUpdater, NetworkClient
from pykafka_client.network.transport.selector import Selector
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import MetadataRequest, MetadataResponse
from pykafka_client.structs import Node
from pykafka_client.utils.time import SYSTEM_TIME
from tests.integration.network.fake_peer import FakePeer
from tests.integration.tansu import TansuBroker

pytestmark = pytest.mark.integration
log = logging.getLogger(__name__)


def now() -> int:
    return SYSTEM_TIME.hi_res_clock_ms()


def poll_until(client: NetworkClient, cond: Callable[[], bool], timeout_s: float = 15.0) -> list[ClientResponse]:
    deadline = time.monotonic() + timeout_s
    responses: list[ClientResponse] = []
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        responses += client.poll(50, now())
    return responses


def make_client(metadata: Metadata | None = None, nodes: list[Node] | None = None, **kw: int) -> NetworkClient:
    kw.setdefault("reconnect_backoff_ms", 50)
    kw.setdefault("reconnect_backoff_max_ms", 200)
    if metadata is not None:
        return NetworkClient(Selector(time=SYSTEM_TIME), metadata, time=SYSTEM_TIME, **kw)  # type: ignore[arg-type]
    return NetworkClient(
        Selector(time=SYSTEM_TIME), metadata_updater=ManualMetadataUpdater(nodes), time=SYSTEM_TIME, **kw  # type: ignore[arg-type]
    )


@pytest.fixture(params=["tansu_broker", "noida_broker", "mini_broker_server"])
def broker(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


@pytest.fixture
def clients() -> Iterator[list[NetworkClient]]:
    made: list[NetworkClient] = []
    yield made
    for c in made:
        c.close()


def test_connect_negotiate_versions_and_fetch_metadata(broker: Any, clients: list[NetworkClient]) -> None:
    md = Metadata()
    md.bootstrap([("127.0.0.1", broker.port)])
    client = make_client(md)
    clients.append(client)
    poll_until(client, lambda: md.update_version() > 1)
    cluster = md.fetch()
    assert cluster.nodes and cluster.nodes[0].port == broker.port
    versions = client.api_versions.get("-1") or client.api_versions.get(cluster.nodes[0].id_string)
    assert versions is not None
    log.info("%s advertises: %s", type(broker).__name__, versions)
    assert versions.api_version(ApiKey.METADATA) is not None
    # A user request at the negotiated version.
    node = cluster.nodes[0]
    poll_until(client, lambda: client.ready(node, now()))
    box: list[ClientResponse] = []
    client.send(client.new_client_request(node.id_string, MetadataRequest(topics=[]), now(), callback=box.append), now())
    poll_until(client, lambda: bool(box))
    assert isinstance(box[0].response_body, MetadataResponse)
    assert box[0].request_header.api_version == versions.latest_usable_version(ApiKey.METADATA)


def test_survives_broker_restart_on_same_port(tansu_broker: TansuBroker, clients: list[NetworkClient]) -> None:
    md = Metadata()
    md.bootstrap([("127.0.0.1", tansu_broker.port)])
    client = make_client(md)
    clients.append(client)
    poll_until(client, lambda: md.update_version() > 1)
    node = md.fetch().nodes[0]
    poll_until(client, lambda: client.ready(node, now()))
    tansu_broker.stop()
    poll_until(client, lambda: client.connection_failed(node), 10)
    # While the broker is down, reconnect attempts back off and fail.
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        client.ready(node, now())
        client.poll(20, now())
    assert not client.is_ready(node, now())
    tansu_broker.start()
    poll_until(client, lambda: client.ready(node, now()) or client.ready(Node(-1, "127.0.0.1", tansu_broker.port), now()), 20)
    version = md.request_update()
    poll_until(client, lambda: md.update_version() > version, 20)
    assert md.fetch().nodes


@pytest.mark.parametrize("mode", ["garbage", "oversized", "reset", "wrong_correlation"])
def test_bad_peer_closes_only_its_connection(mode: str, broker: Any, clients: list[NetworkClient]) -> None:
    peer = FakePeer(mode)
    try:
        bad = Node(1, "127.0.0.1", peer.port)
        good = Node(2, "127.0.0.1", broker.port)
        client = make_client(nodes=[bad, good], request_timeout_ms=5000)
        clients.append(client)
        poll_until(client, lambda: client.ready(bad, now()) and client.ready(good, now()))
        box: list[ClientResponse] = []
        for node in (bad, good):
            client.send(
                client.new_client_request(node.id_string, MetadataRequest(topics=[]), now(), callback=box.append),
                now(),
            )
        poll_until(client, lambda: len(box) == 2)
        by_node = {r.destination: r for r in box}
        failed = by_node["1"]
        assert failed.was_disconnected and not failed.was_timed_out
        if mode in ("garbage", "wrong_correlation"):
            assert isinstance(failed.disconnect_exception, ProtocolError)
        elif mode == "oversized":
            assert failed.disconnect_exception is not None
        assert client.connection_failed(bad)
        assert isinstance(by_node["2"].response_body, MetadataResponse)
        # The client keeps working with the other node.
        assert client.is_ready(good, now())
        box.clear()
        client.send(
            client.new_client_request("2", MetadataRequest(topics=[]), now(), callback=box.append), now()
        )
        poll_until(client, lambda: len(box) == 1)
        assert isinstance(box[0].response_body, MetadataResponse)
    finally:
        peer.close()


def test_request_timeout_against_silent_peer(tansu_broker: TansuBroker, clients: list[NetworkClient]) -> None:
    peer = FakePeer("silent")
    try:
        bad = Node(1, "127.0.0.1", peer.port)
        good = Node(2, "127.0.0.1", tansu_broker.port)
        client = make_client(nodes=[bad, good], request_timeout_ms=400)
        clients.append(client)
        poll_until(client, lambda: client.ready(bad, now()) and client.ready(good, now()))
        box: list[ClientResponse] = []
        client.send(client.new_client_request("1", MetadataRequest(topics=[]), now(), callback=box.append), now())
        started = time.monotonic()
        poll_until(client, lambda: bool(box), 10)
        assert box[0].was_timed_out and box[0].was_disconnected
        assert time.monotonic() - started >= 0.35
        assert client.connection_failed(bad)
        assert client.ready(good, now())
    finally:
        peer.close()
