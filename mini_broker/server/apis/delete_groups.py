"""DeleteGroups (key 42): Empty groups go with their offsets; others NON_EMPTY_GROUP; unknown
GROUP_ID_NOT_FOUND. A KIP-848 consumer group is deleted when it has no members (with the offsets the classic
coordinator keeps for it)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import consumer_group_coordinator, group_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse


def handle(apis: KafkaApis, request: Request) -> DeleteGroupsResponse:
    body = request.body
    assert isinstance(body, DeleteGroupsRequest)
    consumer = consumer_group_coordinator(apis).delete_groups(body.groups_names)
    results = group_coordinator(apis).handle_delete_groups([g for g in body.groups_names if consumer.get(g, 0) == 0])
    for group_id, error in consumer.items():  # the consumer group's own answer (its offsets may not exist)
        results[group_id] = error
    return DeleteGroupsResponse(throttle_time_ms=0, results=[
        DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=results[g])
        for g in dict.fromkeys(body.groups_names)])


API = ApiSpec(ApiKey.DELETE_GROUPS, 0, 2, handle)
