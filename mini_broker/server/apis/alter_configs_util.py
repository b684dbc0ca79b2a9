"""What AlterConfigs and IncrementalAlterConfigs share: resolving a topic resource and answering per resource.

Both APIs answer each resource on its own: the same resource twice -> INVALID_REQUEST, a broker error on one
resource becomes that resource's error code, the others still apply.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar

from mini_broker.server.api_error import error_message
from mini_broker.server.kafka_apis import KafkaApis
from mini_broker.server.metadata_cache import TopicMetadata
from pykafka_client.errors import InvalidRequestError, UnknownTopicOrPartitionError
from pykafka_client.errors_base import BrokerResponseError

TOPIC = 2


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


def alter_each(resources: Iterable[R], apply: Callable[[R], None], result: Callable[..., T]) -> list[T]:
    """Apply each resource; build its result (``error_code``, ``error_message``, type, name) with ``result``."""
    resources = list(resources)
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    out: list[T] = []
    for res in resources:
        code: int
        message: str | None
        try:
            if counts[(res.resource_type, res.resource_name)] > 1:
                raise InvalidRequestError("Duplicate resource in request")
            apply(res)
            code, message = 0, None
        except BrokerResponseError as e:
            code, message = e.code, error_message(e)
        out.append(result(error_code=code, error_message=message, resource_type=res.resource_type,
                          resource_name=res.resource_name))
    return out
