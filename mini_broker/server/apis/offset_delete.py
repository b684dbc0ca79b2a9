"""OffsetDelete (key 47): drops committed offsets of a group. Unknown topics: UNKNOWN_TOPIC_OR_PARTITION;
topics a consumer group with members is subscribed to: GROUP_SUBSCRIBED_TO_TOPIC; a group error (unknown
group, non-consumer group with members) is answered at the top level with no topics. DELETE on the group is needed
(else GROUP_AUTHORIZATION_FAILED) and READ on each topic (else TOPIC_AUTHORIZATION_FAILED), as Kafka."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import group_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import (
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import OffsetDeleteRequest, OffsetDeleteResponse


def handle(apis: KafkaApis, request: Request) -> OffsetDeleteResponse:
    body = request.body
    assert isinstance(body, OffsetDeleteRequest)
    cache = apis.broker.metadata_cache
    auth = apis.broker.auth(request)
    if not auth.group(AclOperation.DELETE, body.group_id):
        return OffsetDeleteResponse(error_code=GroupAuthorizationFailedError.code, throttle_time_ms=0)
    readable = auth.topics(AclOperation.READ, (t.name for t in body.topics))
    errors: dict[tuple[str, int], int] = {}
    eligible: list[tuple[str, int]] = []
    for topic in body.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if topic.name not in readable:
                errors[tp] = TopicAuthorizationFailedError.code
            elif cache.contains_partition(topic.name, p.partition_index):
                eligible.append(tp)
            else:
                errors[tp] = UnknownTopicOrPartitionError.code
    error, partition_errors = group_coordinator(apis).handle_delete_offsets(body.group_id, eligible)
    if error != 0:
        return OffsetDeleteResponse(error_code=error, throttle_time_ms=0)
    errors.update(partition_errors)
    return OffsetDeleteResponse(error_code=0, throttle_time_ms=0, topics=[
        OffsetDeleteResponse.OffsetDeleteResponseTopic(name=topic.name, partitions=[
            OffsetDeleteResponse.OffsetDeleteResponsePartition(
                partition_index=p.partition_index, error_code=errors.get((topic.name, p.partition_index), 0))
            for p in topic.partitions])
        for topic in body.topics])


API = ApiSpec(ApiKey.OFFSET_DELETE, 0, 0, handle)
