"""The classic group states and their transition table (Kafka: ``GroupState`` / ``ClassicGroupState``).

Each state lists the states it may be entered from (Kafka's ``validPreviousStates``); :func:`transition` is
the one place a group's state changes and raises ``IllegalStateError`` on any other edge.

=====================  =====================================================
state                  valid previous states
=====================  =====================================================
Empty                  PreparingRebalance
PreparingRebalance     Stable, CompletingRebalance, Empty
CompletingRebalance    PreparingRebalance
Stable                 CompletingRebalance
Dead                   Stable, PreparingRebalance, CompletingRebalance, Empty, Dead
=====================  =====================================================
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from pykafka_client.errors import IllegalStateError


class GroupState(Enum):
    """Classic group states; ``value`` is the name Kafka reports (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


VALID_PREVIOUS_STATES: Final[dict[GroupState, frozenset[GroupState]]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset({GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                                GroupState.EMPTY, GroupState.DEAD}),
}


def transition(group_id: str, current: GroupState, target: GroupState) -> GroupState:
    """``target`` if ``current`` is one of its valid previous states; else IllegalStateError."""
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateError(f"Group {group_id} should be in one of "
                                f"{sorted(s.value for s in VALID_PREVIOUS_STATES[target])} before moving to "
                                f"{target.value}, but it is {current.value}")
    return target


def can_rebalance(state: GroupState) -> bool:
    """Whether a rebalance may start from ``state`` (it is a valid previous state of PreparingRebalance)."""
    return state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]
