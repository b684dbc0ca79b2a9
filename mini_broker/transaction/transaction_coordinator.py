"""The transaction coordinator's driver (Kafka: ``kafka.coordinator.transaction.TransactionCoordinator`` with
its ``TransactionStateManager`` and ``TransactionMarkerChannelManager``).

It answers InitProducerId (with a transactional id), AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
DescribeTransactions and ListTransactions, and verifies transactional produce (it is the broker's
:class:`~mini_broker.transaction.seams.TransactionVerifier`). The decisions are the sans-IO core's
(:class:`TransactionCore`); this driver owns what is not pure: the lock that serialises calls into the core,
the clock, ``__transaction_state`` (replayed through :class:`TransactionLog`; every transition returns its
record as a :class:`~mini_broker.coordinator.result.CoordinatorResult` which the runtime appends and fsyncs
under the lock before the core completes the transition), the marker writes through the broker's
``TxnMarkerWriter`` and the timers (the timed-out transaction sweep every
``transaction.abort.timed.out.transaction.cleanup.interval.ms``, the expired-id sweep every
``transaction.remove.expired.transaction.cleanup.interval.ms``, marker retries).

Order of one call: under the lock, the core runs and every log append it asks for is written by the runtime
and handed back (which may emit more effects); then, with no lock held (on a cluster broker once the ISR has the
records: ``CoordinatorRuntime.when_durable``), replies are sent, markers handed to the writer and retries
scheduled. A marker writer may call back from any thread, or at once from ``write_txn_markers``.

Its lifecycle on ``__transaction_state`` is the :class:`~mini_broker.coordinator.runtime.CoordinatorRuntime`'s
(``runtime``), which hosts it (:meth:`TransactionCoordinator.load` / :meth:`~TransactionCoordinator.on_loaded` /
:meth:`~TransactionCoordinator.unload`): on a cluster broker it serves only while the broker leads the
partition, NOT_COORDINATOR otherwise, COORDINATOR_LOAD_IN_PROGRESS while loading.

When the broker has no marker writer (``txn_marker_writer`` unset) a committed or aborted transaction cannot
complete: it stays in PrepareCommit/PrepareAbort (its producer gets CONCURRENT_TRANSACTIONS), the coordinator
logs an ERROR and keeps retrying.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Concatenate, Final, ParamSpec, TypeVar

from mini_broker.coordinator.result import CoordinatorResult, append_error_code
from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.timer.system_timer import SystemTimer, SystemTimerReaper
from mini_broker.timer.timer_task import TimerTask
from mini_broker.transaction.seams import TxnMarkerWriter
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
from mini_broker.transaction.transaction_log import (
    TRANSACTION_STATE_TOPIC_NAME,
    TransactionLog,
    transaction_state_records,
)
from mini_broker.transaction.transaction_metadata import TxnTransitMetadata
from mini_broker.transaction.transaction_requests import (
    AddPartitionsParams,
    EndTxnParams,
    ErrorCallback,
    InitProducerIdCallback,
    InitProducerIdParams,
    InitProducerIdResult,
    TransactionDescription,
)
from pykafka_client.errors import CoordinatorNotAvailableError, NotLeaderOrFollowerError
from pykafka_client.protocol.messages import WriteTxnMarkersResponse
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

R = TypeVar("R")
P = ParamSpec("P")

#: At most one "no marker writer" ERROR per this many ms (the retry loop runs far more often).
_NO_WRITER_LOG_INTERVAL_MS: Final = 10000


class _MarkerRetry(TimerTask):
    def __init__(self, coordinator: TransactionCoordinator, transactional_id: str, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self._coordinator = coordinator
        self._transactional_id = transactional_id

    def run(self) -> None:
        self._coordinator.on_marker_retry(self._transactional_id)


class TransactionCoordinator:
    """Coordinates every transactional id of this broker. Call :meth:`startup` before use.

    ``marker_writer`` returns the broker's current ``TxnMarkerWriter`` (None: none yet). ``timer_run_inline``
    with ``reaper_enabled=False`` makes the timers deterministic for tests with a ``MockTime``: nothing fires
    until :meth:`advance_clock` is called.
    """

    def __init__(self, config: TransactionConfig, txn_log: TransactionLog, generate_producer_id: Callable[[], int],
                 marker_writer: Callable[[], TxnMarkerWriter | None], time: Time = SYSTEM_TIME, *,
                 timer_run_inline: bool = False, reaper_enabled: bool = True) -> None:
        self.config = config
        self.txn_log = txn_log
        self.time = time
        self.core = TransactionCore(generate_producer_id)
        self._generate_producer_id = generate_producer_id
        self._marker_writer = marker_writer
        self._lock = threading.RLock()
        self._retries_armed: set[str] = set()
        #: what :meth:`load` replayed per partition, taken over by the core in :meth:`on_loaded`
        self._replayed: dict[int, dict[str, TxnTransitMetadata]] = {}
        self._no_writer_logged_at: int | None = None
        self.timer = SystemTimer("transaction-coordinator", time, start_ms=time.hi_res_clock_ms(),
                                 run_inline=timer_run_inline)
        self._reaper = SystemTimerReaper("transaction-coordinator", self.timer) if reaper_enabled else None
        #: the lifecycle on ``__transaction_state`` (election, load, resignation), its appends and the timers
        self.runtime = CoordinatorRuntime(TRANSACTION_STATE_TOPIC_NAME, txn_log.partitions, self, self.timer)
        self.core.partition_of = self.runtime.partition_for

    # -- lifecycle ----------------------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        return self.runtime.is_active

    @property
    def is_running(self) -> bool:
        return self.runtime.is_running

    def startup(self, follow_partition_leadership: bool = False) -> None:
        """Start the sweeps and serve: a single broker replays ``__transaction_state`` now (resuming the markers
        of Prepare* transactions); with ``follow_partition_leadership`` (a cluster broker) nothing is loaded
        and every request gets NOT_COORDINATOR until the runtime's election."""
        self.runtime.startup(follow_partition_leadership)
        self.runtime.schedule_periodic(self.abort_timed_out_transactions,
                                       self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                                       "abort timed-out transactions")
        self.runtime.schedule_periodic(self.expire_transactional_ids,
                                       self.config.transaction_remove_expired_transaction_cleanup_interval_ms,
                                       "expire transactional ids")

    # -- HostedCoordinator --------------------------------------------------------------------------------
    def load(self, coordinator_epoch: int | None, partition: int) -> int:
        """Replay ``__transaction_state`` partition ``partition``; on an election the markers of its transactional
        ids carry ``coordinator_epoch`` (the partition's leader epoch). Prepare* transactions have their markers
        written again once serving; Ongoing ones time out as usual."""
        if coordinator_epoch is not None:
            with self._lock:
                self.core.partition_epochs[partition] = coordinator_epoch
        replayed = self.txn_log.load(self.runtime.get_partition(partition))
        with self._lock:
            self._replayed[partition] = replayed
        return len(replayed)

    def on_loaded(self, partition: int) -> None:
        with self._lock:
            replayed = self._replayed.pop(partition, {})
        self._run(self.core.load, replayed)

    def unload(self, partition: int) -> None:
        with self._lock:
            dropped = self.core.unload(lambda transactional_id: self.runtime.partition_for(transactional_id)
                                       == partition)
            self.core.partition_epochs.pop(partition, None)
            self._retries_armed.difference_update(dropped)
            self._replayed.pop(partition, None)

    def shutdown(self) -> None:
        self.runtime.shutdown()
        if self._reaper is not None:
            self._reaper.close()
        else:
            self.timer.close()
        with self._lock:
            self.txn_log.close()

    def advance_clock(self) -> None:
        """Fire what is due now (tests with a MockTime and inline timers)."""
        while self.timer.advance_clock(0):
            pass

    # -- driving the core ---------------------------------------------------------------------------------
    def _run(self, call: Callable[Concatenate[Step, P], R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``call(step, *args)`` into the core under the lock, with every append it asks for written by the
        runtime and handed back; then the other effects, with no lock held (on a cluster broker once the ISR has
        the appended records)."""
        with self._lock:
            now = self.time.milliseconds()
            step = Step(self.config, now)
            result = call(step, *args, **kwargs)
            queue: deque[Effect] = deque(step.effects)
            outside: list[Effect] = []
            appended = False
            while queue:
                effect = queue.popleft()
                if isinstance(effect, AppendTxnState):
                    appended = True
                    follow = Step(self.config, now)
                    error = (self.runtime.write(self.transition_result(effect, now))
                             if self.runtime.serves(effect.transactional_id) else CoordinatorNotAvailableError.code)
                    self.core.on_append_complete(follow, effect, error)
                    queue.extend(follow.effects)
                else:
                    outside.append(effect)
        if appended and outside:
            self.runtime.when_durable(lambda error: self._apply_replicated(outside, error))
            return result
        for effect in outside:
            self._apply(effect)
        return result

    @staticmethod
    def transition_result(effect: AppendTxnState, now: int) -> CoordinatorResult[int]:
        """The write of one transition (sans-IO): its ``__transaction_state`` record, fsynced; the answer is the
        append's error code for ``TransactionCore.on_append_complete`` (0, NOT_COORDINATOR once this broker no
        longer leads the partition, COORDINATOR_NOT_AVAILABLE when the log failed)."""
        def failed(error: Exception) -> int:
            if isinstance(error, NotLeaderOrFollowerError):
                _log.warning("event=txn_state_append_refused transactional_id=%r msg=\"this broker no longer leads "
                             "__transaction_state; the client finds the new coordinator\"", effect.transactional_id)
            else:
                _log.error("appending %s for transactional id %r to __transaction_state failed",
                           effect.transit.state.state_name, effect.transactional_id, exc_info=error)
            return append_error_code(error)

        records = transaction_state_records({effect.transactional_id: effect.transit}, now)
        return CoordinatorResult(records, 0, flush=True, on_failed=failed)

    def _apply_replicated(self, effects: list[Effect], error: int) -> None:
        """The effects of a transition whose records the ISR has (``error`` 0); else successful answers carry
        ``error`` (the client retries, finding the coordinator again) and a resigned coordinator writes no
        markers (its successor does)."""
        for effect in effects:
            if error:
                if isinstance(effect, SendErrorResponse) and effect.error_code == 0:
                    effect.reply(error)
                    continue
                if isinstance(effect, SendInitProducerIdResponse) and effect.result.error_code == 0:
                    effect.reply(InitProducerIdResult(error))
                    continue
                if isinstance(effect, (WriteTxnMarkers, ScheduleMarkerRetry)) \
                        and not self.runtime.serves(effect.transactional_id):
                    continue
            self._apply(effect)

    def _apply(self, effect: Effect) -> None:
        if isinstance(effect, SendInitProducerIdResponse):
            effect.reply(effect.result)
        elif isinstance(effect, SendErrorResponse):
            effect.reply(effect.error_code)
        elif isinstance(effect, WriteTxnMarkers):
            self._write_markers(effect)
        elif isinstance(effect, ScheduleMarkerRetry):
            with self._lock:
                if effect.transactional_id in self._retries_armed or not self.runtime.serves(effect.transactional_id):
                    return
                self._retries_armed.add(effect.transactional_id)
            self.runtime.schedule(_MarkerRetry(self, effect.transactional_id, effect.delay_ms))

    def _write_markers(self, effect: WriteTxnMarkers) -> None:
        writer = self._marker_writer()
        if writer is None:
            now = self.time.milliseconds()
            if self._no_writer_logged_at is None or now - self._no_writer_logged_at >= _NO_WRITER_LOG_INTERVAL_MS:
                self._no_writer_logged_at = now
                _log.error("transactional id %r cannot complete: this broker has no transaction marker writer "
                           "(BrokerContext.txn_marker_writer is unset), so its markers are not written; it stays in "
                           "%s and is retried. Wire the WriteTxnMarkers path into the broker.",
                           effect.transactional_id, "PrepareCommit" if effect.request.markers[0].transaction_result
                           else "PrepareAbort")
            self._markers_failed(effect)
            return
        try:
            writer.write_txn_markers(effect.request, lambda response: self._on_markers_written(effect, response))
        except Exception:
            _log.exception("writing the markers of transactional id %r failed; they are retried",
                           effect.transactional_id)
            self._markers_failed(effect)

    def _markers_failed(self, effect: WriteTxnMarkers) -> None:
        marker = effect.request.markers[0]
        errors = {TopicPartition(t.name, p): CoordinatorNotAvailableError.code
                  for t in marker.topics for p in t.partition_indexes}
        self._run(self.core.on_markers_written, effect, errors)

    def _on_markers_written(self, effect: WriteTxnMarkers, response: WriteTxnMarkersResponse) -> None:
        errors: dict[TopicPartition, int] = {}
        for result in response.markers:
            for topic in result.topics:
                for p in topic.partitions:
                    errors[TopicPartition(topic.name, p.partition_index)] = p.error_code
        self._run(self.core.on_markers_written, effect, errors)

    def on_marker_retry(self, transactional_id: str) -> None:
        with self._lock:
            self._retries_armed.discard(transactional_id)
        if self.runtime.serves(transactional_id):
            self._run(self.core.retry_markers, transactional_id)

    # -- requests -----------------------------------------------------------------------------------------
    def handle_init_producer_id(self, request: InitProducerIdParams, reply: InitProducerIdCallback) -> None:
        error = self._error_for(request.transactional_id)
        if error is not None:
            reply(InitProducerIdResult(error))
            return
        self._run(self.core.init_producer_id, request, reply)

    def _error_for(self, transactional_id: str) -> int | None:
        """Why a request of ``transactional_id`` is not served here (None: it is). An empty one is left to the
        core while any partition is served."""
        if not transactional_id:  # the core answers INVALID_REQUEST
            return None if self.runtime.is_active else self.runtime.inactive_error()
        return self.runtime.error_for(transactional_id)

    def handle_add_partitions(self, request: AddPartitionsParams, reply: ErrorCallback) -> None:
        error = self._error_for(request.transactional_id)
        if error is not None:
            reply(error)
            return
        self._run(self.core.add_partitions, request, reply)

    def handle_end_txn(self, request: EndTxnParams, reply: ErrorCallback) -> None:
        error = self._error_for(request.transactional_id)
        if error is not None:
            reply(error)
            return
        self._run(self.core.end_txn, request, reply)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """:class:`~mini_broker.transaction.seams.TransactionVerifier` (KIP-890 verify-only add)."""
        error = self._error_for(transactional_id)
        if error is not None:
            return {tp: error for tp in partitions}
        with self._lock:
            return self.core.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)

    def handle_describe(self, transactional_id: str) -> tuple[int, TransactionDescription | None]:
        error = self._error_for(transactional_id)
        if error is not None:
            return error, None
        with self._lock:
            return self.core.describe(transactional_id)

    def handle_list(self, states: Sequence[str], producer_ids: Sequence[int],
                    duration_ms: int) -> tuple[int, list[str], list[TransactionDescription]]:
        """(error, unknown state filters, transactions) of every partition served here."""
        if self.runtime.leads_no_partition:
            return 0, [], []  # a cluster broker lists the transactions of the partitions it leads: none
        if not self.runtime.is_active or self.runtime.is_loading:
            return self.runtime.inactive_error(), [], []
        with self._lock:
            unknown, found = self.core.list_transactions(self.time.milliseconds(), states, producer_ids, duration_ms)
        return 0, unknown, found

    # -- sweeps -------------------------------------------------------------------------------------------
    def abort_timed_out_transactions(self) -> list[str]:
        return self._run(self.core.abort_timed_out_transactions)

    def expire_transactional_ids(self) -> list[str]:
        return self._run(self.core.expire_transactional_ids)
