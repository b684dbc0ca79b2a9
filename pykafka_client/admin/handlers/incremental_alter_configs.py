"""IncrementalAlterConfigs (Java ``KafkaAdminClient.incrementalAlterConfigs``): broker resources to that
broker, the others to any broker."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.group_types import AlterConfigOp
from pykafka_client.admin.handlers.describe_configs import broker_of
from pykafka_client.admin.lookups import BrokerOrAny
from pykafka_client.admin.types import ConfigResource, ConfigResourceType
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import mapping_argument


@dataclass
class IncrementalAlterConfigsHandler:
    """Keys: the config resources; ``ops`` the operations on each."""

    ops: dict[ConfigResource, list[AlterConfigOp]]
    validate_only: bool
    api_key = ApiKey.INCREMENTAL_ALTER_CONFIGS
    lookup = BrokerOrAny(broker_of)

    def build_request(self, version: int, keys: list[ConfigResource]) -> IncrementalAlterConfigsRequest:
        return IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=int(r.type), resource_name=r.name,
                    configs=[
                        IncrementalAlterConfigsRequest.AlterableConfig(
                            name=op.name, config_operation=int(op.op_type), value=op.value
                        )
                        for op in self.ops[r]
                    ],
                )
                for r in keys
            ],
            validate_only=self.validate_only,
        )

    def handle_response(self, node: Node, keys: list[ConfigResource], response: IncrementalAlterConfigsResponse
                        ) -> ApiResult[ConfigResource, None]:
        assert isinstance(response, IncrementalAlterConfigsResponse)
        result: ApiResult[ConfigResource, None] = ApiResult()
        for r in response.responses:
            key = ConfigResource(ConfigResourceType(r.resource_type), r.resource_name)
            if r.error_code:
                result.failed.setdefault(key, broker_error(r.error_code, r.error_message, f"{key}"))
            else:
                result.completed[key] = None
        return result

    @staticmethod
    def call(ctx: AdminContext, configs: Mapping[ConfigResource, Iterable[AlterConfigOp]],
             timeout: float | None = None, validate_only: bool = False) -> None:
        """Set, delete, append to or subtract from config overrides; raises the first resource's error after
        all were attempted."""
        mapping_argument(
            "incremental_alter_configs", "configs", configs,
            "a mapping of ConfigResource to a list of AlterConfigOp, e.g. "
            "{ConfigResource(ConfigResourceType.TOPIC, 'orders'): [AlterConfigOp('retention.ms', '60000')]}",
        )
        ops: dict[ConfigResource, list[AlterConfigOp]] = {}
        for resource, resource_ops in configs.items():
            broker_of(resource)  # a broker resource's name must be its id: refused before anything is sent
            ops[resource] = list(resource_ops)
        ctx.run_call(lambda _timer: IncrementalAlterConfigsHandler(ops, validate_only), list(ops), timeout)
