"""What the ACL admin calls (create_acls, describe_acls, delete_acls) share: the version check, the filter fields
and bindings as the wire carries them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pykafka_client.errors import UnsupportedVersionError
from pykafka_client.protocol.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    ResourcePattern,
    operation,
    pattern_type,
    permission_type,
    resource_type,
)
from pykafka_client.protocol.messages import DeleteAclsRequest, DescribeAclsRequest


def check_version(version: int, patterns: Iterable[int]) -> None:
    """v0 knows LITERAL patterns only (KIP-290 came with v1)."""
    if version == 0 and any(p != 3 for p in patterns):
        raise UnsupportedVersionError("the broker's ACL API v0 knows literal patterns only; prefixed or MATCH/ANY "
                                      "patterns need a broker with KIP-290 (Kafka 2.0+)")


F = TypeVar("F", DescribeAclsRequest, DeleteAclsRequest.DeleteAclsFilter)


def with_filter(message: F, f: AclBindingFilter) -> F:
    """``message`` (a DescribeAcls request or a DeleteAcls filter: the same fields) set to select what ``f`` does."""
    message.resource_type_filter = int(f.pattern.resource_type)
    message.resource_name_filter = f.pattern.name
    message.pattern_type_filter = int(f.pattern.pattern_type)
    message.principal_filter = f.entry.principal
    message.host_filter = f.entry.host
    message.operation = int(f.entry.operation)
    message.permission_type = int(f.entry.permission_type)
    return message


def binding(rtype: int, name: str, ptype: int, principal: str, host: str, op: int, perm: int) -> AclBinding:
    return AclBinding(ResourcePattern(resource_type(rtype), name, pattern_type(ptype)),
                      AccessControlEntry(principal, host, operation(op), permission_type(perm)))
