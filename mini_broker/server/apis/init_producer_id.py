"""InitProducerId (key 22), idempotent producers only: a fresh producer id with epoch 0.

Kafka clients with idempotence on by default (kafka-python 3, the Java client) need it. Batches of idempotent
producers are stored as they come (sequence checks and de-duplication come with the producer-state issue).
A transactional id gets INVALID_REQUEST: there is no transaction coordinator yet.
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
    pid = apis.broker.metadata_cache.next_producer_id()
    return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)


API = ApiSpec(ApiKey.INIT_PRODUCER_ID, 0, 5, handle)
