"""Transactional offset commits in the group coordinator (Kafka GroupCoordinatorTest testBasicFetchTxnOffsets,
testFetchTxnOffsetsWithAbort, testFetchPendingTxnOffsetsWithCommit, testFetchTxnOffsetsIgnoreSpuriousCommit,
testFetchTxnOffsetsMultipleProducersOneGroup, testTxnCommitOffsetWithFencedInstanceId): the sans-IO core on its
own, then through the coordinator and its log, including a restart."""

from __future__ import annotations

from pathlib import Path

from mini_broker.group.group_config import GroupConfig
from mini_broker.group.group_effects import AppendTxnOffsetCommits, Step
from mini_broker.group.group_metadata import GroupMetadata
from mini_broker.group.group_offsets import (
    commit_txn_offsets,
    complete_offset_commit,
    complete_pending_txn_offsets,
    complete_txn_offset_commit,
    fetch_offsets,
)
from mini_broker.group.group_requests import CommittedOffset, TxnOffsetCommitParams
from mini_broker.group.group_state import GroupState
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    UnknownMemberIdError,
    UnstableOffsetCommitError,
)
from pykafka_client.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from pykafka_client.utils.time import MockTime
from tests.unit.broker.group.harness import GROUP, Harness

TP = ("t", 0)
P1, P2 = 11, 22


def om(offset: int) -> CommittedOffset:
    return CommittedOffset(offset, -1, "", 1000)


def txn_commit(group: GroupMetadata, pid: int, offset: int, **kw: object) -> dict[tuple[str, int], int]:
    """The core plus what the driver does after the append."""
    step = Step(GroupConfig(), 1000)
    errors = commit_txn_offsets(step, group, TxnOffsetCommitParams(group.group_id, pid, 0, {TP: om(offset)},
                                                                   **kw))  # type: ignore[arg-type]
    for effect in step.effects:
        assert isinstance(effect, AppendTxnOffsetCommits) and effect.producer_id == pid
        complete_txn_offset_commit(group, effect.producer_id, effect.offsets)
    return errors


def visible(group: GroupMetadata, require_stable: bool = False) -> tuple[int, int]:
    fo = fetch_offsets(group, [TP], require_stable)[TP]
    return fo.offset, fo.error_code


def test_pending_until_commit_marker() -> None:
    g = GroupMetadata("g", GroupState.EMPTY, 0)
    assert txn_commit(g, P1, 15) == {TP: 0}
    assert visible(g) == (-1, 0)
    assert visible(g, require_stable=True) == (-1, UnstableOffsetCommitError.code)
    assert g.has_offsets()  # an Empty group with pending offsets is not dropped
    assert complete_pending_txn_offsets(g, P1, committed=True) == 1
    assert visible(g, require_stable=True) == (15, 0)


def test_abort_marker_drops_and_spurious_markers_change_nothing() -> None:
    g = GroupMetadata("g", GroupState.EMPTY, 0)
    g.offsets[TP] = om(7)
    txn_commit(g, P1, 15)
    assert complete_pending_txn_offsets(g, P1, committed=False) == 1
    assert visible(g, require_stable=True) == (7, 0)
    assert complete_pending_txn_offsets(g, P1, committed=True) == 0  # nothing pending: ignored
    assert complete_pending_txn_offsets(g, P2, committed=True) == 0
    assert visible(g) == (7, 0)


def test_multiple_producers_one_group() -> None:
    g = GroupMetadata("g", GroupState.EMPTY, 0)
    txn_commit(g, P1, 10)
    txn_commit(g, P2, 20)
    complete_pending_txn_offsets(g, P2, committed=False)
    assert visible(g, require_stable=True) == (-1, UnstableOffsetCommitError.code)  # P1 still pending
    complete_pending_txn_offsets(g, P1, committed=True)
    assert visible(g, require_stable=True) == (10, 0)


def test_kip447_member_validation(tmp_path: Path) -> None:
    h = Harness()
    try:
        [member] = h.stable_group(1, instance_id="i-1")
        group = h.group()
        gen = group.generation_id
        assert txn_commit(group, P1, 1, member_id="bogus", generation_id=gen) == {TP: UnknownMemberIdError.code}
        assert txn_commit(group, P1, 1, member_id=member, generation_id=gen + 1) == {TP: IllegalGenerationError.code}
        assert txn_commit(group, P1, 1, member_id="other", generation_id=gen, group_instance_id="i-1") == {
            TP: FencedInstanceIdError.code}
        assert txn_commit(group, P1, 1, member_id=member, generation_id=gen, group_instance_id="i-1") == {TP: 0}
        assert txn_commit(group, P2, 2) == {TP: 0}  # pre-KIP-447 request: no member checks
        group.transition_to(GroupState.DEAD, 0)
        assert txn_commit(group, P1, 3) == {TP: CoordinatorNotAvailableError.code}
    finally:
        h.close()


def marker(pid: int, commit: bool) -> bytes:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return build_end_transaction_marker(EndTransactionMarker(kind, 0), producer_id=pid, producer_epoch=0,
                                        timestamp=1000)


def test_coordinator_log_rebuilds_pending_committed_and_aborted(tmp_path: Path) -> None:
    time = MockTime()
    h = Harness(str(tmp_path), time)
    gc = h.coordinator
    try:
        def commit(pid: int, offset: int, tp: tuple[str, int] = TP) -> None:
            assert gc.handle_txn_commit_offsets(TxnOffsetCommitParams(GROUP, pid, 0, {tp: om(offset)})) == {tp: 0}

        commit(P1, 5)
        commit(P2, 9, ("t", 1))
        gc.write_txn_marker(P1, True, [0], marker(P1, True))
        commit(P1, 6)  # P1's next transaction, left open
        gc.write_txn_marker(P2, False, [0], marker(P2, False))
        assert h.fetch([TP, ("t", 1)]) == {TP: 5, ("t", 1): -1}
    finally:
        h.close()
    h = Harness(str(tmp_path), time)
    try:
        group = h.group()
        assert h.fetch([TP, ("t", 1)]) == {TP: 5, ("t", 1): -1}
        assert {pid: {tp: o.offset for tp, o in offs.items()} for pid, offs in group.pending_txn_offsets.items()} == {
            P1: {TP: 6}}
        error, out = h.coordinator.handle_fetch_offsets(GROUP, [TP], require_stable=True)
        assert error == 0 and out[TP].error_code == UnstableOffsetCommitError.code
        h.coordinator.write_txn_marker(P1, True, [0], marker(P1, True))
        assert h.fetch([TP]) == {TP: 6}
    finally:
        h.close()


def test_plain_commit_after_a_transactional_one_wins_at_the_commit_marker() -> None:
    """Kafka GroupMetadata ``completePendingTxnOffsetCommit``: a pending offset is materialized only if the
    committed one was written before it."""
    g = GroupMetadata("g", GroupState.EMPTY, 0)
    txn_commit(g, P1, 15)
    complete_offset_commit(g, {TP: om(20)})  # plain commit after the transactional one
    txn_commit(g, P2, 30)  # a transactional commit after the plain one
    assert complete_pending_txn_offsets(g, P1, committed=True) == 1
    assert visible(g) == (20, 0)
    assert complete_pending_txn_offsets(g, P2, committed=True) == 1
    assert visible(g) == (30, 0)


def test_superseding_survives_a_restart(tmp_path: Path) -> None:
    time = MockTime()
    h = Harness(str(tmp_path), time)
    try:
        assert h.coordinator.handle_txn_commit_offsets(TxnOffsetCommitParams(GROUP, P1, 0, {TP: om(15)})) == {TP: 0}
        assert h.commit("", -1, {TP: 20}) == {TP: 0}
    finally:
        h.close()
    h = Harness(str(tmp_path), time)
    try:
        assert h.fetch([TP]) == {TP: 20}
        h.coordinator.write_txn_marker(P1, True, [0], marker(P1, True))
        assert h.fetch([TP]) == {TP: 20}
    finally:
        h.close()
