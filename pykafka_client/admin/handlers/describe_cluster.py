"""DescribeCluster (Java ``KafkaAdminClient.describeCluster``): to any broker; Metadata for a broker without
DescribeCluster."""

from __future__ import annotations

from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import LeastLoaded
from pykafka_client.admin.types import ClusterDescription
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    MetadataRequest,
    MetadataResponse,
)
from pykafka_client.structs import Node

#: the one key of this call: the whole cluster
CLUSTER = "cluster"


@dataclass
class DescribeClusterHandler:
    """One key, :data:`CLUSTER`; a broker-level error stops the call."""

    api_key = ApiKey.DESCRIBE_CLUSTER
    fallback_api_key = ApiKey.METADATA
    lookup = LeastLoaded()

    def build_request(self, version: int, keys: list[str]) -> DescribeClusterRequest:
        return DescribeClusterRequest()

    def build_fallback_request(self, version: int, keys: list[str]) -> MetadataRequest:
        return MetadataRequest(topics=[], allow_auto_topic_creation=False)

    def handle_response(self, node: Node, keys: list[str], response: DescribeClusterResponse | MetadataResponse
                        ) -> ApiResult[str, ClusterDescription]:
        if isinstance(response, MetadataResponse):
            nodes = [Node(b.node_id, b.host, b.port, b.rack) for b in response.brokers]
            cluster_id = response.cluster_id
        else:
            assert isinstance(response, DescribeClusterResponse)
            if response.error_code:
                raise broker_error(response.error_code, response.error_message, "describe_cluster")
            nodes = [Node(b.broker_id, b.host, b.port, b.rack) for b in response.brokers]
            cluster_id = response.cluster_id
        controller = next((n for n in nodes if n.id == response.controller_id), None)
        return ApiResult(completed={CLUSTER: ClusterDescription(cluster_id, controller, nodes)})

    @staticmethod
    def call(ctx: AdminContext, timeout: float | None = None) -> ClusterDescription:
        """The cluster id, controller and brokers."""
        return ctx.run_call(lambda _timer: DescribeClusterHandler(), [CLUSTER], timeout)[CLUSTER]
