"""DescribeGroups (key 15): state, protocol and members of each group (member metadata and assignments
only when Stable); unknown groups are described as Dead with no error, as Kafka does up to v5, and so are the
KIP-848 consumer groups (Kafka's v6 says GROUP_ID_NOT_FOUND "not a classic group"; ConsumerGroupDescribe
describes them). DESCRIBE on the group is needed (else GROUP_AUTHORIZATION_FAILED for it)."""

from __future__ import annotations

from mini_broker.group.group_metadata import GroupSummary
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import consumer_group_coordinator, group_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation, ResourceType
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def handle(apis: KafkaApis, request: Request) -> DescribeGroupsResponse:
    body = request.body
    assert isinstance(body, DescribeGroupsRequest)
    coordinator = group_coordinator(apis)
    consumer_groups = consumer_group_coordinator(apis)
    auth = apis.broker.auth(request)
    described = []
    for group_id in body.groups:
        if not auth.group(AclOperation.DESCRIBE, group_id):
            described.append(DescribeGroupsResponse.DescribedGroup(
                error_code=GroupAuthorizationFailedError.code, group_id=group_id, group_state="", protocol_type="",
                protocol_data="", authorized_operations=AUTHORIZED_OPERATIONS_OMITTED, members=[]))
            continue
        ops = (auth.operations(ResourceType.GROUP, group_id) if body.include_authorized_operations
               else AUTHORIZED_OPERATIONS_OMITTED)
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
