"""DescribeGroups (key 15): state, protocol and members of each group (member metadata and assignments
only when Stable); unknown groups are described as Dead with no error, as Kafka does up to v5, and so are the
KIP-848 consumer groups (Kafka's v6 says GROUP_ID_NOT_FOUND "not a classic group"; ConsumerGroupDescribe
describes them)."""

from __future__ import annotations

from mini_broker.group.group_metadata import GroupSummary
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import consumer_group_coordinator, group_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse

AUTHORIZED_OPERATIONS_OMITTED = -2147483648
#: READ (3), DELETE (6), DESCRIBE (8): everything a group allows, as there is no authorizer.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


def handle(apis: KafkaApis, request: Request) -> DescribeGroupsResponse:
    body = request.body
    assert isinstance(body, DescribeGroupsRequest)
    coordinator = group_coordinator(apis)
    consumer_groups = consumer_group_coordinator(apis)
    ops = GROUP_OPERATIONS if body.include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED
    described = []
    for group_id in body.groups:
        error, summary = coordinator.handle_describe_group(group_id)
        if error == 0 and consumer_groups.is_consumer_group(group_id):
            summary = GroupSummary("Dead", "", "", [])
        described.append(DescribeGroupsResponse.DescribedGroup(
            error_code=error, group_id=group_id, group_state=summary.state, protocol_type=summary.protocol_type,
            protocol_data=summary.protocol, authorized_operations=ops, members=[
                DescribeGroupsResponse.DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                    client_host=m.client_host, member_metadata=m.metadata, member_assignment=m.assignment)
                for m in summary.members]))
    return DescribeGroupsResponse(throttle_time_ms=0, groups=described)


API = ApiSpec(ApiKey.DESCRIBE_GROUPS, 0, 5, handle)
