"""SyncGroup (key 14): followers wait for the leader's assignment; the leader's SyncGroup stores it. A classic
member of a KIP-848 consumer group gets the assignment the coordinator computed for it (routed and handled with
no online upgrade or downgrade of the group in between)."""

from __future__ import annotations

from mini_broker.group.group_requests import SyncGroupParams, SyncGroupResult
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import consumer_group_coordinator, group_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import SyncGroupRequest, SyncGroupResponse


def handle(apis: KafkaApis, request: Request) -> SyncGroupResponse | None:
    body = request.body
    assert isinstance(body, SyncGroupRequest)

    def respond(result: SyncGroupResult) -> None:
        apis.send_response(request, SyncGroupResponse(
            throttle_time_ms=0, error_code=result.error_code, protocol_type=result.protocol_type,
            protocol_name=result.protocol_name, assignment=result.assignment))

    if not apis.broker.auth(request).group(AclOperation.READ, body.group_id):
        return SyncGroupResponse(throttle_time_ms=0, error_code=GroupAuthorizationFailedError.code,
                                 protocol_type=None, protocol_name=None, assignment=b"")
    params = SyncGroupParams(
        group_id=body.group_id, generation_id=body.generation_id, member_id=body.member_id,
        group_instance_id=body.group_instance_id, protocol_type=body.protocol_type,
        protocol_name=body.protocol_name, assignments={a.member_id: bytes(a.assignment) for a in body.assignments})
    consumer_groups = consumer_group_coordinator(apis)
    with consumer_groups.group_types_held():  # routed and done with no online upgrade/downgrade in between
        if consumer_groups.is_consumer_group(body.group_id):  # a classic member of a consumer group (KIP-848)
            respond(consumer_groups.classic_sync(params))
        else:
            group_coordinator(apis).handle_sync_group(params, respond)
    return None


API = ApiSpec(ApiKey.SYNC_GROUP, 0, 5, handle)
