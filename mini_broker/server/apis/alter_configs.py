"""AlterConfigs (key 33, the pre-KIP-339 API) for topic configs: the given set replaces every override.

Used by kafka-python's and aiokafka's ``alter_configs``. Unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; unknown
config or bad value -> INVALID_CONFIG; the same resource twice -> INVALID_REQUEST; broker resources ->
INVALID_REQUEST (no dynamic broker configs yet). ``validate_only`` changes nothing. ALTER_CONFIGS on the topic (or the
cluster, for a broker) is needed, else TOPIC_AUTHORIZATION_FAILED (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import logging
from functools import partial

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.alter_configs_util import alter_each, topic_to_alter
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.topic_configs import validate_topic_configs
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import AlterConfigsRequest, AlterConfigsResponse

log = logging.getLogger(__name__)


def _apply(apis: KafkaApis, validate_only: bool, res: AlterConfigsRequest.AlterConfigsResource) -> None:
    md = topic_to_alter(apis, res)
    configs = validate_topic_configs({c.name: c.value for c in res.configs})
    if not validate_only:
        apis.broker.replica_manager.update_topic_configs(md.name, configs)
        log.info("event=topic_configs_replaced topic=%s configs=%s", md.name, configs)


def handle(apis: KafkaApis, request: Request) -> AlterConfigsResponse:
    body = request.body
    assert isinstance(body, AlterConfigsRequest)
    out = alter_each(body.resources, partial(_apply, apis, body.validate_only),
                     AlterConfigsResponse.AlterConfigsResourceResponse, apis.broker.auth(request))
    return AlterConfigsResponse(throttle_time_ms=0, responses=out)


API = ApiSpec(ApiKey.ALTER_CONFIGS, 0, 2, handle)
