"""IncrementalAlterConfigs (key 44) for topic configs: SET / DELETE / APPEND / SUBTRACT.

Unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; unknown config or bad value -> INVALID_CONFIG; APPEND or
SUBTRACT on a non-list config -> INVALID_CONFIG; the same resource twice -> INVALID_REQUEST. Broker
(dynamic) configs are not supported yet: INVALID_REQUEST. ``validate_only`` changes nothing.
"""

from __future__ import annotations

import logging
from collections import Counter

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.topic_configs import TOPIC_CONFIGS, describe_topic_config, validate_topic_config
from pykafka_client.errors import (
    InvalidConfigurationError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

log = logging.getLogger(__name__)

TOPIC = 2
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

Result = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse


def _apply(apis: KafkaApis, res: IncrementalAlterConfigsRequest.AlterConfigsResource, validate_only: bool) -> None:
    broker = apis.broker
    if res.resource_type != TOPIC:
        raise InvalidRequestError(f"mini_broker only alters topic configs (resource type {res.resource_type})")
    md = broker.metadata_cache.get_topic(res.resource_name)
    if md is None:
        raise UnknownTopicOrPartitionError(f"Topic '{res.resource_name}' does not exist.")
    names = Counter(c.name for c in res.configs)
    dup = [n for n, c in names.items() if c > 1]
    if dup:
        raise InvalidRequestError(f"Error due to duplicate config keys: {dup}")
    new = dict(md.configs)
    for c in res.configs:
        if c.name not in TOPIC_CONFIGS:
            raise InvalidConfigurationError(f"Unknown topic config name: {c.name}")
        if c.config_operation == SET:
            new[c.name] = validate_topic_config(c.name, c.value)
        elif c.config_operation == DELETE:
            new.pop(c.name, None)
        elif c.config_operation in (APPEND, SUBTRACT):
            if TOPIC_CONFIGS[c.name][0] != "list":
                raise InvalidConfigurationError(f"Config value append is not allowed for config key: {c.name}")
            current = describe_topic_config(broker.config, new, c.name).value or ""
            items = [i for i in current.split(",") if i]
            values = [v.strip() for v in (c.value or "").split(",") if v.strip()]
            if c.config_operation == APPEND:
                items += [v for v in values if v not in items]
            else:
                items = [i for i in items if i not in values]
            new[c.name] = validate_topic_config(c.name, ",".join(items))
        else:
            raise InvalidRequestError(f"Unknown config operation {c.config_operation}")
    if not validate_only:
        broker.replica_manager.update_topic_configs(md.name, new)
        log.info("event=topic_configs_altered topic=%s configs=%s", md.name, new)


def handle(apis: KafkaApis, request: Request) -> IncrementalAlterConfigsResponse:
    body = request.body
    assert isinstance(body, IncrementalAlterConfigsRequest)
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
    return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=out)


API = ApiSpec(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, handle)
