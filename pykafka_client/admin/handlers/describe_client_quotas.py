"""DescribeClientQuotas (Java ``KafkaAdminClient.describeClientQuotas``): to any broker."""

from __future__ import annotations

from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import LeastLoaded
from pykafka_client.admin.types import ClientQuotaEntity, ClientQuotaFilter
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeClientQuotasRequest, DescribeClientQuotasResponse
from pykafka_client.structs import Node

#: the one key of this call
QUOTAS = "quotas"


@dataclass
class DescribeClientQuotasHandler:
    """One key, :data:`QUOTAS`: its value maps each entity ``quota_filter`` matches to its quotas."""

    quota_filter: ClientQuotaFilter
    api_key = ApiKey.DESCRIBE_CLIENT_QUOTAS
    lookup = LeastLoaded()

    def build_request(self, version: int, keys: list[str]) -> DescribeClientQuotasRequest:
        qf = self.quota_filter
        return DescribeClientQuotasRequest(
            components=[DescribeClientQuotasRequest.ComponentData(
                entity_type=c.entity_type, match_type=int(c.match_type), match=c.match) for c in qf.components],
            strict=qf.strict,
        )

    def handle_response(self, node: Node, keys: list[str], response: DescribeClientQuotasResponse
                        ) -> ApiResult[str, dict[ClientQuotaEntity, dict[str, float]]]:
        assert isinstance(response, DescribeClientQuotasResponse)
        if response.error_code:
            raise broker_error(response.error_code, response.error_message, "describe_client_quotas")
        quotas = {
            ClientQuotaEntity({d.entity_type: d.entity_name for d in e.entity}): {v.key: v.value for v in e.values}
            for e in response.entries or []
        }
        return ApiResult(completed={QUOTAS: quotas})

    @staticmethod
    def call(ctx: AdminContext, quota_filter: ClientQuotaFilter | None = None,
             timeout: float | None = None) -> dict[ClientQuotaEntity, dict[str, float]]:
        """The client quotas set for the entities ``quota_filter`` matches (all when None)."""
        qf = quota_filter or ClientQuotaFilter.all()
        if not isinstance(qf, ClientQuotaFilter):
            raise TypeError(f"describe_client_quotas() expects quota_filter as a ClientQuotaFilter, got {qf!r}")
        return ctx.run_call(lambda _timer: DescribeClientQuotasHandler(qf), [QUOTAS], timeout)[QUOTAS]
