"""The driver: appends made before answers, markers through the broker's writer (or an ERROR and retries
without one), the periodic sweeps on its timer; MockTime and inline timers, no threads."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mini_broker.transaction.seams import TxnMarkerWriter
from mini_broker.transaction.transaction_config import TransactionConfig
from mini_broker.transaction.transaction_coordinator import TransactionCoordinator
from mini_broker.transaction.transaction_log import TransactionLog
from mini_broker.transaction.transaction_requests import (
    AddPartitionsParams,
    EndTxnParams,
    InitProducerIdParams,
    InitProducerIdResult,
)
from mini_broker.transaction.transaction_state import TransactionState
from pykafka_client.utils.time import MockTime
from tests.unit.broker.transaction.harness import TP0, TXN, RecordingWriter

S = TransactionState


class Fixture:
    def __init__(self, tmp_path: Path, writer: TxnMarkerWriter | None, config: TransactionConfig | None = None) -> None:
        self.time = MockTime()
        self.writer = writer
        pids = iter(range(100, 10**6))
        self.coordinator = TransactionCoordinator(config or TransactionConfig(), TransactionLog(str(tmp_path), self.time),
                                                  lambda: next(pids), lambda: self.writer, self.time,
                                                  timer_run_inline=True, reaper_enabled=False)
        self.coordinator.startup()

    def begin(self) -> tuple[int, int]:
        out: list[InitProducerIdResult] = []
        self.coordinator.handle_init_producer_id(InitProducerIdParams(TXN, 60000), out.append)
        pid, epoch = out[0].producer_id, out[0].producer_epoch
        errors: list[int] = []
        self.coordinator.handle_add_partitions(AddPartitionsParams(TXN, pid, epoch, [TP0]), errors.append)
        assert errors == [0]
        return pid, epoch

    def end(self, pid: int, epoch: int, commit: bool) -> int:
        errors: list[int] = []
        self.coordinator.handle_end_txn(EndTxnParams(TXN, pid, epoch, commit), errors.append)
        return errors[0]

    def state(self) -> TransactionState:
        return self.coordinator.core.transactions[TXN].state


def test_commit_through_the_marker_writer(tmp_path: Path) -> None:
    writer = RecordingWriter()
    f = Fixture(tmp_path, writer)
    pid, epoch = f.begin()
    assert f.end(pid, epoch, True) == 0
    assert f.state() is S.COMPLETE_COMMIT
    marker = writer.requests[0].markers[0]
    assert (marker.producer_id, marker.transaction_result, [t.name for t in marker.topics]) == (pid, True, ["t"])
    f.coordinator.shutdown()
    assert TransactionLog(str(tmp_path)).load()[TXN].state is S.COMPLETE_COMMIT


def test_without_a_marker_writer_the_transaction_waits_in_prepare_and_is_retried(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    f = Fixture(tmp_path, None)
    pid, epoch = f.begin()
    with caplog.at_level(logging.ERROR):
        assert f.end(pid, epoch, True) == 0
    assert f.state() is S.PREPARE_COMMIT
    assert any("no transaction marker writer" in r.getMessage() and r.levelno == logging.ERROR
               for r in caplog.records)
    assert f.end(pid, epoch, True) == 51  # CONCURRENT_TRANSACTIONS while the markers are missing
    f.writer = writer = RecordingWriter()
    f.time.sleep(100)
    f.coordinator.advance_clock()
    assert len(writer.requests) == 1 and f.state() is S.COMPLETE_COMMIT


def test_marker_errors_are_retried_on_the_timer(tmp_path: Path) -> None:
    writer = RecordingWriter(error=6)  # NOT_LEADER_OR_FOLLOWER
    f = Fixture(tmp_path, writer)
    pid, epoch = f.begin()
    assert f.end(pid, epoch, False) == 0
    assert f.state() is S.PREPARE_ABORT and len(writer.requests) == 1
    f.time.sleep(99)
    f.coordinator.advance_clock()
    assert len(writer.requests) == 1
    writer.error = 0
    f.time.sleep(1)
    f.coordinator.advance_clock()
    assert len(writer.requests) == 2 and f.state() is S.COMPLETE_ABORT


def test_sweeps_run_on_their_intervals(tmp_path: Path) -> None:
    config = TransactionConfig(transaction_abort_timed_out_transaction_cleanup_interval_ms=1000,
                               transaction_remove_expired_transaction_cleanup_interval_ms=5000,
                               transactional_id_expiration_ms=3000)
    writer = RecordingWriter()
    f = Fixture(tmp_path, writer, config)
    pid, epoch = f.begin()
    f.time.sleep(60000)
    f.coordinator.advance_clock()
    assert f.state() is S.ONGOING
    f.time.sleep(1000)
    f.coordinator.advance_clock()
    assert f.state() is S.COMPLETE_ABORT and writer.requests[0].markers[0].producer_epoch == epoch + 1
    assert f.end(pid, epoch, True) == 90  # PRODUCER_FENCED
    f.time.sleep(5000)
    f.coordinator.advance_clock()
    assert TXN not in f.coordinator.core.transactions
    f.coordinator.shutdown()
    assert TXN not in TransactionLog(str(tmp_path)).load()


def test_not_active_answers_coordinator_not_available(tmp_path: Path) -> None:
    f = Fixture(tmp_path, RecordingWriter())
    f.coordinator.shutdown()
    out: list[InitProducerIdResult] = []
    f.coordinator.handle_init_producer_id(InitProducerIdParams(TXN, 60000), out.append)
    assert out[0].error_code == 15
    assert f.coordinator.verify_partitions(TXN, 1, 0, [TP0]) == {TP0: 15}
