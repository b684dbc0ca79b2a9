"""DescribeAcls (Java ``KafkaAdminClient.describeAcls``): to any broker; the bindings a filter selects. Needs
DESCRIBE on the cluster (else ClusterAuthorizationFailedError, not retried)."""

from __future__ import annotations

from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.handlers.acl_util import binding, check_version, with_filter
from pykafka_client.admin.lookups import LeastLoaded
from pykafka_client.protocol.acl import ANY_ACL, AclBinding, AclBindingFilter
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from pykafka_client.structs import Node

#: the one key of a describe_acls call
ACLS = "acls"


@dataclass
class DescribeAclsHandler:
    """One key, :data:`ACLS`: its value is the list of bindings the filter selects."""

    acl_filter: AclBindingFilter
    api_key = ApiKey.DESCRIBE_ACLS
    lookup = LeastLoaded()

    def build_request(self, version: int, keys: list[str]) -> DescribeAclsRequest:
        check_version(version, [int(self.acl_filter.pattern.pattern_type)])
        return with_filter(DescribeAclsRequest(), self.acl_filter)

    def handle_response(self, node: Node, keys: list[str], response: DescribeAclsResponse
                        ) -> ApiResult[str, list[AclBinding]]:
        assert isinstance(response, DescribeAclsResponse)
        if response.error_code:
            raise broker_error(response.error_code, response.error_message, "describe_acls")
        return ApiResult(completed={ACLS: [
            binding(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation,
                     a.permission_type) for r in response.resources for a in r.acls]})

    @staticmethod
    def call(ctx: AdminContext, acl_filter: AclBindingFilter = ANY_ACL, timeout: float | None = None
             ) -> list[AclBinding]:
        if not isinstance(acl_filter, AclBindingFilter):
            raise TypeError(f"describe_acls() expects an AclBindingFilter (ANY_ACL for all), got {acl_filter!r}")
        return ctx.run_call(lambda _timer: DescribeAclsHandler(acl_filter), [ACLS], timeout)[ACLS]
