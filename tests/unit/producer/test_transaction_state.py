"""The transition table (Java ``TransactionManager.State.isTransitionValid``): every valid edge is taken,
every other one is refused without a change of state on the application thread and poisons the manager
on the Sender thread (contract statement 75)."""

from __future__ import annotations

import itertools

import pytest

from pykafka_client.errors import IllegalStateError
from pykafka_client.errors_base import KafkaError
from pykafka_client.producer.transaction_manager import TransactionManager
from pykafka_client.producer.transaction_state import VALID_SOURCES, State, is_transition_valid

_S = State

#: Java's table, written out edge by edge (source -> targets) so the module's table is checked against it.
EXPECTED_EDGES = {
    (_S.READY, _S.UNINITIALIZED), (_S.ABORTABLE_ERROR, _S.UNINITIALIZED),
    (_S.UNINITIALIZED, _S.INITIALIZING), (_S.ABORTING_TRANSACTION, _S.INITIALIZING),
    (_S.INITIALIZING, _S.READY), (_S.COMMITTING_TRANSACTION, _S.READY), (_S.ABORTING_TRANSACTION, _S.READY),
    (_S.READY, _S.IN_TRANSACTION),
    (_S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION),
    (_S.IN_TRANSACTION, _S.ABORTING_TRANSACTION), (_S.ABORTABLE_ERROR, _S.ABORTING_TRANSACTION),
    (_S.IN_TRANSACTION, _S.ABORTABLE_ERROR), (_S.COMMITTING_TRANSACTION, _S.ABORTABLE_ERROR),
    (_S.ABORTABLE_ERROR, _S.ABORTABLE_ERROR), (_S.INITIALIZING, _S.ABORTABLE_ERROR),
    *((s, _S.FATAL_ERROR) for s in State),
}

ALL_PAIRS = list(itertools.product(State, State))


def _error_for(target: State) -> BaseException | None:
    return KafkaError("boom") if target in (State.FATAL_ERROR, State.ABORTABLE_ERROR) else None


def test_table_is_javas() -> None:
    assert {(s, t) for t, sources in VALID_SOURCES.items() for s in sources} == EXPECTED_EDGES


@pytest.mark.parametrize(("source", "target"), sorted(EXPECTED_EDGES, key=str))
def test_valid_edge_is_taken(source: State, target: State) -> None:
    tm = TransactionManager("t")
    tm._state = source
    tm._transition_to(target, _error_for(target))
    assert tm.state is target
    if target in (State.FATAL_ERROR, State.ABORTABLE_ERROR):
        assert tm.last_error is not None


@pytest.mark.parametrize(("source", "target"), [p for p in ALL_PAIRS if p not in EXPECTED_EDGES])
def test_invalid_edge_from_the_application_thread_raises_and_changes_nothing(source: State, target: State) -> None:
    assert not is_transition_valid(source, target)
    tm = TransactionManager("t")
    tm._state = source
    with pytest.raises(IllegalStateError, match=f"from state {source.name} to state {target.name}"):
        tm._transition_to(target, _error_for(target))
    assert tm.state is source


@pytest.mark.parametrize(("source", "target"), [p for p in ALL_PAIRS if p not in EXPECTED_EDGES])
def test_invalid_edge_on_the_sender_thread_poisons(source: State, target: State) -> None:
    tm = TransactionManager("t")
    tm.set_poison_state_on_invalid_transition(True)
    tm._state = source
    with pytest.raises(IllegalStateError):
        tm._transition_to(target, _error_for(target))
    assert tm.state is State.FATAL_ERROR
    assert isinstance(tm.last_error, IllegalStateError)


def test_error_states_need_an_error() -> None:
    tm = TransactionManager("t")
    tm._state = State.IN_TRANSACTION
    with pytest.raises(KafkaError, match="without an error"):
        tm._transition_to(State.ABORTABLE_ERROR)
    assert tm.state is State.IN_TRANSACTION
