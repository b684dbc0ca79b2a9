"""AlterClientQuotas (Java ``KafkaAdminClient.alterClientQuotas``): to any broker."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import LeastLoaded
from pykafka_client.admin.types import ClientQuotaAlteration, ClientQuotaEntity
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import AlterClientQuotasRequest, AlterClientQuotasResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument


@dataclass
class AlterClientQuotasHandler:
    """Keys: the entities; ``alterations`` those asked for."""

    alterations: list[ClientQuotaAlteration]
    validate_only: bool
    api_key = ApiKey.ALTER_CLIENT_QUOTAS
    lookup = LeastLoaded()

    def build_request(self, version: int, keys: list[ClientQuotaEntity]) -> AlterClientQuotasRequest:
        wanted = set(keys)
        return AlterClientQuotasRequest(
            entries=[
                AlterClientQuotasRequest.EntryData(
                    entity=[AlterClientQuotasRequest.EntityData(entity_type=t, entity_name=n)
                            for t, n in a.entity.entries.items()],
                    ops=[AlterClientQuotasRequest.OpData(key=k, value=0.0 if v is None else float(v),
                                                         remove=v is None) for k, v in a.ops.items()],
                )
                for a in self.alterations if a.entity in wanted
            ],
            validate_only=self.validate_only,
        )

    def handle_response(self, node: Node, keys: list[ClientQuotaEntity], response: AlterClientQuotasResponse
                        ) -> ApiResult[ClientQuotaEntity, BaseException | None]:
        assert isinstance(response, AlterClientQuotasResponse)
        result: ApiResult[ClientQuotaEntity, BaseException | None] = ApiResult()
        for e in response.entries:
            entity = ClientQuotaEntity({d.entity_type: d.entity_name for d in e.entity})
            err = broker_error(e.error_code, e.error_message, f"{entity}") if e.error_code else None
            result.completed[entity] = err
            if err is not None:
                result.failed.setdefault(entity, err)
        return result

    @staticmethod
    def call(ctx: AdminContext, entries: Iterable[ClientQuotaAlteration], timeout: float | None = None,
             validate_only: bool = False) -> dict[ClientQuotaEntity, BaseException | None]:
        """Set or remove client quotas; each entity's error or None; raises the first entity's error."""
        alterations = list_argument(
            "alter_client_quotas", "entries", entries, ClientQuotaAlteration,
            "a list of ClientQuotaAlteration, e.g. [ClientQuotaAlteration(ClientQuotaEntity({'client-id': 'app'}), "
            "{'producer_byte_rate': 1048576})]",
        )
        if not alterations:
            return {}
        entities = list(dict.fromkeys(a.entity for a in alterations))
        return ctx.run_call(lambda _timer: AlterClientQuotasHandler(alterations, validate_only), entities, timeout)
