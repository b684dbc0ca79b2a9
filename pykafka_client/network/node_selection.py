"""Choosing the least-loaded node (Java ``NetworkClient.leastLoadedNode``), apart from the I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pykafka_client.network.cluster_connection_states import ClusterConnectionStates
from pykafka_client.network.in_flight_requests import InFlightRequestsApi
from pykafka_client.network.kafka_client import LeastLoadedNode
from pykafka_client.structs import Node


def least_loaded_node(
    nodes: Sequence[Node],
    start: int,
    now_ms: int,
    states: ClusterConnectionStates,
    in_flight: InFlightRequestsApi,
    is_channel_ready: Callable[[str], bool],
    can_send_request: Callable[[str, int], bool],
) -> LeastLoadedNode:
    """The best of ``nodes``, scanned from index ``start`` (random, to spread load): ready with the fewest
    requests in flight > connecting > connectable (oldest attempt first) > none. Nodes in backoff and
    throttled connections are never chosen as ready."""
    fewest = 2**31
    found_connecting: Node | None = None
    found_can_connect: Node | None = None
    found_ready: Node | None = None
    at_least_one_ready = False
    for i in range(len(nodes)):
        node = nodes[(start + i) % len(nodes)]
        node_id = node.id_string
        if not at_least_one_ready and states.is_ready(node_id, now_ms) and is_channel_ready(node_id):
            at_least_one_ready = True
        if can_send_request(node_id, now_ms):
            count = in_flight.count(node_id)
            if count == 0:
                return LeastLoadedNode(node, True)
            if count < fewest:
                fewest = count
                found_ready = node
        elif states.is_preparing_connection(node_id):
            found_connecting = node
        elif states.can_connect(node_id, now_ms):
            if found_can_connect is None or states.last_connect_attempt_ms(
                found_can_connect.id_string
            ) > states.last_connect_attempt_ms(node_id):
                found_can_connect = node
    return LeastLoadedNode(found_ready or found_connecting or found_can_connect, at_least_one_ready)
