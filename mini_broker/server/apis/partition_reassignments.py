"""AlterPartitionReassignments (key 45) and ListPartitionReassignments (key 46), KIP-455.

Alter: per partition a target replica list (null: cancel the ongoing reassignment). The new replicas join the
partition at once and its ISR when caught up; then leadership moves off a removed leader and the removed
replicas are dropped. Errors per partition: INVALID_REPLICA_ASSIGNMENT (empty, a broker twice, an unknown
broker), UNKNOWN_TOPIC_OR_PARTITION, NO_REASSIGNMENT_IN_PROGRESS (cancel with none). ALTER on the cluster is
needed (else CLUSTER_AUTHORIZATION_FAILED for the request).

List: the ongoing reassignments (of the partitions named; null: all) with their replicas, adding and removing
replicas. DESCRIBE on the cluster is needed.
"""

from __future__ import annotations

import logging

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.elect_leaders import code_and_message
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import ClusterAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

log = logging.getLogger(__name__)

_AltTopic = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
_AltPart = AlterPartitionReassignmentsResponse.ReassignablePartitionResponse


def handle_alter(apis: KafkaApis, request: Request) -> AlterPartitionReassignmentsResponse:
    body = request.body
    assert isinstance(body, AlterPartitionReassignmentsRequest)
    if not apis.broker.auth(request).cluster(AclOperation.ALTER):
        return AlterPartitionReassignmentsResponse(
            throttle_time_ms=0, error_code=ClusterAuthorizationFailedError.code,
            error_message="ALTER on the cluster is needed to reassign partitions", responses=[])
    moves = [(t.name, p.partition_index, None if p.replicas is None else list(p.replicas))
             for t in body.topics for p in t.partitions]
    out = apis.broker.replica_manager.replication.alter_partition_reassignments(moves)
    responses: list[_AltTopic] = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            code, msg = code_and_message(out.get((t.name, p.partition_index)))
            parts.append(_AltPart(partition_index=p.partition_index, error_code=code, error_message=msg))
            if not code:
                log.info("event=reassignment partition=%s-%d replicas=%s", t.name, p.partition_index, p.replicas)
        responses.append(_AltTopic(name=t.name, partitions=parts))
    return AlterPartitionReassignmentsResponse(throttle_time_ms=0, error_code=0, error_message=None,
                                               responses=responses)


def handle_list(apis: KafkaApis, request: Request) -> ListPartitionReassignmentsResponse:
    body = request.body
    assert isinstance(body, ListPartitionReassignmentsRequest)
    if not apis.broker.auth(request).cluster(AclOperation.DESCRIBE):
        return ListPartitionReassignmentsResponse(
            throttle_time_ms=0, error_code=ClusterAuthorizationFailedError.code,
            error_message="DESCRIBE on the cluster is needed to list reassignments", topics=[])
    wanted = None if body.topics is None else [(t.name, p) for t in body.topics for p in t.partition_indexes]
    ongoing = apis.broker.replica_manager.replication.list_partition_reassignments(wanted)
    by_topic: dict[str, list[ListPartitionReassignmentsResponse.OngoingPartitionReassignment]] = {}
    for topic, p, replicas, adding, removing in ongoing:
        by_topic.setdefault(topic, []).append(ListPartitionReassignmentsResponse.OngoingPartitionReassignment(
            partition_index=p, replicas=replicas, adding_replicas=adding, removing_replicas=removing))
    return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=0, error_message=None, topics=[
        ListPartitionReassignmentsResponse.OngoingTopicReassignment(name=t, partitions=ps)
        for t, ps in by_topic.items()])


ALTER_API = ApiSpec(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 0, handle_alter)
LIST_API = ApiSpec(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, handle_list)
