"""DescribeConfigs (Java ``KafkaAdminClient.describeConfigs``): broker resources to that broker, the others
to any broker."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import BrokerOrAny
from pykafka_client.admin.types import ConfigEntry, ConfigResource, ConfigResourceType, ConfigSource
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeConfigsRequest, DescribeConfigsResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument


def broker_of(resource: ConfigResource) -> int | None:
    """The broker a config resource must be asked of (its own broker's), None: any broker."""
    is_broker = resource.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER)
    return int(resource.name) if is_broker and resource.name else None


@dataclass
class DescribeConfigsHandler:
    """Keys: the config resources."""

    api_key = ApiKey.DESCRIBE_CONFIGS
    lookup = BrokerOrAny(broker_of)

    def build_request(self, version: int, keys: list[ConfigResource]) -> DescribeConfigsRequest:
        return DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=int(i.type), resource_name=i.name, configuration_keys=None
                )
                for i in keys
            ]
        )

    def handle_response(self, node: Node, keys: list[ConfigResource], response: DescribeConfigsResponse
                        ) -> ApiResult[ConfigResource, dict[str, ConfigEntry]]:
        assert isinstance(response, DescribeConfigsResponse)
        result: ApiResult[ConfigResource, dict[str, ConfigEntry]] = ApiResult()
        for r in response.results:
            key = ConfigResource(ConfigResourceType(r.resource_type), r.resource_name)
            if r.error_code:
                result.failed.setdefault(key, broker_error(r.error_code, r.error_message, f"{key}"))
                continue
            entries: dict[str, ConfigEntry] = {}
            for c in r.configs:
                known = c.config_source in ConfigSource._value2member_map_
                source = ConfigSource(c.config_source) if known else ConfigSource.UNKNOWN
                if c.is_default and source is ConfigSource.UNKNOWN:
                    source = ConfigSource.DEFAULT_CONFIG
                entries[c.name] = ConfigEntry(c.name, c.value, source, c.read_only, c.is_sensitive)
            result.completed[key] = entries
        return result

    @staticmethod
    def call(ctx: AdminContext, resources: Iterable[ConfigResource], timeout: float | None = None,
             ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Configuration entries of topics / brokers; raises the first resource's error after all were asked."""
        res = list_argument(
            "describe_configs", "resources", resources, ConfigResource,
            "a list of ConfigResource, e.g. [ConfigResource(ConfigResourceType.TOPIC, 'orders')]",
        )
        if not res:
            return {}
        return ctx.run_call(lambda _timer: DescribeConfigsHandler(), res, timeout)
