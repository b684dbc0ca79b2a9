"""CreateAcls (Java ``KafkaAdminClient.createAcls``): to any broker. Answers per binding; the call raises the first
binding's error after all were attempted. SecurityDisabledError without an authorizer on the broker,
ClusterAuthorizationFailedError without ALTER on the cluster; neither is retried."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.handlers.acl_util import check_version
from pykafka_client.admin.lookups import LeastLoaded
from pykafka_client.protocol.acl import AclBinding
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    CreateAclsRequest,
    CreateAclsResponse,
)
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument


@dataclass
class CreateAclsHandler:
    """Keys: the bindings to create."""

    api_key = ApiKey.CREATE_ACLS
    lookup = LeastLoaded()

    def build_request(self, version: int, keys: list[AclBinding]) -> CreateAclsRequest:
        check_version(version, (int(b.pattern.pattern_type) for b in keys))
        return CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
            resource_pattern_type=int(b.pattern.pattern_type), principal=b.entry.principal, host=b.entry.host,
            operation=int(b.entry.operation), permission_type=int(b.entry.permission_type)) for b in keys])

    def handle_response(self, node: Node, keys: list[AclBinding], response: CreateAclsResponse
                        ) -> ApiResult[AclBinding, BaseException | None]:
        assert isinstance(response, CreateAclsResponse)
        result: ApiResult[AclBinding, BaseException | None] = ApiResult()
        for binding, r in zip(keys, response.results, strict=True):
            err = broker_error(r.error_code, r.error_message, f"create ACL {binding}") if r.error_code else None
            result.completed[binding] = err
            if err is not None:
                result.failed.setdefault(binding, err)
        return result

    @staticmethod
    def call(ctx: AdminContext, acls: Iterable[AclBinding], timeout: float | None = None
             ) -> dict[AclBinding, BaseException | None]:
        bindings = list_argument("create_acls", "acls", acls, AclBinding,
                                 "a list of AclBinding, e.g. [AclBinding(ResourcePattern(ResourceType.TOPIC, 'orders'), "
                                 "AccessControlEntry('User:alice', '*', AclOperation.READ, AclPermissionType.ALLOW))]")
        if not bindings:
            return {}
        return ctx.run_call(lambda _timer: CreateAclsHandler(), list(dict.fromkeys(bindings)), timeout)
