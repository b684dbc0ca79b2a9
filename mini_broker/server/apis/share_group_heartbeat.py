"""ShareGroupHeartbeat (key 76, KIP-932): join, heartbeat and leave of a share group member (see
:mod:`mini_broker.share.group` for the rules). A group id held by a classic or consumer group answers
GROUP_ID_NOT_FOUND. Answered once the change the heartbeat made is durable (maybe later, from the coordinator
runtime's timer thread). READ on the group is needed (else GROUP_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import client_host, client_id
from mini_broker.server.apis.share_api_util import other_group_type, share_groups
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.share.group import ShareGroupHeartbeatParams, ShareGroupHeartbeatResult
from pykafka_client.errors import GroupAuthorizationFailedError, GroupIdNotFoundError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse

Response = ShareGroupHeartbeatResponse


def handle(apis: KafkaApis, request: Request) -> ShareGroupHeartbeatResponse | None:
    body = request.body
    assert isinstance(body, ShareGroupHeartbeatRequest)
    if not apis.broker.auth(request).group(AclOperation.READ, body.group_id):
        return Response(error_code=GroupAuthorizationFailedError.code,
                        error_message=f"READ on group {body.group_id} is not allowed for this principal: ask for an "
                                      f"ACL granting it")
    groups = share_groups(apis)
    if not groups.is_share_group(body.group_id):
        other = other_group_type(apis, body.group_id)
        if other is not None:
            return Response(error_code=GroupIdNotFoundError.code,
                            error_message=f"Group {body.group_id} is a {other} group, not a share group: use another "
                                          f"group id for the share consumers")
    groups.heartbeat(ShareGroupHeartbeatParams(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch, rack_id=body.rack_id,
        subscribed_topic_names=None if body.subscribed_topic_names is None else tuple(body.subscribed_topic_names),
        client_id=client_id(request), client_host=client_host(request)),
        lambda result: apis.send_response(request, _response(result)))
    return None


def _response(result: ShareGroupHeartbeatResult) -> ShareGroupHeartbeatResponse:
    assignment = None
    if result.assignment is not None:
        assignment = Response.Assignment(topic_partitions=[
            Response.TopicPartitions(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(result.assignment.items())])
    return Response(error_code=result.error_code, error_message=result.error_message, member_id=result.member_id,
                    member_epoch=result.member_epoch, heartbeat_interval_ms=result.heartbeat_interval_ms,
                    assignment=assignment)


API = ApiSpec(ApiKey.SHARE_GROUP_HEARTBEAT, 0, 1, handle)
