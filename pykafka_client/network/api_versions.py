"""Client-side registry of the API versions each connected node advertised (Java: ``clients.ApiVersions``),
plus which responses the client throttles itself on (KIP-219).

Thread-safe: the producer's accumulator reads it from user threads while the Sender writes it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import MappingProxyType

from pykafka_client.network.node_api_versions import NodeApiVersions
from pykafka_client.protocol.api_keys import ApiKey


class ApiVersions:
    """``node id -> NodeApiVersions`` for the nodes this client is connected to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._node_api_versions: dict[str, NodeApiVersions] = {}
        #: a read-only view of ``node id -> NodeApiVersions`` (what :meth:`get` answers, without its call: the
        #: NetworkClient reads it for every request it sends)
        self.by_node: Mapping[str, NodeApiVersions] = MappingProxyType(self._node_api_versions)

    def update(self, node_id: str, versions: NodeApiVersions) -> None:
        with self._lock:
            self._node_api_versions[node_id] = versions

    def remove(self, node_id: str) -> None:
        with self._lock:
            self._node_api_versions.pop(node_id, None)

    def get(self, node_id: str) -> NodeApiVersions | None:
        return self._node_api_versions.get(node_id)

    def nodes(self) -> list[str]:
        with self._lock:
            return list(self._node_api_versions)


# KIP-219 (Kafka 2.0): from these response versions on, the broker answers at once and expects the
# client to hold off for throttle_time_ms; older versions were delayed by the broker itself. APIs
# introduced after 2.0 throttle client-side from version 0. SaslHandshake/SaslAuthenticate and the
# inter-broker/controller APIs are never throttled by the client.
_CLIENT_THROTTLE_MIN_VERSION: dict[int, int | None] = {
    ApiKey.PRODUCE: 6,
    ApiKey.FETCH: 8,
    ApiKey.LIST_OFFSETS: 3,
    ApiKey.METADATA: 6,
    ApiKey.OFFSET_COMMIT: 4,
    ApiKey.OFFSET_FETCH: 4,
    ApiKey.FIND_COORDINATOR: 2,
    ApiKey.JOIN_GROUP: 3,
    ApiKey.HEARTBEAT: 2,
    ApiKey.LEAVE_GROUP: 2,
    ApiKey.SYNC_GROUP: 2,
    ApiKey.DESCRIBE_GROUPS: 2,
    ApiKey.LIST_GROUPS: 2,
    ApiKey.SASL_HANDSHAKE: None,
    ApiKey.API_VERSIONS: 2,
    ApiKey.CREATE_TOPICS: 3,
    ApiKey.DELETE_TOPICS: 2,
    ApiKey.DELETE_RECORDS: 1,
    ApiKey.INIT_PRODUCER_ID: 1,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: 3,
    ApiKey.ADD_PARTITIONS_TO_TXN: 1,
    ApiKey.ADD_OFFSETS_TO_TXN: 1,
    ApiKey.END_TXN: 1,
    ApiKey.TXN_OFFSET_COMMIT: 1,
    ApiKey.DESCRIBE_ACLS: 1,
    ApiKey.CREATE_ACLS: 1,
    ApiKey.DELETE_ACLS: 1,
    ApiKey.DESCRIBE_CONFIGS: 2,
    ApiKey.ALTER_CONFIGS: 1,
    ApiKey.ALTER_REPLICA_LOG_DIRS: 1,
    ApiKey.DESCRIBE_LOG_DIRS: 1,
    ApiKey.SASL_AUTHENTICATE: None,
    ApiKey.CREATE_PARTITIONS: 1,
    ApiKey.CREATE_DELEGATION_TOKEN: 1,
    ApiKey.RENEW_DELEGATION_TOKEN: 1,
    ApiKey.EXPIRE_DELEGATION_TOKEN: 1,
    ApiKey.DESCRIBE_DELEGATION_TOKEN: 1,
    ApiKey.DELETE_GROUPS: 1,
    ApiKey.LEADER_AND_ISR: None,
    ApiKey.STOP_REPLICA: None,
    ApiKey.UPDATE_METADATA: None,
    ApiKey.CONTROLLED_SHUTDOWN: None,
    ApiKey.WRITE_TXN_MARKERS: None,
}


def should_client_throttle(api_key: int, version: int) -> bool:
    """True if a response of ``api_key`` at ``version`` with throttle_time_ms > 0 must make the client
    stop sending to that broker for that long (KIP-219)."""
    min_version = _CLIENT_THROTTLE_MIN_VERSION.get(int(api_key), 0)
    return min_version is not None and version >= min_version
