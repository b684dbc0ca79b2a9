"""The consumer groups' decisions (Kafka's ``GroupMetadataManager``, consumer-group part), sans-IO: a typed
request, ``now`` and the broker's topics in, the groups changed and a typed result out. Timers are deadlines
kept in the group and checked by :meth:`ConsumerGroupManager.expire` (the driver calls it periodically).

A heartbeat (KIP-848 ``ConsumerGroupHeartbeat``):

1. validation: a join (epoch 0) names a rebalance timeout and a subscription (topic names or a regex) and owns
   nothing; a static leave (epoch -2) names its instance id; else INVALID_REQUEST. An unknown server assignor
   is UNSUPPORTED_ASSIGNOR, an invalid regex INVALID_REGULAR_EXPRESSION.
2. leave: epoch -1 removes the member (its partitions are free at once, the group epoch moves); epoch -2 (a
   static member that will come back) keeps it, its assignment still owned, until it rejoins or its session
   expires.
3. the member: epoch 0 joins (a new member id when the request has none); a static member whose instance id
   is held by a member that left with -2 takes its place, epoch and assignment (a live holder:
   UNRELEASED_INSTANCE_ID); any other epoch must be the member's epoch, or its previous epoch when the owned
   partitions are a subset of its assignment (a lost response), else FENCED_MEMBER_EPOCH; an unknown member
   gets UNKNOWN_MEMBER_ID.
4. the group epoch moves when a member joins or leaves, when a subscription changes, and when the subscribed
   topics change (regexes are resolved again whenever the broker's topic names changed); a group epoch past
   the target assignment's epoch computes a new target with the assignor most members prefer (the first of
   ``group.consumer.assignors`` when none names one).
5. the member reconciles towards its target (:mod:`reconciliation`); its session deadline restarts; entering
   UNREVOKED_PARTITIONS arms its rebalance timeout, after which it is removed if it still has not revoked.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mini_broker.group.consumer import group_configs
from mini_broker.group.consumer.assignors import ASSIGNORS, MemberSubscription
from mini_broker.group.consumer.classic import (
    classic_snapshot,
    consumer_group_from_classic,
    encode_assignment,
    subscription_of,
)
from mini_broker.group.consumer.config import ConsumerGroupConfig
from mini_broker.group.consumer.model import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    TopicInfo,
    TopicsImage,
    intersect,
    is_subset,
    normalize,
)
from mini_broker.group.consumer.reconciliation import reconcile
from mini_broker.group.group_metadata import CONSUMER_PROTOCOL_TYPE
from mini_broker.group.group_requests import (
    HeartbeatParams,
    JoinGroupParams,
    JoinGroupResult,
    LeaveMember,
    LeaveMemberResult,
    SyncGroupParams,
    SyncGroupResult,
)
from mini_broker.group.migration_snapshot import ClassicGroupSnapshot
from pykafka_client.errors import (
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    GroupNotEmptyError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidRequestError,
    MemberIdRequiredError,
    MessageDecodeError,
    RebalanceInProgressError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
)

NONE = 0
#: Kafka 4.0's INVALID_REGULAR_EXPRESSION (not in this client's error table yet)
INVALID_REGULAR_EXPRESSION = 128


@dataclass(frozen=True)
class ConsumerGroupHeartbeatParams:
    """A ConsumerGroupHeartbeat request; None fields did not change since the member's last heartbeat."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: the partitions the member owns (None: not sent)
    owned_partitions: Assignment | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class ConsumerGroupHeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: the member's assignment, when it is news to the member (None otherwise)
    assignment: Assignment | None = None


class HeartbeatError(Exception):
    """A heartbeat answered with an error (the code and a message saying why and what to do)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ExpiredMember:
    group_id: str
    member_id: str
    reason: str


@dataclass(frozen=True)
class Checkpoint:
    """Copies of some groups (None: the group did not exist) and the downgrade candidates, taken before a change."""

    groups: Mapping[str, ConsumerGroup | None]
    downgrade_candidates: frozenset[str]


class ConsumerGroupManager:
    """Every consumer group of one coordinator (see the module docstring)."""

    def __init__(self, config: ConsumerGroupConfig) -> None:
        self.config = config
        self.groups: dict[str, ConsumerGroup] = {}
        #: group id -> its own configs (``consumer.session.timeout.ms`` ...; :mod:`group_configs`)
        self.group_configs: dict[str, dict[str, int]] = {}
        #: groups that lost a member since :meth:`take_downgrades` last looked
        self.downgrade_candidates: set[str] = set()

    # -- reverting a change that could not be written ---------------------------------------------------
    def checkpoint(self, group_ids: Iterable[str]) -> Checkpoint:
        """What :meth:`revert` needs to put ``group_ids`` back as they are now (Kafka's coordinator runtime
        reverts its timeline to the last written offset when an append fails)."""
        return Checkpoint({g: (group.copy() if (group := self.groups.get(g)) is not None else None)
                           for g in group_ids}, frozenset(self.downgrade_candidates))  # fmt: skip

    def revert(self, checkpoint: Checkpoint) -> None:
        """Put the groups of ``checkpoint`` back (one that did not exist then is removed)."""
        for group_id, group in checkpoint.groups.items():
            if group is None:
                self.groups.pop(group_id, None)
            else:
                self.groups[group_id] = group.copy()
        self.downgrade_candidates |= checkpoint.downgrade_candidates

    # -- heartbeat ----------------------------------------------------------------------------------------
    def heartbeat(self, request: ConsumerGroupHeartbeatParams, now: int,
                  topics: TopicsImage) -> ConsumerGroupHeartbeatResult:
        try:
            self._validate(request)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(request)
            return self._join_or_heartbeat(request, now, topics)
        except HeartbeatError as e:
            return ConsumerGroupHeartbeatResult(e.code, e.message, request.member_id or None, request.member_epoch,
                                                self.heartbeat_interval_ms(request.group_id) if e.code == NONE else 0)

    def _validate(self, r: ConsumerGroupHeartbeatParams) -> None:
        if not r.group_id:
            raise HeartbeatError(InvalidRequestError.code, "GroupId can't be empty.")
        if r.rack_id is not None and not r.rack_id:
            raise HeartbeatError(InvalidRequestError.code, "RackId can't be empty.")
        if r.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if r.rebalance_timeout_ms < 0:
                raise HeartbeatError(InvalidRequestError.code,
                                     "RebalanceTimeoutMs must be provided in the first request (epoch 0).")
            if r.owned_partitions is None or r.owned_partitions:
                raise HeartbeatError(InvalidRequestError.code,
                                     "TopicPartitions must be empty when (re-)joining.")
            if r.subscribed_topic_names is None and r.subscribed_topic_regex is None:
                raise HeartbeatError(InvalidRequestError.code, "SubscribedTopicNames or SubscribedTopicRegex must "
                                                               "be set in the first request (epoch 0).")
        elif r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if r.instance_id is None:
                raise HeartbeatError(InvalidRequestError.code, "InstanceId can't be null with MemberEpoch -2: "
                                                               "only a static member leaves to rejoin.")
        elif r.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise HeartbeatError(InvalidRequestError.code, f"MemberEpoch {r.member_epoch} is invalid.")
        if r.member_epoch != JOIN_GROUP_MEMBER_EPOCH and not r.member_id:
            raise HeartbeatError(InvalidRequestError.code, "MemberId can't be empty after the first request.")
        if r.server_assignor is not None and r.server_assignor not in self.config.assignors:
            raise HeartbeatError(UnsupportedAssignorError.code,
                                 f"ServerAssignor {r.server_assignor} is not supported; the broker's "
                                 f"group.consumer.assignors are {', '.join(self.config.assignors)}.")
        if r.subscribed_topic_regex:
            try:
                re.compile(r.subscribed_topic_regex)
            except re.error as e:
                raise HeartbeatError(INVALID_REGULAR_EXPRESSION,
                                     f"SubscribedTopicRegex {r.subscribed_topic_regex!r} is invalid: {e}") from None

    def _leave(self, r: ConsumerGroupHeartbeatParams) -> ConsumerGroupHeartbeatResult:
        group = self.groups.get(r.group_id)
        member = None if group is None else group.members.get(r.member_id)
        if group is None or member is None:
            raise HeartbeatError(UnknownMemberIdError.code,
                                 f"Member {r.member_id} is not a member of group {r.group_id}: nothing to leave.")
        if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # the static member comes back with the same instance id: it keeps its partitions until then
            group.update_member(member.with_changes(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                                    previous_member_epoch=member.member_epoch))
            group.rebalance_deadlines.pop(member.member_id, None)
        else:
            group.remove_member(member.member_id)
            group.group_epoch += 1
            self.downgrade_candidates.add(group.group_id)
        return ConsumerGroupHeartbeatResult(NONE, None, r.member_id, r.member_epoch, 0)

    def _join_or_heartbeat(self, r: ConsumerGroupHeartbeatParams, now: int,
                           topics: TopicsImage) -> ConsumerGroupHeartbeatResult:
        group = self.groups.get(r.group_id)
        if group is None:
            if r.member_epoch != JOIN_GROUP_MEMBER_EPOCH:
                raise HeartbeatError(UnknownMemberIdError.code,
                                     f"Group {r.group_id} is unknown to this coordinator (it may have moved): "
                                     f"rejoin with MemberEpoch 0.")
            group = ConsumerGroup(r.group_id)
        member_id = r.member_id or str(uuid.uuid4())
        member, joined = self._member_for(group, r, member_id)
        before = member
        updated = member.with_changes(
            instance_id=r.instance_id if r.instance_id is not None else member.instance_id,
            rack_id=r.rack_id if r.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=r.rebalance_timeout_ms if r.rebalance_timeout_ms >= 0 else member.rebalance_timeout_ms,
            subscribed_topic_names=(tuple(sorted(set(r.subscribed_topic_names)))
                                    if r.subscribed_topic_names is not None else member.subscribed_topic_names),
            subscribed_topic_regex=((r.subscribed_topic_regex or None) if r.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            server_assignor_name=r.server_assignor if r.server_assignor is not None else member.server_assignor_name,
            client_id=r.client_id, client_host=r.client_host)
        reconciled = self._converge(group, member, updated, joined, r.owned_partitions, now, topics)
        news = (r.member_epoch == JOIN_GROUP_MEMBER_EPOCH
                or reconciled.assigned_partitions != before.assigned_partitions
                or reconciled.member_epoch != before.member_epoch
                or (r.owned_partitions is not None
                    and normalize(r.owned_partitions) != reconciled.assigned_partitions))
        return ConsumerGroupHeartbeatResult(NONE, None, member_id, reconciled.member_epoch,
                                            self.heartbeat_interval_ms(group.group_id),
                                            reconciled.assigned_partitions if news else None)

    def _converge(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                  joined: bool, owned: Assignment | None, now: int, topics: TopicsImage) -> ConsumerGroupMember:
        """Put ``updated`` (``member`` with the request's changes) in ``group``, move the group epoch and the
        target assignment when what they depend on changed, and reconcile the member with ``owned``."""
        member_id = updated.member_id
        bump = joined or (updated.subscribed_topic_names != member.subscribed_topic_names
                          or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        if joined and len(group.members) >= self.config.max_size:
            raise HeartbeatError(GroupMaxSizeReachedError.code,
                                 f"Group {group.group_id} has reached its maximum size "
                                 f"(group.consumer.max.size={self.config.max_size}).")
        self.groups.setdefault(group.group_id, group)
        group.update_member(updated)
        self._resolve_regexes(group, topics)
        metadata = {name: (topics.by_name[name].topic_id, topics.by_name[name].num_partitions)
                    for name in sorted(group.subscribed_topic_names()) if name in topics.by_name}
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            bump = True
        if bump:
            group.group_epoch += 1
        if group.group_epoch > group.target_assignment_epoch:
            self._compute_target_assignment(group, topics)
        current = group.members[member_id]
        target = group.target_assignment.get(member_id, {})
        reconciled = reconcile(current, group.target_assignment_epoch, target, group.partition_epoch, owned)
        if (updated.uses_classic_protocol and reconciled.state is MemberState.UNREVOKED_PARTITIONS
                and owned is not None and not intersect(owned, reconciled.partitions_pending_revocation)):
            # a classic member's JoinGroup lists what it still owns: what it no longer lists is revoked already
            reconciled = reconcile(reconciled, group.target_assignment_epoch, target, group.partition_epoch, owned)
        if reconciled != current:
            group.update_member(reconciled)
        session_timeout = (updated.classic_session_timeout_ms if updated.uses_classic_protocol
                           else self.session_timeout_ms(group.group_id))
        group.session_deadlines[member_id] = now + session_timeout
        if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
            armed = group.rebalance_deadlines.get(member_id)
            if armed is None or armed[1] != reconciled.member_epoch:
                group.rebalance_deadlines[member_id] = (now + max(reconciled.rebalance_timeout_ms, 0),
                                                        reconciled.member_epoch)
        else:
            group.rebalance_deadlines.pop(member_id, None)
        return reconciled

    def _member_for(self, group: ConsumerGroup, r: ConsumerGroupHeartbeatParams,
                    member_id: str) -> tuple[ConsumerGroupMember, bool]:
        """(the member this heartbeat is about, whether it is new to the group)."""
        existing = group.members.get(member_id)
        if r.member_epoch != JOIN_GROUP_MEMBER_EPOCH:
            if existing is None:
                raise HeartbeatError(UnknownMemberIdError.code,
                                     f"Member {member_id} is not a member of group {group.group_id} (its session "
                                     f"may have expired): rejoin with MemberEpoch 0.")
            self._check_member_epoch(existing, r)
            return existing, False
        if r.instance_id is not None:
            holder_id = group.static_members.get(r.instance_id)
            holder = None if holder_id is None else group.members.get(holder_id)
            if holder is not None and holder.member_id != member_id:
                if holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise HeartbeatError(UnreleasedInstanceIdError.code,
                                         f"Instance id {r.instance_id} is held by member {holder.member_id} of "
                                         f"group {group.group_id}, which has not left: stop it or wait for its "
                                         f"session to expire.")
                return self._replace_static_member(group, holder, member_id), False
        if existing is not None:  # a rejoin with the same id: it lost its partitions
            return existing.with_changes(member_epoch=0, state=MemberState.STABLE, assigned_partitions={},
                                         partitions_pending_revocation={}), False
        return ConsumerGroupMember(member_id), True

    @staticmethod
    def _replace_static_member(group: ConsumerGroup, previous: ConsumerGroupMember,
                               member_id: str) -> ConsumerGroupMember:
        """A restarted static member takes over its predecessor's epoch, assignment and target."""
        target = group.target_assignment.get(previous.member_id, {})
        epoch = (previous.previous_member_epoch if previous.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
                 else previous.member_epoch)
        group.remove_member(previous.member_id)
        group.target_assignment[member_id] = target
        return previous.with_changes(member_id=member_id, member_epoch=epoch)

    @staticmethod
    def _check_member_epoch(member: ConsumerGroupMember, r: ConsumerGroupHeartbeatParams) -> None:
        if r.member_epoch == member.member_epoch:
            return
        if (r.member_epoch < member.member_epoch and r.member_epoch == member.previous_member_epoch
                and r.owned_partitions is not None and is_subset(r.owned_partitions, member.assigned_partitions)):
            return  # the member missed the response that moved it to the new epoch
        raise HeartbeatError(FencedMemberEpochError.code,
                             f"Member {member.member_id} sent epoch {r.member_epoch}, the coordinator has "
                             f"{member.member_epoch}: the member must give up its partitions and rejoin with "
                             f"MemberEpoch 0.")

    def _resolve_regexes(self, group: ConsumerGroup, topics: TopicsImage) -> None:
        """Match every subscribed regex against the broker's topics (not internal ones), again whenever the
        broker's topic names changed."""
        names = frozenset(n for n in topics.by_name if not n.startswith("__"))
        wanted = {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex}
        if names != group.regex_topics_seen:
            group.resolved_regexes.clear()
            group.regex_topics_seen = names
        for regex in list(group.resolved_regexes):
            if regex not in wanted:
                del group.resolved_regexes[regex]
        for regex in wanted:
            if regex not in group.resolved_regexes:
                pattern = re.compile(regex)
                group.resolved_regexes[regex] = frozenset(n for n in names if pattern.fullmatch(n))

    def preferred_assignor(self, group: ConsumerGroup) -> str:
        """The server assignor most members ask for (ties: the configured order); the first configured one when
        none asks."""
        counts = Counter(m.server_assignor_name for m in group.members.values() if m.server_assignor_name)
        if not counts:
            return self.config.assignors[0]
        return max(counts, key=lambda name: (counts[name], -self.config.assignors.index(name)))

    def _compute_target_assignment(self, group: ConsumerGroup, topics: TopicsImage) -> None:
        subscribed: dict[uuid.UUID, TopicInfo] = {
            topics.by_name[name].topic_id: topics.by_name[name] for name in group.subscription_metadata}
        members = {
            m.member_id: MemberSubscription(
                frozenset(topics.by_name[n].topic_id for n in group.member_subscription(m) if n in topics.by_name),
                group.target_assignment.get(m.member_id, {}), m.rack_id)
            for m in group.members.values()}
        group.target_assignment = dict(ASSIGNORS[self.preferred_assignor(group)](members, subscribed))
        group.target_assignment_epoch = group.group_epoch

    def session_timeout_ms(self, group_id: str) -> int:
        """The group's ``consumer.session.timeout.ms``, else the broker's ``group.consumer.session.timeout.ms``."""
        return group_configs.effective(group_configs.CONSUMER_SESSION_TIMEOUT_MS,
                                       self.group_configs.get(group_id, {}), self.config)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return group_configs.effective(group_configs.CONSUMER_HEARTBEAT_INTERVAL_MS,
                                       self.group_configs.get(group_id, {}), self.config)

    # -- classic members (KIP-848 online migration) ---------------------------------------------------------
    def upgrade(self, snapshot: ClassicGroupSnapshot, now: int, topics: TopicsImage) -> None:
        """The classic group of ``snapshot`` becomes a consumer group (the heartbeat that triggered it follows)."""
        self.groups[snapshot.group_id] = consumer_group_from_classic(snapshot, topics, now)

    def take_downgrades(self, topics: TopicsImage, classic_max_size: int | None = None) -> list[ClassicGroupSnapshot]:
        """The groups that lost their last consumer-protocol member and have classic members left become classic
        groups (when ``group.consumer.migration.policy`` allows a downgrade, and, as Kafka checks, the members fit
        the classic ``group.max.size``): removed here, returned as snapshots for the classic coordinator."""
        out: list[ClassicGroupSnapshot] = []
        for group_id in sorted(self.downgrade_candidates):
            group = self.groups.get(group_id)
            if (group is None or not group.members or not self.config.downgrade_enabled
                    or not all(m.uses_classic_protocol for m in group.members.values())
                    or (classic_max_size is not None and len(group.members) > classic_max_size)):
                continue
            out.append(classic_snapshot(group, topics))
            del self.groups[group_id]
        self.downgrade_candidates.clear()
        return out

    def classic_join(self, r: JoinGroupParams, now: int, topics: TopicsImage) -> JoinGroupResult:
        """A JoinGroup to a consumer group with members: the member joins (or rejoins) as a classic member, and is
        answered at once with its member epoch as generation and no leader (the coordinator assigns; the
        SyncGroup that follows returns its partitions)."""
        group = self.groups[r.group_id]
        if not self.config.mixed_groups_enabled:
            return JoinGroupResult(r.member_id, InconsistentGroupProtocolError.code)
        if r.protocol_type != CONSUMER_PROTOCOL_TYPE or not r.protocols:
            return JoinGroupResult(r.member_id, InconsistentGroupProtocolError.code)
        try:
            names, owned = subscription_of(tuple(r.protocols), None, topics)
        except MessageDecodeError:
            return JoinGroupResult(r.member_id, InconsistentGroupProtocolError.code)
        member_id = r.member_id
        if not member_id:
            member_id = f"{r.client_id}-{uuid.uuid4()}"
            if r.require_known_member_id:
                return JoinGroupResult(member_id, MemberIdRequiredError.code)
        existing = group.members.get(member_id)
        if existing is not None and not existing.uses_classic_protocol:
            return JoinGroupResult(member_id, UnknownMemberIdError.code)
        member = existing if existing is not None else ConsumerGroupMember(member_id)
        joined = existing is None
        if r.group_instance_id is not None:
            holder = group.static_members.get(r.group_instance_id)
            if holder is not None and holder != member_id and holder in group.members:
                # the static member came back with a new id: it takes over its predecessor's epoch and partitions
                # (a consumer-protocol predecessor too: the member moved protocols, which may downgrade the group)
                member = self._replace_static_member(group, group.members[holder], member_id)
                joined = False
                self.downgrade_candidates.add(group.group_id)
        updated = member.with_changes(
            instance_id=r.group_instance_id, rebalance_timeout_ms=r.rebalance_timeout_ms, client_id=r.client_id,
            client_host=r.client_host, subscribed_topic_names=names, classic_protocols=tuple(r.protocols),
            classic_session_timeout_ms=r.session_timeout_ms)
        try:
            reconciled = self._converge(group, member, updated, joined, owned, now, topics)
        except HeartbeatError as e:
            return JoinGroupResult(member_id, e.code)
        return JoinGroupResult(member_id, NONE, reconciled.member_epoch, CONSUMER_PROTOCOL_TYPE, r.protocols[0][0])

    def _classic_member(self, group_id: str, member_id: str, generation_id: int, now: int) -> ConsumerGroupMember:
        group = self.groups[group_id]
        member = group.members.get(member_id)
        if member is None or not member.uses_classic_protocol:
            raise HeartbeatError(UnknownMemberIdError.code, f"{member_id} is not a classic member of {group_id}")
        if generation_id != member.member_epoch:
            raise HeartbeatError(IllegalGenerationError.code,
                                 f"generation {generation_id} is not the member's epoch {member.member_epoch}")
        group.session_deadlines[member_id] = now + member.classic_session_timeout_ms
        return member

    def classic_sync(self, r: SyncGroupParams, now: int, topics: TopicsImage) -> SyncGroupResult:
        """SyncGroup of a classic member: its current assignment (the leader's assignments are ignored)."""
        try:
            member = self._classic_member(r.group_id, r.member_id, r.generation_id, now)
        except HeartbeatError as e:
            return SyncGroupResult(e.code)
        protocols = [name for name, _ in member.classic_protocols or ()]
        if ((r.protocol_type is not None and r.protocol_type != CONSUMER_PROTOCOL_TYPE)
                or (r.protocol_name is not None and r.protocol_name not in protocols)):
            return SyncGroupResult(InconsistentGroupProtocolError.code)
        return SyncGroupResult(NONE, CONSUMER_PROTOCOL_TYPE, r.protocol_name or protocols[0],
                               encode_assignment(member.assigned_partitions, topics))

    def classic_heartbeat(self, r: HeartbeatParams, now: int) -> int:
        """Heartbeat of a classic member: REBALANCE_IN_PROGRESS when it must rejoin to revoke partitions, or to
        get new ones or a new epoch (how a classic member learns what a consumer-protocol member gets in its
        heartbeat response)."""
        try:
            member = self._classic_member(r.group_id, r.member_id, r.generation_id, now)
        except HeartbeatError as e:
            return e.code
        group = self.groups[r.group_id]
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            return RebalanceInProgressError.code
        next_step = reconcile(member, group.target_assignment_epoch, group.target_assignment.get(member.member_id, {}),
                              group.partition_epoch, member.assigned_partitions)
        if (next_step.member_epoch != member.member_epoch
                or next_step.assigned_partitions != member.assigned_partitions):
            return RebalanceInProgressError.code
        return NONE

    def classic_leave(self, group_id: str, leaving: list[LeaveMember]) -> list[LeaveMemberResult]:
        """LeaveGroup on a consumer group: each member (by id, or by instance id alone) leaves."""
        group = self.groups[group_id]
        out: list[LeaveMemberResult] = []
        for m in leaving:
            member_id = m.member_id or (group.static_members.get(m.group_instance_id or "") or "")
            member = group.members.get(member_id)
            if member is None or (m.group_instance_id is not None and member.instance_id != m.group_instance_id):
                code = (UnknownMemberIdError.code if m.group_instance_id is None
                        else FencedInstanceIdError.code if member is not None else UnknownMemberIdError.code)
                out.append(LeaveMemberResult(m.member_id, m.group_instance_id, code))
                continue
            group.remove_member(member_id)
            group.group_epoch += 1
            self.downgrade_candidates.add(group_id)
            out.append(LeaveMemberResult(m.member_id, m.group_instance_id, NONE))
        return out

    # -- timers -------------------------------------------------------------------------------------------
    def expiring_groups(self, now: int) -> list[str]:
        """The groups :meth:`expire` would change at ``now``."""
        return [g.group_id for g in self.groups.values()
                if any(now >= d for d in g.session_deadlines.values())
                or any(now >= d for d, _ in g.rebalance_deadlines.values())]

    def expire(self, now: int) -> list[ExpiredMember]:
        """Remove the members whose session expired, and those that did not revoke partitions within their
        rebalance timeout; each removal moves its group's epoch."""
        out: list[ExpiredMember] = []
        for group in self.groups.values():
            for member_id, deadline in sorted(group.session_deadlines.items()):
                if now >= deadline:
                    out.append(ExpiredMember(group.group_id, member_id, "session timeout"))
            for member_id, (deadline, epoch) in sorted(group.rebalance_deadlines.items()):
                member = group.members.get(member_id)
                if (now >= deadline and member is not None and member.member_epoch == epoch
                        and member.state is MemberState.UNREVOKED_PARTITIONS):
                    out.append(ExpiredMember(group.group_id, member_id, "rebalance timeout (partitions not revoked)"))
        for expired in out:
            group = self.groups[expired.group_id]
            if group.remove_member(expired.member_id) is not None:
                group.group_epoch += 1
                self.downgrade_candidates.add(group.group_id)
        return out

    # -- offsets and admin --------------------------------------------------------------------------------
    def validate_offset_commit(self, group_id: str, member_id: str, member_epoch: int,
                               api_version: int | None = None) -> int:
        """OffsetCommit on a consumer group: a commit from outside the group (epoch < 0) only when it has no
        members; a member of the consumer protocol commits with OffsetCommit v9+ (``api_version``; None: a
        TxnOffsetCommit, any version) and its current epoch (an older one: STALE_MEMBER_EPOCH, a newer one:
        FENCED_MEMBER_EPOCH); a classic member of the group with its epoch as generation (else
        ILLEGAL_GENERATION, what a classic consumer expects)."""
        group = self.groups[group_id]
        if member_epoch < 0 and not member_id:
            return NONE if not group.members else UnknownMemberIdError.code
        member = group.members.get(member_id)
        if member is None:
            return UnknownMemberIdError.code
        if member.uses_classic_protocol:
            return NONE if member_epoch == member.member_epoch else IllegalGenerationError.code
        if api_version is not None and api_version < 9:
            return UnsupportedVersionError.code
        return self._check_epoch(group, member_id, member_epoch)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """OffsetFetch v9+: a member (epoch >= 0) reads with its current epoch; others read freely."""
        group = self.groups[group_id]
        if member_epoch < 0 or member_id is None:
            return NONE
        return self._check_epoch(group, member_id, member_epoch)

    @staticmethod
    def _check_epoch(group: ConsumerGroup, member_id: str, member_epoch: int) -> int:
        member = group.members.get(member_id)
        if member is None:
            return UnknownMemberIdError.code
        if member_epoch > member.member_epoch:
            return FencedMemberEpochError.code
        if member_epoch < member.member_epoch:
            return StaleMemberEpochError.code
        return NONE

    def delete_group(self, group_id: str) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return GroupIdNotFoundError.code
        if group.members:
            return GroupNotEmptyError.code
        del self.groups[group_id]
        return NONE
