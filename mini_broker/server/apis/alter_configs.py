"""AlterConfigs (key 33, the pre-KIP-339 API) for topic configs: the given set replaces every override.

Used by kafka-python's and aiokafka's ``alter_configs``. Unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; unknown
config or bad value -> INVALID_CONFIG; the same resource twice -> INVALID_REQUEST; broker resources ->
INVALID_REQUEST (no dynamic broker configs yet). ``validate_only`` changes nothing.
"""

from __future__ import annotations

import logging
from collections import Counter

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.topic_configs import validate_topic_configs
from pykafka_client.errors import InvalidRequestError, UnknownTopicOrPartitionError
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import AlterConfigsRequest, AlterConfigsResponse

log = logging.getLogger(__name__)

TOPIC = 2

Result = AlterConfigsResponse.AlterConfigsResourceResponse


def _apply(apis: KafkaApis, res: AlterConfigsRequest.AlterConfigsResource, validate_only: bool) -> None:
    broker = apis.broker
    if res.resource_type != TOPIC:
        raise InvalidRequestError(f"mini_broker only alters topic configs (resource type {res.resource_type})")
    md = broker.metadata_cache.get_topic(res.resource_name)
    if md is None:
        raise UnknownTopicOrPartitionError(f"Topic '{res.resource_name}' does not exist.")
    names = Counter(c.name for c in res.configs)
    dup = [n for n, count in names.items() if count > 1]
    if dup:
        raise InvalidRequestError(f"Error due to duplicate config keys: {dup}")
    configs = validate_topic_configs({c.name: c.value for c in res.configs})
    if not validate_only:
        broker.replica_manager.update_topic_configs(md.name, configs)
        log.info("event=topic_configs_replaced topic=%s configs=%s", md.name, configs)


def handle(apis: KafkaApis, request: Request) -> AlterConfigsResponse:
    body = request.body
    assert isinstance(body, AlterConfigsRequest)
    counts = Counter((r.resource_type, r.resource_name) for r in body.resources)
    out: list[Result] = []
    for res in body.resources:
        try:
            if counts[(res.resource_type, res.resource_name)] > 1:
                raise InvalidRequestError("Duplicate resource in request")
            _apply(apis, res, body.validate_only)
            out.append(Result(error_code=0, error_message=None, resource_type=res.resource_type,
                              resource_name=res.resource_name))
        except BrokerResponseError as e:
            out.append(Result(error_code=e.code, error_message=str(e) or None, resource_type=res.resource_type,
                              resource_name=res.resource_name))
    return AlterConfigsResponse(throttle_time_ms=0, responses=out)


API = ApiSpec(ApiKey.ALTER_CONFIGS, 0, 2, handle)
