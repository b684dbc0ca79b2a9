"""DeleteAcls (Java ``KafkaAdminClient.deleteAcls``): to any broker; per filter the bindings it removed. The call
raises the first filter's error after all were applied."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.handlers.acl_util import binding, check_version, with_filter
from pykafka_client.admin.lookups import LeastLoaded
from pykafka_client.protocol.acl import AclBinding, AclBindingFilter
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument


@dataclass
class DeleteAclsHandler:
    """Keys: the filters; each one's value is the list of bindings it removed."""

    api_key = ApiKey.DELETE_ACLS
    lookup = LeastLoaded()

    def build_request(self, version: int, keys: list[AclBindingFilter]) -> DeleteAclsRequest:
        check_version(version, (int(f.pattern.pattern_type) for f in keys))
        return DeleteAclsRequest(filters=[with_filter(DeleteAclsRequest.DeleteAclsFilter(), f) for f in keys])

    def handle_response(self, node: Node, keys: list[AclBindingFilter], response: DeleteAclsResponse
                        ) -> ApiResult[AclBindingFilter, list[AclBinding]]:
        assert isinstance(response, DeleteAclsResponse)
        result: ApiResult[AclBindingFilter, list[AclBinding]] = ApiResult()
        for f, r in zip(keys, response.filter_results, strict=True):
            if r.error_code:
                result.failed.setdefault(f, broker_error(r.error_code, r.error_message, f"delete ACLs matching {f}"))
                continue
            result.completed[f] = [binding(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host,
                                            m.operation, m.permission_type) for m in r.matching_acls]
        return result

    @staticmethod
    def call(ctx: AdminContext, filters: Iterable[AclBindingFilter], timeout: float | None = None
             ) -> dict[AclBindingFilter, list[AclBinding]]:
        wanted = list_argument("delete_acls", "filters", filters, AclBindingFilter,
                               "a list of AclBindingFilter, e.g. [AclBindingFilter(ResourcePatternFilter("
                               "ResourceType.TOPIC, 'orders', PatternType.LITERAL))]")
        if not wanted:
            return {}
        return ctx.run_call(lambda _timer: DeleteAclsHandler(), list(dict.fromkeys(wanted)), timeout)
