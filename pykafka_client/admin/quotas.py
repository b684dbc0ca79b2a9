"""The AdminClient's client quota calls (Java ``KafkaAdminClient.alterClientQuotas`` /
``describeClientQuotas``), sent to any broker."""

from __future__ import annotations

from collections.abc import Iterable

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.types import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from pykafka_client.utils.arguments import list_argument


def alter_client_quotas(
    ctx: AdminContext,
    entries: Iterable[ClientQuotaAlteration],
    timeout: float | None = None,
    validate_only: bool = False,
) -> dict[ClientQuotaEntity, BaseException | None]:
    alterations = list_argument(
        "alter_client_quotas", "entries", entries, ClientQuotaAlteration,
        "a list of ClientQuotaAlteration, e.g. [ClientQuotaAlteration(ClientQuotaEntity({'client-id': 'app'}), "
        "{'producer_byte_rate': 1048576})]",
    )
    if not alterations:
        return {}
    with ctx.lock:
        timer = ctx.timer(timeout)

        def build(version: int) -> AlterClientQuotasRequest:
            return AlterClientQuotasRequest(
                entries=[
                    AlterClientQuotasRequest.EntryData(
                        entity=[AlterClientQuotasRequest.EntityData(entity_type=t, entity_name=n)
                                for t, n in a.entity.entries.items()],
                        ops=[AlterClientQuotasRequest.OpData(key=k, value=0.0 if v is None else float(v),
                                                             remove=v is None) for k, v in a.ops.items()],
                    )
                    for a in alterations
                ],
                validate_only=validate_only,
            )

        _, resp = ctx.send(ApiKey.ALTER_CLIENT_QUOTAS, build, ctx.least_loaded, timer)
        assert isinstance(resp, AlterClientQuotasResponse)
        out: dict[ClientQuotaEntity, BaseException | None] = {}
        first_error: BaseException | None = None
        for e in resp.entries:
            entity = ClientQuotaEntity({d.entity_type: d.entity_name for d in e.entity})
            err = broker_error(e.error_code, e.error_message, f"{entity}") if e.error_code else None
            out[entity] = err
            first_error = first_error or err
        if first_error is not None:
            raise first_error
        return out


def describe_client_quotas(
    ctx: AdminContext, quota_filter: ClientQuotaFilter | None = None, timeout: float | None = None,
) -> dict[ClientQuotaEntity, dict[str, float]]:
    qf = quota_filter or ClientQuotaFilter.all()
    if not isinstance(qf, ClientQuotaFilter):
        raise TypeError(f"describe_client_quotas() expects quota_filter as a ClientQuotaFilter, got {qf!r}")
    with ctx.lock:
        timer = ctx.timer(timeout)

        def build(version: int) -> DescribeClientQuotasRequest:
            return DescribeClientQuotasRequest(
                components=[DescribeClientQuotasRequest.ComponentData(
                    entity_type=c.entity_type, match_type=int(c.match_type), match=c.match) for c in qf.components],
                strict=qf.strict,
            )

        _, resp = ctx.send(ApiKey.DESCRIBE_CLIENT_QUOTAS, build, ctx.least_loaded, timer)
        assert isinstance(resp, DescribeClientQuotasResponse)
        if resp.error_code:
            raise broker_error(resp.error_code, resp.error_message, "describe_client_quotas")
        return {
            ClientQuotaEntity({d.entity_type: d.entity_name for d in e.entity}): {v.key: v.value for v in e.values}
            for e in resp.entries or []
        }
