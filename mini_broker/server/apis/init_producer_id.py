"""InitProducerId (key 22).

Without a transactional id (idempotent producers): a fresh producer id with epoch 0 from the broker's
:class:`~mini_broker.producer_state.ProducerIdManager` (persisted blocks, so unique across restarts). As
Kafka's transaction coordinator does, the request is always accepted and answered with a NEW producer id and
epoch 0, also when it carries the current producer id/epoch (KIP-360 v3+: an idempotent producer resetting
after an unknown-producer or out-of-order error gets a new id, not a bumped epoch).

With a transactional id: the transaction coordinator answers (a new id at epoch 0, an epoch bump, a new id
when the epoch is exhausted, CONCURRENT_TRANSACTIONS while an open transaction of the id is fenced and
aborted, INVALID_TRANSACTION_TIMEOUT above ``transaction.max.timeout.ms``), once the change is durable.

Authorization as Kafka 3.x: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
(KIP-679; else CLUSTER_AUTHORIZATION_FAILED); a transactional one WRITE on its transactional id (else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.txn_api_util import fenced_for_version, transaction_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.transaction.transaction_requests import InitProducerIdParams, InitProducerIdResult
from pykafka_client.errors import ClusterAuthorizationFailedError, TransactionalIdAuthorizationError
from pykafka_client.protocol.acl import AclOperation, ResourceType
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import InitProducerIdRequest, InitProducerIdResponse


def handle(apis: KafkaApis, request: Request) -> InitProducerIdResponse | None:
    body = request.body
    assert isinstance(body, InitProducerIdRequest)
    auth = apis.broker.auth(request)
    if body.transactional_id is None:
        if not (auth.cluster(AclOperation.IDEMPOTENT_WRITE) or auth.any_of_type(AclOperation.WRITE, ResourceType.TOPIC)):
            return InitProducerIdResponse(throttle_time_ms=0, error_code=ClusterAuthorizationFailedError.code,
                                          producer_id=-1, producer_epoch=-1)
        manager = apis.broker.producer_id_manager
        pid = manager.generate_producer_id() if manager is not None else apis.broker.metadata_cache.next_producer_id()
        return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)

    if not auth.transactional_id(AclOperation.WRITE, body.transactional_id):
        return InitProducerIdResponse(throttle_time_ms=0, error_code=TransactionalIdAuthorizationError.code,
                                      producer_id=-1, producer_epoch=-1)

    def respond(result: InitProducerIdResult) -> None:
        error = fenced_for_version(result.error_code, request.context.api_version, 4)
        apis.send_response(request, InitProducerIdResponse(throttle_time_ms=0, error_code=error,
                                                           producer_id=result.producer_id,
                                                           producer_epoch=result.producer_epoch))

    has_current = request.context.api_version >= 3
    transaction_coordinator(apis).handle_init_producer_id(InitProducerIdParams(
        body.transactional_id, body.transaction_timeout_ms, body.producer_id if has_current else -1,
        body.producer_epoch if has_current else -1), respond)
    return None


API = ApiSpec(ApiKey.INIT_PRODUCER_ID, 0, 5, handle)
