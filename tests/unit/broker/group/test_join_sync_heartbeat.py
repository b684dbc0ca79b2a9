"""GroupCoordinator: JoinGroup / SyncGroup / Heartbeat / LeaveGroup per state, with a MockTime."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mini_broker.group import GroupState, LeaveMember, SyncGroupParams, SyncGroupResult
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from tests.unit.broker.group.harness import (
    GROUP,
    INITIAL_DELAY_MS,
    REBALANCE_MS,
    SESSION_MS,
    Box,
    Harness,
    subscription,
)

NONE = 0


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.close()


# -- JoinGroup validation ---------------------------------------------------------------------------------
def test_invalid_group_id(h: Harness) -> None:
    assert h.join(group_id="").value.error_code == InvalidGroupIdError.code


@pytest.mark.parametrize("session_ms", [5999, 1800001])
def test_session_timeout_out_of_range(h: Harness, session_ms: int) -> None:
    assert h.join(session_ms=session_ms).value.error_code == InvalidSessionTimeoutError.code
    assert h.coordinator.get_group(GROUP) is None


def test_unknown_member_of_unknown_group(h: Harness) -> None:
    r = h.join("someone")
    assert r.value.error_code == UnknownMemberIdError.code
    assert h.coordinator.get_group(GROUP) is None


def test_unknown_member_of_existing_group(h: Harness) -> None:
    h.stable_group(1)
    assert h.join("other").value.error_code == UnknownMemberIdError.code


def test_empty_protocol_type_or_list_inconsistent(h: Harness) -> None:
    assert h.join(protocol_type="").value.error_code == InconsistentGroupProtocolError.code
    assert h.join(protocols=[]).value.error_code == InconsistentGroupProtocolError.code


def test_inconsistent_protocol_type_and_protocols(h: Harness) -> None:
    h.stable_group(1)
    assert h.join(protocol_type="connect").value.error_code == InconsistentGroupProtocolError.code
    assert h.join(protocols=[("roundrobin", b"")]).value.error_code == InconsistentGroupProtocolError.code


def test_group_max_size(h: Harness) -> None:
    h2 = Harness(group_max_size=1)
    try:
        a = h2.join()
        b = h2.join()
        assert b.value.error_code == GroupMaxSizeReachedError.code
        h2.finish_initial_join()
        assert a.value.error_code == NONE
        assert h2.group().size() == 1
    finally:
        h2.close()


def test_inactive_coordinator(h: Harness) -> None:
    h.coordinator.shutdown()
    assert h.join().value.error_code == CoordinatorNotAvailableError.code
    assert h.heartbeat("m", 1) == CoordinatorNotAvailableError.code


# -- first rebalance and the initial delay ----------------------------------------------------------------
def test_initial_rebalance_delay(h: Harness) -> None:
    box = h.join()
    assert h.group().state is GroupState.PREPARING_REBALANCE
    h.advance(INITIAL_DELAY_MS - 1)
    assert not box.done
    h.advance(1)
    r = box.value
    assert r.error_code == NONE and r.generation_id == 1 and r.leader_id == r.member_id
    assert r.protocol_name == "range" and r.protocol_type == "consumer"
    assert [m.member_id for m in r.members] == [r.member_id]
    assert r.member_id.startswith("client-")
    assert h.group().state is GroupState.COMPLETING_REBALANCE


def test_new_member_during_initial_delay_extends_it(h: Harness) -> None:
    a = h.join()
    h.advance(50)
    b = h.join()
    h.advance(50)  # first delay ends; a member was added: another delay
    assert not a.done and not b.done
    h.advance(INITIAL_DELAY_MS - 1)
    assert not a.done
    h.advance(1)
    assert a.value.generation_id == b.value.generation_id == 1
    assert len(a.value.members) + len(b.value.members) == 2


def test_initial_delay_bounded_by_rebalance_timeout(h: Harness) -> None:
    a = h.join(rebalance_ms=150)  # remaining after the first delay: 50
    h.advance(10)
    h.join(rebalance_ms=150)
    h.advance(90)
    assert not a.done
    h.join(rebalance_ms=150)  # another member: but only 50 ms remain
    h.advance(50)
    assert a.value.error_code == NONE and len(a.value.members) == 3


def test_join_with_zero_initial_delay_completes_at_once() -> None:
    h = Harness(group_initial_rebalance_delay_ms=0)
    try:
        assert h.join().value.generation_id == 1
    finally:
        h.close()


# -- KIP-394 ---------------------------------------------------------------------------------------------
def test_member_id_required_then_join(h: Harness) -> None:
    first = h.join(require_known=True).value
    assert first.error_code == MemberIdRequiredError.code and first.member_id
    assert h.group().is_pending_member(first.member_id)
    box = h.join(first.member_id, require_known=True)
    h.finish_initial_join()
    assert box.value.error_code == NONE and box.value.member_id == first.member_id
    assert not h.group().pending_members


def test_join_completes_when_pending_member_joins(h: Harness) -> None:
    leader, = h.stable_group(1)
    pending = h.join(require_known=True).value.member_id
    rejoin = h.join(leader)  # the leader's join starts a rebalance
    assert h.group().state is GroupState.PREPARING_REBALANCE
    assert not rejoin.done  # the pending member is awaited
    p = h.join(pending)
    assert rejoin.value.generation_id == 2 and p.value.generation_id == 2
    assert {m.member_id for m in rejoin.value.members} == {leader, pending}


def test_join_completes_when_pending_member_times_out(h: Harness) -> None:
    leader, = h.stable_group(1)
    pending = h.join(require_known=True).value.member_id
    rejoin = h.join(leader)
    h.advance(SESSION_MS - 1)
    assert not rejoin.done
    h.advance(1)
    assert rejoin.value.generation_id == 2 and [m.member_id for m in rejoin.value.members] == [leader]
    assert not h.group().is_pending_member(pending)


def test_pending_member_leaves(h: Harness) -> None:
    leader, = h.stable_group(1)
    pending = h.join(require_known=True).value.member_id
    rejoin = h.join(leader)
    error, results = h.leave(LeaveMember(pending))
    assert error == NONE and results[0].error_code == NONE
    assert rejoin.value.generation_id == 2


# -- Sync ------------------------------------------------------------------------------------------------
def test_sync_follower_then_leader(h: Harness) -> None:
    a, b = h.join(), h.join()
    h.finish_initial_join()
    leader = a.value.leader_id
    follower = b.value.member_id if a.value.member_id == leader else a.value.member_id
    assert len((a if a.value.member_id == leader else b).value.members) == 2
    assert (b if a.value.member_id == leader else a).value.members == []  # only the leader gets the list
    f = h.sync(follower, 1)
    assert not f.done
    lead = h.sync(leader, 1, {leader: b"L", follower: b"F", "stranger": b"?"})
    assert lead.value.assignment == b"L" and f.value.assignment == b"F"
    assert f.value.protocol_name == "range"
    assert h.group().state is GroupState.STABLE
    # Stable: a late sync gets the stored assignment.
    assert h.sync(follower, 1).value.assignment == b"F"


def test_sync_missing_members_get_empty_assignment(h: Harness) -> None:
    a, b = h.join(), h.join()
    h.finish_initial_join()
    leader = a.value.leader_id
    follower = b.value.member_id if a.value.member_id == leader else a.value.member_id
    h.sync(leader, 1, {leader: b"L"})
    assert h.sync(follower, 1).value.assignment == b""


def test_leader_sync_changes_nothing_when_its_record_is_not_appended(h: Harness,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = h.join(), h.join()
    h.finish_initial_join()
    leader = a.value.leader_id
    follower = b.value.member_id if a.value.member_id == leader else a.value.member_id
    parked = h.sync(follower, 1)

    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(h.coordinator.runtime.partition, "append", broken)
    with pytest.raises(OSError):
        h.sync(leader, 1, {follower: b"F"})
    assert h.group().state is GroupState.COMPLETING_REBALANCE and not parked.done
    assert h.group().get(follower).assignment == b""


def test_sync_errors(h: Harness) -> None:
    assert h.sync("x", 1).value.error_code == UnknownMemberIdError.code  # unknown group
    leader, = h.stable_group(1)
    assert h.sync("x", 1).value.error_code == UnknownMemberIdError.code
    assert h.sync(leader, 7).value.error_code == IllegalGenerationError.code
    h.join(leader)  # a single member: the round completes at once, generation 2
    assert h.sync(leader, 1).value.error_code == IllegalGenerationError.code


def test_sync_in_preparing_rebalance(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    h.join(leader)  # PreparingRebalance until the follower rejoins
    assert h.sync(follower, 1).value.error_code == RebalanceInProgressError.code


def test_sync_inconsistent_protocol(h: Harness) -> None:
    leader, = h.stable_group(1)
    out: Box[SyncGroupResult] = Box()
    h.coordinator.handle_sync_group(SyncGroupParams(GROUP, 1, leader, protocol_type="connect"), out)
    assert out.value.error_code == InconsistentGroupProtocolError.code
    out2: Box[SyncGroupResult] = Box()
    h.coordinator.handle_sync_group(
        SyncGroupParams(GROUP, 1, leader, protocol_type="consumer", protocol_name="roundrobin"), out2)
    assert out2.value.error_code == InconsistentGroupProtocolError.code


def test_rejoin_in_completing_rebalance_with_same_metadata_returns_generation(h: Harness) -> None:
    a = h.join()
    h.finish_initial_join()
    again = h.join(a.value.member_id)
    assert again.value.generation_id == 1 and len(again.value.members) == 1
    assert h.group().state is GroupState.COMPLETING_REBALANCE


# -- Stable rejoins --------------------------------------------------------------------------------------
def test_unchanged_follower_join_does_not_rebalance(h: Harness) -> None:
    _leader, follower = h.stable_group(2)
    r = h.join(follower).value
    assert (r.error_code, r.generation_id, r.members) == (NONE, 1, [])
    assert h.group().state is GroupState.STABLE


def test_leader_join_rebalances_and_generation_increments(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    lj = h.join(leader)
    assert h.group().state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(follower, 1) == RebalanceInProgressError.code
    fj = h.join(follower)
    assert lj.value.generation_id == fj.value.generation_id == 2


def test_follower_with_changed_metadata_rebalances(h: Harness) -> None:
    _leader, follower = h.stable_group(2)
    h.join(follower, protocols=[("range", subscription("t", "u"))])
    assert h.group().state is GroupState.PREPARING_REBALANCE


def test_rebalance_with_new_member(h: Harness) -> None:
    leader, = h.stable_group(1)
    newcomer = h.join()
    assert h.group().state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(leader, 1) == RebalanceInProgressError.code
    rejoin = h.join(leader)
    assert rejoin.value.generation_id == 2 and newcomer.value.generation_id == 2
    assert len(rejoin.value.members) == 2 and newcomer.value.members == []


def test_member_not_rejoining_is_removed_at_rebalance_timeout(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    lj = h.join(leader)
    for _ in range(REBALANCE_MS // 5000):
        h.advance(5000)
        h.heartbeat(leader, 1)
    assert lj.value.generation_id == 2 and [m.member_id for m in lj.value.members] == [leader]
    assert not h.group().has(follower)


def test_new_member_join_timeout(h: Harness) -> None:
    _leader, = h.stable_group(1, session_ms=600_000, rebalance_ms=1_000_000)
    newcomer = h.join(rebalance_ms=1_000_000)
    h.advance(5 * 60 * 1000 - 1)
    assert not newcomer.done
    h.advance(1)
    assert newcomer.value.error_code == UnknownMemberIdError.code
    assert h.group().size() == 1 and h.group().state is GroupState.PREPARING_REBALANCE


# -- Heartbeat --------------------------------------------------------------------------------------------
def test_heartbeat_per_state(h: Harness) -> None:
    assert h.heartbeat("m", 1) == UnknownMemberIdError.code  # unknown group
    a = h.join()
    h.finish_initial_join()
    m = a.value.member_id
    assert h.heartbeat(m, 1) == NONE  # CompletingRebalance
    assert h.heartbeat(m, 2) == IllegalGenerationError.code
    assert h.heartbeat("other", 1) == UnknownMemberIdError.code
    h.sync(m, 1, {m: b""})
    assert h.heartbeat(m, 1) == NONE  # Stable
    h.join()  # PreparingRebalance
    assert h.heartbeat(m, 1) == RebalanceInProgressError.code


def test_heartbeat_empty_group(h: Harness) -> None:
    leader, = h.stable_group(1)
    h.leave(LeaveMember(leader))
    h.advance(0)
    assert h.group().state is GroupState.EMPTY
    assert h.heartbeat(leader, 1) == UnknownMemberIdError.code


def test_session_timeout_removes_member(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    h.advance(SESSION_MS // 2)
    assert h.heartbeat(leader, 1) == NONE
    h.advance(SESSION_MS // 2)
    assert not h.group().has(follower)
    assert h.group().state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(leader, 1) == RebalanceInProgressError.code
    assert h.join(leader).value.generation_id == 2


def test_heartbeat_maintains_session(h: Harness) -> None:
    leader, = h.stable_group(1)
    for _ in range(10):
        h.advance(SESSION_MS - 1)
        assert h.heartbeat(leader, 1) == NONE
    assert h.group().state is GroupState.STABLE


def test_commit_maintains_session(h: Harness) -> None:
    leader, = h.stable_group(1)
    h.advance(SESSION_MS - 1)
    assert h.commit(leader, 1, {("t", 0): 5}) == {("t", 0): NONE}
    h.advance(SESSION_MS - 1)
    assert h.group().has(leader)


def test_session_timeout_of_last_member_empties_group(h: Harness) -> None:
    _leader, = h.stable_group(1)
    h.advance(SESSION_MS)
    g = h.group()
    assert g.state is GroupState.EMPTY and g.generation_id == 2


# -- sync expiry -----------------------------------------------------------------------------------------
def test_members_that_do_not_sync_are_removed(h: Harness) -> None:
    a, b = h.join(), h.join()
    h.finish_initial_join()
    leader = a.value.leader_id
    follower = b.value.member_id if a.value.member_id == leader else a.value.member_id
    h.sync(leader, 1, {leader: b"L"})
    h.advance(SESSION_MS - 1)
    assert h.heartbeat(leader, 1) == NONE
    assert h.heartbeat(follower, 1) == NONE  # heartbeats do not count as sync
    for _ in range(REBALANCE_MS // (SESSION_MS - 1)):
        h.advance(SESSION_MS - 1)
        h.heartbeat(leader, 1)
        h.heartbeat(follower, 1)
    assert not h.group().has(follower)
    assert h.group().state is GroupState.PREPARING_REBALANCE


def test_rebalance_does_not_time_out_when_all_synced(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    for _ in range(REBALANCE_MS // 5000 + 1):
        h.advance(5000)
        assert h.heartbeat(leader, 1) == NONE and h.heartbeat(follower, 1) == NONE
    assert h.group().state is GroupState.STABLE


def test_leader_failure_in_sync(h: Harness) -> None:
    a, b = h.join(), h.join()
    h.finish_initial_join()
    leader = a.value.leader_id
    follower = b.value.member_id if a.value.member_id == leader else a.value.member_id
    f = h.sync(follower, 1)
    h.leave(LeaveMember(leader))
    assert f.value.error_code == RebalanceInProgressError.code


# -- LeaveGroup ------------------------------------------------------------------------------------------
def test_leave_group(h: Harness) -> None:
    _leader, follower = h.stable_group(2)
    error, results = h.leave(LeaveMember(follower), LeaveMember("ghost"))
    assert error == NONE
    assert [r.error_code for r in results] == [NONE, UnknownMemberIdError.code]
    assert h.group().state is GroupState.PREPARING_REBALANCE
    _, unknown_group = h.leave(LeaveMember("x"), group_id="nope")
    assert unknown_group[0].error_code == UnknownMemberIdError.code


# -- KIP-345 static membership -----------------------------------------------------------------------------
def test_static_member_replacement_in_stable_group(h: Harness) -> None:
    a = h.join(instance_id="i-a")
    b = h.join(instance_id="i-b")
    h.finish_initial_join()
    leader = a.value.leader_id
    ids = {a.value.member_id, b.value.member_id}
    for m in ids:
        h.sync(m, 1, {x: x.encode() for x in ids} if m == leader else None, instance_id="i-a" if m == a.value.member_id else "i-b")
    old_b = b.value.member_id
    rejoin = h.join(instance_id="i-b").value
    assert rejoin.error_code == NONE and rejoin.member_id != old_b and rejoin.member_id.startswith("i-b-")
    assert rejoin.generation_id == 1 and h.group().state is GroupState.STABLE
    assert h.heartbeat(old_b, 1, instance_id="i-b") == FencedInstanceIdError.code
    assert h.heartbeat(rejoin.member_id, 1, instance_id="i-b") == NONE
    sync = h.sync(rejoin.member_id, 1, instance_id="i-b").value
    assert sync.assignment == old_b.encode()  # the assignment follows the instance
    assert h.sync(old_b, 1, instance_id="i-b").value.error_code == FencedInstanceIdError.code
    assert h.commit(old_b, 1, {("t", 0): 1}, instance_id="i-b") == {("t", 0): FencedInstanceIdError.code}


def test_static_leader_rejoin_skip_assignment(h: Harness) -> None:
    a = h.join(instance_id="i-a")
    h.finish_initial_join()
    m = a.value.member_id
    h.sync(m, 1, {m: b"x"}, instance_id="i-a")
    v9 = h.join(instance_id="i-a", skip=True).value
    assert v9.skip_assignment and v9.leader_id == v9.member_id and len(v9.members) == 1
    old = h.join(instance_id="i-a").value  # before v9: the old leader id, no members
    assert not old.skip_assignment and old.leader_id == v9.member_id and old.members == []


def test_static_member_not_removed_when_not_rejoining(h: Harness) -> None:
    a = h.join(instance_id="i-a", session_ms=600_000)
    b = h.join(session_ms=600_000)
    h.finish_initial_join()
    static_id, dynamic_id = a.value.member_id, b.value.member_id
    for m, inst in ((static_id, "i-a"), (dynamic_id, None)):
        h.sync(m, 1, {static_id: b"A", dynamic_id: b"B"}, instance_id=inst)
    c = h.join(session_ms=600_000)  # a new member: rebalance
    bj = h.join(dynamic_id)
    h.advance(REBALANCE_MS)  # the static member never rejoins
    g = h.group()
    assert g.has(static_id)  # static members are kept
    assert bj.value.generation_id == c.value.generation_id == 2
    assert g.leader_id in (dynamic_id, c.value.member_id)  # a member that rejoined leads


def test_static_member_rejoin_during_completing_rebalance_rebalances(h: Harness) -> None:
    a = h.join(instance_id="i-a")
    h.finish_initial_join()
    first = a.value.member_id
    again = h.join(instance_id="i-a")
    # The leader may have assigned the old id already: a new generation (all members joined at once).
    assert again.value.generation_id == 2 and again.value.member_id != first
    assert h.join(first, instance_id="i-a").value.error_code == FencedInstanceIdError.code


def test_leave_by_instance_id(h: Harness) -> None:
    a = h.join(instance_id="i-a")
    h.finish_initial_join()
    _error, results = h.leave(LeaveMember("", "i-a"), LeaveMember("", "i-zzz"))
    assert [r.error_code for r in results] == [NONE, UnknownMemberIdError.code]
    assert not h.group().has(a.value.member_id)
