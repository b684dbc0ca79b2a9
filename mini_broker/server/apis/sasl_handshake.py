"""SaslHandshake (key 17) reaching the request handlers: the connection is not authenticating. On a SASL
listener the channel's authenticator answers the handshake (and re-authentication, KIP-368, before the request
is parsed); here it came on a listener without SASL, or out of order, and is answered with ILLEGAL_SASL_STATE
as Kafka does."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import IllegalSaslStateError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import SaslHandshakeResponse


def handle(apis: KafkaApis, request: Request) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=IllegalSaslStateError.code, mechanisms=[])


API = ApiSpec(ApiKey.SASL_HANDSHAKE, 1, 1, handle)
