"""The AdminClient's cluster call (Java ``KafkaAdminClient.describeCluster``): DescribeCluster, or Metadata
for brokers without it."""

from __future__ import annotations

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
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


def describe_cluster(ctx: AdminContext, timeout: float | None = None) -> ClusterDescription:
    with ctx.lock:
        timer = ctx.timer(timeout)
        node = ctx.await_ready(ctx.least_loaded, timer, "DescribeCluster")
        versions = ctx.client.api_versions.get(node.id_string)
        if versions is not None and versions.api_version(ApiKey.DESCRIBE_CLUSTER) is not None:
            _, dc = ctx.send(ApiKey.DESCRIBE_CLUSTER, lambda v: DescribeClusterRequest(), ctx.least_loaded, timer)
            assert isinstance(dc, DescribeClusterResponse)
            if dc.error_code:
                raise broker_error(dc.error_code, dc.error_message, "describe_cluster")
            nodes = [Node(b.broker_id, b.host, b.port, b.rack) for b in dc.brokers]
            controller = next((n for n in nodes if n.id == dc.controller_id), None)
            return ClusterDescription(dc.cluster_id, controller, nodes)
        _, md = ctx.send(
            ApiKey.METADATA, lambda v: MetadataRequest(topics=[], allow_auto_topic_creation=False),
            ctx.least_loaded, timer,
        )
        assert isinstance(md, MetadataResponse)
        nodes = [Node(b.node_id, b.host, b.port, b.rack) for b in md.brokers]
        controller = next((n for n in nodes if n.id == md.controller_id), None)
        return ClusterDescription(md.cluster_id, controller, nodes)
