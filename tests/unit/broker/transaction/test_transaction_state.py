"""The state table of section 1.10 and the metadata's two-phase transitions."""

from __future__ import annotations

import pytest

from mini_broker.transaction.transaction_metadata import (
    MAX_PRODUCER_EPOCH,
    TransactionMetadata,
    is_epoch_exhausted,
)
from mini_broker.transaction.transaction_state import (
    IllegalTransitionError,
    TransactionState,
    check_transition,
)

S = TransactionState
# Written out from the broker contract, independently of VALID_PREVIOUS_STATES.
CONTRACT = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}


@pytest.mark.parametrize("target", list(S))
@pytest.mark.parametrize("current", list(S))
def test_every_edge_of_the_table(current: TransactionState, target: TransactionState) -> None:
    if current in CONTRACT[target]:
        check_transition(current, target)
    else:
        with pytest.raises(IllegalTransitionError):
            check_transition(current, target)


def test_state_ids_and_names() -> None:
    assert [(s.id, s.state_name) for s in S] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"), (4, "CompleteCommit"),
        (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence")]
    assert all(S.from_id(s.id) is s and S.from_name(s.state_name) is s for s in S)
    assert S.from_name("ongoing") is None


def _meta(state: TransactionState, epoch: int = 3) -> TransactionMetadata:
    return TransactionMetadata("t", 7, -1, epoch, -1, 1000, state)


def pending_state_of(m: TransactionMetadata) -> TransactionState | None:
    """The pending state read through a call (a type checker narrows the attribute after an assert)."""
    return m.pending_state


def test_prepare_sets_pending_and_complete_applies() -> None:
    m = _meta(S.EMPTY)
    t = m.prepare_increment_producer_epoch(1000, None, now=5)
    assert t is not None and m.pending_state is S.EMPTY and m.producer_epoch == 3
    m.complete_transition(t)
    assert (m.producer_epoch, pending_state_of(m), m.txn_last_update_timestamp) == (4, None, 5)


def test_abort_transition_changes_nothing() -> None:
    m = _meta(S.ONGOING)
    m.prepare_abort_or_commit(S.PREPARE_COMMIT, now=5)
    m.abort_transition()
    assert (m.state, m.pending_state, m.producer_epoch) == (S.ONGOING, None, 3)


def test_invalid_edges_raise_from_prepare() -> None:
    with pytest.raises(IllegalTransitionError):
        _meta(S.EMPTY).prepare_abort_or_commit(S.PREPARE_COMMIT, now=1)
    with pytest.raises(IllegalTransitionError):
        _meta(S.ONGOING).prepare_complete(now=1)
    with pytest.raises(IllegalTransitionError):
        _meta(S.COMPLETE_COMMIT).prepare_fence_producer_epoch()
    with pytest.raises(IllegalTransitionError):
        _meta(S.ONGOING).prepare_dead(now=1)


def test_fence_goes_through_prepare_epoch_fence_to_prepare_abort() -> None:
    m = _meta(S.ONGOING)
    bumped = m.prepare_fence_producer_epoch()
    assert (bumped, m.pending_state, m.producer_epoch) == (4, S.PREPARE_EPOCH_FENCE, 3)
    t = m.prepare_abort_or_commit(S.PREPARE_ABORT, now=1, producer_epoch=bumped)
    assert (t.state, t.producer_epoch) == (S.PREPARE_ABORT, 4)
    m.complete_transition(t)
    assert (m.state, m.producer_epoch) == (S.PREPARE_ABORT, 4)


def test_epoch_exhaustion() -> None:
    """Kafka's TransactionMetadataTest: exhausted at Short.MaxValue - 1; fencing may still bump once."""
    assert not is_epoch_exhausted(MAX_PRODUCER_EPOCH - 2)
    assert is_epoch_exhausted(MAX_PRODUCER_EPOCH - 1)
    m = _meta(S.ONGOING, epoch=MAX_PRODUCER_EPOCH - 1)
    assert m.prepare_fence_producer_epoch() == MAX_PRODUCER_EPOCH
    with pytest.raises(OverflowError):
        _meta(S.ONGOING, epoch=MAX_PRODUCER_EPOCH).prepare_fence_producer_epoch()


def test_rotate_producer_id() -> None:
    m = _meta(S.COMPLETE_COMMIT, epoch=MAX_PRODUCER_EPOCH - 1)
    t = m.prepare_producer_id_rotation(99, 1000, now=1, record_last_epoch=True)
    m.complete_transition(t)
    assert (m.producer_id, m.previous_producer_id, m.producer_epoch, m.last_producer_epoch, m.state) == (
        99, 7, 0, MAX_PRODUCER_EPOCH - 1, S.EMPTY)
