"""DescribeConfigs (key 32): topic configs (value, source, default flag, synonyms, type), broker configs and
(KIP-848) a group's configs (``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms``: the group's
value, source GROUP_CONFIG, else the broker's, source DEFAULT_CONFIG; DESCRIBE_CONFIGS on the group).

Topic values come from the topic override (DYNAMIC_TOPIC_CONFIG), else the broker synonym set in
server.properties (STATIC_BROKER_CONFIG), else Kafka's default (DEFAULT_CONFIG); see ``topic_configs``.
DESCRIBE_CONFIGS on the topic (or the cluster, for a broker) is needed, else TOPIC_AUTHORIZATION_FAILED
(CLUSTER_AUTHORIZATION_FAILED) for that resource.
"""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.api_error import error_message
from mini_broker.server.apis.alter_configs_util import (
    BROKER,
    BROKER_LOGGER,
    GROUP,
    TOPIC,
    config_authorization_error,
)
from mini_broker.server.apis.group_api_util import consumer_group_coordinator
from mini_broker.server.apis.share_api_util import SHARE_STRING_KEYS, share_groups
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.topic_configs import (
    CONFIG_TYPES,
    DEFAULT_CONFIG,
    ConfigEntry,
    describe_broker_configs,
    describe_topic_configs,
)
from pykafka_client.config import ConfigType
from pykafka_client.errors import InvalidRequestError, UnknownTopicOrPartitionError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeConfigsRequest, DescribeConfigsResponse

Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym
#: ConfigSource GROUP_CONFIG: a group's own value (KIP-848)
GROUP_CONFIG_SOURCE = 8


def _entry(e: ConfigEntry, version: int, include_documentation: bool) -> Entry:
    return Entry(
        name=e.name, value=e.value, read_only=e.read_only, is_default=e.is_default and version == 0,
        config_source=e.source, is_sensitive=e.is_sensitive,
        synonyms=[Synonym(name=s.name, value=s.value, source=s.source) for s in e.synonyms] if version >= 1 else [],
        config_type=e.config_type if version >= 3 else 0,
        documentation=(e.documentation or "") if include_documentation else None,
    )


def handle(apis: KafkaApis, request: Request) -> DescribeConfigsResponse:
    body = request.body
    assert isinstance(body, DescribeConfigsRequest)
    broker = apis.broker
    version = request.context.api_version
    synonyms = bool(body.include_synonyms) and version >= 1
    docs = bool(body.include_documentation) and version >= 3
    auth = broker.auth(request)
    results: list[Result] = []
    for res in body.resources:
        keys = list(res.configuration_keys) if res.configuration_keys is not None else None
        denied = config_authorization_error(auth, AclOperation.DESCRIBE_CONFIGS, res.resource_type, res.resource_name)
        if denied is not None:
            results.append(Result(error_code=denied.code, error_message=error_message(denied),
                                  resource_type=res.resource_type, resource_name=res.resource_name, configs=[]))
            continue
        entries: list[ConfigEntry]
        if res.resource_type == TOPIC:
            md = broker.metadata_cache.get_topic(res.resource_name)
            if md is None:
                results.append(Result(error_code=UnknownTopicOrPartitionError.code,
                                      error_message=f"Topic '{res.resource_name}' does not exist.",
                                      resource_type=res.resource_type, resource_name=res.resource_name, configs=[]))
                continue
            entries = describe_topic_configs(broker.config, md.configs, keys, synonyms)
        elif res.resource_type == BROKER:
            if res.resource_name not in ("", str(broker.node_id)):
                results.append(Result(error_code=InvalidRequestError.code,
                                      error_message=f"Unexpected broker id, expected {broker.node_id} or empty "
                                                    f"string, but received {res.resource_name}",
                                      resource_type=res.resource_type, resource_name=res.resource_name, configs=[]))
                continue
            entries = describe_broker_configs(broker.config, keys, synonyms)
        elif res.resource_type == BROKER_LOGGER:
            entries = []
        elif res.resource_type == GROUP:
            if not res.resource_name:
                results.append(Result(error_code=InvalidRequestError.code, error_message="Group name can't be empty",
                                      resource_type=res.resource_type, resource_name=res.resource_name, configs=[]))
                continue
            described = [*consumer_group_coordinator(apis).describe_group_configs(res.resource_name, keys),
                         *share_groups(apis).describe_group_configs(res.resource_name, keys)]
            entries = [ConfigEntry(e.name, e.value, GROUP_CONFIG_SOURCE if e.is_group_value else DEFAULT_CONFIG,
                                   CONFIG_TYPES[ConfigType.STRING if e.name in SHARE_STRING_KEYS else ConfigType.INT],
                                   documentation=e.documentation)
                       for e in sorted(described, key=lambda e: e.name)]
        else:
            results.append(Result(error_code=InvalidRequestError.code,
                                  error_message=f"Unsupported resource type {res.resource_type}",
                                  resource_type=res.resource_type, resource_name=res.resource_name, configs=[]))
            continue
        results.append(Result(error_code=0, error_message=None, resource_type=res.resource_type,
                              resource_name=res.resource_name, configs=[_entry(e, version, docs) for e in entries]))
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)


API = ApiSpec(ApiKey.DESCRIBE_CONFIGS, 0, 4, handle)
