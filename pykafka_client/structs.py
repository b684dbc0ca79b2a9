"""Value types shared by every client and by mini_broker (Java: ``common.TopicPartition``, ``common.Node``,
``clients.consumer.OffsetAndMetadata``, ``OffsetAndTimestamp``).

Defined once here, below the network layer, so the producer, consumer, admin client and broker all use
the same classes. ``TopicPartition`` is a NamedTuple: it hashes and compares equal to the plain
``(topic, partition)`` tuple.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple, TypeAlias, TypeVar

from pykafka_client.errors import IllegalArgumentError


class TopicPartition(NamedTuple):
    """A topic name and a partition number; hashable, ordered, equal to ``(topic, partition)``."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


_V = TypeVar("_V")

#: A mapping keyed by partition: ``TopicPartition`` keys or the equal ``(topic, partition)`` tuples. A union of
#: the two because a mapping's key type is invariant: a ``dict[TopicPartition, V]`` is not a
#: ``Mapping[tuple[str, int], V]`` to a type checker, though it is one at run time.
PartitionMapping: TypeAlias = Mapping[TopicPartition, _V] | Mapping[tuple[str, int], _V]


@dataclass(frozen=True, slots=True)
class Node:
    """A broker address. Bootstrap nodes have negative ids (-1, -2, ...)."""

    id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def id_string(self) -> str:
        return str(self.id)

    def is_empty(self) -> bool:
        return not self.host or self.port < 0

    def __str__(self) -> str:
        rack = f" rack={self.rack}" if self.rack else ""
        return f"{self.host}:{self.port} (id: {self.id}{rack})"


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset: the offset of the *next* record to consume, the leader epoch of the last
    consumed record (or None) and an optional metadata string."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None

    def __post_init__(self) -> None:
        if self.offset < 0:
            raise IllegalArgumentError(f"invalid negative offset {self.offset}")


@dataclass(frozen=True, slots=True)
class OffsetAndTimestamp:
    """The result of ``offsets_for_times``: the earliest offset whose timestamp is >= the one asked for."""

    offset: int
    timestamp: int
    leader_epoch: int | None = None


__all__ = ["Node", "OffsetAndMetadata", "OffsetAndTimestamp", "TopicPartition"]
