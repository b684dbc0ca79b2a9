"""The producer's transaction states and their transition table (Java ``TransactionManager.State``).

``VALID_SOURCES[target]`` is the set of states a transition to ``target`` may start from; FATAL_ERROR
may be entered from anywhere and never left. The idempotent (non-transactional) producer uses
UNINITIALIZED -> INITIALIZING -> READY and FATAL_ERROR only.
"""

from __future__ import annotations

import enum


class State(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


_S = State

VALID_SOURCES: dict[State, frozenset[State]] = {
    # a producer id reset (idempotent producer) or giving up an aborted transaction's id
    _S.UNINITIALIZED: frozenset({_S.READY, _S.ABORTABLE_ERROR}),
    # init_transactions, or the epoch bump that ends an abort
    _S.INITIALIZING: frozenset({_S.UNINITIALIZED, _S.ABORTING_TRANSACTION}),
    _S.READY: frozenset({_S.INITIALIZING, _S.COMMITTING_TRANSACTION, _S.ABORTING_TRANSACTION}),
    _S.IN_TRANSACTION: frozenset({_S.READY}),
    _S.COMMITTING_TRANSACTION: frozenset({_S.IN_TRANSACTION}),
    _S.ABORTING_TRANSACTION: frozenset({_S.IN_TRANSACTION, _S.ABORTABLE_ERROR}),
    _S.ABORTABLE_ERROR: frozenset({_S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION, _S.ABORTABLE_ERROR, _S.INITIALIZING}),
    _S.FATAL_ERROR: frozenset(State),
}


def is_transition_valid(source: State, target: State) -> bool:
    return source in VALID_SOURCES[target]
