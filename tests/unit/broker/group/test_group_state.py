"""The classic group state table (Kafka's validPreviousStates) and its one transition function."""

from __future__ import annotations

import pytest

from mini_broker.group.group_metadata import GroupMetadata
from mini_broker.group.group_state import VALID_PREVIOUS_STATES, GroupState, can_rebalance, transition
from pykafka_client.errors import IllegalStateError

S = GroupState

KAFKA_EDGES: set[tuple[GroupState, GroupState]] = {
    (S.PREPARING_REBALANCE, S.EMPTY),
    (S.STABLE, S.PREPARING_REBALANCE), (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.STABLE, S.DEAD), (S.PREPARING_REBALANCE, S.DEAD), (S.COMPLETING_REBALANCE, S.DEAD), (S.EMPTY, S.DEAD),
    (S.DEAD, S.DEAD),
}


def _by_names(edge: tuple[GroupState, GroupState]) -> tuple[str, str]:
    return edge[0].value, edge[1].value


VALID_EDGES = sorted(KAFKA_EDGES, key=_by_names)
INVALID_EDGES = sorted(((a, b) for a in S for b in S if (a, b) not in KAFKA_EDGES), key=_by_names)


def test_table_is_kafkas() -> None:
    assert {(prev, target) for target, prevs in VALID_PREVIOUS_STATES.items() for prev in prevs} == KAFKA_EDGES


@pytest.mark.parametrize(("prev", "target"), VALID_EDGES)
def test_valid_edge(prev: GroupState, target: GroupState) -> None:
    assert transition("g", prev, target) is target


@pytest.mark.parametrize(("prev", "target"), INVALID_EDGES)
def test_invalid_edge_raises(prev: GroupState, target: GroupState) -> None:
    with pytest.raises(IllegalStateError, match=f"before moving to {target.value}, but it is {prev.value}"):
        transition("g", prev, target)


def test_can_rebalance_is_the_valid_previous_states_of_preparing_rebalance() -> None:
    assert {s for s in S if can_rebalance(s)} == {S.EMPTY, S.COMPLETING_REBALANCE, S.STABLE}


def test_group_moves_only_through_the_table() -> None:
    g = GroupMetadata("g", S.EMPTY, 0)
    g.transition_to(S.PREPARING_REBALANCE, 5)
    assert (g.state, g.current_state_timestamp) == (S.PREPARING_REBALANCE, 5)
    with pytest.raises(IllegalStateError):
        g.transition_to(S.STABLE, 6)
    assert (g.state, g.current_state_timestamp) == (S.PREPARING_REBALANCE, 5)
