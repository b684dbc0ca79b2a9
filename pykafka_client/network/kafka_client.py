"""The interface ConsumerNetworkClient, the producer's Sender and the admin client program against
(Java: ``clients.KafkaClient``). :class:`~pykafka_client.network.network_client.NetworkClient` is the
real implementation; ``tests.doubles.mock_client.MockClient`` the scripted one.

Nodes are :class:`~pykafka_client.network.cluster.Node` objects; times are monotonic ms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pykafka_client.network.client_request import ClientRequest, RequestBody, RequestCompletionHandler
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.structs import Node


@dataclass(frozen=True, slots=True)
class LeastLoadedNode:
    """The result of :meth:`KafkaClient.least_loaded_node`."""

    node: Node | None
    at_least_one_connection_ready: bool

    def has_node_available_or_connection_ready(self) -> bool:
        return self.node is not None or self.at_least_one_connection_ready


class KafkaClient(Protocol):
    def is_ready(self, node: Node, now_ms: int) -> bool: ...

    def ready(self, node: Node, now_ms: int) -> bool: ...

    def connection_delay(self, node: Node, now_ms: int) -> int: ...

    def poll_delay_ms(self, node: Node, now_ms: int) -> int: ...

    def connection_failed(self, node: Node) -> bool: ...

    def authentication_exception(self, node: Node) -> BaseException | None: ...

    def send(self, request: ClientRequest, now_ms: int) -> None: ...

    def poll(self, timeout_ms: int, now_ms: int) -> list[ClientResponse]: ...

    def disconnect(self, node_id: str) -> None: ...

    def close_node(self, node_id: str) -> None: ...

    def least_loaded_node(self, now_ms: int) -> LeastLoadedNode: ...

    def in_flight_request_count(self, node_id: str | None = None) -> int: ...

    def has_in_flight_requests(self, node_id: str | None = None) -> bool: ...

    def has_ready_nodes(self, now_ms: int) -> bool: ...

    def wakeup(self) -> None: ...

    def new_client_request(
        self,
        node_id: str,
        body: RequestBody,
        created_time_ms: int,
        expect_response: bool = True,
        request_timeout_ms: int | None = None,
        callback: RequestCompletionHandler | None = None,
        *,
        oldest_allowed_version: int | None = None,
        latest_allowed_version: int | None = None,
    ) -> ClientRequest: ...

    def unreachable_reason(self, now_ms: int | None = None) -> str | None:
        """Why no broker can be reached (each address tried with its last connection error), or None."""
        ...

    def initiate_close(self) -> None: ...

    def active(self) -> bool: ...

    def close(self, node_id: str | None = None) -> None: ...
