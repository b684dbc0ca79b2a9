"""A real NetworkClient on a MockSelector and MockTime, with helpers to bring nodes up."""

from __future__ import annotations

import random
from typing import Any

from pykafka_client.network.client_request import ClientRequest
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import HeartbeatRequest
from pykafka_client.structs import Node
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_selector import MockSelector
from tests.doubles.responses import api_versions_response, metadata_response, nodes


class Harness:
    def __init__(self, n_nodes: int = 3, resolver: Any = None, **client_kw: Any) -> None:
        self.time = MockTime()
        self.selector = MockSelector(self.time)
        self.metadata = Metadata(100, 1000, 300_000, rng=random.Random(3))
        self.nodes: list[Node] = nodes(n_nodes)
        self.metadata.bootstrap([("localhost", 9092)])
        self.metadata.update(0, metadata_response(self.nodes, {"t": 3}), False, self.now)
        self.resolver = resolver or (lambda host: ["127.0.0.1"])
        client_kw.setdefault("request_timeout_ms", 30_000)
        self.client = NetworkClient(
            self.selector,
            self.metadata,
            time=self.time,
            rng=random.Random(5),
            host_resolver=self.resolver,
            client_id="test-client",
            **client_kw,
        )
        self.callbacks: list[ClientResponse] = []

    @property
    def now(self) -> int:
        return self.time.hi_res_clock_ms()

    @property
    def node(self) -> Node:
        return self.nodes[0]

    def await_ready(self, node: Node | None = None, api_versions: Any = None) -> None:
        """Connect ``node`` and complete its ApiVersions handshake."""
        node = node or self.node
        for _ in range(10):
            if self.client.ready(node, self.now):
                return
            if self.selector.unanswered(node.id_string, ApiKey.API_VERSIONS):
                self.selector.respond(node.id_string, api_versions or api_versions_response())
            self.client.poll(1, self.now)
        raise AssertionError(f"node {node.id} did not become ready")

    def request(self, node: Node | None = None, **kw: Any) -> ClientRequest:
        node = node or self.node
        return self.client.new_client_request(
            node.id_string,
            HeartbeatRequest(group_id="g", generation_id=1, member_id="m"),
            self.now,
            callback=self.callbacks.append,
            **kw,
        )

    def send(self, node: Node | None = None, **kw: Any) -> ClientRequest:
        req = self.request(node, **kw)
        self.client.send(req, self.now)
        return req

    def poll(self, timeout_ms: int = 0) -> list[ClientResponse]:
        return self.client.poll(timeout_ms, self.now)
