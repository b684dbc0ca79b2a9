"""What AlterConfigs and IncrementalAlterConfigs share: resolving a topic resource and answering per resource.

Both APIs answer each resource on its own: the same resource twice -> INVALID_REQUEST, a broker error on one
resource becomes that resource's error code, the others still apply.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar

from mini_broker.security.auth_helper import RequestAuth
from mini_broker.server.api_error import error_message
from mini_broker.server.kafka_apis import KafkaApis
from mini_broker.server.metadata_cache import TopicMetadata
from pykafka_client.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    InvalidRequestError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.acl import AclOperation

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
#: KIP-848's GROUP config resource (a consumer group's own configs)
GROUP = 32


class _NamedConfig(Protocol):
    @property
    def name(self) -> str: ...


class ConfigResource(Protocol):
    @property
    def resource_type(self) -> int: ...

    @property
    def resource_name(self) -> str: ...

    @property
    def configs(self) -> Sequence[_NamedConfig]: ...


R = TypeVar("R", bound=ConfigResource)
T = TypeVar("T")


def topic_to_alter(apis: KafkaApis, res: ConfigResource) -> TopicMetadata:
    """The topic a resource names, after the checks both APIs make (topic type, exists, no duplicate keys)."""
    if res.resource_type != TOPIC:
        raise InvalidRequestError(f"mini_broker only alters topic configs (resource type {res.resource_type})")
    md = apis.broker.metadata_cache.get_topic(res.resource_name)
    if md is None:
        raise UnknownTopicOrPartitionError(f"Topic '{res.resource_name}' does not exist.")
    dup = [n for n, count in Counter(c.name for c in res.configs).items() if count > 1]
    if dup:
        raise InvalidRequestError(f"Error due to duplicate config keys: {dup}")
    return md


def config_authorization_error(auth: RequestAuth, op: AclOperation, resource_type: int,
                               resource_name: str) -> BrokerResponseError | None:
    """Kafka's check of a config resource: ``op`` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic (else
    TOPIC_AUTHORIZATION_FAILED), on the group (else GROUP_AUTHORIZATION_FAILED) or, for a broker or broker logger, on the cluster (else CLUSTER_AUTHORIZATION_FAILED)."""
    if resource_type == TOPIC and not auth.topic(op, resource_name):
        return TopicAuthorizationFailedError(f"{op.name} on topic {resource_name!r} is not allowed")
    if resource_type == GROUP and not auth.group(op, resource_name):
        return GroupAuthorizationFailedError(f"{op.name} on group {resource_name!r} is not allowed")
    if resource_type in (BROKER, BROKER_LOGGER) and not auth.cluster(op):
        return ClusterAuthorizationFailedError(f"{op.name} on the cluster is needed for broker configs")
    return None


def alter_each(resources: Iterable[R], apply: Callable[[R], None], result: Callable[..., T],
               auth: RequestAuth) -> list[T]:
    """Apply each resource the principal may ALTER_CONFIGS; build its result (``error_code``, ``error_message``,
    type, name) with ``result``."""
    resources = list(resources)
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    out: list[T] = []
    for res in resources:
        code: int
        message: str | None
        try:
            if counts[(res.resource_type, res.resource_name)] > 1:
                raise InvalidRequestError("Duplicate resource in request")
            denied = config_authorization_error(auth, AclOperation.ALTER_CONFIGS, res.resource_type, res.resource_name)
            if denied is not None:
                raise denied
            apply(res)
            code, message = 0, None
        except BrokerResponseError as e:
            code, message = e.code, error_message(e)
        out.append(result(error_code=code, error_message=message, resource_type=res.resource_type,
                          resource_name=res.resource_name))
    return out
