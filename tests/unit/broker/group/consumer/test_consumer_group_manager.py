"""The KIP-848 consumer group state machine (sans-IO, MockTime): ConsumerGroupHeartbeat join, convergence by
epochs, revoke-before-assign, leave, session and rebalance timeouts, static members, metadata changes, regex
subscriptions, member-epoch fencing and the offset checks. Each test names the rule it pins (KIP-848 and
Kafka's ``GroupMetadataManager`` / ``CurrentAssignmentBuilder`` behaviour)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import pytest

from mini_broker.group.consumer.config import ConsumerGroupConfig
from mini_broker.group.consumer.manager import (
    INVALID_REGULAR_EXPRESSION,
    ConsumerGroupHeartbeatParams,
    ConsumerGroupHeartbeatResult,
    ConsumerGroupManager,
)
from mini_broker.group.consumer.model import (
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    MemberState,
    TopicInfo,
    TopicsImage,
    iter_partitions,
)
from pykafka_client.errors import (
    FencedMemberEpochError,
    GroupNotEmptyError,
    InvalidRequestError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)
from pykafka_client.utils.time import MockTime

SESSION_MS = 45000
HEARTBEAT_MS = 5000
REBALANCE_MS = 30000
GROUP = "g"
T1 = TopicInfo(uuid.UUID(int=11), "t1", 6)


class Harness:
    def __init__(self, *topics: TopicInfo, assignors: tuple[str, ...] = ("uniform", "range")) -> None:
        self.time = MockTime()
        self.manager = ConsumerGroupManager(ConsumerGroupConfig(SESSION_MS, HEARTBEAT_MS, assignors))
        self.topics = TopicsImage.of(topics or (T1,))

    def set_topics(self, *topics: TopicInfo) -> None:
        self.topics = TopicsImage.of(topics)

    def heartbeat(self, member_id: str, epoch: int, owned: Assignment | None = None, *,
                  topics: Iterable[str] | None = None, regex: str | None = None, instance_id: str | None = None,
                  assignor: str | None = None, rebalance_timeout_ms: int = -1) -> ConsumerGroupHeartbeatResult:
        if epoch == 0:
            owned = {} if owned is None else owned
            rebalance_timeout_ms = REBALANCE_MS if rebalance_timeout_ms < 0 else rebalance_timeout_ms
            if topics is None and regex is None:
                topics = ["t1"]
        return self.manager.heartbeat(ConsumerGroupHeartbeatParams(
            GROUP, member_id, epoch, instance_id=instance_id, rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=None if topics is None else tuple(topics), subscribed_topic_regex=regex,
            server_assignor=assignor, owned_partitions=owned), self.time.milliseconds(), self.topics)

    def member(self, member_id: str) -> ConsumerGroupMember:
        return self.manager.groups[GROUP].members[member_id]

    @property
    def group(self) -> ConsumerGroup:
        return self.manager.groups[GROUP]

    def state(self) -> ConsumerGroupState:
        return self.group.state

    def assert_no_partition_owned_twice(self) -> None:
        """The invariant revoke-before-assign keeps: no partition is assigned (or pending revocation) to two
        members at once."""
        seen: dict[tuple[uuid.UUID, int], str] = {}
        for m in self.group.members.values():
            for tp in list(iter_partitions(m.assigned_partitions)) + list(iter_partitions(m.partitions_pending_revocation)):
                assert tp not in seen, f"{tp} owned by {seen[tp]} and {m.member_id}"
                seen[tp] = m.member_id


def partitions(result_or_assignment: ConsumerGroupHeartbeatResult | Assignment | None) -> set[int]:
    assignment = (result_or_assignment.assignment if isinstance(result_or_assignment, ConsumerGroupHeartbeatResult)
                  else result_or_assignment)
    assert assignment is not None
    return {p for _, p in iter_partitions(assignment)}


def test_first_member_joins_and_owns_every_partition() -> None:
    """KIP-848 join: epoch 0 -> a member id, the group epoch moves to 1, the target is computed at epoch 1 and
    the member (nobody else owning anything) reaches it at once: epoch 1, STABLE, all partitions."""
    h = Harness()
    r = h.heartbeat("", 0)
    assert r.error_code == 0 and r.member_id
    assert r.member_epoch == 1 and r.heartbeat_interval_ms == HEARTBEAT_MS
    assert partitions(r) == set(range(6))
    assert h.group.group_epoch == 1 and h.group.target_assignment_epoch == 1
    assert h.state() is ConsumerGroupState.STABLE


def test_second_member_converges_by_epochs_revoke_before_assign() -> None:
    """CurrentAssignmentBuilder: the new member reaches epoch 2 but waits (UNRELEASED_PARTITIONS) for partitions
    the first still owns; the first must revoke (UNREVOKED_PARTITIONS, epoch still 1) and acknowledge by a
    heartbeat without them before it moves to epoch 2; only then the new member gets them."""
    h = Harness()
    h.heartbeat("m1", 0)
    r2 = h.heartbeat("m2", 0)
    assert h.group.group_epoch == 2
    assert r2.member_epoch == 2 and partitions(r2) == set()
    assert h.member("m2").state is MemberState.UNRELEASED_PARTITIONS
    assert h.state() is ConsumerGroupState.RECONCILING
    h.assert_no_partition_owned_twice()

    r1 = h.heartbeat("m1", 1, dict(h.member("m1").assigned_partitions))  # still owns everything
    assert r1.member_epoch == 1
    kept = partitions(r1)
    assert len(kept) == 3
    assert h.member("m1").state is MemberState.UNREVOKED_PARTITIONS
    h.assert_no_partition_owned_twice()

    r2 = h.heartbeat("m2", 2, {})  # m1 has not acknowledged: still nothing for m2
    assert partitions(h.member("m2").assigned_partitions) == set()

    r1 = h.heartbeat("m1", 1, h.member("m1").assigned_partitions)  # acknowledges the revocation
    assert r1.member_epoch == 2 and h.member("m1").state is MemberState.STABLE
    r2 = h.heartbeat("m2", 2, {})
    assert partitions(r2) == set(range(6)) - kept
    assert h.member("m2").state is MemberState.STABLE
    assert h.state() is ConsumerGroupState.STABLE
    h.assert_no_partition_owned_twice()


def _stable_pair(h: Harness) -> None:
    h.heartbeat("m1", 0)
    h.heartbeat("m2", 0)
    h.heartbeat("m1", 1, {T1.topic_id: frozenset(range(6))})
    h.heartbeat("m1", 1, h.member("m1").assigned_partitions)
    h.heartbeat("m2", 2, {})
    assert h.state() is ConsumerGroupState.STABLE


def test_member_leave_frees_its_partitions_for_the_others() -> None:
    """KIP-848 leave (epoch -1): the member is removed at once, its partitions free, the group epoch moves; the
    remaining member gets everything on its next heartbeat."""
    h = Harness()
    _stable_pair(h)
    r = h.heartbeat("m2", -1)
    assert r.error_code == 0 and r.member_epoch == -1
    assert "m2" not in h.group.members and h.group.group_epoch == 3
    r1 = h.heartbeat("m1", 2, h.member("m1").assigned_partitions)
    assert r1.member_epoch == 3 and partitions(r1) == set(range(6))


def test_session_timeout_removes_the_member() -> None:
    """``group.consumer.session.timeout.ms``: a member not heard from for that long is removed (group epoch
    moves) and its next heartbeat gets UNKNOWN_MEMBER_ID (it must rejoin with epoch 0)."""
    h = Harness()
    _stable_pair(h)
    h.time.sleep(SESSION_MS - 1)
    h.heartbeat("m1", 2, h.member("m1").assigned_partitions)
    assert h.manager.expire(h.time.milliseconds()) == []  # m2: one ms left
    h.time.sleep(1)
    expired = h.manager.expire(h.time.milliseconds())
    assert [e.member_id for e in expired] == ["m2"]
    assert h.group.group_epoch == 3
    assert h.heartbeat("m2", 2, {}).error_code == UnknownMemberIdError.code
    assert partitions(h.heartbeat("m1", 2, h.member("m1").assigned_partitions)) == set(range(6))


def test_rebalance_timeout_removes_a_member_that_does_not_revoke() -> None:
    """The rebalance timeout: a member in UNREVOKED_PARTITIONS that does not acknowledge within its rebalance
    timeout is removed, so that the new owner gets the partitions."""
    h = Harness()
    h.heartbeat("m1", 0, rebalance_timeout_ms=10000)
    h.heartbeat("m2", 0)
    h.heartbeat("m1", 1, {T1.topic_id: frozenset(range(6))})  # told to revoke
    assert h.member("m1").state is MemberState.UNREVOKED_PARTITIONS
    h.time.sleep(9999)
    assert h.manager.expire(h.time.milliseconds()) == []
    h.time.sleep(1)
    assert [e.member_id for e in h.manager.expire(h.time.milliseconds())] == ["m1"]
    assert partitions(h.heartbeat("m2", 2, {})) == set(range(6))


def test_static_member_restarts_with_a_new_member_id_and_keeps_its_assignment() -> None:
    """Static membership: leaving with epoch -2 keeps the member (and its partitions owned, no new epoch); the
    restarted instance joins with a new member id and takes over its epoch and assignment; an instance id held
    by a live member is UNRELEASED_INSTANCE_ID."""
    h = Harness()
    h.heartbeat("s1", 0, instance_id="i1")
    h.heartbeat("m2", 0)
    h.heartbeat("s1", 1, {T1.topic_id: frozenset(range(6))})
    h.heartbeat("s1", 1, h.member("s1").assigned_partitions)
    h.heartbeat("m2", 2, {})
    before = h.member("s1").assigned_partitions
    assert h.heartbeat("s9", 0, instance_id="i1").error_code == UnreleasedInstanceIdError.code
    r = h.heartbeat("s1", -2, instance_id="i1")
    assert r.error_code == 0 and r.member_epoch == -2
    assert h.group.group_epoch == 2  # no rebalance
    assert h.heartbeat("m2", 2, h.member("m2").assigned_partitions).assignment is None  # nothing moves
    r = h.heartbeat("s2", 0, instance_id="i1")
    assert r.error_code == 0 and r.member_id == "s2" and r.member_epoch == 2
    assert r.assignment == before
    assert "s1" not in h.group.members and h.group.static_members["i1"] == "s2"
    assert h.group.group_epoch == 2
    h.assert_no_partition_owned_twice()


def test_new_partitions_trigger_a_new_target_assignment() -> None:
    """Subscription metadata: when a subscribed topic gains partitions the group epoch moves on the next
    heartbeat and the new partitions are assigned."""
    h = Harness()
    h.heartbeat("m1", 0)
    h.set_topics(TopicInfo(T1.topic_id, "t1", 8))
    r = h.heartbeat("m1", 1, {T1.topic_id: frozenset(range(6))})
    assert h.group.group_epoch == 2 and r.member_epoch == 2
    assert partitions(r) == set(range(8))


def test_regex_subscription_picks_up_a_created_topic() -> None:
    """SubscribedTopicRegex is resolved on the broker against its topics, again when topics are created."""
    h = Harness()
    r = h.heartbeat("m1", 0, regex="t.*")
    assert partitions(r) == set(range(6))
    t2 = TopicInfo(uuid.UUID(int=12), "t2", 2)
    h.set_topics(T1, t2, TopicInfo(uuid.UUID(int=13), "other", 3))
    r = h.heartbeat("m1", 1, {T1.topic_id: frozenset(range(6))})
    assert r.assignment is not None and r.assignment[t2.topic_id] == frozenset({0, 1})
    assert set(r.assignment) == {T1.topic_id, t2.topic_id}


def test_member_epoch_checks() -> None:
    """``throwIfMemberEpochIsInvalid``: a newer epoch than the member's is FENCED_MEMBER_EPOCH; the previous
    epoch is accepted only with owned partitions within the member's assignment (a lost response); an unknown
    member id is UNKNOWN_MEMBER_ID."""
    h = Harness()
    _stable_pair(h)
    assert h.heartbeat("m1", 3, {}).error_code == FencedMemberEpochError.code
    assert h.heartbeat("m1", 1, None).error_code == FencedMemberEpochError.code
    assert h.heartbeat("m1", 1, h.member("m1").assigned_partitions).error_code == 0
    assert h.heartbeat("m1", 1, {T1.topic_id: frozenset(range(6))}).error_code == FencedMemberEpochError.code
    assert h.heartbeat("nobody", 2, {}).error_code == UnknownMemberIdError.code


def test_request_validation() -> None:
    """A join names its rebalance timeout and a subscription; a server assignor must be configured; a regex
    must compile; epoch -2 needs an instance id."""
    h = Harness()
    bad_join = ConsumerGroupHeartbeatParams(GROUP, "m", 0, subscribed_topic_names=("t1",), owned_partitions={})
    assert h.manager.heartbeat(bad_join, 0, h.topics).error_code == InvalidRequestError.code
    assert h.heartbeat("m", 0, assignor="sticky").error_code == UnsupportedAssignorError.code
    assert h.heartbeat("m", 0, regex="t[").error_code == INVALID_REGULAR_EXPRESSION
    assert h.heartbeat("m", -2).error_code == InvalidRequestError.code
    assert GROUP not in h.manager.groups  # nothing was created by a rejected join


def test_preferred_server_assignor_is_the_one_most_members_ask_for() -> None:
    """``group.remote.assignor``: the group uses the assignor most members name, the first configured one when
    none does."""
    h = Harness()
    h.heartbeat("m1", 0)
    assert h.manager.preferred_assignor(h.group) == "uniform"
    h.heartbeat("m2", 0, assignor="range")
    assert h.manager.preferred_assignor(h.group) == "range"


def test_offset_commit_and_fetch_member_epoch_checks() -> None:
    """OffsetCommit on a consumer group: the member's current epoch commits, an older one is
    STALE_MEMBER_EPOCH, an unknown member UNKNOWN_MEMBER_ID, a commit from outside the group (epoch -1) only
    when it has no members. OffsetFetch v9 checks the same way; without a member it reads freely."""
    h = Harness()
    h.heartbeat("m1", 0)
    m = h.manager
    assert m.validate_offset_commit(GROUP, "m1", 1) == 0
    h.heartbeat("m2", 0)
    h.heartbeat("m1", 1, {T1.topic_id: frozenset(range(6))})
    h.heartbeat("m1", 1, h.member("m1").assigned_partitions)
    assert m.validate_offset_commit(GROUP, "m1", 1) == StaleMemberEpochError.code
    assert m.validate_offset_commit(GROUP, "m1", 2) == 0
    assert m.validate_offset_commit(GROUP, "zz", 2) == UnknownMemberIdError.code
    assert m.validate_offset_commit(GROUP, "", -1) == UnknownMemberIdError.code
    assert m.validate_offset_fetch(GROUP, "m1", 1) == StaleMemberEpochError.code
    assert m.validate_offset_fetch(GROUP, None, -1) == 0
    assert m.delete_group(GROUP) == GroupNotEmptyError.code
    h.heartbeat("m1", -1)
    h.heartbeat("m2", -1)
    assert m.validate_offset_commit(GROUP, "", -1) == 0
    assert m.delete_group(GROUP) == 0


@pytest.mark.parametrize("members", [2, 3, 5])
def test_many_members_converge_without_double_ownership(members: int) -> None:
    """Members joining one by one, heartbeating round-robin with what they own: at every step no partition has
    two owners, and the group ends Stable with every partition owned once."""
    h = Harness(TopicInfo(T1.topic_id, "t1", 7))
    epochs: dict[str, int] = {}
    for i in range(members):
        r = h.heartbeat(f"m{i}", 0)
        epochs[f"m{i}"] = r.member_epoch
        for _ in range(4):
            for mid in list(epochs):
                member = h.member(mid)
                owned = dict(member.assigned_partitions)
                epochs[mid] = h.heartbeat(mid, epochs[mid], owned).member_epoch
                h.assert_no_partition_owned_twice()
    assert h.state() is ConsumerGroupState.STABLE
    owned_all = [tp for m in h.group.members.values() for tp in iter_partitions(m.assigned_partitions)]
    assert sorted(p for _, p in owned_all) == list(range(7))


def test_a_deleted_topic_is_revoked_before_the_member_moves_on() -> None:
    """Subscription metadata: a subscribed topic deleted moves the group epoch; its partitions leave the target
    and the member revokes them (UNREVOKED_PARTITIONS until it heartbeats without them), as any revocation."""
    h = Harness()
    t2 = TopicInfo(uuid.UUID(int=12), "t2", 2)
    h.set_topics(T1, t2)
    r = h.heartbeat("m1", 0, topics=["t1", "t2"])
    assert set(r.assignment or {}) == {T1.topic_id, t2.topic_id}
    h.set_topics(T1)
    r = h.heartbeat("m1", 1, h.member("m1").assigned_partitions)
    assert h.group.group_epoch == 2 and r.member_epoch == 1
    assert h.member("m1").partitions_pending_revocation == {t2.topic_id: frozenset({0, 1})}
    r = h.heartbeat("m1", 1, h.member("m1").assigned_partitions)
    assert r.member_epoch == 2 and r.assignment == {T1.topic_id: frozenset(range(6))}


def test_a_member_rejoining_with_epoch_zero_gets_its_target_again() -> None:
    """A known member id with epoch 0 (the member lost its state, e.g. after FENCED_MEMBER_EPOCH) rejoins: it
    owns nothing any more and reconciles to its target from scratch, without moving the group epoch."""
    h = Harness()
    h.heartbeat("m1", 0)
    r = h.heartbeat("m1", 0)
    assert r.error_code == 0 and r.member_epoch == 1 and partitions(r) == set(range(6))
    assert h.group.group_epoch == 1
