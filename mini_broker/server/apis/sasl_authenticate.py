"""SaslAuthenticate (key 36) reaching the request handlers: no authentication is in progress on this
connection (its authenticator answers while one is), so the answer is ILLEGAL_SASL_STATE, as Kafka's."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import IllegalSaslStateError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import SaslAuthenticateResponse


def handle(apis: KafkaApis, request: Request) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=IllegalSaslStateError.code,
                                    error_message="SaslAuthenticate request received after successful authentication",
                                    auth_bytes=b"")


API = ApiSpec(ApiKey.SASL_AUTHENTICATE, 0, 2, handle)
