"""DescribeCluster (key 60): this broker, the cluster id, and itself as controller.

As in Kafka it needs no permission; the cluster's authorized operations (when asked for) are the principal's with
DESCRIBE on the cluster, else none (0)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import UnsupportedEndpointTypeError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeClusterRequest, DescribeClusterResponse

BROKERS_ENDPOINT_TYPE = 1
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def handle(apis: KafkaApis, request: Request) -> DescribeClusterResponse:
    body = request.body
    assert isinstance(body, DescribeClusterRequest)
    broker = apis.broker
    if body.endpoint_type != BROKERS_ENDPOINT_TYPE:
        return DescribeClusterResponse(error_code=UnsupportedEndpointTypeError.code,
                                       error_message="The broker listener only serves broker endpoints",
                                       endpoint_type=body.endpoint_type, cluster_id=broker.metadata_cache.cluster_id)
    ep = broker.endpoint_for(request.context.listener_name)
    brokers = [DescribeClusterResponse.DescribeClusterBroker(broker_id=broker.node_id, host=ep.host, port=ep.port)]
    controller_id = broker.node_id
    live = broker.replica_manager.replication.live_brokers(request.context.listener_name)
    if live:  # a cluster: every live broker with this listener; any of them forwards controller requests
        brokers = [DescribeClusterResponse.DescribeClusterBroker(broker_id=i, host=h, port=p) for i, h, p in live]
        controller_id = live[0][0]
    return DescribeClusterResponse(
        error_code=0,
        endpoint_type=BROKERS_ENDPOINT_TYPE,
        cluster_id=broker.metadata_cache.cluster_id,
        controller_id=controller_id,
        brokers=brokers,
        cluster_authorized_operations=(apis.broker.auth(request).cluster_operations()
                                       if body.include_cluster_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED),
    )


API = ApiSpec(ApiKey.DESCRIBE_CLUSTER, 0, 1, handle)
