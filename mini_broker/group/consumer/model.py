"""The state of a consumer group (KIP-848): its members, epochs, target assignment and partition owners.

Assignments are keyed by topic id (as on the wire): ``{topic_id: frozenset(partitions)}``. The group epoch
moves whenever what the assignment depends on changes (members, subscriptions, the subscribed topics'
partitions); the target assignment carries the epoch it was computed at; each member converges towards its
target through :mod:`reconciliation` and carries the epoch of the assignment it last reached.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

Assignment = Mapping[uuid.UUID, frozenset[int]]

#: MemberEpoch in a ConsumerGroupHeartbeat: join, leave, static member leaving to rejoin
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

CONSUMER_GROUP_TYPE = "consumer"


@dataclass(frozen=True)
class TopicInfo:
    """One topic as the coordinator sees it in the broker's metadata."""

    topic_id: uuid.UUID
    name: str
    num_partitions: int
    #: per partition, the racks of its replicas (empty: not known, as on a broker without ``broker.rack``)
    partition_racks: tuple[frozenset[str], ...] = ()

    def racks_of(self, partition: int) -> frozenset[str]:
        return self.partition_racks[partition] if partition < len(self.partition_racks) else frozenset()


@dataclass(frozen=True)
class TopicsImage:
    """The broker's topics when a request is handled (the sans-IO core's view of the metadata)."""

    by_name: Mapping[str, TopicInfo]

    @classmethod
    def of(cls, topics: Iterable[TopicInfo]) -> TopicsImage:
        return cls({t.name: t for t in topics})

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        for t in self.by_name.values():
            if t.topic_id == topic_id:
                return t
        return None


class MemberState(enum.Enum):
    """Where a member is in its reconciliation (Kafka's ``MemberState``)."""

    #: the member owns its target assignment (or what of it is free) at the target's epoch
    STABLE = "stable"
    #: the member must acknowledge the revocation of partitions before it gets anything new
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    #: the member is at the target epoch but waits for partitions other members still own
    UNRELEASED_PARTITIONS = "unreleased_partitions"


class ConsumerGroupState(enum.Enum):
    """The group state shown by ListGroups / ConsumerGroupDescribe (Kafka's ``ConsumerGroupState``)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ConsumerGroupMember:
    """One member (Kafka's ``ConsumerGroupMember``); replaced, never mutated."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor_name: str | None = None
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    #: a classic member of this consumer group (KIP-848 migration): the (name, metadata) protocols of its last
    #: JoinGroup, in its preference order; None for a member of the consumer protocol
    classic_protocols: tuple[tuple[str, bytes], ...] | None = None
    #: the session timeout of a classic member's JoinGroup (a consumer-protocol member has the group's)
    classic_session_timeout_ms: int = -1

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_protocols is not None

    def with_changes(self, **changes: object) -> ConsumerGroupMember:
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass
class ConsumerGroup:
    """A consumer group (Kafka's ``ConsumerGroup``)."""

    group_id: str
    group_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    #: instance id -> member id of the static members
    static_members: dict[str, str] = field(default_factory=dict)
    target_assignment_epoch: int = 0
    #: member id -> the partitions the assignor gave it at ``target_assignment_epoch``
    target_assignment: dict[str, Assignment] = field(default_factory=dict)
    #: (topic id, partition) -> epoch of the member that owns it (assigned or pending revocation)
    current_partition_epoch: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    #: what the last target assignment saw of the subscribed topics: name -> (topic id, partitions)
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    #: regex -> the topic names it matched, and the topic names the resolution saw
    resolved_regexes: dict[str, frozenset[str]] = field(default_factory=dict)
    regex_topics_seen: frozenset[str] = frozenset()
    #: member id -> when its session expires (ms)
    session_deadlines: dict[str, int] = field(default_factory=dict)
    #: member id -> (deadline ms, member epoch) of an unacknowledged revocation
    rebalance_deadlines: dict[str, tuple[int, int]] = field(default_factory=dict)

    def copy(self) -> ConsumerGroup:
        """An independent copy (members and assignments are immutable values; the maps are copied), to put back
        when a change could not be written."""
        return replace(self, members=dict(self.members), static_members=dict(self.static_members),
                       target_assignment=dict(self.target_assignment),
                       current_partition_epoch=dict(self.current_partition_epoch),
                       subscription_metadata=dict(self.subscription_metadata),
                       resolved_regexes=dict(self.resolved_regexes), session_deadlines=dict(self.session_deadlines),
                       rebalance_deadlines=dict(self.rebalance_deadlines))  # fmt: skip

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.target_assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.target_assignment_epoch or m.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def subscribed_topic_names(self) -> set[str]:
        """Every topic some member subscribes to, by name or through its regex."""
        names: set[str] = set()
        for m in self.members.values():
            names.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex is not None:
                names.update(self.resolved_regexes.get(m.subscribed_topic_regex, frozenset()))
        return names

    def member_subscription(self, member: ConsumerGroupMember) -> set[str]:
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex is not None:
            names.update(self.resolved_regexes.get(member.subscribed_topic_regex, frozenset()))
        return names

    def update_member(self, member: ConsumerGroupMember) -> None:
        """Put ``member`` in place of its previous version, keeping the partition owners in step."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        for tp in iter_partitions(member.assigned_partitions):
            self.current_partition_epoch[tp] = member.member_epoch
        for tp in iter_partitions(member.partitions_pending_revocation):
            self.current_partition_epoch[tp] = member.member_epoch

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        """Drop a member with its ownership, target assignment and timers."""
        old = self.members.pop(member_id, None)
        if old is None:
            return None
        self._release(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self.target_assignment.pop(member_id, None)
        self.session_deadlines.pop(member_id, None)
        self.rebalance_deadlines.pop(member_id, None)
        return old

    def _release(self, member: ConsumerGroupMember) -> None:
        for tp in iter_partitions(member.assigned_partitions):
            self.current_partition_epoch.pop(tp, None)
        for tp in iter_partitions(member.partitions_pending_revocation):
            self.current_partition_epoch.pop(tp, None)

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The owner's epoch, -1 when no member owns the partition."""
        return self.current_partition_epoch.get((topic_id, partition), -1)


def iter_partitions(assignment: Assignment) -> Iterable[tuple[uuid.UUID, int]]:
    for topic_id, partitions in assignment.items():
        for p in partitions:
            yield topic_id, p


def normalize(assignment: Mapping[uuid.UUID, Iterable[int]]) -> dict[uuid.UUID, frozenset[int]]:
    """Without empty topics, partitions as frozensets (so that equal assignments compare equal)."""
    return {t: frozenset(ps) for t, ps in assignment.items() if ps}


def subtract(a: Assignment, b: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    return normalize({t: ps - b.get(t, frozenset()) for t, ps in a.items()})


def intersect(a: Assignment, b: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    return normalize({t: ps & b.get(t, frozenset()) for t, ps in a.items()})


def union(a: Assignment, b: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    out = {t: set(ps) for t, ps in a.items()}
    for t, ps in b.items():
        out.setdefault(t, set()).update(ps)
    return normalize(out)


def is_subset(a: Assignment, b: Assignment) -> bool:
    return all(ps <= b.get(t, frozenset()) for t, ps in a.items())
