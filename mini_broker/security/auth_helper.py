"""The authorization checks of one request (Kafka: ``kafka.server.AuthHelper`` bound to a request's context).

An API handler gets it with ``apis.broker.auth(request)`` and asks it once per resource it touches; with no
authorizer configured every answer is "allowed", so a handler has no separate code path for that case.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from mini_broker.security.authorizer import OPERATIONS_BY_TYPE, StandardAuthorizer, principal_of
from pykafka_client.protocol.acl import CLUSTER_NAME, AclOperation, ResourceType

T = TypeVar("T")


def client_ip(client_address: str) -> str:
    """The host an ACL's host is compared with: the client's IP, without the port of ``ip:port``."""
    host, sep, _ = client_address.rpartition(":")
    return host.strip("[]") if sep else client_address


class RequestAuth:
    """What the principal of one request, connected from ``host``, may do."""

    __slots__ = ("authorizer", "principal", "host")

    def __init__(self, authorizer: StandardAuthorizer | None, user: str, host: str) -> None:
        self.authorizer = authorizer
        self.principal = principal_of(user)
        self.host = host

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def allowed(self, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        a = self.authorizer
        return a is None or a.authorize(self.principal, self.host, op, rtype, name)

    def cluster(self, op: AclOperation) -> bool:
        return self.allowed(op, ResourceType.CLUSTER, CLUSTER_NAME)

    def topic(self, op: AclOperation, name: str) -> bool:
        return self.allowed(op, ResourceType.TOPIC, name)

    def group(self, op: AclOperation, name: str) -> bool:
        return self.allowed(op, ResourceType.GROUP, name)

    def transactional_id(self, op: AclOperation, name: str) -> bool:
        return self.allowed(op, ResourceType.TRANSACTIONAL_ID, name)

    def topics(self, op: AclOperation, names: Iterable[str]) -> set[str]:
        """The names among ``names`` the principal may ``op`` (each checked once)."""
        unique = set(names)
        a = self.authorizer
        if a is None:
            return unique
        return {n for n in unique if a.authorize(self.principal, self.host, op, ResourceType.TOPIC, n)}

    def any_of_type(self, op: AclOperation, rtype: ResourceType) -> bool:
        """May the principal ``op`` some resource of ``rtype`` (Kafka's authorizeByResourceType)?"""
        a = self.authorizer
        return a is None or a.authorize_by_resource_type(self.principal, self.host, op, rtype)

    def cluster_operations(self) -> int:
        """The cluster's KIP-430 bit set as Kafka answers it: none (0) without DESCRIBE on the cluster."""
        return self.operations(ResourceType.CLUSTER, CLUSTER_NAME) if self.cluster(AclOperation.DESCRIBE) else 0

    def operations(self, rtype: ResourceType, name: str) -> int:
        """The KIP-430 bit set of the operations allowed on the resource (all of the type's without an authorizer)."""
        a = self.authorizer
        if a is None:
            return sum(1 << int(op) for op in OPERATIONS_BY_TYPE.get(rtype, ()))
        return a.authorized_operations(self.principal, self.host, rtype, name)


#: the answers of a broker without an authorizer: everything is allowed
ALLOW_ALL = RequestAuth(None, "ANONYMOUS", "")
