"""JoinGroup (key 11): answered later, when the group's join round completes (or at once on errors).

v0 has no rebalance timeout (the session timeout is used). v4+ without a group instance id must first get
a member id (KIP-394: MEMBER_ID_REQUIRED). v9+ lets a rejoining static leader skip the assignment. READ on the group
is needed (else GROUP_AUTHORIZATION_FAILED), as for SyncGroup, Heartbeat and LeaveGroup.

A KIP-848 consumer group with members takes the member as a classic member of the consumer group (KIP-848's
online migration; INCONSISTENT_GROUP_PROTOCOL when ``group.consumer.migration.policy`` is ``disabled``); an empty
one becomes a classic group, as Kafka converts it. The group's type is checked and the join done as one step under
the consumer groups' lock (:meth:`ConsumerGroupCoordinator.join_group`), so an online upgrade or downgrade never
falls between them.
"""

from __future__ import annotations

from mini_broker.group.group_requests import JoinGroupParams, JoinGroupResult
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import (
    client_host,
    client_id,
    consumer_group_coordinator,
    group_coordinator,
)
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import JoinGroupRequest, JoinGroupResponse


def handle(apis: KafkaApis, request: Request) -> JoinGroupResponse | None:
    body = request.body
    assert isinstance(body, JoinGroupRequest)
    version = request.context.api_version

    def respond(result: JoinGroupResult) -> None:
        protocol_name = result.protocol_name
        if protocol_name is None and version < 7:
            protocol_name = ""
        apis.send_response(request, JoinGroupResponse(
            throttle_time_ms=0, error_code=result.error_code, generation_id=result.generation_id,
            protocol_type=result.protocol_type, protocol_name=protocol_name, leader=result.leader_id,
            skip_assignment=result.skip_assignment, member_id=result.member_id,
            members=[JoinGroupResponse.JoinGroupResponseMember(member_id=m.member_id,
                                                               group_instance_id=m.group_instance_id,
                                                               metadata=m.metadata)
                     for m in result.members]))

    if not apis.broker.auth(request).group(AclOperation.READ, body.group_id):
        return JoinGroupResponse(throttle_time_ms=0, error_code=GroupAuthorizationFailedError.code, generation_id=-1,
                                 protocol_type=None, protocol_name=None if version >= 7 else "", leader="",
                                 member_id=body.member_id, members=[])
    consumer_groups = consumer_group_coordinator(apis)
    rebalance_timeout_ms = body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms
    params = JoinGroupParams(
        group_id=body.group_id, member_id=body.member_id, group_instance_id=body.group_instance_id,
        require_known_member_id=version >= 4 and body.group_instance_id is None,
        support_skipping_assignment=version >= 9, client_id=client_id(request), client_host=client_host(request),
        rebalance_timeout_ms=rebalance_timeout_ms, session_timeout_ms=body.session_timeout_ms,
        protocol_type=body.protocol_type, protocols=[(p.name, bytes(p.metadata)) for p in body.protocols],
        reason=body.reason)
    if consumer_groups.classic_groups is None:  # no consumer groups hosted with the classic ones
        group_coordinator(apis).handle_join_group(params, respond)
    else:  # routed by the group's type, atomically with the migrations that change it
        consumer_groups.join_group(params, respond)
    return None


API = ApiSpec(ApiKey.JOIN_GROUP, 0, 9, handle)
