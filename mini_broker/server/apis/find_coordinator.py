"""FindCoordinator (key 10): this broker coordinates every group.

Key type 0 (GROUP) answers this broker's endpoint on the request's listener. Key type 1 (TRANSACTION)
answers this broker when its transaction coordinator is active, else
COORDINATOR_NOT_AVAILABLE. Other key types get INVALID_REQUEST. v4+ carry a batch of keys.
On a cluster every key answers the broker the controller designates for the coordinators (sticky: it changes
only when that broker is fenced).
"""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import CoordinatorNotAvailableError, InvalidRequestError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def _lookup(apis: KafkaApis, request: Request, key_type: int) -> tuple[int, str | None, int, str, int]:
    """(error code, error message, node id, host, port)."""
    broker = apis.broker
    if key_type == GROUP_KEY_TYPE:
        active = broker.group_coordinator is not None and broker.group_coordinator.is_active
    elif key_type == TRANSACTION_KEY_TYPE:
        active = broker.transaction_coordinator is not None and broker.transaction_coordinator.is_active
    else:
        return InvalidRequestError.code, f"Unknown coordinator key type {key_type}", -1, "", -1
    if not active:
        return CoordinatorNotAvailableError.code, "The coordinator is not available.", -1, "", -1
    if broker.replica_manager.cluster is not None:
        # a cluster's coordinators all live on the broker the controller designates (their state is not
        # replicated; see docs/ARCHITECTURE.md "Cluster and replication")
        coordinator = broker.metadata_cache.coordinator_broker()
        if coordinator is None:
            return CoordinatorNotAvailableError.code, "The coordinator's broker is not available; retry.", -1, "", -1
        node, host, port = coordinator
        return 0, None, node, host, port
    ep = broker.endpoint_for(request.context.listener_name)
    return 0, None, broker.node_id, ep.host, ep.port


def handle(apis: KafkaApis, request: Request) -> FindCoordinatorResponse:
    body = request.body
    assert isinstance(body, FindCoordinatorRequest)
    if request.context.api_version >= 4:
        coordinators = []
        for key in body.coordinator_keys:
            error, message, node, host, port = _lookup(apis, request, body.key_type)
            coordinators.append(FindCoordinatorResponse.Coordinator(key=key, node_id=node, host=host, port=port,
                                                                    error_code=error, error_message=message))
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)
    error, message, node, host, port = _lookup(apis, request, body.key_type)
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=error, error_message=message, node_id=node,
                                   host=host, port=port)


API = ApiSpec(ApiKey.FIND_COORDINATOR, 0, 6, handle)
