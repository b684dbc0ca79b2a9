"""The AdminClient's config calls (Java ``KafkaAdminClient.describeConfigs`` / ``incrementalAlterConfigs``):
broker resources go to that broker, topic resources to any broker."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.group_types import (
    AlterConfigOp,
)
from pykafka_client.admin.types import (
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from pykafka_client.utils.arguments import list_argument, mapping_argument


def describe_configs(
    ctx: AdminContext, resources: Iterable[ConfigResource], timeout: float | None = None,
) -> dict[ConfigResource, dict[str, ConfigEntry]]:
    res = list_argument(
        "describe_configs", "resources", resources, ConfigResource,
        "a list of ConfigResource, e.g. [ConfigResource(ConfigResourceType.TOPIC, 'orders')]",
    )
    if not res:
        return {}
    with ctx.lock:
        timer = ctx.timer(timeout)
        groups: dict[int | None, list[ConfigResource]] = defaultdict(list)
        for r in res:
            is_broker = r.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER)
            groups[int(r.name) if is_broker and r.name else None].append(r)
        out: dict[ConfigResource, dict[str, ConfigEntry]] = {}
        first_error: BaseException | None = None
        for broker_id, items in groups.items():
            target = ctx.least_loaded if broker_id is None else ctx.broker_target(broker_id)

            def build(version: int, items: list[ConfigResource] = items) -> DescribeConfigsRequest:
                return DescribeConfigsRequest(
                    resources=[
                        DescribeConfigsRequest.DescribeConfigsResource(
                            resource_type=int(i.type), resource_name=i.name, configuration_keys=None
                        )
                        for i in items
                    ]
                )

            _, resp = ctx.send(ApiKey.DESCRIBE_CONFIGS, build, target, timer)
            assert isinstance(resp, DescribeConfigsResponse)
            for result in resp.results:
                key = ConfigResource(ConfigResourceType(result.resource_type), result.resource_name)
                if result.error_code:
                    first_error = first_error or broker_error(result.error_code, result.error_message, f"{key}")
                    continue
                entries: dict[str, ConfigEntry] = {}
                for c in result.configs:
                    source = ConfigSource(c.config_source) if c.config_source in ConfigSource._value2member_map_ else ConfigSource.UNKNOWN
                    if c.is_default and source is ConfigSource.UNKNOWN:
                        source = ConfigSource.DEFAULT_CONFIG
                    entries[c.name] = ConfigEntry(c.name, c.value, source, c.read_only, c.is_sensitive)
                out[key] = entries
        if first_error is not None:
            raise first_error
        return out


def incremental_alter_configs(
    ctx: AdminContext,
    configs: Mapping[ConfigResource, Iterable[AlterConfigOp]],
    timeout: float | None = None,
    validate_only: bool = False,
) -> None:
    mapping_argument(
        "incremental_alter_configs", "configs", configs,
        "a mapping of ConfigResource to a list of AlterConfigOp, e.g. "
        "{ConfigResource(ConfigResourceType.TOPIC, 'orders'): [AlterConfigOp('retention.ms', '60000')]}",
    )
    groups: dict[int | None, list[tuple[ConfigResource, list[AlterConfigOp]]]] = defaultdict(list)
    for r, ops in configs.items():
        is_broker = r.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER)
        groups[int(r.name) if is_broker and r.name else None].append((r, list(ops)))
    first_error: BaseException | None = None
    with ctx.lock:
        timer = ctx.timer(timeout)
        for broker_id, items in groups.items():
            target = ctx.least_loaded if broker_id is None else ctx.broker_target(broker_id)

            def build(version: int, items: list[tuple[ConfigResource, list[AlterConfigOp]]] = items) -> IncrementalAlterConfigsRequest:
                return IncrementalAlterConfigsRequest(
                    resources=[
                        IncrementalAlterConfigsRequest.AlterConfigsResource(
                            resource_type=int(r.type), resource_name=r.name,
                            configs=[
                                IncrementalAlterConfigsRequest.AlterableConfig(
                                    name=op.name, config_operation=int(op.op_type), value=op.value
                                )
                                for op in ops
                            ],
                        )
                        for r, ops in items
                    ],
                    validate_only=validate_only,
                )

            _, resp = ctx.send(ApiKey.INCREMENTAL_ALTER_CONFIGS, build, target, timer)
            assert isinstance(resp, IncrementalAlterConfigsResponse)
            for result in resp.responses:
                if result.error_code:
                    key = ConfigResource(ConfigResourceType(result.resource_type), result.resource_name)
                    first_error = first_error or broker_error(result.error_code, result.error_message, f"{key}")
    if first_error is not None:
        raise first_error
