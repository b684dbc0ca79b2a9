"""InitProducerId (key 22), idempotent producers only: a fresh producer id with epoch 0.

Ids come from the broker's :class:`~mini_broker.producer_state.ProducerIdManager` (persisted blocks, so
unique across restarts). As Kafka's transaction coordinator does without a transactional id, the request is
always accepted and answered with a NEW producer id and epoch 0, also when it carries the current
producer id/epoch (KIP-360 v3+: an idempotent producer resetting after an unknown-producer or
out-of-order error gets a new id, not a bumped epoch). A transactional id gets INVALID_REQUEST: there is no
transaction coordinator yet.
"""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import InvalidRequestError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import InitProducerIdRequest, InitProducerIdResponse


def handle(apis: KafkaApis, request: Request) -> InitProducerIdResponse:
    body = request.body
    assert isinstance(body, InitProducerIdRequest)
    if body.transactional_id is not None:
        return InitProducerIdResponse(throttle_time_ms=0, error_code=InvalidRequestError.code, producer_id=-1,
                                      producer_epoch=-1)
    manager = apis.broker.producer_id_manager
    pid = manager.generate_producer_id() if manager is not None else apis.broker.metadata_cache.next_producer_id()
    return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)


API = ApiSpec(ApiKey.INIT_PRODUCER_ID, 0, 5, handle)
