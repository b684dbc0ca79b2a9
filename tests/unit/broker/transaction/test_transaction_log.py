"""``__transaction_state``: the record format, and replay after a restart into a fresh core."""

from __future__ import annotations

from pathlib import Path

from mini_broker.transaction.transaction_config import TransactionConfig
from mini_broker.transaction.transaction_log import (
    TransactionLog,
    read_transaction_log_key,
    read_transaction_log_value,
    transaction_log_key,
    transaction_log_value,
)
from mini_broker.transaction.transaction_metadata import TxnTransitMetadata
from mini_broker.transaction.transaction_state import TransactionState
from tests.unit.broker.transaction.harness import TP0, TP1, TXN, Harness

S = TransactionState


def test_record_round_trip_and_tombstone() -> None:
    t = TxnTransitMetadata(5, 4, 3, 2, 60000, S.ONGOING, frozenset({TP0, TP1}), 100, 200)
    assert read_transaction_log_key(transaction_log_key("x")) == "x"
    value = transaction_log_value(t)
    assert value is not None and read_transaction_log_value(value) == t
    assert transaction_log_value(t.__class__(5, 4, 3, 2, 1, S.DEAD, frozenset(), -1, 1)) is None


def _restart(tmp_path: Path) -> Harness:
    h = Harness(txn_log=TransactionLog(str(tmp_path)), first_pid=5000)
    assert h.txn_log is not None
    h.run(h.core.load, h.txn_log.load())
    return h


def test_replay_after_restart(tmp_path: Path) -> None:
    h = Harness(TransactionConfig(transactional_id_expiration_ms=1000), txn_log=TransactionLog(str(tmp_path)))
    h.init_ok("gone")
    h.now += 1000
    pid, epoch = h.init_ok("a")
    h.add(pid, epoch, TP0, TP1, txn="a")
    pid_b, epoch_b = h.init_ok("b")
    h.add(pid_b, epoch_b, TP0, txn="b")
    h.end(pid_b, epoch_b, True, txn="b")
    assert h.run(h.core.expire_transactional_ids) == ["gone"]
    before = {k: m.to_transit() for k, m in h.core.transactions.items()}
    assert h.txn_log is not None
    h.txn_log.close()

    r = _restart(tmp_path)
    assert {k: m.to_transit() for k, m in r.core.transactions.items()} == before
    assert r.meta("a").state is S.ONGOING and r.meta("b").state is S.COMPLETE_COMMIT
    assert "gone" not in r.core.transactions and not r.markers
    assert r.end(pid, epoch, False, txn="a") == 0  # the reloaded transaction goes on
    assert r.meta("a").state is S.COMPLETE_ABORT
    assert r.init_ok("a") == (pid, epoch + 1)


def test_prepare_commit_found_at_load_writes_its_markers_and_completes(tmp_path: Path) -> None:
    h = Harness(txn_log=TransactionLog(str(tmp_path)))
    pid, epoch = h.init_ok()
    h.add(pid, epoch, TP0)
    h.hold_markers = True
    assert h.end(pid, epoch, True) == 0
    assert h.meta().state is S.PREPARE_COMMIT
    assert h.txn_log is not None
    h.txn_log.close()  # "crash" before the markers were answered

    r = _restart(tmp_path)
    marker = r.markers[0].request.markers[0]
    assert (marker.transaction_result, marker.producer_id, marker.producer_epoch) == (True, pid, epoch)
    assert r.meta().state is S.COMPLETE_COMMIT
    assert r.txn_log is not None
    r.txn_log.close()
    assert _restart(tmp_path).meta(TXN).state is S.COMPLETE_COMMIT  # the completion was appended too
