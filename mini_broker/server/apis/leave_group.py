"""LeaveGroup (key 13). v0-2 name one member (top-level error = its error); v3+ a batch of members, also
by group instance id alone (administrative removal of static members). Routed by the group's type and handled
with no online upgrade or downgrade of the group in between."""

from __future__ import annotations

from mini_broker.group.group_requests import LeaveGroupParams, LeaveMember
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import consumer_group_coordinator, group_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import LeaveGroupRequest, LeaveGroupResponse


def handle(apis: KafkaApis, request: Request) -> LeaveGroupResponse:
    body = request.body
    assert isinstance(body, LeaveGroupRequest)
    version = request.context.api_version
    if not apis.broker.auth(request).group(AclOperation.READ, body.group_id):
        return LeaveGroupResponse(throttle_time_ms=0, error_code=GroupAuthorizationFailedError.code, members=[])
    if version >= 3:
        leaving = [LeaveMember(m.member_id, m.group_instance_id, m.reason) for m in body.members]
    else:
        leaving = [LeaveMember(body.member_id)]
    consumer_groups = consumer_group_coordinator(apis)
    with consumer_groups.group_types_held():  # routed and done with no online upgrade/downgrade in between
        if consumer_groups.is_consumer_group(body.group_id):  # KIP-848: a classic member of a consumer group
            error, results = 0, consumer_groups.classic_leave(body.group_id, leaving)
        else:
            error, results = group_coordinator(apis).handle_leave_group(LeaveGroupParams(body.group_id, leaving))
    if version < 3:
        if error == 0:
            error = next((r.error_code for r in results if r.error_code != 0), 0)
        return LeaveGroupResponse(throttle_time_ms=0, error_code=error)
    return LeaveGroupResponse(throttle_time_ms=0, error_code=error, members=[
        LeaveGroupResponse.MemberResponse(member_id=r.member_id, group_instance_id=r.group_instance_id,
                                          error_code=r.error_code) for r in results])


API = ApiSpec(ApiKey.LEAVE_GROUP, 0, 5, handle)
