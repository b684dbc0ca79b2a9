"""The AdminClient's cluster call (Java ``KafkaAdminClient.describeCluster``): DescribeCluster, or Metadata
for brokers without it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.types import (
    ClusterDescription,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    MetadataRequest,
    MetadataResponse,
)
from pykafka_client.structs import Node

if TYPE_CHECKING:
    from pykafka_client.admin.admin_client import AdminClient


def describe_cluster(admin: AdminClient, timeout: float | None = None) -> ClusterDescription:
    with admin._lock:
        timer = admin._timer(timeout)
        node = admin._await_ready(admin._least_loaded, timer, "DescribeCluster")
        versions = admin._client.api_versions.get(node.id_string)
        if versions is not None and versions.api_version(ApiKey.DESCRIBE_CLUSTER) is not None:
            _, dc = admin._send(ApiKey.DESCRIBE_CLUSTER, lambda v: DescribeClusterRequest(), admin._least_loaded, timer)
            assert isinstance(dc, DescribeClusterResponse)
            if dc.error_code:
                raise broker_error(dc.error_code, dc.error_message, "describe_cluster")
            nodes = [Node(b.broker_id, b.host, b.port, b.rack) for b in dc.brokers]
            controller = next((n for n in nodes if n.id == dc.controller_id), None)
            return ClusterDescription(dc.cluster_id, controller, nodes)
        _, md = admin._send(
            ApiKey.METADATA, lambda v: MetadataRequest(topics=[], allow_auto_topic_creation=False),
            admin._least_loaded, timer,
        )
        assert isinstance(md, MetadataResponse)
        nodes = [Node(b.node_id, b.host, b.port, b.rack) for b in md.brokers]
        controller = next((n for n in nodes if n.id == md.controller_id), None)
        return ClusterDescription(md.cluster_id, controller, nodes)
