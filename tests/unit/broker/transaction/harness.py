"""A TransactionCore driven by hand: ``now`` set by the test, appends and markers answered automatically
unless the test holds them (``hold_appends`` / ``hold_markers``)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from mini_broker.transaction.transaction_config import TransactionConfig
from mini_broker.transaction.transaction_core import TransactionCore
from mini_broker.transaction.transaction_effects import (
    AppendTxnState,
    Effect,
    ScheduleMarkerRetry,
    SendErrorResponse,
    SendInitProducerIdResponse,
    Step,
    WriteTxnMarkers,
)
from mini_broker.transaction.transaction_log import TransactionLog, transaction_state_records
from mini_broker.transaction.transaction_metadata import TransactionMetadata
from mini_broker.transaction.transaction_requests import (
    AddPartitionsParams,
    EndTxnParams,
    InitProducerIdParams,
    InitProducerIdResult,
)
from pykafka_client.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from pykafka_client.structs import TopicPartition

TXN = "txn"
TIMEOUT_MS = 60_000
FIRST_PID = 1000
TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
R = WriteTxnMarkersResponse


class Harness:
    def __init__(self, config: TransactionConfig | None = None, txn_log: TransactionLog | None = None,
                 first_pid: int = FIRST_PID) -> None:
        self.config = config or TransactionConfig()
        self.now = 1_000_000
        pids = itertools.count(first_pid)
        self.core = TransactionCore(lambda: next(pids))
        self.txn_log = txn_log
        self.appended: list[AppendTxnState] = []
        self.held_appends: list[AppendTxnState] = []
        self.markers: list[WriteTxnMarkers] = []
        self.held_markers: list[WriteTxnMarkers] = []
        self.retries: list[ScheduleMarkerRetry] = []
        self.hold_appends = False
        self.hold_markers = False
        self.fail_appends_with: int | None = None

    # -- running the core ---------------------------------------------------------------------------------
    def run(self, call: Callable[..., Any], *args: Any) -> Any:
        step = Step(self.config, self.now)
        result = call(step, *args)
        self._apply(step.effects)
        return result

    def _apply(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, SendInitProducerIdResponse):
                effect.reply(effect.result)
            elif isinstance(effect, SendErrorResponse):
                effect.reply(effect.error_code)
            elif isinstance(effect, AppendTxnState):
                if self.hold_appends:
                    self.held_appends.append(effect)
                else:
                    self.complete_append(effect)
            elif isinstance(effect, WriteTxnMarkers):
                self.markers.append(effect)
                if self.hold_markers:
                    self.held_markers.append(effect)
                else:
                    self.answer_markers(effect)
            else:
                self.retries.append(effect)

    def complete_append(self, effect: AppendTxnState, error: int | None = None) -> None:
        error = self.fail_appends_with if error is None else error
        if not error:
            self.appended.append(effect)
            if self.txn_log is not None:
                # what the runtime does with a transition's records (the test stands in for it)
                self.txn_log.partition.append(
                    transaction_state_records({effect.transactional_id: effect.transit}, self.now), flush=True)
        self.run(self.core.on_append_complete, effect, error or 0)

    def answer_markers(self, effect: WriteTxnMarkers, errors: dict[TopicPartition, int] | None = None) -> None:
        marker = effect.request.markers[0]
        answers = {TopicPartition(t.name, p): 0 for t in marker.topics for p in t.partition_indexes}
        answers.update(errors or {})
        self.run(self.core.on_markers_written, effect, answers)

    # -- requests ---------------------------------------------------------------------------------------
    def init(self, txn: str = TXN, timeout_ms: int = TIMEOUT_MS, pid: int = -1, epoch: int = -1) -> InitProducerIdResult | None:
        out: list[InitProducerIdResult] = []
        self.run(self.core.init_producer_id, InitProducerIdParams(txn, timeout_ms, pid, epoch), out.append)
        return out[0] if out else None

    def add(self, pid: int, epoch: int, *tps: TopicPartition, txn: str = TXN) -> int | None:
        out: list[int] = []
        self.run(self.core.add_partitions, AddPartitionsParams(txn, pid, epoch, list(tps or (TP0,))), out.append)
        return out[0] if out else None

    def end(self, pid: int, epoch: int, commit: bool, txn: str = TXN) -> int | None:
        out: list[int] = []
        self.run(self.core.end_txn, EndTxnParams(txn, pid, epoch, commit), out.append)
        return out[0] if out else None

    def meta(self, txn: str = TXN) -> TransactionMetadata:
        return self.core.transactions[txn]

    def init_ok(self, txn: str = TXN) -> tuple[int, int]:
        r = self.init(txn)
        assert r is not None and r.error_code == 0, r
        return r.producer_id, r.producer_epoch


class RecordingWriter:
    """Records every marker request and answers it at once with ``error`` for every partition."""

    def __init__(self, error: int = 0) -> None:
        self.requests: list[WriteTxnMarkersRequest] = []
        self.error = error

    def write_txn_markers(self, request: WriteTxnMarkersRequest,
                          on_complete: Callable[[WriteTxnMarkersResponse], None]) -> None:
        self.requests.append(request)
        on_complete(R(markers=[R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
            R.WritableTxnMarkerTopicResult(name=t.name, partitions=[
                R.WritableTxnMarkerPartitionResult(partition_index=p, error_code=self.error)
                for p in t.partition_indexes]) for t in m.topics]) for m in request.markers]))
