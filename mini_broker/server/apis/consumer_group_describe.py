"""ConsumerGroupDescribe (key 69, KIP-848): a consumer group's state, epochs, assignor and members with their
current and target assignments. A group id that is not a consumer group here answers GROUP_ID_NOT_FOUND. DESCRIBE
on the group is needed (else GROUP_AUTHORIZATION_FAILED for it)."""

from __future__ import annotations

from mini_broker.group.consumer.model import Assignment
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import consumer_group_coordinator
from mini_broker.server.apis.group_describe_util import describe_each
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.metadata_cache import MetadataCache
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse

Described = ConsumerGroupDescribeResponse.DescribedGroup


def _assignment(metadata: MetadataCache, assignment: Assignment) -> ConsumerGroupDescribeResponse.Assignment:
    parts = []
    for topic_id, partitions in assignment.items():
        topic = metadata.topic_by_id(topic_id)
        parts.append(ConsumerGroupDescribeResponse.TopicPartitions(
            topic_id=topic_id, topic_name="" if topic is None else topic.name, partitions=sorted(partitions)))
    return ConsumerGroupDescribeResponse.Assignment(topic_partitions=sorted(parts, key=lambda p: p.topic_name))


def handle(apis: KafkaApis, request: Request) -> ConsumerGroupDescribeResponse:
    body = request.body
    assert isinstance(body, ConsumerGroupDescribeRequest)
    consumer_groups = consumer_group_coordinator(apis)
    metadata = apis.broker.metadata_cache

    def describe(group_id: str, ops: int) -> Described | None:
        group = consumer_groups.describe(group_id)
        if group is None:
            return None
        return Described(
            error_code=0, group_id=group_id, group_state=group.state.value, group_epoch=group.group_epoch,
            assignment_epoch=group.target_assignment_epoch,
            assignor_name=consumer_groups.preferred_assignor(group), authorized_operations=ops, members=[
                ConsumerGroupDescribeResponse.Member(
                    member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                    member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=list(m.subscribed_topic_names),
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=_assignment(metadata, m.assigned_partitions),
                    target_assignment=_assignment(metadata, group.target_assignment.get(m.member_id, {})))
                for m in sorted(group.members.values(), key=lambda m: m.member_id)])

    def failed(group_id: str, code: int, message: str | None, ops: int) -> Described:
        return Described(error_code=code, group_id=group_id, error_message=message, authorized_operations=ops)

    return ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=describe_each(
        apis, request, body.group_ids, body.include_authorized_operations, "consumer",
        consumer_groups.inactive_error, describe, failed))


API = ApiSpec(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 0, handle)
