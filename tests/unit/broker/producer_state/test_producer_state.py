"""Broker contract 1.9: duplicate window, sequence/epoch validation, snapshots, expiry, producer ids."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from mini_broker.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    AppendOrigin,
    BatchMetadata,
    ProducerIdManager,
    ProducerStateManager,
)
from mini_broker.producer_state.producer_state_manager import (
    CorruptSnapshotError,
    ProducerBatchView,
    snapshot_file_name,
)
from pykafka_client.errors import InvalidProducerEpochError, InvalidTxnStateError, OutOfOrderSequenceError
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from pykafka_client.structs import TopicPartition

INT_MAX = 2**31 - 1
PID = 42


@dataclass
class B:
    """A batch view for the manager (the fields DefaultRecordBatch has)."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: int = 1
    base_offset: int = 0
    max_timestamp: int = 1000
    is_transactional: bool = False
    is_control: bool = False
    marker: tuple[bool, int] | None = None  # (is_abort, coordinator_epoch) of a control batch

    @property
    def last_offset_delta(self) -> int:
        return self.records - 1

    @property
    def last_sequence(self) -> int:
        return (self.base_sequence + self.records - 1) & 0x7FFFFFFF


class Log:
    """A stand-in for the partition log: assigns offsets and keeps the batches."""

    def __init__(self, psm: ProducerStateManager) -> None:
        self.psm = psm
        self.end = 0
        self.batches: list[B] = []

    def append(self, *batches: B) -> tuple[int, int]:
        # as the partition Log does: prepare, write, then complete
        checked = self.psm.prepare_append(list(batches), self.end)
        if isinstance(checked, BatchMetadata):
            return checked.first_offset, checked.last_offset
        first = self.end
        for b in batches:
            b.base_offset = self.end
            self.end += b.records
            self.batches.append(b)
        self.psm.complete_append(checked)
        return first, self.end - 1


def append_to(
    psm: ProducerStateManager, batches: list[ProducerBatchView], first_offset: int, origin: AppendOrigin = AppendOrigin.CLIENT
) -> BatchMetadata | None:
    """The Log's append path on the producer state alone: a duplicate's metadata, or None once recorded."""
    checked = psm.prepare_append(batches, first_offset, origin)
    if isinstance(checked, BatchMetadata):
        return checked
    psm.complete_append(checked)
    return None


@pytest.fixture
def log(tmp_path: Path) -> Log:
    return Log(ProducerStateManager("t-0", str(tmp_path)))


def test_in_sequence_appends(log: Log) -> None:
    assert log.append(B(PID, 0, 0, records=3)) == (0, 2)
    assert log.append(B(PID, 0, 3, records=2)) == (3, 4)
    entry = log.psm.last_entry(PID)
    assert entry is not None and entry.last_seq == 4 and entry.last_data_offset == 4


def test_duplicate_returns_original_offsets(log: Log) -> None:
    log.append(B(PID, 0, 0, records=3))
    log.append(B(PID, 0, 3, records=2))
    assert log.append(B(PID, 0, 0, records=3)) == (0, 2)
    assert log.append(B(PID, 0, 3, records=2)) == (3, 4)
    assert log.end == 5


def test_duplicate_window_is_five_batches(log: Log) -> None:
    for i in range(NUM_BATCHES_TO_RETAIN + 1):
        log.append(B(PID, 0, i))
    # batches 1..5 are remembered; batch 0 fell out of the window
    for i in range(1, NUM_BATCHES_TO_RETAIN + 1):
        assert log.append(B(PID, 0, i)) == (i, i)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(B(PID, 0, 0))


def test_partial_overlap_is_out_of_order(log: Log) -> None:
    log.append(B(PID, 0, 0, records=3))
    with pytest.raises(OutOfOrderSequenceError):
        log.append(B(PID, 0, 1, records=3))


def test_gap_is_out_of_order(log: Log) -> None:
    log.append(B(PID, 0, 0))
    with pytest.raises(OutOfOrderSequenceError):
        log.append(B(PID, 0, 2))
    assert log.end == 1


def test_unknown_producer_accepts_any_first_sequence(log: Log) -> None:
    assert log.append(B(PID, 3, 17)) == (0, 0)
    assert log.append(B(PID, 3, 18)) == (1, 1)


def test_new_epoch_must_start_at_zero(log: Log) -> None:
    log.append(B(PID, 0, 0, records=5))
    with pytest.raises(OutOfOrderSequenceError):
        log.append(B(PID, 1, 5))
    assert log.append(B(PID, 1, 0)) == (5, 5)
    entry = log.psm.last_entry(PID)
    assert entry is not None and entry.producer_epoch == 1 and len(entry.batch_metadata) == 1


def test_old_epoch_is_fenced(log: Log) -> None:
    log.append(B(PID, 2, 0))
    with pytest.raises(InvalidProducerEpochError):
        log.append(B(PID, 1, 1))


def test_duplicate_of_old_epoch_is_not_a_duplicate(log: Log) -> None:
    log.append(B(PID, 0, 0))
    log.append(B(PID, 1, 0))
    with pytest.raises(InvalidProducerEpochError):
        log.append(B(PID, 0, 0))


def test_sequence_wraps(log: Log) -> None:
    log.append(B(PID, 0, INT_MAX - 1, records=2))
    assert log.append(B(PID, 0, 0, records=2)) == (2, 3)
    assert log.append(B(PID, 0, 0, records=2)) == (2, 3)  # duplicate after the wrap


def test_batch_spanning_the_wrap(log: Log) -> None:
    log.append(B(PID, 0, INT_MAX - 1, records=4))  # INT_MAX-1, INT_MAX, 0, 1
    assert log.append(B(PID, 0, INT_MAX - 1, records=4)) == (0, 3)
    assert log.append(B(PID, 0, 2)) == (4, 4)


def test_failed_append_records_nothing(log: Log) -> None:
    log.append(B(PID, 0, 0))
    with pytest.raises(OutOfOrderSequenceError):
        log.append(B(PID, 0, 1), B(PID, 0, 5))
    assert log.append(B(PID, 0, 1)) == (1, 1)


def test_non_transactional_write_during_open_txn(log: Log) -> None:
    log.append(B(PID, 0, 0, is_transactional=True))
    with pytest.raises(InvalidTxnStateError):
        log.append(B(PID, 0, 1))
    log.append(B(PID, 0, -1, is_control=True, marker=(False, 0)))
    assert log.append(B(PID, 0, 1)) == (2, 2)


def test_replication_origin_skips_sequence_checks(tmp_path: Path) -> None:
    psm = ProducerStateManager("t-0", str(tmp_path))
    append_to(psm, [B(PID, 0, 0)], 0)
    assert append_to(psm, [B(PID, 0, 9)], 1, AppendOrigin.REPLICATION) is None


def test_expiry(log: Log) -> None:
    log.append(B(PID, 0, 0, max_timestamp=1000))
    log.append(B(7, 0, 0, max_timestamp=5000))
    log.psm.producer_id_expiration_ms = 10_000
    assert log.psm.remove_expired_producers(10_999) == []
    assert log.psm.remove_expired_producers(11_000) == [PID]
    assert log.psm.last_entry(PID) is None and log.psm.last_entry(7) is not None
    # An expired producer may come back with any sequence.
    assert log.append(B(PID, 0, 55)) == (2, 2)


def test_open_transaction_never_expires(log: Log) -> None:
    log.append(B(PID, 0, 0, max_timestamp=0, is_transactional=True))
    log.psm.producer_id_expiration_ms = 1
    assert log.psm.remove_expired_producers(10**12) == []


def test_snapshot_round_trip_and_replay(tmp_path: Path) -> None:
    psm = ProducerStateManager("t-0", str(tmp_path))
    log = Log(psm)
    log.append(B(PID, 0, 0, records=2))
    log.append(B(8, 1, 0, records=1, is_transactional=True))
    path = psm.take_snapshot(log.end)
    assert os.path.basename(path) == snapshot_file_name(3)
    log.append(B(PID, 0, 2, records=2))  # after the snapshot: found by replay
    fresh = ProducerStateManager("t-0", str(tmp_path))
    fresh.load(log.end, now_ms=2000)
    assert fresh.map_end_offset == 3
    fresh.replay(b for b in log.batches if b.base_offset >= fresh.map_end_offset)
    assert fresh.map_end_offset == 5
    e = fresh.last_entry(PID)
    assert e is not None and e.last_seq == 3 and e.last_data_offset == 4
    t = fresh.last_entry(8)
    assert t is not None and t.current_txn_first_offset == 2
    # The rebuilt state detects a retry of the last batch and checks sequences.
    log.psm = fresh
    assert log.append(B(PID, 0, 2, records=2)) == (3, 4)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(B(PID, 0, 9))


def test_load_skips_snapshots_beyond_log_end_and_corrupt_ones(tmp_path: Path) -> None:
    psm = ProducerStateManager("t-0", str(tmp_path))
    append_to(psm, [B(PID, 0, 0)], 0)
    psm.take_snapshot(1)
    append_to(psm, [B(PID, 0, 1)], 1)
    psm.take_snapshot(2)
    psm.take_snapshot(10)
    with open(os.path.join(tmp_path, snapshot_file_name(2)), "r+b") as fh:
        fh.seek(10)
        fh.write(b"\xff")
    fresh = ProducerStateManager("t-0", str(tmp_path))
    fresh.load(5, now_ms=0)
    assert fresh.map_end_offset == 1
    assert fresh.snapshot_offsets() == [1]
    e = fresh.last_entry(PID)
    assert e is not None and e.last_seq == 0


@pytest.mark.parametrize("data", [b"", b"\x00\x01", b"\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00", b"\x00\x01" + b"\x00" * 4 + b"\x7f\xff\xff\xff"])
def test_bad_snapshot_files_raise(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / snapshot_file_name(0)
    p.write_bytes(data)
    with pytest.raises(CorruptSnapshotError):
        ProducerStateManager.read_snapshot(str(p))


def test_expired_producers_dropped_on_load(tmp_path: Path) -> None:
    psm = ProducerStateManager("t-0", str(tmp_path), producer_id_expiration_ms=100)
    append_to(psm, [B(PID, 0, 0, max_timestamp=1000)], 0)
    psm.take_snapshot(1)
    fresh = ProducerStateManager("t-0", str(tmp_path), producer_id_expiration_ms=100)
    fresh.load(1, now_ms=1100)
    assert fresh.is_empty()


def test_truncate_and_reload(tmp_path: Path) -> None:
    psm = ProducerStateManager("t-0", str(tmp_path))
    append_to(psm, [B(PID, 0, 0)], 0)
    psm.take_snapshot(1)
    append_to(psm, [B(PID, 0, 1)], 1)
    psm.take_snapshot(2)
    psm.truncate_and_reload(0, 1, now_ms=0)
    assert psm.snapshot_offsets() == [1]
    e = psm.last_entry(PID)
    assert e is not None and e.last_seq == 0


def test_works_with_real_record_batches(tmp_path: Path) -> None:
    pb = ProducerBatch(TopicPartition("t", 0), 16384, 0)
    for i in range(3):
        pb.try_append(1000 + i, None, b"v", [], None, 0)
    pb.set_producer_state(PID, 0, 0, False)
    batch = DefaultRecordBatch(pb.records())
    psm = ProducerStateManager("t-0", str(tmp_path))
    assert append_to(psm, [batch], 10) is None
    dup = append_to(psm, [batch], 13)
    assert dup == BatchMetadata(2, 12, 2, 1002)


def test_producer_ids_unique_across_restarts(tmp_path: Path) -> None:
    m = ProducerIdManager(str(tmp_path), block_size=10)
    first = [m.generate_producer_id() for _ in range(15)]
    assert first == list(range(15))
    m2 = ProducerIdManager(str(tmp_path), block_size=10)  # "restart" mid-block
    nxt = m2.generate_producer_id()
    assert nxt == 20 and nxt not in first


def test_corrupt_producer_id_file(tmp_path: Path) -> None:
    (tmp_path / "producer_id_block").write_text("garbage")
    with pytest.raises(Exception, match="producer id block"):
        ProducerIdManager(str(tmp_path))


def test_an_entry_copy_is_equal_and_independent() -> None:
    from mini_broker.producer_state.producer_state_entry import BatchMetadata, ProducerStateEntry

    entry = ProducerStateEntry(7, 2, 3, 1234, 40, [BatchMetadata(4, 44, 4, 1234)])
    copy = entry.copy()
    assert type(copy) is ProducerStateEntry and repr(copy) == repr(entry)
    assert (copy.coordinator_epoch, copy.last_timestamp) == (3, 1234)
    copy.add_batch(2, 9, 49, 4, 1300)
    assert list(entry.batch_metadata) == [BatchMetadata(4, 44, 4, 1234)] and entry.last_timestamp == 1234
