"""The transaction coordinator's states and their transition table (Kafka: ``TransactionState`` in
``TransactionMetadata.scala``).

Every state change of a transactional id goes through :func:`check_transition`, which raises
:class:`IllegalTransitionError` for an edge the table does not hold. ``PrepareEpochFence`` is never
persisted: it is the pending state of an Ongoing transaction whose producer is being fenced (InitProducerId
or the timeout sweep) until its PrepareAbort is appended.
"""

from __future__ import annotations

import enum
from typing import Final


class TransactionState(enum.Enum):
    """The value is (id stored in ``__transaction_state``, name shown by Describe/ListTransactions)."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def state_name(self) -> str:
        return self.value[1]

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        for state in cls:
            if state.id == state_id:
                return state
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        for state in cls:
            if state.state_name == name:
                return state
        return None


S = TransactionState

#: state -> the states it may be entered from (section 1.10 of the broker contract).
VALID_PREVIOUS_STATES: Final[dict[TransactionState, frozenset[TransactionState]]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

#: States a transactional id may expire from (``transactional.id.expiration.ms``).
EXPIRABLE_STATES: Final = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


class IllegalTransitionError(Exception):
    """A state change the table does not allow: a coordinator bug, answered UNKNOWN_SERVER_ERROR."""


def check_transition(current: TransactionState, target: TransactionState) -> None:
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalTransitionError(f"illegal transaction state transition {current.state_name} -> "
                                     f"{target.state_name}")
