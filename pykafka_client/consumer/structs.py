"""Small value types of the consumer API (Java: TopicPartition, OffsetAndMetadata, OffsetAndTimestamp,
ConsumerGroupMetadata).

``TopicPartition`` is a NamedTuple so that any other ``(topic, partition)`` tuple type in the code base
compares and hashes equal to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A topic name and a partition number."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset: the offset of the *next* record to consume, the leader epoch of the last
    consumed record (or None) and an optional metadata string."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None

    def __post_init__(self) -> None:
        if self.offset < 0:
            from pykafka_client.errors import IllegalArgumentError

            raise IllegalArgumentError(f"invalid negative offset {self.offset}")


@dataclass(frozen=True, slots=True)
class OffsetAndTimestamp:
    """The result of ``offsets_for_times``: the earliest offset whose timestamp is >= the one asked for."""

    offset: int
    timestamp: int
    leader_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """What a transactional producer needs to commit offsets for a consumer group (KIP-447)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
