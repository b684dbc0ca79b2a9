"""Heartbeat (key 12): refreshes the member's session; REBALANCE_IN_PROGRESS tells it to rejoin (a classic member
of a KIP-848 consumer group: to revoke partitions, or to get new ones). Routed by the group's type and handled
with no online upgrade or downgrade of the group in between."""

from __future__ import annotations

from mini_broker.group.group_requests import HeartbeatParams
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import consumer_group_coordinator, group_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import HeartbeatRequest, HeartbeatResponse


def handle(apis: KafkaApis, request: Request) -> HeartbeatResponse:
    body = request.body
    assert isinstance(body, HeartbeatRequest)
    if not apis.broker.auth(request).group(AclOperation.READ, body.group_id):
        return HeartbeatResponse(throttle_time_ms=0, error_code=GroupAuthorizationFailedError.code)
    params = HeartbeatParams(group_id=body.group_id, member_id=body.member_id, generation_id=body.generation_id,
                             group_instance_id=body.group_instance_id)
    consumer_groups = consumer_group_coordinator(apis)
    with consumer_groups.group_types_held():  # routed and done with no online upgrade/downgrade in between
        if consumer_groups.is_consumer_group(body.group_id):
            error = consumer_groups.classic_heartbeat(params)
        else:
            error = group_coordinator(apis).handle_heartbeat(params)
    return HeartbeatResponse(throttle_time_ms=0, error_code=error)


API = ApiSpec(ApiKey.HEARTBEAT, 0, 4, handle)
