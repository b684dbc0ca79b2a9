"""The transaction coordinator's core, request by request (Kafka's TransactionCoordinatorTest scenarios and
every row of the state table in broker-contract section 1.10), with ``now`` set by hand."""

from __future__ import annotations

import logging

import pytest

from mini_broker.transaction.transaction_config import TransactionConfig
from mini_broker.transaction.transaction_metadata import MAX_PRODUCER_EPOCH
from mini_broker.transaction.transaction_state import TransactionState
from pykafka_client.errors import (
    ConcurrentTransactionsError,
    CoordinatorNotAvailableError,
    InvalidPidMappingError,
    InvalidRequestError,
    InvalidTxnStateError,
    InvalidTxnTimeoutError,
    NotLeaderOrFollowerError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionalIdNotFoundError,
    UnknownTopicOrPartitionError,
)
from tests.unit.broker.transaction.harness import TIMEOUT_MS, TP0, TP1, TXN, Harness

S = TransactionState
CONCURRENT = ConcurrentTransactionsError.code
FENCED = ProducerFencedError.code


def states(h: Harness) -> list[TransactionState]:
    return [a.transit.state for a in h.appended]


def ongoing(h: Harness, *tps: object) -> tuple[int, int]:
    pid, epoch = h.init_ok()
    assert h.add(pid, epoch, *tps) == 0  # type: ignore[arg-type]
    return pid, epoch


# -- InitProducerId -----------------------------------------------------------------------------------------
def test_new_transactional_id_gets_a_new_pid_at_epoch_zero() -> None:
    h = Harness()
    assert h.init_ok() == (1000, 0)
    assert states(h) == [S.EMPTY] and h.meta().state is S.EMPTY


def test_empty_transactional_id_is_an_invalid_request() -> None:
    h = Harness()
    r = h.init("")
    assert r is not None and r.error_code == InvalidRequestError.code and not h.core.transactions


@pytest.mark.parametrize("timeout_ms", [0, 900_001])
def test_transaction_timeout_above_the_maximum(timeout_ms: int) -> None:
    h = Harness()
    r = h.init(timeout_ms=timeout_ms)
    assert r is not None and r.error_code == InvalidTxnTimeoutError.code
    assert not h.core.transactions and not h.appended
    r = Harness(TransactionConfig(transaction_max_timeout_ms=1000)).init(timeout_ms=1001)
    assert r is not None and r.error_code == InvalidTxnTimeoutError.code


def test_empty_to_empty_bumps_the_epoch() -> None:
    h = Harness()
    h.init_ok()
    assert h.init_ok() == (1000, 1)
    assert states(h) == [S.EMPTY, S.EMPTY]


@pytest.mark.parametrize("commit", [True, False])
def test_complete_to_empty_bumps_the_epoch(commit: bool) -> None:
    h = Harness()
    pid, epoch = ongoing(h, TP0)
    assert h.end(pid, epoch, commit) == 0
    assert h.meta().state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert h.init_ok() == (pid, epoch + 1)
    assert h.meta().state is S.EMPTY and not h.meta().partitions


def test_init_while_prepare_commit_answers_concurrent_transactions() -> None:
    h = Harness()
    pid, epoch = ongoing(h, TP0)
    h.hold_markers = True
    assert h.end(pid, epoch, True) == 0
    assert h.meta().state is S.PREPARE_COMMIT
    r = h.init()
    assert r is not None and r.error_code == CONCURRENT
    h.answer_markers(h.held_markers.pop())
    assert h.meta().state is S.COMPLETE_COMMIT and h.init_ok() == (pid, epoch + 1)


def test_init_with_a_pending_transition_answers_concurrent_transactions() -> None:
    h = Harness()
    pid, epoch = h.init_ok()
    h.hold_appends = True
    h.add(pid, epoch, TP0)
    assert h.meta().pending_state is S.ONGOING
    r = h.init()
    assert r is not None and r.error_code == CONCURRENT
    assert h.add(pid, epoch, TP1) == CONCURRENT
    assert h.end(pid, epoch, True) == CONCURRENT


def test_fencing_an_ongoing_transaction() -> None:
    """InitProducerId on Ongoing: PrepareEpochFence, the transaction aborted with the bumped epoch,
    CONCURRENT_TRANSACTIONS; the retry gets a second bump and the old producer is fenced."""
    h = Harness()
    pid, epoch = ongoing(h, TP0, TP1)
    r = h.init()
    assert r is not None and r.error_code == CONCURRENT
    marker = h.markers[-1].request.markers[0]
    assert (marker.transaction_result, marker.producer_id, marker.producer_epoch) == (False, pid, epoch + 1)
    assert sorted((t.name, p) for t in marker.topics for p in t.partition_indexes) == [("t", 0), ("t", 1)]
    assert states(h)[-2:] == [S.PREPARE_ABORT, S.COMPLETE_ABORT]
    assert h.init_ok() == (pid, epoch + 2)
    assert h.end(pid, epoch, True) == FENCED
    assert h.add(pid, epoch, TP0) == FENCED


def test_fencing_while_the_abort_is_not_durable_keeps_the_old_epoch() -> None:
    h = Harness()
    _, epoch = ongoing(h, TP0)
    h.fail_appends_with = CoordinatorNotAvailableError.code
    r = h.init()
    assert r is not None and r.error_code == CoordinatorNotAvailableError.code
    m = h.meta()
    assert (m.state, m.producer_epoch, m.pending_state) == (S.ONGOING, epoch, None)


def test_stale_expected_epoch_or_other_pid_is_fenced() -> None:
    h = Harness()
    pid, _ = h.init_ok()
    h.init_ok()  # epoch 1, last epoch -1
    h.init_ok()  # epoch 2
    r = h.init(pid=pid, epoch=0)
    assert r is not None and r.error_code == FENCED
    r = h.init(pid=pid + 77, epoch=2)
    assert r is not None and r.error_code == FENCED


def test_expected_current_epoch_bumps_and_a_retry_of_it_gets_the_same_epoch() -> None:
    """KIP-360: the client's current epoch bumps; the same request again (its answer lost) is answered with
    the epoch it already got."""
    h = Harness()
    pid, epoch = h.init_ok()
    r1 = h.init(pid=pid, epoch=epoch)
    assert r1 is not None and (r1.error_code, r1.producer_epoch) == (0, epoch + 1)
    r2 = h.init(pid=pid, epoch=epoch)
    assert r2 is not None and (r2.error_code, r2.producer_id, r2.producer_epoch) == (0, pid, epoch + 1)


def test_exhausted_epoch_rotates_to_a_new_producer_id() -> None:
    h = Harness()
    pid, _ = h.init_ok()
    h.meta().producer_epoch = MAX_PRODUCER_EPOCH - 1
    r = h.init(pid=pid, epoch=MAX_PRODUCER_EPOCH - 1)
    assert r is not None and r.error_code == 0
    assert r.producer_id != pid and r.producer_epoch == 0
    m = h.meta()
    assert (m.previous_producer_id, m.last_producer_epoch) == (pid, MAX_PRODUCER_EPOCH - 1)
    assert h.appended[-1].transit.producer_id == r.producer_id
    retry = h.init(pid=pid, epoch=MAX_PRODUCER_EPOCH - 1)  # its answer was lost: the same pid/epoch again
    assert retry is not None and (retry.error_code, retry.producer_id, retry.producer_epoch) == (0, r.producer_id, 0)


def test_a_failed_first_append_forgets_the_new_id() -> None:
    h = Harness()
    h.fail_appends_with = NotLeaderOrFollowerError.code
    r = h.init()
    assert r is not None and r.error_code == NotLeaderOrFollowerError.code and not h.core.transactions


# -- AddPartitionsToTxn -------------------------------------------------------------------------------------
@pytest.mark.parametrize("prior", ["empty", "complete_commit", "complete_abort"])
def test_add_partitions_starts_a_transaction(prior: str) -> None:
    h = Harness()
    pid, epoch = h.init_ok()
    if prior != "empty":
        assert h.add(pid, epoch, TP1) == 0
        assert h.end(pid, epoch, prior == "complete_commit") == 0
    h.now += 500
    assert h.add(pid, epoch, TP0) == 0
    m = h.meta()
    assert (m.state, m.partitions, m.txn_start_timestamp) == (S.ONGOING, {TP0}, h.now)


def test_ongoing_add_more_partitions_appends_and_a_subset_does_not() -> None:
    h = Harness()
    pid, epoch = ongoing(h, TP0)
    start = h.meta().txn_start_timestamp
    h.now += 10
    n = len(h.appended)
    assert h.add(pid, epoch, TP0) == 0 and len(h.appended) == n
    assert h.add(pid, epoch, TP0, TP1) == 0 and len(h.appended) == n + 1
    assert h.meta().partitions == {TP0, TP1} and h.meta().txn_start_timestamp == start


def test_add_partitions_errors() -> None:
    h = Harness()
    assert h.add(1, 0, TP0) == InvalidPidMappingError.code  # unknown transactional id
    pid, epoch = ongoing(h, TP0)
    assert h.add(pid + 1, epoch, TP0) == InvalidPidMappingError.code
    assert h.add(pid, epoch + 1, TP0) == FENCED
    h.hold_markers = True
    assert h.end(pid, epoch, True) == 0
    assert h.add(pid, epoch, TP1) == CONCURRENT  # PrepareCommit


def test_verify_partitions() -> None:
    h = Harness()
    pid, epoch = ongoing(h, TP0)
    assert h.core.verify_partitions(TXN, pid, epoch, [TP0, TP1]) == {TP0: 0, TP1: TransactionAbortableError.code}
    assert h.core.verify_partitions(TXN, pid, epoch + 1, [TP0]) == {TP0: FENCED}
    assert h.core.verify_partitions("nope", pid, epoch, [TP0]) == {TP0: InvalidPidMappingError.code}
    assert h.end(pid, epoch, False) == 0
    assert h.core.verify_partitions(TXN, pid, epoch, [TP0]) == {TP0: TransactionAbortableError.code}


# -- EndTxn -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_prepares_writes_markers_then_completes(commit: bool) -> None:
    h = Harness()
    pid, epoch = ongoing(h, TP0, TP1)
    h.hold_markers = True
    assert h.end(pid, epoch, commit) == 0  # answered once Prepare* is durable, before the markers
    prepare = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
    assert states(h)[-1] is prepare and h.meta().state is prepare
    marker = h.held_markers[0].request.markers[0]
    assert (marker.transaction_result, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch) == (
        commit, pid, epoch, 0)
    assert h.end(pid, epoch, commit) == CONCURRENT  # retry while the markers are written
    assert h.end(pid, epoch, not commit) == InvalidTxnStateError.code
    h.answer_markers(h.held_markers.pop())
    assert states(h)[-1] is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert h.meta().partitions == set()
    assert h.end(pid, epoch, commit) == 0  # an idempotent retry
    assert h.end(pid, epoch, not commit) == InvalidTxnStateError.code


def test_end_txn_errors() -> None:
    h = Harness()
    assert h.end(5, 0, True) == InvalidPidMappingError.code  # unknown transactional id
    pid, epoch = h.init_ok()
    assert h.end(pid, epoch, True) == InvalidTxnStateError.code  # Empty: no transaction
    assert h.end(pid + 1, epoch, True) == InvalidPidMappingError.code  # unknown producer id
    assert h.end(pid, epoch - 1, True) == FENCED


def test_markers_retry_the_failed_partitions_and_drop_deleted_ones() -> None:
    h = Harness()
    pid, epoch = ongoing(h, TP0, TP1, TOPIC_GONE := TP0._replace(topic="gone"))
    h.hold_markers = True
    assert h.end(pid, epoch, True) == 0
    h.answer_markers(h.held_markers.pop(), {TP1: NotLeaderOrFollowerError.code,
                                            TOPIC_GONE: UnknownTopicOrPartitionError.code})
    assert h.meta().state is S.PREPARE_COMMIT and h.meta().partitions == {TP1}
    assert [r.transactional_id for r in h.retries] == [TXN]
    h.run(h.core.retry_markers, TXN)
    resent = h.held_markers.pop().request.markers[0]
    assert [(t.name, t.partition_indexes) for t in resent.topics] == [("t", [1])]
    h.hold_markers = False
    h.run(h.core.retry_markers, TXN)
    assert h.meta().state is S.COMPLETE_COMMIT


def test_a_stale_marker_answer_is_ignored() -> None:
    h = Harness()
    pid, epoch = ongoing(h, TP0)
    h.hold_markers = True
    h.end(pid, epoch, True)
    markers = h.held_markers.pop()
    h.answer_markers(markers)
    assert h.meta().state is S.COMPLETE_COMMIT
    h.answer_markers(markers)  # a duplicate answer: nothing changes, nothing appended
    assert states(h)[-1] is S.COMPLETE_COMMIT and states(h).count(S.COMPLETE_COMMIT) == 1


# -- timers -------------------------------------------------------------------------------------------------
def test_timed_out_transaction_is_fenced_and_aborted(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness()
    pid, epoch = ongoing(h, TP0)
    h.now += TIMEOUT_MS
    assert h.run(h.core.abort_timed_out_transactions) == []  # not past the timeout yet
    h.now += 1
    with caplog.at_level(logging.INFO):
        assert h.run(h.core.abort_timed_out_transactions) == [TXN]
    marker = h.markers[-1].request.markers[0]
    assert (marker.transaction_result, marker.producer_epoch) == (False, epoch + 1)
    assert h.meta().state is S.COMPLETE_ABORT and h.meta().producer_epoch == epoch + 1
    assert h.end(pid, epoch, True) == FENCED


def test_timed_out_transaction_with_a_pending_transition_is_skipped() -> None:
    h = Harness()
    pid, epoch = ongoing(h, TP0)
    h.hold_appends = True
    h.add(pid, epoch, TP1)
    h.now += TIMEOUT_MS + 1
    assert h.run(h.core.abort_timed_out_transactions) == []


def test_timed_out_abort_whose_append_fails_does_not_bump_the_epoch() -> None:
    h = Harness()
    _, epoch = ongoing(h, TP0)
    h.now += TIMEOUT_MS + 1
    h.fail_appends_with = CoordinatorNotAvailableError.code
    h.run(h.core.abort_timed_out_transactions)
    assert (h.meta().state, h.meta().producer_epoch, h.meta().pending_state) == (S.ONGOING, epoch, None)
    h.fail_appends_with = None
    assert h.run(h.core.abort_timed_out_transactions) == [TXN]
    assert h.meta().producer_epoch == epoch + 1


def test_idle_transactional_ids_expire() -> None:
    config = TransactionConfig(transactional_id_expiration_ms=1000)
    h = Harness(config)
    h.init_ok("idle")
    pid, epoch = ongoing(h, TP0)
    h.now += 1000
    assert h.run(h.core.expire_transactional_ids) == ["idle"]
    dead = h.appended[-1]
    assert (dead.transactional_id, dead.transit.state) == ("idle", S.DEAD)
    assert "idle" not in h.core.transactions and TXN in h.core.transactions  # Ongoing never expires
    assert h.end(pid, epoch, True) == 0
    h.now += 999
    assert h.run(h.core.expire_transactional_ids) == []
    h.now += 1
    assert h.run(h.core.expire_transactional_ids) == [TXN]
    r = h.init("idle")
    assert r is not None and (r.error_code, r.producer_epoch) == (0, 0)  # a fresh id


# -- admin --------------------------------------------------------------------------------------------------
def test_describe_and_list() -> None:
    h = Harness()
    pid, epoch = ongoing(h, TP1, TP0)
    h.init_ok("other")
    error, d = h.core.describe(TXN)
    assert error == 0 and d is not None
    assert (d.state, d.producer_id, d.producer_epoch, d.transaction_timeout_ms, d.partitions) == (
        "Ongoing", pid, epoch, TIMEOUT_MS, [TP0, TP1])
    assert d.transaction_start_time_ms == h.now
    assert h.core.describe("nope") == (TransactionalIdNotFoundError.code, None)
    unknown, found = h.core.list_transactions(h.now, ["Ongoing", "Bogus"])
    assert unknown == ["Bogus"] and [f.transactional_id for f in found] == [TXN]
    _, found = h.core.list_transactions(h.now, producer_ids=[pid + 1])
    assert [f.transactional_id for f in found] == ["other"]
    assert len(h.core.list_transactions(h.now)[1]) == 2
    assert [f.transactional_id for f in h.core.list_transactions(h.now + 11, ["Ongoing"], duration_ms=10)[1]] == [TXN]
    assert h.core.list_transactions(h.now + 10, ["Ongoing"], duration_ms=10)[1] == []


def test_expected_pid_for_an_unknown_id_gets_a_fresh_producer() -> None:
    """KIP-360: a producer whose transactional id expired sends its old pid/epoch; the id is new to the
    coordinator, so the request is accepted and answered with a new pid at epoch 0 (Kafka's
    prepareIncrementProducerEpoch bumps whenever the metadata has no epoch yet)."""
    h = Harness()
    r = h.init(pid=77, epoch=5)
    assert r is not None and (r.error_code, r.producer_id, r.producer_epoch) == (0, 1000, 0)


def test_stale_epoch_of_the_current_pid_still_fences_an_ongoing_transaction() -> None:
    """Kafka checks only the pid before fencing an Ongoing transaction: the epoch is never handed out, the
    client retries after CONCURRENT_TRANSACTIONS and its retry is checked against the bumped epochs."""
    h = Harness()
    pid, epoch = h.init_ok()
    h.init_ok()  # epoch 1
    assert h.add(pid, epoch + 1, TP0) == 0
    r = h.init(pid=pid, epoch=epoch)
    assert r is not None and r.error_code == CONCURRENT
    assert h.meta().state is S.COMPLETE_ABORT and h.meta().producer_epoch == epoch + 2
    r = h.init(pid=pid, epoch=epoch)
    assert r is not None and r.error_code == FENCED


def test_exhausted_epoch_with_an_older_expected_epoch_is_not_rotated() -> None:
    h = Harness()
    pid, _ = h.init_ok()
    h.meta().producer_epoch = MAX_PRODUCER_EPOCH - 1
    r = h.init(pid=pid, epoch=5)
    assert r is not None and r.error_code == FENCED and h.meta().producer_id == pid
