"""WriteTxnMarkers (key 27): the transaction coordinator's COMMIT/ABORT markers, appended to each partition
with the COORDINATOR origin (see :mod:`mini_broker.server.txn_marker_writer`). The coordinator of this broker
calls the same path in process; the API is served for coordinators speaking the wire (and tests). The answer
comes once the markers are on every in-sync replica (acks=-1). CLUSTER_ACTION on the cluster is needed (else
CLUSTER_AUTHORIZATION_FAILED for every partition): only brokers send it."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.txn_marker_writer import write_markers
from pykafka_client.errors import ClusterAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse


def _denied(body: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    """Every partition of every marker: CLUSTER_AUTHORIZATION_FAILED."""
    return WriteTxnMarkersResponse(markers=[WriteTxnMarkersResponse.WritableTxnMarkerResult(
        producer_id=m.producer_id, topics=[WriteTxnMarkersResponse.WritableTxnMarkerTopicResult(
            name=t.name, partitions=[WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult(
                partition_index=p, error_code=ClusterAuthorizationFailedError.code) for p in t.partition_indexes])
            for t in m.topics]) for m in body.markers])


def handle(apis: KafkaApis, request: Request) -> WriteTxnMarkersResponse | None:
    body = request.body
    assert isinstance(body, WriteTxnMarkersRequest)
    if not apis.broker.auth(request).cluster(AclOperation.CLUSTER_ACTION):
        return _denied(body)
    write_markers(apis.broker, body, lambda response: apis.send_response(request, response))
    return None


API = ApiSpec(ApiKey.WRITE_TXN_MARKERS, 0, 1, handle)
