"""The partition assignor plug-in (Java: ConsumerPartitionAssignor, AbstractPartitionAssignor).

The group leader runs an assignor over every member's :class:`Subscription` and returns each member's
:class:`Assignment`. Assignors are pure: they see the partition count of each subscribed topic and the
subscriptions, nothing else, and must be deterministic (same input, same output).

Members are ordered as Java does (:func:`member_sort_key`): members with a ``group.instance.id``
first, ordered by it; then the others by member id.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from pykafka_client.structs import TopicPartition


class RebalanceProtocol(IntEnum):
    """EAGER revokes everything before each rebalance; COOPERATIVE (KIP-429) revokes only what moves."""

    EAGER = 0
    COOPERATIVE = 1


@dataclass(slots=True)
class Subscription:
    """What one member sends in JoinGroup: its topics, assignor user data and (protocol v1+) the
    partitions it owns, its generation (v2+) and rack (v3+)."""

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    group_instance_id: str | None = None  # not on the wire in the subscription; filled from JoinGroup


@dataclass(slots=True)
class Assignment:
    """What one member receives in SyncGroup: its partitions and assignor user data."""

    partitions: list[TopicPartition]
    user_data: bytes | None = None


@dataclass(slots=True)
class GroupSubscription:
    subscriptions: dict[str, Subscription]


@dataclass(slots=True)
class GroupAssignment:
    assignments: dict[str, Assignment]


def member_sort_key(member_id: str, subscription: Subscription) -> tuple[int, str, str]:
    """Members with a group.instance.id sort first, by it; then by member id (Java MemberInfo order)."""
    gi = subscription.group_instance_id
    return (0, gi, member_id) if gi is not None else (1, "", member_id)


def sorted_members(subscriptions: Mapping[str, Subscription]) -> list[str]:
    return sorted(subscriptions, key=lambda m: member_sort_key(m, subscriptions[m]))


class ConsumerPartitionAssignor(ABC):
    """An assignment strategy, named in ``partition.assignment.strategy``."""

    @abstractmethod
    def name(self) -> str:
        """The protocol name sent in JoinGroup (e.g. ``range``)."""

    def supported_protocols(self) -> Sequence[RebalanceProtocol]:
        return (RebalanceProtocol.EAGER,)

    def version(self) -> int:
        return 0

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        """Extra bytes to put in this member's subscription."""
        return None

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        """Called on every member when its assignment arrives (the sticky assignor remembers it)."""
        return None

    @abstractmethod
    def assign(self, partitions_per_topic: Mapping[str, int], group_subscription: GroupSubscription) -> GroupAssignment:
        """Compute every member's assignment. ``partitions_per_topic`` holds the partition count of
        each subscribed topic that exists; topics missing from it get no partitions."""


class AbstractPartitionAssignor(ConsumerPartitionAssignor):
    """Assignors that only need topic partition counts and member subscriptions."""

    @abstractmethod
    def assign_partitions(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        """Partitions per member id (every member present, possibly with an empty list)."""

    def assign(self, partitions_per_topic: Mapping[str, int], group_subscription: GroupSubscription) -> GroupAssignment:
        subs = group_subscription.subscriptions
        known = {t: n for t, n in partitions_per_topic.items() if n > 0}
        raw = self.assign_partitions(known, subs)
        return GroupAssignment({m: Assignment(raw.get(m, [])) for m in subs})


def partitions_of(topic: str, count: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in range(count)]
