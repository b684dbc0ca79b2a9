"""FindCoordinator (key 10).

A single broker coordinates every key itself: key type 0 (GROUP) answers this broker's endpoint on the
request's listener; key type 1 (TRANSACTION) answers it when its transaction coordinator is active, else
COORDINATOR_NOT_AVAILABLE; key type 2 (SHARE, ``group:topicId:partition``, asked by brokers: CLUSTER_ACTION)
answers it when it keeps share state. Other key types get INVALID_REQUEST. v4+ carry a batch of keys.

On a cluster the coordinator of a key is the leader of its internal topic partition
(:func:`mini_broker.server.coordinator_lookup.coordinator_for`); the first lookup creates the internal topic
(Kafka: auto-creation on FindCoordinator) with its configured partition count, and a partition without a live leader answers
COORDINATOR_NOT_AVAILABLE. Authorization first, as Kafka: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED)
or on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from mini_broker.coordinator.internal_topics import INTERNAL_TOPIC_OF_KEY_TYPE
from mini_broker.network.request_channel import Request
from mini_broker.server.coordinator_lookup import GROUP_KEY_TYPE, SHARE_KEY_TYPE, TRANSACTION_KEY_TYPE
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import (
    ClusterAuthorizationFailedError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    InvalidRequestError,
    TransactionalIdAuthorizationError,
)
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse


def _internal_topic_settings(apis: KafkaApis, key_type: int) -> tuple[int, int, dict[str, str]]:
    """(partition count, replication factor, topic configs) an internal topic is created with (Kafka's broker
    configs: ``offsets.topic.num.partitions`` / ``transaction.state.log.num.partitions``, ...)."""
    return INTERNAL_TOPIC_OF_KEY_TYPE[key_type].settings(apis.broker.config.get_int)


def _lookup(apis: KafkaApis, request: Request, key_type: int, key: str) -> tuple[int, str | None, int, str, int]:
    """(error code, error message, node id, host, port)."""
    broker = apis.broker
    auth = broker.auth(request)
    if key_type == GROUP_KEY_TYPE and not auth.group(AclOperation.DESCRIBE, key):
        return GroupAuthorizationFailedError.code, "DESCRIBE on the group is needed", -1, "", -1
    if key_type == TRANSACTION_KEY_TYPE and not auth.transactional_id(AclOperation.DESCRIBE, key):
        return TransactionalIdAuthorizationError.code, "DESCRIBE on the transactional id is needed", -1, "", -1
    if key_type == GROUP_KEY_TYPE:
        running = broker.group_coordinator is not None and broker.group_coordinator.is_running
    elif key_type == TRANSACTION_KEY_TYPE:
        running = broker.transaction_coordinator is not None and broker.transaction_coordinator.is_running
    elif key_type == SHARE_KEY_TYPE:  # the share coordinator of a share partition (brokers ask)
        if not auth.cluster(AclOperation.CLUSTER_ACTION):
            return ClusterAuthorizationFailedError.code, "CLUSTER_ACTION on the cluster is needed", -1, "", -1
        running = broker.share_state is not None
    else:
        return InvalidRequestError.code, f"Unknown coordinator key type {key_type}", -1, "", -1
    if not running:
        return CoordinatorNotAvailableError.code, "The coordinator is not available.", -1, "", -1
    found = broker.replica_manager.replication.find_coordinator(
        key_type, key, lambda kt: _internal_topic_settings(apis, kt), request.context.listener_name)
    if found is not None:
        return found.error_code, found.error_message, found.node_id, found.host, found.port
    ep = broker.endpoint_for(request.context.listener_name)
    return 0, None, broker.node_id, ep.host, ep.port


def handle(apis: KafkaApis, request: Request) -> FindCoordinatorResponse:
    body = request.body
    assert isinstance(body, FindCoordinatorRequest)
    if request.context.api_version >= 4:
        coordinators = []
        for key in body.coordinator_keys:
            error, message, node, host, port = _lookup(apis, request, body.key_type, key)
            coordinators.append(FindCoordinatorResponse.Coordinator(key=key, node_id=node, host=host, port=port,
                                                                    error_code=error, error_message=message))
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)
    error, message, node, host, port = _lookup(apis, request, body.key_type, body.key)
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=error, error_message=message, node_id=node,
                                   host=host, port=port)


API = ApiSpec(ApiKey.FIND_COORDINATOR, 0, 6, handle)
