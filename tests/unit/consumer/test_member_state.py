"""The member state table (Java AbstractCoordinator.MemberState): every listed transition is allowed,
every other one raises IllegalStateError, and the coordinator moves only through it."""

from __future__ import annotations

import itertools

import pytest

from pykafka_client.consumer.member_state import VALID_TRANSITIONS, MemberState, check_transition
from pykafka_client.errors import IllegalStateError
from tests.unit.consumer.test_coordinator import make, stable

S = MemberState
EXPECTED = {
    (S.UNJOINED, S.UNJOINED),
    (S.UNJOINED, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.UNJOINED),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.UNJOINED),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.STABLE, S.UNJOINED),
    (S.STABLE, S.PREPARING_REBALANCE),
}
ALL_PAIRS = list(itertools.product(MemberState, MemberState))


def test_table_is_exactly_the_documented_transitions() -> None:
    assert set(VALID_TRANSITIONS) == set(MemberState)
    assert {(a, b) for a, targets in VALID_TRANSITIONS.items() for b in targets} == EXPECTED


@pytest.mark.parametrize(("current", "target"), sorted(EXPECTED, key=str))
def test_valid_transition_allowed(current: MemberState, target: MemberState) -> None:
    check_transition(current, target)


@pytest.mark.parametrize(("current", "target"), sorted(set(ALL_PAIRS) - EXPECTED, key=str))
def test_invalid_transition_rejected(current: MemberState, target: MemberState) -> None:
    with pytest.raises(IllegalStateError, match=f"{current.value} -> {target.value}"):
        check_transition(current, target)


def test_coordinator_walks_the_table_through_a_join() -> None:
    coord, _client, script, subs, time = make()
    assert coord.state is S.UNJOINED
    subs.subscribe(["t"])
    seen: list[MemberState] = []
    original = coord.transition_to

    def record(target: MemberState) -> None:
        original(target)
        seen.append(target)

    coord.transition_to = record  # type: ignore[method-assign]  # spy on the one transition point
    stable(coord, script, subs, [], time)
    assert seen == [S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE]
    coord.maybe_leave_group("test")
    assert seen[-1] is S.UNJOINED and coord.state is S.UNJOINED


def test_coordinator_rejects_an_invalid_transition_and_keeps_its_state() -> None:
    coord, _client, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [], time)
    with pytest.raises(IllegalStateError):
        coord.transition_to(S.COMPLETING_REBALANCE)
    assert coord.state is S.STABLE


def test_state_is_read_only() -> None:
    coord = make()[0]
    with pytest.raises(AttributeError):
        coord.state = S.STABLE  # type: ignore[misc]
