"""Broker contract 1.9/1.11 on the partition log: ongoing transactions, markers and coordinator-epoch fencing,
the last stable offset, the aborted-transaction index (format, lookup across segments, truncation) and
recovery after a kill -9 (Kafka ProducerStateManagerTest / UnifiedLogTest / TransactionIndexTest scenarios)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mini_broker.log.abstract_index import CorruptIndexError
from mini_broker.log.log_config import LogConfig
from mini_broker.log.log_offset_metadata import FetchIsolation
from mini_broker.log.transaction_index import AbortedTxn, TransactionIndex
from mini_broker.log.unified_log import AppendOrigin, Log
from mini_broker.producer_state import CompletedTxn, PendingAppend, ProducerStateManager
from pykafka_client.errors import InvalidTxnStateError, TransactionCoordinatorFencedError
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.unit.broker.producer_state.test_producer_state import B
from tests.unit.broker.producer_state.test_producer_state import Log as FakeLog

TS = 1_700_000_000_000
P1, P2 = 1000, 2000


def data(pid: int, seq: int, n: int = 1, *, txn: bool = True, epoch: int = 0) -> bytes:
    b = ProducerBatch(TopicPartition("t", 0), 1 << 20, 0)
    for i in range(n):
        assert b.try_append(TS, None, b"v%d" % (seq + i), [], None, 0) is not None
    b.set_producer_state(pid, epoch, seq, txn)
    return b.records()


def marker(pid: int, abort: bool, coordinator_epoch: int = 0, epoch: int = 0) -> bytes:
    kind = ControlRecordType.ABORT if abort else ControlRecordType.COMMIT
    return build_end_transaction_marker(EndTransactionMarker(kind, coordinator_epoch), producer_id=pid,
                                        producer_epoch=epoch, timestamp=TS)


def open_log(tmp_path: Path, time: MockTime, clean: bool = True, segment_bytes: str | None = None) -> Log:
    props = {} if segment_bytes is None else {"segment.bytes": segment_bytes}
    return Log(str(tmp_path / "t-0"), LogConfig.from_props(props, LogConfig()), time=time,
               had_clean_shutdown=clean, recovery_point=0)


def append(lg: Log, records: bytes, origin: AppendOrigin = AppendOrigin.CLIENT) -> int:
    info = lg.append(records, origin=origin)
    lg.update_high_watermark(lg.log_end_offset)
    return info.first_offset


def kill(lg: Log) -> None:
    for seg in lg.segments:
        seg.close()


def control_batches(lg: Log, start: int) -> int:
    info = lg.read(start, 1 << 20)
    return sum(1 for b in MemoryRecords(info.to_bytes() if info.records is not None else b"").batches()
               if b.is_control)


@pytest.fixture
def time() -> MockTime:
    return MockTime(current_time_ms=TS)


@pytest.fixture
def fake(tmp_path: Path) -> FakeLog:
    return FakeLog(ProducerStateManager("t-0", str(tmp_path)))


# --- producer state ------------------------------------------------------------------------------

def test_first_unstable_offset_follows_ongoing_transactions(fake: FakeLog) -> None:
    psm = fake.psm
    fake.append(B(P1, 0, 0, is_transactional=True))  # 0
    fake.append(B(P2, 0, 0, is_transactional=True))  # 1
    fake.append(B(P1, 0, 1, is_transactional=True))  # 2: same txn, not a new one
    assert psm.first_unstable_offset() == 0
    assert [(t.producer_id, t.first_offset) for t in psm.ongoing_txns()] == [(P1, 0), (P2, 1)]
    fake.append(B(P1, 0, -1, is_control=True, marker=(False, 0)))  # 3 ends P1's txn
    assert [t.producer_id for t in psm.ongoing_txns()] == [P2]
    assert psm.first_unstable_offset() == 0  # unreplicated until the HW passes the marker
    psm.on_high_watermark_updated(3)
    assert psm.first_unstable_offset() == 0
    psm.on_high_watermark_updated(4)
    assert psm.first_unstable_offset() == 1


def test_marker_yields_completed_txn_only_with_data(fake: FakeLog) -> None:
    psm = fake.psm
    empty = psm.prepare_append([B(P1, 0, -1, is_control=True, marker=(True, 0))], 0)
    assert isinstance(empty, PendingAppend) and empty.completed_txns == []
    fake.append(B(P1, 0, 0, is_transactional=True))
    fake.append(B(P2, 0, 0, is_transactional=True))
    pending = psm.prepare_append([B(P1, 0, -1, is_control=True, marker=(True, 0))], 2)
    assert isinstance(pending, PendingAppend) and pending.completed_txns == [CompletedTxn(P1, 0, 2, True)]
    # LSO for the index: the first offset of another producer's ongoing txn
    assert psm.complete_append(pending) == [(CompletedTxn(P1, 0, 2, True), 1)]


def test_index_lso_without_other_transactions_is_after_the_marker(fake: FakeLog) -> None:
    fake.append(B(P1, 0, 0, is_transactional=True))
    pending = fake.psm.prepare_append([B(P1, 0, -1, is_control=True, marker=(False, 0))], 1)
    assert isinstance(pending, PendingAppend)
    assert fake.psm.complete_append(pending) == [(CompletedTxn(P1, 0, 1, False), 2)]


def test_coordinator_epoch_fencing(fake: FakeLog) -> None:
    fake.append(B(P1, 0, 0, is_transactional=True))
    fake.append(B(P1, 0, -1, is_control=True, marker=(False, 5)))
    fake.append(B(P1, 0, 1, is_transactional=True))
    with pytest.raises(TransactionCoordinatorFencedError):
        fake.append(B(P1, 0, -1, is_control=True, marker=(True, 4)))
    fake.psm.on_high_watermark_updated(fake.end)
    assert fake.psm.first_unstable_offset() == 2  # still open
    fake.append(B(P1, 0, -1, is_control=True, marker=(True, 5)))
    assert fake.psm.ongoing_txns() == []


def test_coordinator_fenced_after_reload(tmp_path: Path, fake: FakeLog) -> None:
    fake.append(B(P1, 0, 0, is_transactional=True))
    fake.append(B(P1, 0, -1, is_control=True, marker=(False, 5)))
    fake.psm.take_snapshot(fake.end)
    fresh = ProducerStateManager("t-0", str(tmp_path))
    fresh.load(fake.end, now_ms=2000)
    fake.psm = fresh
    fake.append(B(P1, 0, 1, is_transactional=True))
    with pytest.raises(TransactionCoordinatorFencedError):
        fake.append(B(P1, 0, -1, is_control=True, marker=(False, 4)))


def test_snapshot_rebuilds_ongoing_transactions(tmp_path: Path, fake: FakeLog) -> None:
    fake.append(B(P1, 0, 0, is_transactional=True))
    fake.append(B(P2, 0, 0, is_transactional=True))
    fake.append(B(P2, 0, -1, is_control=True, marker=(False, 0)))
    fake.psm.take_snapshot(fake.end)
    fresh = ProducerStateManager("t-0", str(tmp_path))
    fresh.load(fake.end, now_ms=2000)
    assert [(t.producer_id, t.first_offset) for t in fresh.ongoing_txns()] == [(P1, 0)]
    assert fresh.first_unstable_offset() == 0
    with pytest.raises(InvalidTxnStateError):  # the rebuilt txn still refuses a non-transactional write
        fresh.prepare_append([B(P1, 0, 1)], fake.end)


# --- the partition log: LSO, index, reads --------------------------------------------------------

def test_lso_with_mixed_producer_data(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    append(lg, data(7, 0, 2, txn=False))  # 0-1: idempotent, not transactional
    assert lg.last_stable_offset == 2
    append(lg, data(P1, 0, 2))  # 2-3
    append(lg, data(7, 2, 1, txn=False))  # 4
    assert (lg.high_watermark, lg.last_stable_offset) == (5, 2)
    assert lg.fetch_offset_by_timestamp(-1, FetchIsolation.TXN_COMMITTED).offset == 2  # type: ignore[union-attr]
    info = lg.read(0, 1 << 20, lg.max_offset_for(FetchIsolation.TXN_COMMITTED))
    batches = list(MemoryRecords(info.to_bytes() if info.records is not None else b"").batches())
    assert [b.base_offset for b in batches] == [0]  # read_committed stops at the LSO
    assert lg.end_offset_metadata(FetchIsolation.TXN_COMMITTED).message_offset == 2
    append(lg, marker(P1, abort=False), AppendOrigin.COORDINATOR)  # 5
    assert lg.last_stable_offset == 6 == lg.high_watermark
    assert lg.collect_aborted_transactions(0, 6) == []
    assert control_batches(lg, 0) == 1
    lg.close()


def test_non_transactional_write_during_open_txn_is_rejected(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    append(lg, data(P1, 0, 1))
    with pytest.raises(InvalidTxnStateError):
        lg.append(data(P1, 1, 1, txn=False))
    assert lg.log_end_offset == 1
    lg.close()


def test_zombie_coordinator_marker_is_fenced_and_not_written(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    append(lg, data(P1, 0, 1))
    append(lg, marker(P1, abort=False, coordinator_epoch=3), AppendOrigin.COORDINATOR)
    append(lg, data(P1, 1, 1))
    with pytest.raises(TransactionCoordinatorFencedError):
        lg.append(marker(P1, abort=True, coordinator_epoch=2), origin=AppendOrigin.COORDINATOR)
    assert lg.log_end_offset == 3 and lg.last_stable_offset == 2
    lg.close()


def test_aborted_transaction_is_indexed_in_the_marker_segment(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, segment_bytes="300")
    append(lg, data(P1, 0, 2))  # 0-1
    append(lg, data(P2, 0, 1))  # 2
    for i in range(4):  # roll segments while both are open
        append(lg, data(9, 2 * i, 2, txn=False))
    assert len(lg.segments) > 1
    abort_at = append(lg, marker(P1, abort=True), AppendOrigin.COORDINATOR)
    marker_segment = lg.segments[-1]
    assert marker_segment.txn_index.entries() == 1
    assert list(marker_segment.txn_index) == [AbortedTxn(P1, 0, abort_at, 2)]  # LSO: P2's first offset
    assert os.path.getsize(marker_segment.txn_index.path) == 34
    assert lg.last_stable_offset == 2
    commit_at = append(lg, marker(P2, abort=False), AppendOrigin.COORDINATOR)
    assert lg.last_stable_offset == commit_at + 1
    # an empty transaction's marker changes nothing
    append(lg, marker(4242, abort=True), AppendOrigin.COORDINATOR)
    assert sum(s.txn_index.entries() for s in lg.segments) == 1
    # lookup across segments, from the fetch segment on
    assert lg.collect_aborted_transactions(0, lg.last_stable_offset) == [AbortedTxn(P1, 0, abort_at, 2)]
    assert lg.collect_aborted_transactions(abort_at + 1, lg.last_stable_offset) == []
    lg.close()


def test_recovery_after_kill_rebuilds_ongoing_txns_lso_and_index(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, segment_bytes="300")
    append(lg, data(P1, 0, 2))  # 0-1
    append(lg, data(P2, 0, 1))  # 2
    for i in range(4):
        append(lg, data(9, 2 * i, 2, txn=False))
    abort_at = append(lg, marker(P1, abort=True), AppendOrigin.COORDINATOR)
    segment_path = lg.segments[-1].txn_index.path
    lso = lg.last_stable_offset
    kill(lg)
    os.unlink(segment_path)  # an index entry written after the last snapshot but lost
    lg = open_log(tmp_path, time, clean=False, segment_bytes="300")
    assert lg.last_stable_offset == lso == 2
    assert [t.producer_id for t in lg.producer_state.ongoing_txns()] == [P2]
    assert lg.collect_aborted_transactions(0, lg.high_watermark) == [AbortedTxn(P1, 0, abort_at, 2)]
    with pytest.raises(InvalidTxnStateError):
        lg.append(data(P2, 1, 1, txn=False))
    append(lg, marker(P2, abort=False), AppendOrigin.COORDINATOR)
    assert lg.last_stable_offset == lg.log_end_offset
    lg.close()
    lg = open_log(tmp_path, time)  # clean restart: from the close snapshot, nothing open
    assert lg.producer_state.ongoing_txns() == [] and lg.last_stable_offset == lg.log_end_offset
    lg.close()


def test_torn_tail_drops_index_entries_past_it(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    append(lg, data(P1, 0, 1))
    append(lg, marker(P1, abort=True), AppendOrigin.COORDINATOR)
    size = lg.size()
    kill(lg)
    with open(tmp_path / "t-0" / "00000000000000000000.log", "r+b") as fh:
        fh.truncate(size - 3)  # tear the marker
    lg = open_log(tmp_path, time, clean=False)
    assert lg.log_end_offset == 1
    assert lg.segments[0].txn_index.entries() == 0
    assert lg.last_stable_offset == 0  # the transaction is open again
    lg.close()


def test_deleted_segment_takes_its_txn_index(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, segment_bytes="300")
    append(lg, data(P1, 0, 1))
    append(lg, marker(P1, abort=True), AppendOrigin.COORDINATOR)
    first = lg.segments[0]
    for i in range(6):
        append(lg, data(9, 2 * i, 2, txn=False))
    assert first.txn_index.entries() == 1 and os.path.exists(first.txn_index.path)
    lg.delete_records_before(lg.segments[1].base_offset)
    assert not os.path.exists(first.txn_index.path)
    lg.close()


# --- the index file ------------------------------------------------------------------------------

def test_txn_index_format_and_search(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000000.txnindex")
    index = TransactionIndex(path, 0)
    assert not os.path.exists(path)  # created with its first entry
    entries = [AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25), AbortedTxn(3, 32, 50, 40)]
    for e in entries:
        index.append(e)
    with open(path, "rb") as fh:
        raw = fh.read()
    assert len(raw) == 4 * 34 and raw[:2] == b"\x00\x00" and int.from_bytes(raw[2:10], "big") == 0
    assert AbortedTxn.from_bytes(raw, 34) == entries[1]
    assert index.collect_aborted_txns(0, 32).aborted_transactions == entries[:3]
    result = index.collect_aborted_txns(0, 11)  # entry 0's LSO reaches the bound: complete at once
    assert result.aborted_transactions == entries[:1] and result.is_complete
    assert index.collect_aborted_txns(16, 100).aborted_transactions == entries[2:]
    assert not index.collect_aborted_txns(16, 100).is_complete
    index.close()
    reopened = TransactionIndex(path, 0)
    assert list(reopened) == entries
    with pytest.raises(ValueError):
        reopened.append(AbortedTxn(4, 40, 50, 60))  # last offsets must increase
    reopened.truncate_to(16)
    assert list(reopened) == entries[:2]
    assert list(TransactionIndex(path, 0)) == entries[:2]
    reopened.close()


def test_txn_index_sanity_check(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000100.txnindex")
    with open(path, "wb") as fh:
        fh.write(AbortedTxn(1, 90, 95, 96).to_bytes())  # marker before the segment
    with pytest.raises(CorruptIndexError):
        TransactionIndex(path, 100).sanity_check()
    with open(path, "wb") as fh:
        fh.write(AbortedTxn(1, 100, 105, 106).to_bytes() + b"\x00\x00")  # torn
    with pytest.raises(CorruptIndexError):
        TransactionIndex(path, 100).sanity_check()
