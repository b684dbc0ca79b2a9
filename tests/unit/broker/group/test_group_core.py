"""The group coordinator's sans-IO core on its own: requests and ``now`` in, effects out. No purgatory, no
thread, no log: timeouts fire only when the test hands them back (``on_timeout``) at a chosen ``now``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from mini_broker.group.group_config import GroupConfig
from mini_broker.group.group_effects import (
    AppendAssignment,
    AppendOffsetCommits,
    CancelTimeout,
    Effect,
    HeartbeatTimeout,
    JoinTimeout,
    ScheduleTimeout,
    SendJoinResponse,
    SendSyncResponse,
    Step,
    SyncTimeout,
)
from mini_broker.group.group_heartbeat import heartbeat, leave_group
from mini_broker.group.group_join import complete_assignment, join_group, sync_group
from mini_broker.group.group_metadata import GroupMetadata
from mini_broker.group.group_offsets import commit_offsets, complete_offset_commit, fetch_offsets
from mini_broker.group.group_rebalance import NEW_MEMBER_JOIN_TIMEOUT_MS, on_timeout
from mini_broker.group.group_requests import (
    CommittedOffset,
    HeartbeatParams,
    JoinGroupParams,
    JoinGroupResult,
    LeaveMember,
    LeaveMemberResult,
    OffsetCommitParams,
    SyncGroupParams,
    SyncGroupResult,
)
from mini_broker.group.group_state import GroupState
from pykafka_client.errors import RebalanceInProgressError
from tests.unit.broker.group.harness import PROTOCOLS

CONFIG = GroupConfig(group_initial_rebalance_delay_ms=100)
SESSION_MS = 10_000
REBALANCE_MS = 60_000
E = TypeVar("E")


def of(kind: type[E], effects: Sequence[Effect]) -> list[E]:
    return [e for e in effects if isinstance(e, kind)]


def join(group: GroupMetadata, now: int, answers: list[JoinGroupResult], member_id: str = "") -> Step:
    step = Step(CONFIG, now)
    join_group(step, group, JoinGroupParams(group.group_id, member_id, "consumer", PROTOCOLS, SESSION_MS,
                                            REBALANCE_MS, client_id="c"), answers.append)
    return step


def fire(group: GroupMetadata, schedule: ScheduleTimeout, now: int) -> Step:
    step = Step(CONFIG, now)
    on_timeout(step, group, schedule.timeout)
    return step


def state_of(group: GroupMetadata) -> GroupState:
    """The group's state read through a call: a type checker narrows ``group.state`` after an assert and cannot
    see a step change it."""
    return group.state


def stable_pair() -> tuple[GroupMetadata, str, str, int]:
    """Two members through join and sync; (group, leader, follower, now)."""
    group = GroupMetadata("g", GroupState.EMPTY, 0)
    answers: list[JoinGroupResult] = []
    first = join(group, 0, answers)
    join(group, 10, answers)
    [initial] = of(ScheduleTimeout, first.effects)[-1:]
    again = fire(group, initial, 100)
    done = fire(group, of(ScheduleTimeout, again.effects)[0], 200)
    leader = group.leader_id
    assert leader is not None
    follower = next(m for m in group.members if m != leader)
    syncs: list[SyncGroupResult] = []
    sync_group(Step(CONFIG, 210), group, SyncGroupParams("g", 1, follower), syncs.append)
    leader_sync = Step(CONFIG, 220)
    sync_group(leader_sync, group, SyncGroupParams("g", 1, leader, assignments={leader: b"L", follower: b"F"}),
               syncs.append)
    [stored] = of(AppendAssignment, leader_sync.effects)
    complete_assignment(Step(CONFIG, 220), group, stored.generation_id, stored.assignment)
    assert group.state is GroupState.STABLE and done.effects
    return group, leader, follower, 220


def test_two_members_join_through_the_initial_delay() -> None:
    group = GroupMetadata("g", GroupState.EMPTY, 0)
    answers: list[JoinGroupResult] = []
    first = join(group, 0, answers)
    assert group.state is GroupState.PREPARING_REBALANCE and answers == []
    member = next(iter(group.members))
    assert of(ScheduleTimeout, first.effects) == [
        ScheduleTimeout(HeartbeatTimeout("g", member), NEW_MEMBER_JOIN_TIMEOUT_MS),
        ScheduleTimeout(JoinTimeout("g", 1), CONFIG.group_initial_rebalance_delay_ms)]
    second = join(group, 10, answers)
    assert of(SendJoinResponse, second.effects) == [] and group.size() == 2

    # A member arrived during the initial delay: the round waits once more (Kafka's InitialDelayedJoin).
    again = fire(group, of(ScheduleTimeout, first.effects)[-1], 100)
    assert again.effects == [ScheduleTimeout(JoinTimeout("g", 2), 100)] and answers == []

    done = fire(group, of(ScheduleTimeout, again.effects)[0], 200)
    assert state_of(group) is GroupState.COMPLETING_REBALANCE and group.generation_id == 1
    replies = of(SendJoinResponse, done.effects)
    assert len(replies) == 2
    for r in replies:
        r.reply(r.result)
    by_member = {a.member_id: a for a in answers}
    leader = group.leader_id
    assert leader is not None and all(a.generation_id == 1 and a.leader_id == leader for a in answers)
    assert len(by_member[leader].members) == 2  # only the leader gets the member list
    assert [len(a.members) for a in answers if a.member_id != leader] == [0]
    assert ScheduleTimeout(SyncTimeout("g", 1), REBALANCE_MS) in done.effects
    assert {e.timeout for e in of(ScheduleTimeout, done.effects) if e.delay_ms == SESSION_MS} == {
        HeartbeatTimeout("g", m) for m in group.members}


def test_sync_stores_the_leaders_assignment_and_answers_everyone() -> None:
    group = GroupMetadata("g", GroupState.EMPTY, 0)
    answers: list[JoinGroupResult] = []
    first = join(group, 0, answers)
    join(group, 10, answers)
    again = fire(group, of(ScheduleTimeout, first.effects)[-1], 100)
    fire(group, of(ScheduleTimeout, again.effects)[0], 200)
    leader = group.leader_id
    assert leader is not None
    follower = next(m for m in group.members if m != leader)
    parked: list[SyncGroupResult] = []
    follower_step = Step(CONFIG, 210)
    sync_group(follower_step, group, SyncGroupParams("g", 1, follower), parked.append)
    assert of(SendSyncResponse, follower_step.effects) == [] and group.state is GroupState.COMPLETING_REBALANCE

    leader_step = Step(CONFIG, 220)
    sync_group(leader_step, group, SyncGroupParams("g", 1, leader, assignments={follower: b"F"}), parked.append)
    assert CancelTimeout(SyncTimeout("g", 1)) in leader_step.effects  # everyone synced
    [stored] = of(AppendAssignment, leader_step.effects)
    assert {m.member_id: m.assignment for m in stored.group.members} == {leader: b"", follower: b"F"}
    # Nothing is handed out before the record is in the log (Kafka's storeGroup callback).
    assert of(SendSyncResponse, leader_step.effects) == [] and group.state is GroupState.COMPLETING_REBALANCE

    appended = Step(CONFIG, 230)
    complete_assignment(appended, group, stored.generation_id, stored.assignment)
    assert state_of(group) is GroupState.STABLE
    assert {e.result.assignment for e in of(SendSyncResponse, appended.effects)} == {b"", b"F"}


def test_heartbeat_expiry_is_driven_by_now() -> None:
    group, leader, follower, now = stable_pair()
    hb = Step(CONFIG, now + 5000)
    assert heartbeat(hb, group, HeartbeatParams("g", follower, 1)) == 0
    [session] = of(ScheduleTimeout, hb.effects)
    assert session == ScheduleTimeout(HeartbeatTimeout("g", follower), SESSION_MS)

    expired = fire(group, session, now + 5000 + SESSION_MS)
    assert follower not in group.members and group.state is GroupState.PREPARING_REBALANCE
    assert ScheduleTimeout(JoinTimeout("g", 3), REBALANCE_MS) in expired.effects
    late = Step(CONFIG, now + 20_000)
    assert heartbeat(late, group, HeartbeatParams("g", leader, 1)) == RebalanceInProgressError.code


def test_leave_completes_the_round_of_the_remaining_member() -> None:
    group, leader, follower, now = stable_pair()
    answers: list[JoinGroupResult] = []
    rejoin = join(group, now, answers, member_id=leader)  # the leader's JoinGroup starts a rebalance
    assert group.state is GroupState.PREPARING_REBALANCE and of(SendJoinResponse, rejoin.effects) == []
    leave = Step(CONFIG, now + 1)
    assert leave_group(leave, group, [LeaveMember(follower)]) == (0, [LeaveMemberResult(follower, None, 0)])
    assert list(group.members) == [leader] and group.generation_id == 2
    assert CancelTimeout(JoinTimeout("g", 3)) in leave.effects
    assert [e.result.generation_id for e in of(SendJoinResponse, leave.effects)] == [2]
    assert CancelTimeout(HeartbeatTimeout("g", follower)) in leave.effects


def test_offset_commit_emits_a_log_append_and_shows_after_it() -> None:
    group, leader, _follower, now = stable_pair()
    step = Step(CONFIG, now)
    om = CommittedOffset(42, -1, "m", now)
    assert commit_offsets(step, group, OffsetCommitParams("g", {("t", 0): om}, leader, 1)) == {("t", 0): 0}
    [append] = of(AppendOffsetCommits, step.effects)
    assert append == AppendOffsetCommits("g", {("t", 0): om})
    assert fetch_offsets(group, [("t", 0)])[("t", 0)].offset == -1  # not visible before the append
    complete_offset_commit(group, append.offsets)
    assert fetch_offsets(group, [("t", 0)])[("t", 0)].offset == 42


def test_stale_join_timeout_is_ignored() -> None:
    group, leader, _follower, now = stable_pair()
    answers: list[JoinGroupResult] = []
    rejoin = join(group, now, answers, member_id=leader)
    [armed] = [e.timeout for e in of(ScheduleTimeout, rejoin.effects) if isinstance(e.timeout, JoinTimeout)]
    assert isinstance(armed, JoinTimeout)
    stale = ScheduleTimeout(JoinTimeout("g", armed.timer_id - 1), 0)
    assert fire(group, stale, now + REBALANCE_MS).effects == []
    assert group.state is GroupState.PREPARING_REBALANCE
