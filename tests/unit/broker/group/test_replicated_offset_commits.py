"""On a cluster broker a committed offset becomes visible only once the ISR has its record (Kafka keeps it in
``pendingOffsetCommits`` until the acks=-1 append's callback): OffsetFetch answers the previous offset meanwhile,
UNSTABLE_OFFSET_COMMIT with ``require_stable``, and a commit whose ISR wait failed is never applied; transaction
markers apply to the pending transactional offsets only once replicated. A single broker (no barrier) applies at
once. The replication barrier here is a fake the test completes; MockTime and inline timers."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from mini_broker.group.group_offsets import complete_staged_offset_commit, stage_offset_commit
from mini_broker.group.group_requests import CommittedOffset, TxnOffsetCommitParams
from pykafka_client.errors import (
    NotCoordinatorError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnstableOffsetCommitError,
)
from pykafka_client.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from tests.unit.broker.group.harness import GROUP, Harness

TP = ("t", 0)
PID = 7


class FakeReplication:
    """The ``__consumer_offsets`` partition's ISR wait: each barrier call waits until the test completes it."""

    def __init__(self) -> None:
        self.waiting: list[Callable[[int], None]] = []

    def barrier(self, callback: Callable[[int], None]) -> None:
        self.waiting.append(callback)

    def complete(self, error: int = 0) -> None:
        self.waiting.pop(0)(error)


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.close()


@pytest.fixture
def replication(h: Harness) -> FakeReplication:
    r = FakeReplication()
    h.coordinator.runtime.replication_barrier = r.barrier
    return r


def _fetch(h: Harness, require_stable: bool = False) -> tuple[int, int]:
    error, out = h.coordinator.handle_fetch_offsets(GROUP, [TP], require_stable)
    assert error == 0
    return out[TP].offset, out[TP].error_code


def test_a_commit_is_visible_only_once_the_isr_has_it(h: Harness, replication: FakeReplication) -> None:
    assert h.commit("", -1, {TP: 10}) == {TP: 0}
    assert _fetch(h) == (-1, 0)  # appended, not yet on the ISR: a failover could lose it, so nobody sees it
    assert _fetch(h, require_stable=True) == (-1, UnstableOffsetCommitError.code)
    replication.complete()
    h.advance(0)  # the completion is applied on the coordinator's timer thread
    assert _fetch(h) == (10, 0) and _fetch(h, require_stable=True) == (10, 0)


def test_a_commit_whose_isr_wait_failed_is_not_applied(h: Harness, replication: FakeReplication) -> None:
    h.commit("", -1, {TP: 10})
    replication.complete()
    h.advance(0)
    h.commit("", -1, {TP: 20})
    replication.complete(NotEnoughReplicasError.code)
    h.advance(0)
    assert _fetch(h) == (10, 0) and _fetch(h, require_stable=True) == (10, 0)  # no longer pending


def test_completions_out_of_order_never_bring_back_an_older_offset(h: Harness) -> None:
    group = h.coordinator._get_or_maybe_create_group("g2", True)
    assert group is not None
    first = stage_offset_commit(group, {TP: CommittedOffset(10, -1, "", 0)})
    second = stage_offset_commit(group, {TP: CommittedOffset(20, -1, "", 0)})
    complete_staged_offset_commit(group, second, {TP: CommittedOffset(20, -1, "", 0)}, True)
    assert group.offsets[TP].offset == 20 and not group.pending_offset_commits
    complete_staged_offset_commit(group, first, {TP: CommittedOffset(10, -1, "", 0)}, True)
    assert group.offsets[TP].offset == 20


def test_deleted_offsets_are_not_brought_back_by_a_pending_commit(h: Harness) -> None:
    group = h.coordinator._get_or_maybe_create_group("g3", True)
    assert group is not None
    seq = stage_offset_commit(group, {TP: CommittedOffset(10, -1, "", 0)})
    assert group.has_offsets()  # an Empty group with a pending commit is not dropped as offset-less
    group.remove_offsets([TP])
    complete_staged_offset_commit(group, seq, {TP: CommittedOffset(10, -1, "", 0)}, True)
    assert TP not in group.offsets


def test_a_single_broker_applies_a_commit_at_once(h: Harness) -> None:
    h.commit("", -1, {TP: 10})
    assert _fetch(h, require_stable=True) == (10, 0)


def test_a_transaction_marker_applies_only_once_the_isr_has_it(h: Harness, replication: FakeReplication) -> None:
    now = h.time.milliseconds()
    assert h.coordinator.handle_txn_commit_offsets(TxnOffsetCommitParams(
        GROUP, PID, 0, {TP: CommittedOffset(30, -1, "", now)})) == {TP: 0}
    replication.complete()  # the TxnOffsetCommit's records are on the ISR
    marker = build_end_transaction_marker(EndTransactionMarker(ControlRecordType.COMMIT, 0), producer_id=PID,
                                          producer_epoch=0, timestamp=now)
    h.coordinator.write_txn_marker(PID, True, [0], marker)
    h.advance(0)
    assert _fetch(h) == (-1, 0)  # the marker is appended, not replicated: the offsets stay pending
    assert _fetch(h, require_stable=True) == (-1, UnstableOffsetCommitError.code)
    replication.complete()
    h.advance(0)
    assert _fetch(h, require_stable=True) == (30, 0)


def test_a_commit_racing_the_resignation_is_answered_not_coordinator(h: Harness) -> None:
    """The partition's storage refuses the append (this broker resigned after the request was validated): each
    partition gets NOT_COORDINATOR, instead of an error that closes the connection; nothing is applied."""
    def refused(*args: object) -> None:
        raise NotLeaderOrFollowerError("resigned")

    h.coordinator.runtime.partition.append = refused  # type: ignore[method-assign,assignment]
    assert h.commit("", -1, {TP: 10}) == {TP: NotCoordinatorError.code}
    assert h.coordinator.handle_txn_commit_offsets(TxnOffsetCommitParams(
        GROUP, PID, 0, {TP: CommittedOffset(30, -1, "", 0)})) == {TP: NotCoordinatorError.code}
    assert _fetch(h, require_stable=True) == (-1, 0)


def test_transactional_offsets_whose_isr_wait_failed_stop_being_pending(h: Harness,
                                                                        replication: FakeReplication) -> None:
    now = h.time.milliseconds()
    h.coordinator.handle_txn_commit_offsets(TxnOffsetCommitParams(GROUP, PID, 0, {TP: CommittedOffset(30, -1, "", now)}))
    assert _fetch(h, require_stable=True) == (-1, UnstableOffsetCommitError.code)
    replication.complete(NotEnoughReplicasError.code)
    h.advance(0)
    assert _fetch(h, require_stable=True) == (-1, 0)  # Kafka failPendingTxnOffsetCommit: the client retries
    h.coordinator.handle_txn_commit_offsets(TxnOffsetCommitParams(GROUP, PID, 0, {TP: CommittedOffset(31, -1, "", now)}))
    replication.complete()
    h.advance(0)
    assert _fetch(h, require_stable=True) == (-1, UnstableOffsetCommitError.code)  # replicated: pending until its marker
