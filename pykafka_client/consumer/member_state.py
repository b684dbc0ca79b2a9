"""The group member's state and generation (Java: AbstractCoordinator.MemberState, Generation).

Sans-IO: the states, the table of allowed transitions and a check, nothing else. The coordinator
moves between states only through :func:`check_transition` (``AbstractCoordinator.transition_to``),
so a transition the protocol does not allow fails loudly with IllegalStateError instead of leaving
the member in a state nobody planned for.

    UNJOINED              -> PREPARING_REBALANCE  (JoinGroup sent)
    PREPARING_REBALANCE   -> COMPLETING_REBALANCE (JoinGroup answered; SyncGroup next)
    COMPLETING_REBALANCE  -> STABLE               (SyncGroup answered with our assignment)
    STABLE                -> PREPARING_REBALANCE  (rejoin: rebalance, metadata or subscription change)
    any state             -> UNJOINED             (join failed, generation reset, member left the group)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pykafka_client.errors import IllegalStateError


class MemberState(Enum):
    UNJOINED = "UNJOINED"  # not a member (initial; after leaving, a failed join or a reset generation)
    PREPARING_REBALANCE = "PREPARING_REBALANCE"  # JoinGroup sent, no response yet
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # JoinGroup answered, SyncGroup in progress
    STABLE = "STABLE"  # SyncGroup answered: a member of the generation with an assignment

    def has_not_joined_group(self) -> bool:
        return self in (MemberState.UNJOINED, MemberState.PREPARING_REBALANCE)


#: From each state, the states it may move to.
VALID_TRANSITIONS: dict[MemberState, frozenset[MemberState]] = {
    MemberState.UNJOINED: frozenset({MemberState.UNJOINED, MemberState.PREPARING_REBALANCE}),
    MemberState.PREPARING_REBALANCE: frozenset({MemberState.UNJOINED, MemberState.COMPLETING_REBALANCE}),
    MemberState.COMPLETING_REBALANCE: frozenset({MemberState.UNJOINED, MemberState.STABLE}),
    MemberState.STABLE: frozenset({MemberState.UNJOINED, MemberState.PREPARING_REBALANCE}),
}


def check_transition(current: MemberState, target: MemberState) -> None:
    """Raise IllegalStateError unless ``current -> target`` is in :data:`VALID_TRANSITIONS`."""
    if target not in VALID_TRANSITIONS[current]:
        raise IllegalStateError(f"invalid group member state transition {current.value} -> {target.value}")


@dataclass(frozen=True, slots=True)
class Generation:
    generation_id: int = -1
    member_id: str = ""
    protocol_name: str | None = None

    def has_member_id(self) -> bool:
        return bool(self.member_id)


NO_GENERATION = Generation()

__all__ = ["NO_GENERATION", "VALID_TRANSITIONS", "Generation", "MemberState", "check_transition"]
