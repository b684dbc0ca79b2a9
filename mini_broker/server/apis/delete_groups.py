"""DeleteGroups (key 42): Empty groups go with their offsets; others NON_EMPTY_GROUP; unknown
GROUP_ID_NOT_FOUND; DELETE on the group is needed (else GROUP_AUTHORIZATION_FAILED). A KIP-848 consumer group
is deleted when it has no members (with the offsets the classic coordinator keeps for it); so is a share group
(KIP-932), with its share partitions' state (NON_EMPTY_GROUP while it has members)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import consumer_group_coordinator, group_coordinator
from mini_broker.server.apis.share_api_util import share_groups, share_partitions
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse


def handle(apis: KafkaApis, request: Request) -> DeleteGroupsResponse:
    body = request.body
    assert isinstance(body, DeleteGroupsRequest)
    auth = apis.broker.auth(request)
    names = list(dict.fromkeys(body.groups_names))
    deletable = [g for g in names if auth.group(AclOperation.DELETE, g)]
    results = {g: GroupAuthorizationFailedError.code for g in names}
    share = share_groups(apis).delete_groups(deletable)
    for group_id, error in share.items():
        if not error:
            share_partitions(apis).delete_group(group_id)
    consumer = consumer_group_coordinator(apis).delete_groups(g for g in deletable if g not in share)
    classic = [g for g in deletable if g not in share and consumer.get(g, 0) == 0]
    if classic:
        results.update(group_coordinator(apis).handle_delete_groups(classic))
    results.update(consumer)  # a consumer group's own answer (its offsets may not exist)
    results.update(share)
    return DeleteGroupsResponse(throttle_time_ms=0, results=[
        DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=results[g])
        for g in names])


API = ApiSpec(ApiKey.DELETE_GROUPS, 0, 2, handle)
