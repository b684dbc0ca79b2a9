"""Shared by CreateAcls / DescribeAcls / DeleteAcls: the authorizer they manage, the check Kafka makes first, and
the wire fields as ACL objects."""

from __future__ import annotations

from typing import Any

from mini_broker.network.request_channel import Request
from mini_broker.security.authorizer import StandardAuthorizer
from mini_broker.server.api_error import error_message
from mini_broker.server.kafka_apis import KafkaApis
from pykafka_client.errors import ClusterAuthorizationFailedError, SecurityDisabledError
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.acl import (
    AccessControlEntryFilter,
    AclBindingFilter,
    AclOperation,
    ResourcePatternFilter,
    operation,
    pattern_type,
    permission_type,
    resource_type,
)


def acl_authorizer(apis: KafkaApis, request: Request, op: AclOperation) -> StandardAuthorizer | BrokerResponseError:
    """The authorizer, or the error every result carries: SECURITY_DISABLED without one (Kafka: "No Authorizer is
    configured"), CLUSTER_AUTHORIZATION_FAILED when the principal may not ``op`` the cluster (DESCRIBE to list
    ACLs, ALTER to create or delete them)."""
    authorizer = apis.broker.authorizer
    if authorizer is None:
        return SecurityDisabledError("No Authorizer is configured on the broker: set authorizer.class.name="
                                     "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    if not apis.broker.auth(request).cluster(op):
        return ClusterAuthorizationFailedError(f"{op.name} on the cluster is needed to manage ACLs")
    return authorizer


def store_failure(e: BaseException) -> str:
    """The message of a change that was not stored (the ACL file could not be written, the controller refused or
    was unreachable: retry)."""
    return f"the ACL change was not stored: {error_message(e) or e!r}"


def binding_filter(f: Any) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter entry as an AclBindingFilter (null strings match any)."""
    return AclBindingFilter(
        ResourcePatternFilter(resource_type(f.resource_type_filter), f.resource_name_filter,
                              pattern_type(f.pattern_type_filter)),
        AccessControlEntryFilter(f.principal_filter, f.host_filter, operation(f.operation),
                                 permission_type(f.permission_type)))
