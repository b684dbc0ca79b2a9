"""ListGroups (key 16): every live group; v4+ filter by state (case-insensitive), v5+ by type (all groups
here are "classic"). With DESCRIBE on the cluster every group is listed, else only those the principal may
DESCRIBE (Kafka's rule)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import group_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ListGroupsRequest, ListGroupsResponse

CLASSIC_GROUP_TYPE = "classic"


def handle(apis: KafkaApis, request: Request) -> ListGroupsResponse:
    body = request.body
    assert isinstance(body, ListGroupsRequest)
    error, groups = group_coordinator(apis).handle_list_groups(body.states_filter)
    auth = apis.broker.auth(request)
    if not auth.cluster(AclOperation.DESCRIBE):
        groups = [g for g in groups if auth.group(AclOperation.DESCRIBE, g[0])]
    if body.types_filter and CLASSIC_GROUP_TYPE not in {t.lower() for t in body.types_filter}:
        groups = []
    return ListGroupsResponse(throttle_time_ms=0, error_code=error, groups=[
        ListGroupsResponse.ListedGroup(group_id=gid, protocol_type=ptype, group_state=state,
                                       group_type=CLASSIC_GROUP_TYPE)
        for gid, ptype, state in sorted(groups)])


API = ApiSpec(ApiKey.LIST_GROUPS, 0, 5, handle)
