"""ConsumerGroupHeartbeat (key 68, KIP-848): join, heartbeat and leave of a ``group.protocol=consumer``
member (see :mod:`mini_broker.group.consumer.manager` for the rules). A group id held by a classic group with
members is upgraded to a consumer group by a joining member (KIP-848's online upgrade) when
``group.consumer.migration.policy`` allows it; otherwise (and for any other epoch) it is not a consumer group:
GROUP_ID_NOT_FOUND. DESCRIBE on every subscribed topic name is needed too (else TOPIC_AUTHORIZATION_FAILED, the
member left as it was). Answered
once the change the heartbeat made is durable (maybe later, from the coordinator runtime's timer thread). READ on
the group is needed (else GROUP_AUTHORIZATION_FAILED), as for the classic group APIs."""

from __future__ import annotations

from mini_broker.group.consumer import ConsumerGroupHeartbeatParams, ConsumerGroupHeartbeatResult
from mini_broker.group.consumer.model import normalize
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import client_host, client_id, consumer_group_coordinator, group_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError, GroupIdNotFoundError, TopicAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

#: the states of a classic group that may become a consumer group (Kafka converts an empty classic group)
_CONVERTIBLE_CLASSIC_STATES = ("Empty", "Dead")


def handle(apis: KafkaApis, request: Request) -> ConsumerGroupHeartbeatResponse | None:
    body = request.body
    assert isinstance(body, ConsumerGroupHeartbeatRequest)
    auth = apis.broker.auth(request)
    if not auth.group(AclOperation.READ, body.group_id):
        return ConsumerGroupHeartbeatResponse(throttle_time_ms=0, error_code=GroupAuthorizationFailedError.code,
                                              error_message=f"READ on group {body.group_id} is not allowed for this "
                                                            f"principal: ask for an ACL granting it")
    if body.subscribed_topic_names:
        # Kafka's KafkaApis: the subscribed topics need DESCRIBE, so that no member learns about topics it may not
        # see; the member stays as it was (its client reports the error and heartbeats on)
        denied = sorted(set(body.subscribed_topic_names) - auth.topics(AclOperation.DESCRIBE,
                                                                       body.subscribed_topic_names))
        if denied:
            return ConsumerGroupHeartbeatResponse(
                throttle_time_ms=0, error_code=TopicAuthorizationFailedError.code,
                error_message=f"DESCRIBE on the subscribed topics {denied} is not allowed for this principal: "
                              f"ask for an ACL granting it, or subscribe to other topics")
    consumer_groups = consumer_group_coordinator(apis)
    upgrading = consumer_groups.config.upgrade_enabled and body.member_epoch == 0
    if not upgrading and not consumer_groups.is_consumer_group(body.group_id) \
            and consumer_groups.inactive_error(body.group_id) is None:
        _, classic = group_coordinator(apis).handle_describe_group(body.group_id)
        if classic.state and classic.state not in _CONVERTIBLE_CLASSIC_STATES:
            return ConsumerGroupHeartbeatResponse(
                throttle_time_ms=0, error_code=GroupIdNotFoundError.code,
                error_message=f"Group {body.group_id} is a classic group with members, not a consumer group: use "
                              f"group.protocol=classic, or another group id.")
    owned = None if body.topic_partitions is None else normalize(
        {tp.topic_id: tp.partitions for tp in body.topic_partitions})
    consumer_groups.heartbeat(ConsumerGroupHeartbeatParams(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        instance_id=body.instance_id, rack_id=body.rack_id, rebalance_timeout_ms=body.rebalance_timeout_ms,
        subscribed_topic_names=None if body.subscribed_topic_names is None else tuple(body.subscribed_topic_names),
        subscribed_topic_regex=body.subscribed_topic_regex, server_assignor=body.server_assignor,
        owned_partitions=owned, client_id=client_id(request), client_host=client_host(request)),
        lambda result: apis.send_response(request, _response(result)))
    return None


def _response(result: ConsumerGroupHeartbeatResult) -> ConsumerGroupHeartbeatResponse:
    assignment = None
    if result.assignment is not None:
        assignment = ConsumerGroupHeartbeatResponse.Assignment(topic_partitions=[
            ConsumerGroupHeartbeatResponse.TopicPartitions(topic_id=t, partitions=sorted(ps))
            for t, ps in sorted(result.assignment.items())])
    return ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0, error_code=result.error_code, error_message=result.error_message,
        member_id=result.member_id, member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=assignment)


API = ApiSpec(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, handle)
