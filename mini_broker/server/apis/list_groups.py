"""ListGroups (key 16): every live group; v4+ filter by state (case-insensitive), v5+ by type ("classic", or
"consumer" for the KIP-848 consumer groups, which list with protocol type "consumer" and their own states, or
"share" for the KIP-932 share groups, protocol type "share", states Empty and Stable).
With DESCRIBE on the cluster every group is listed, else only those the principal may DESCRIBE (Kafka's rule)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import consumer_group_coordinator, group_coordinator
from mini_broker.server.apis.share_api_util import share_groups
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ListGroupsRequest, ListGroupsResponse

CLASSIC_GROUP_TYPE = "classic"
CONSUMER_GROUP_TYPE = "consumer"
SHARE_GROUP_TYPE = "share"


def handle(apis: KafkaApis, request: Request) -> ListGroupsResponse:
    body = request.body
    assert isinstance(body, ListGroupsRequest)
    error, classic = group_coordinator(apis).handle_list_groups(body.states_filter)
    consumer = dict(consumer_group_coordinator(apis).list_groups()) if error == 0 else {}
    share = dict(share_groups(apis).list_groups()) if error == 0 else {}
    # a consumer group's offsets are kept by an empty classic group of the same id: the consumer group is listed
    groups = [(gid, ptype, state, CLASSIC_GROUP_TYPE) for gid, ptype, state in classic
              if gid not in consumer and gid not in share]
    states = {s.lower() for s in body.states_filter}
    for gtype, listed in ((CONSUMER_GROUP_TYPE, consumer), (SHARE_GROUP_TYPE, share)):
        groups += [(gid, gtype, state, gtype) for gid, state in listed.items() if not states or state.lower() in states]
    if body.types_filter:
        types = {t.lower() for t in body.types_filter}
        groups = [g for g in groups if g[3] in types]
    auth = apis.broker.auth(request)
    if not auth.cluster(AclOperation.DESCRIBE):
        groups = [g for g in groups if auth.group(AclOperation.DESCRIBE, g[0])]
    return ListGroupsResponse(throttle_time_ms=0, error_code=error, groups=[
        ListGroupsResponse.ListedGroup(group_id=gid, protocol_type=ptype, group_state=state, group_type=gtype)
        for gid, ptype, state, gtype in sorted(groups)])


API = ApiSpec(ApiKey.LIST_GROUPS, 0, 5, handle)
