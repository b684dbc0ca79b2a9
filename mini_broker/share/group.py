"""Share groups' membership (KIP-932), sans-IO: ShareGroupHeartbeat's join / heartbeat / leave, session expiry
and the server-side ``simple`` assignor. No locks, no clock: every call takes ``now_ms``.

A share group has no revocation step: a partition may be assigned to several members at once (the share
partition hands each record to one of them), so a member gets its new assignment, and the group epoch as its
member epoch, in the next heartbeat response after any change (a member joining or leaving, a subscription or
a subscribed topic's partition count changing).

The ``simple`` assignor, as Kafka's ``SimpleAssignor`` for a group whose members subscribe to a topic: with at
least as many partitions as subscribers, each partition goes to one subscriber (round robin in member order);
with fewer partitions than subscribers, each subscriber gets one partition and partitions are shared (member
``i`` gets partition ``i mod partitions``), so no member is idle.
"""

from __future__ import annotations

import base64
import enum
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from mini_broker.group.consumer.model import TopicsImage
from mini_broker.share import group_configs
from mini_broker.share.config import ShareGroupConfig
from pykafka_client.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    GroupNotEmptyError,
    InvalidRequestError,
    UnknownMemberIdError,
)

#: topic id -> partitions
Assignment = Mapping[uuid.UUID, frozenset[int]]
JOIN_EPOCH = 0
LEAVE_EPOCH = -1


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"


@dataclass
class ShareGroupMember:
    member_id: str
    member_epoch: int
    subscribed_topic_names: tuple[str, ...]
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    assignment: Assignment = field(default_factory=dict)


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    #: member id -> when its session ends unless it heartbeats
    session_deadlines: dict[str, int] = field(default_factory=dict)
    #: the partition counts of the subscribed topics the last assignment saw
    subscribed_partitions: dict[str, int] = field(default_factory=dict)
    #: the share partitions whose state the share coordinator may hold (Kafka's ShareGroupStatePartitionMetadata
    #: ``InitializedTopics``): every partition ever assigned or given a start offset, until its state is deleted
    initialized: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    #: topics whose state is being deleted (``DeletingTopics``: a deletion a failover interrupted is retried)
    deleting: frozenset[uuid.UUID] = frozenset()

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY


@dataclass(frozen=True)
class ShareGroupHeartbeatParams:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class ShareGroupHeartbeatResult:
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: None: unchanged since the member's last heartbeat
    assignment: Assignment | None = None


def simple_assign(members: Mapping[str, tuple[str, ...]], topics: TopicsImage) -> dict[str, dict[uuid.UUID,
                                                                                                 frozenset[int]]]:
    """Kafka's ``simple`` share assignor (see the module docstring): member id -> topic id -> partitions."""
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    names = sorted({t for subscribed in members.values() for t in subscribed})
    for name in names:
        info = topics.by_name.get(name)
        if info is None or info.num_partitions <= 0:
            continue
        subscribers = sorted(m for m, subscribed in members.items() if name in subscribed)
        count = info.num_partitions
        if count >= len(subscribers):
            for p in range(count):
                out[subscribers[p % len(subscribers)]].setdefault(info.topic_id, set()).add(p)
        else:
            for i, member in enumerate(subscribers):
                out[member].setdefault(info.topic_id, set()).add(i % count)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}


def new_member_id() -> str:
    """A member id as Kafka makes them: a random UUID in URL-safe base64, 22 characters."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ShareGroupManager:
    """Every share group this coordinator serves; see the module docstring."""

    def __init__(self, config: ShareGroupConfig, member_ids: Callable[[], str] = new_member_id) -> None:
        self.config = config
        self.groups: dict[str, ShareGroup] = {}
        #: group id -> its ``share.*`` config overrides (a group id may have configs and no group yet)
        self.group_configs: dict[str, dict[str, str]] = {}
        self._member_ids = member_ids

    def config_for(self, group_id: str) -> ShareGroupConfig:
        """The share config that applies to the group: the broker's, with the group's overrides."""
        return group_configs.for_group(self.config, self.group_configs.get(group_id, {}))

    def heartbeat(self, request: ShareGroupHeartbeatParams, now_ms: int,
                  topics: TopicsImage) -> ShareGroupHeartbeatResult:
        """ShareGroupHeartbeat: epoch 0 joins (a new member id unless the member names its own), -1 leaves, any
        other epoch must be the member's current one (FENCED_MEMBER_EPOCH otherwise)."""
        group = self.groups.get(request.group_id)
        config = self.config_for(request.group_id)
        if request.member_epoch == LEAVE_EPOCH:
            if group is not None and request.member_id in group.members:
                self._remove(group, request.member_id, topics)
            return ShareGroupHeartbeatResult(member_id=request.member_id, member_epoch=LEAVE_EPOCH,
                                             heartbeat_interval_ms=config.heartbeat_interval_ms)
        if request.member_epoch == JOIN_EPOCH:
            if request.subscribed_topic_names is None:
                return ShareGroupHeartbeatResult(
                    InvalidRequestError.code, "SubscribedTopicNames must be set when a member joins (epoch 0)",
                    request.member_id or None)
            if group is None:
                group = self.groups[request.group_id] = ShareGroup(request.group_id)
            member_id = request.member_id or self._member_ids()
            if member_id not in group.members and len(group.members) >= self.config.max_size:
                return ShareGroupHeartbeatResult(
                    GroupMaxSizeReachedError.code, f"share group {request.group_id} has reached "
                    f"group.share.max.size ({self.config.max_size}) members; remove one or raise the limit",
                    member_id)
            member = group.members.get(member_id)
            if member is None:
                member = group.members[member_id] = ShareGroupMember(member_id, 0, ())
            member.member_epoch = 0  # a rejoining member gets its assignment again
        else:
            member = None if group is None else group.members.get(request.member_id)
            if group is None or member is None:
                return ShareGroupHeartbeatResult(
                    UnknownMemberIdError.code, f"member {request.member_id} is not in share group "
                    f"{request.group_id} (its session expired or it left): rejoin with epoch 0", request.member_id)
            if request.member_epoch != member.member_epoch:
                return ShareGroupHeartbeatResult(
                    FencedMemberEpochError.code, f"member {request.member_id} sent epoch {request.member_epoch}, "
                    f"its epoch is {member.member_epoch}: rejoin with epoch 0", request.member_id)
        member.client_id, member.client_host = request.client_id, request.client_host
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        if request.subscribed_topic_names is not None and \
                tuple(sorted(request.subscribed_topic_names)) != member.subscribed_topic_names:
            member.subscribed_topic_names = tuple(sorted(request.subscribed_topic_names))
            group.group_epoch += 1
        elif group.group_epoch == 0 or self._topics_changed(group, topics):
            group.group_epoch += 1
        group.session_deadlines[member.member_id] = now_ms + config.session_timeout_ms
        self._maybe_assign(group, topics)
        assignment = None
        if member.member_epoch != group.assignment_epoch:
            member.member_epoch = group.assignment_epoch
            assignment = member.assignment
        return ShareGroupHeartbeatResult(member_id=member.member_id, member_epoch=member.member_epoch,
                                         heartbeat_interval_ms=config.heartbeat_interval_ms,
                                         assignment=assignment)

    def expire(self, now_ms: int, topics: TopicsImage) -> list[tuple[str, str]]:
        """Remove the members whose session ended; returns their (group id, member id)."""
        out: list[tuple[str, str]] = []
        for group in self.groups.values():
            for member_id, deadline in list(group.session_deadlines.items()):
                if deadline <= now_ms:
                    self._remove(group, member_id, topics)
                    out.append((group.group_id, member_id))
        return out

    def is_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    # -- the share partitions with state (ShareGroupStatePartitionMetadata) ------------------------------------
    def state_partitions(self, group_id: str) -> dict[uuid.UUID, frozenset[int]]:
        """The group's share partitions whose state the share coordinator may hold (topic id -> partitions),
        the topics being deleted included; empty for an unknown group."""
        group = self.groups.get(group_id)
        return {} if group is None else dict(group.initialized)

    def add_initialized(self, group_id: str, topic_id: uuid.UUID, partitions: Iterable[int]) -> None:
        """Record that these share partitions of the group have state (an admin set their start offset)."""
        group = self.groups[group_id]
        group.initialized[topic_id] = group.initialized.get(topic_id, frozenset()) | frozenset(partitions)

    def mark_deleting(self, group_id: str, topic_ids: Iterable[uuid.UUID]) -> None:
        """Record that the state of these topics' share partitions is being deleted (before the deletions)."""
        group = self.groups[group_id]
        group.deleting = group.deleting | frozenset(topic_ids)

    def remove_topics(self, group_id: str, topic_ids: Iterable[uuid.UUID]) -> None:
        """Forget these topics' share partitions (their state was deleted)."""
        group = self.groups.get(group_id)
        if group is None:
            return
        gone = frozenset(topic_ids)
        for topic_id in gone:
            group.initialized.pop(topic_id, None)
        group.deleting = group.deleting - gone

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups of a share group: 0 (deleted: it had no members), GROUP_NOT_EMPTY or GROUP_ID_NOT_FOUND.
        The group's ``share.*`` config overrides stay (they belong to the group id, as in Kafka)."""
        group = self.groups.get(group_id)
        if group is None:
            return int(GroupIdNotFoundError.code)
        if group.members:
            return int(GroupNotEmptyError.code)
        del self.groups[group_id]
        return 0

    # -- internals ------------------------------------------------------------------------------------------
    def _remove(self, group: ShareGroup, member_id: str, topics: TopicsImage) -> None:
        group.members.pop(member_id, None)
        group.session_deadlines.pop(member_id, None)
        group.group_epoch += 1
        self._maybe_assign(group, topics)

    @staticmethod
    def _subscribed_partitions(group: ShareGroup, topics: TopicsImage) -> dict[str, int]:
        names = {t for m in group.members.values() for t in m.subscribed_topic_names}
        return {n: topics.by_name[n].num_partitions for n in sorted(names) if n in topics.by_name}

    def _topics_changed(self, group: ShareGroup, topics: TopicsImage) -> bool:
        return self._subscribed_partitions(group, topics) != group.subscribed_partitions

    @staticmethod
    def _note_initialized(group: ShareGroup) -> None:
        """Every partition a member is assigned has state from its first fetch on: record it (the group's
        ShareGroupStatePartitionMetadata, appended with the assignment that first names it)."""
        for member in group.members.values():
            for topic_id, partitions in member.assignment.items():
                known = group.initialized.get(topic_id, frozenset())
                if not partitions <= known:
                    group.initialized[topic_id] = known | partitions

    def _maybe_assign(self, group: ShareGroup, topics: TopicsImage) -> None:
        self._note_initialized(group)  # (a group loaded from records older than this metadata gets it here)
        if group.assignment_epoch == group.group_epoch:
            return
        target = simple_assign({m.member_id: m.subscribed_topic_names for m in group.members.values()}, topics)
        for member_id, assignment in target.items():
            group.members[member_id].assignment = assignment
        group.subscribed_partitions = self._subscribed_partitions(group, topics)
        group.assignment_epoch = group.group_epoch
        self._note_initialized(group)
