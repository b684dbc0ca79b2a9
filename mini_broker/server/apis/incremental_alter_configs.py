"""IncrementalAlterConfigs (key 44) for topic configs: SET / DELETE / APPEND / SUBTRACT; for a group's configs
(KIP-848 GROUP resource): SET / DELETE, ALTER_CONFIGS on the group (see ``mini_broker.group.consumer.group_configs``;
the ``share.*`` keys go to the share groups, ``mini_broker.share.group_configs``).

Unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; unknown config or bad value -> INVALID_CONFIG; APPEND or
SUBTRACT on a non-list config -> INVALID_CONFIG; the same resource twice -> INVALID_REQUEST. Broker
(dynamic) configs are not supported yet: INVALID_REQUEST. ``validate_only`` changes nothing. Authorization as
AlterConfigs (ALTER_CONFIGS on the topic or the cluster).
"""

from __future__ import annotations

import logging
from collections import Counter
from functools import partial

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.alter_configs_util import GROUP, alter_each, topic_to_alter
from mini_broker.server.apis.group_api_util import consumer_group_coordinator
from mini_broker.server.apis.share_api_util import SHARE_CONFIG_PREFIX, share_groups
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.topic_configs import TOPIC_CONFIGS, describe_topic_config, validate_topic_config
from pykafka_client.config import ConfigType
from pykafka_client.errors import InvalidConfigurationError, InvalidRequestError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

log = logging.getLogger(__name__)

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _apply_group(apis: KafkaApis, validate_only: bool,
                 res: IncrementalAlterConfigsRequest.AlterConfigsResource) -> None:
    """KIP-848 group configs: SET and DELETE (the group configs are not lists: APPEND / SUBTRACT are
    INVALID_CONFIG), validated against the broker's bounds, kept in the group's ``__consumer_offsets`` partition."""
    if not res.resource_name:
        raise InvalidRequestError("Group name can't be empty")
    dup = [n for n, count in Counter(c.name for c in res.configs).items() if count > 1]
    if dup:
        raise InvalidRequestError(f"Error due to duplicate config keys: {dup}")
    changes: dict[str, str | None] = {}
    for c in res.configs:
        if c.config_operation == SET:
            changes[c.name] = c.value
        elif c.config_operation == DELETE:
            changes[c.name] = None
        elif c.config_operation in (APPEND, SUBTRACT):
            raise InvalidConfigurationError(f"Config value append is not allowed for config key: {c.name}")
        else:
            raise InvalidRequestError(f"Unknown config operation {c.config_operation}")
    share = {n: v for n, v in changes.items() if n.startswith(SHARE_CONFIG_PREFIX)}
    others = {n: v for n, v in changes.items() if n not in share}
    if others or not share:
        consumer_group_coordinator(apis).alter_group_configs(res.resource_name, others, validate_only)
    if share:
        share_groups(apis).alter_group_configs(res.resource_name, share, validate_only)


def _apply(apis: KafkaApis, validate_only: bool, res: IncrementalAlterConfigsRequest.AlterConfigsResource) -> None:
    if res.resource_type == GROUP:
        _apply_group(apis, validate_only, res)
        return
    md = topic_to_alter(apis, res)
    new = dict(md.configs)
    for c in res.configs:
        if c.name not in TOPIC_CONFIGS:
            raise InvalidConfigurationError(f"Unknown topic config name: {c.name}")
        if c.config_operation == SET:
            new[c.name] = validate_topic_config(c.name, c.value)
        elif c.config_operation == DELETE:
            new.pop(c.name, None)
        elif c.config_operation in (APPEND, SUBTRACT):
            if TOPIC_CONFIGS[c.name][0] is not ConfigType.LIST:
                raise InvalidConfigurationError(f"Config value append is not allowed for config key: {c.name}")
            current = describe_topic_config(apis.broker.config, new, c.name).value or ""
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
        apis.broker.replica_manager.update_topic_configs(md.name, new)
        log.info("event=topic_configs_altered topic=%s configs=%s", md.name, new)


def handle(apis: KafkaApis, request: Request) -> IncrementalAlterConfigsResponse:
    body = request.body
    assert isinstance(body, IncrementalAlterConfigsRequest)
    out = alter_each(body.resources, partial(_apply, apis, body.validate_only),
                     IncrementalAlterConfigsResponse.AlterConfigsResourceResponse, apis.broker.auth(request))
    return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=out)


API = ApiSpec(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, handle)
