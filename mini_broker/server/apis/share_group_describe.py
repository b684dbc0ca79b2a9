"""ShareGroupDescribe (key 77, KIP-932): a share group's state, epochs, assignor and members with their
assignments. A group id that is not a share group here answers GROUP_ID_NOT_FOUND. DESCRIBE on the group is
needed (else GROUP_AUTHORIZATION_FAILED for it)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_describe_util import describe_each
from mini_broker.server.apis.share_api_util import share_groups
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.metadata_cache import MetadataCache
from mini_broker.share.config import SIMPLE_ASSIGNOR
from mini_broker.share.group import Assignment
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ShareGroupDescribeRequest, ShareGroupDescribeResponse

Response = ShareGroupDescribeResponse
Described = ShareGroupDescribeResponse.DescribedGroup


def _assignment(metadata: MetadataCache, assignment: Assignment) -> ShareGroupDescribeResponse.Assignment:
    parts = []
    for topic_id, partitions in assignment.items():
        topic = metadata.topic_by_id(topic_id)
        parts.append(Response.TopicPartitions(topic_id=topic_id, topic_name="" if topic is None else topic.name,
                                              partitions=sorted(partitions)))
    return Response.Assignment(topic_partitions=sorted(parts, key=lambda p: p.topic_name))


def handle(apis: KafkaApis, request: Request) -> ShareGroupDescribeResponse:
    body = request.body
    assert isinstance(body, ShareGroupDescribeRequest)
    groups = share_groups(apis)
    metadata = apis.broker.metadata_cache

    def describe(group_id: str, ops: int) -> Described | None:
        group = groups.describe(group_id)
        if group is None:
            return None
        return Described(
            error_code=0, group_id=group_id, group_state=group.state.value, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch, assignor_name=SIMPLE_ASSIGNOR, authorized_operations=ops,
            members=[Response.Member(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                                     client_id=m.client_id, client_host=m.client_host,
                                     subscribed_topic_names=list(m.subscribed_topic_names),
                                     assignment=_assignment(metadata, m.assignment))
                     for m in sorted(group.members.values(), key=lambda m: m.member_id)])

    def failed(group_id: str, code: int, message: str | None, ops: int) -> Described:
        return Described(error_code=code, group_id=group_id, error_message=message, authorized_operations=ops)

    return Response(throttle_time_ms=0, groups=describe_each(
        apis, request, body.group_ids, body.include_authorized_operations, "share", groups.inactive_error, describe,
        failed))


API = ApiSpec(ApiKey.SHARE_GROUP_DESCRIBE, 0, 1, handle)
