"""WriteTxnMarkers (key 27): the transaction coordinator's COMMIT/ABORT markers, appended to each partition
with the COORDINATOR origin (see :mod:`mini_broker.server.txn_marker_writer`). The coordinator of this broker
calls the same path in process; the API is served for coordinators speaking the wire (and tests). The answer
comes once the markers are on every in-sync replica (acks=-1)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.txn_marker_writer import write_markers
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import WriteTxnMarkersRequest


def handle(apis: KafkaApis, request: Request) -> None:
    body = request.body
    assert isinstance(body, WriteTxnMarkersRequest)
    write_markers(apis.broker, body, lambda response: apis.send_response(request, response))


API = ApiSpec(ApiKey.WRITE_TXN_MARKERS, 0, 1, handle)
