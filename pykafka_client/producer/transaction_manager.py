"""The transactional producer's manager (Java ``TransactionManager``, transactional part), on top of the
idempotent bookkeeping of :class:`pykafka_client.producer.idempotence_manager.IdempotenceManager`.

Transactions (``transactional.id``, contract statements 75-85): the states and their transition table
are Java's (:data:`VALID_SOURCES`); an invalid transition asked for by the application raises
IllegalStateError and changes nothing, one on the Sender thread poisons the manager (FATAL_ERROR). The
transactional requests are queued here by priority and built, sent and answered by
:mod:`pykafka_client.producer.txn_request_handlers` on the Sender thread; which partition may be drained
is decided here (:meth:`TransactionManager.is_send_to_partition_allowed`).
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Mapping

from pykafka_client.errors import (
    IllegalStateError,
    InvalidProducerEpochError,
    ProducerFencedError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.producer.idempotence_manager import NONE, IdempotenceManager, PendingTransition, ProducerIdAndEpoch
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.producer.transaction_state import State
from pykafka_client.producer.transactional_request_result import TransactionalRequestResult
from pykafka_client.producer.txn_request_handlers import (
    GROUP_COORDINATOR,
    TRANSACTION_COORDINATOR,
    AddOffsetsToTxnHandler,
    AddPartitionsToTxnHandler,
    EndTxnHandler,
    FindCoordinatorHandler,
    GroupMetadata,
    InitProducerIdHandler,
    TxnRequestHandler,
)
from pykafka_client.structs import Node, OffsetAndMetadata, TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, Time

log = logging.getLogger(__name__)


class TransactionManager(IdempotenceManager):
    """The idempotent bookkeeping plus the transactions of a ``transactional.id``: the application-thread
    calls and the queue of transactional requests the Sender sends."""

    def __init__(
        self,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        retry_backoff_ms: int = 100,
        time: Time = SYSTEM_TIME,
    ) -> None:
        super().__init__(transactional_id, transaction_timeout_ms, retry_backoff_ms, time)
        # --- transactions (Java field names) ---
        self.partitions_in_transaction: set[TopicPartition] = set()
        self.pending_partitions_in_transaction: set[TopicPartition] = set()  # AddPartitionsToTxn sent
        self.new_partitions_in_transaction: set[TopicPartition] = set()  # AddPartitionsToTxn not sent yet
        self.pending_txn_offset_commits: dict[TopicPartition, OffsetAndMetadata] = {}
        self.transaction_started = False  # a partition or the offsets were added: EndTxn must be sent
        self._pending_requests: list[tuple[int, int, TxnRequestHandler]] = []
        self._enqueue_order = itertools.count()
        self.in_flight_handler: TxnRequestHandler | None = None
        self.transaction_coordinator: Node | None = None
        self.group_coordinator: Node | None = None

    def is_send_to_partition_allowed(self, tp: TopicPartition) -> bool:
        """Batches of ``tp`` may be drained: no fatal error and, in a transaction, ``tp`` was added to it
        (contract statement 77)."""
        if self.has_fatal_error():
            return False
        return not self.is_transactional() or tp in self.partitions_in_transaction

    # --- transactions: application thread ------------------------------------------------------------------

    def _ensure_transactional(self) -> None:
        if not self.is_transactional():
            raise IllegalStateError(
                "Transactional method invoked on a non-transactional producer: set the transactional.id "
                "configuration to use transactions"
            )

    def maybe_fail_with_error(self) -> None:
        """Raise if the manager is in an error state: the fatal error itself (the producer must be closed), or,
        for an abortable error, a KafkaError saying to abort."""
        err = self._last_error
        if self._state is State.FATAL_ERROR:
            if isinstance(err, (ProducerFencedError, InvalidProducerEpochError)):
                raise ProducerFencedError(
                    f"Producer with transactional.id {self.transactional_id!r} and {self._pid_epoch} has been fenced "
                    "by another producer with the same transactional.id; close this producer"
                ) from err
            message = (
                f"Cannot execute transactional method because the producer is in a fatal error state ({err!r}); "
                "close this producer and create a new one"
            )
            # the same class as the fatal error, so that callers can tell them apart
            cls = type(err) if isinstance(err, KafkaError) else KafkaError
            try:
                exc = cls(message)
            except Exception:
                exc = KafkaError(message)
            raise exc from err
        if self._state is State.ABORTABLE_ERROR:
            raise KafkaError(
                f"Cannot execute transactional method because we are in an error state ({err!r}); "
                "call abort_transaction() and retry the transaction"
            ) from err

    def _throw_if_pending_state(self, operation: str) -> None:
        if self.has_fatal_error():
            self.maybe_fail_with_error()  # a fatal error outranks a timed-out call: nothing can be retried
        pending = self._pending_transition
        if pending is not None:
            if pending.result.acked:
                self._pending_transition = None
            else:
                raise IllegalStateError(
                    f"Cannot attempt operation `{operation}` because the previous call to `{pending.operation}` "
                    "timed out and must be retried"
                )

    def _cached_result(self, target: State, operation: str, start: Callable[[], TransactionalRequestResult]) -> TransactionalRequestResult:
        """Start ``operation`` unless the previous call of it timed out, in which case hand back its result
        (contract statement 83); any other operation in between raises IllegalStateError."""
        self._ensure_transactional()
        if self.has_fatal_error():
            self.maybe_fail_with_error()
        pending = self._pending_transition
        if pending is not None:
            if pending.result.acked:
                self._pending_transition = None
            elif pending.state is not target:
                raise IllegalStateError(
                    f"Cannot attempt operation `{operation}` because the previous call to `{pending.operation}` "
                    "timed out and must be retried"
                )
            else:
                return pending.result
        result = start()
        self._pending_transition = PendingTransition(result, target, operation)
        return result

    def initialize_transactions(self) -> TransactionalRequestResult:
        """``init_transactions``: get a producer id for the transactional id (fencing older producers)."""
        with self.lock:
            self._ensure_transactional()
            self.maybe_fail_with_error()

            def start() -> TransactionalRequestResult:
                self._transition_to(State.INITIALIZING)
                self._pid_epoch = NONE
                log.info("transactional id %s: InitProducerId to obtain a producer id", self.transactional_id)
                return self._enqueue_init_producer_id(bump=False)

            return self._cached_result(State.INITIALIZING, "init_transactions", start)

    def begin_transaction(self) -> None:
        with self.lock:
            self._ensure_transactional()
            self._throw_if_pending_state("begin_transaction")
            self.maybe_fail_with_error()
            self._transition_to(State.IN_TRANSACTION)

    def begin_commit(self) -> TransactionalRequestResult:
        with self.lock:

            def start() -> TransactionalRequestResult:
                self.maybe_fail_with_error()
                self._transition_to(State.COMMITTING_TRANSACTION)
                return self._begin_completing_transaction(committed=True)

            return self._cached_result(State.COMMITTING_TRANSACTION, "commit_transaction", start)

    def begin_abort(self) -> TransactionalRequestResult:
        with self.lock:

            def start() -> TransactionalRequestResult:
                if self._state is not State.ABORTABLE_ERROR:
                    self.maybe_fail_with_error()
                self._transition_to(State.ABORTING_TRANSACTION)
                self.new_partitions_in_transaction.clear()  # nothing more to add to a transaction being aborted
                return self._begin_completing_transaction(committed=False)

            return self._cached_result(State.ABORTING_TRANSACTION, "abort_transaction", start)

    def _begin_completing_transaction(self, committed: bool) -> TransactionalRequestResult:
        if self.new_partitions_in_transaction:
            self.enqueue(self._add_partitions_handler())
        handler = EndTxnHandler(self, committed)
        self.enqueue(handler)
        return handler.result

    def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], group_metadata: GroupMetadata
    ) -> TransactionalRequestResult:
        """AddOffsetsToTxn for the group, then TxnOffsetCommit of ``offsets`` to its coordinator; the result
        completes when the offsets are committed into the transaction."""
        with self.lock:
            self._ensure_transactional()
            self._throw_if_pending_state("send_offsets_to_transaction")
            self.maybe_fail_with_error()
            if self._state is not State.IN_TRANSACTION:
                raise IllegalStateError(
                    f"Cannot send offsets if a transaction is not in progress (currently in state {self._state.name}): "
                    "call begin_transaction() first"
                )
            handler = AddOffsetsToTxnHandler(self, dict(offsets), group_metadata)
            self.enqueue(handler)
            return handler.result

    def fail_if_not_ready_for_send(self) -> None:
        """Checked by ``send()`` before appending (Java ``failIfNotReadyForSend``)."""
        if self.has_error():
            raise KafkaError(
                "Cannot perform send because at least one previous transactional or idempotent request has failed "
                f"with errors ({self._last_error!r})"
                + ("; call abort_transaction()" if self.has_abortable_error() else "; close this producer")
            ) from self._last_error
        if self.is_transactional():
            if not self.has_producer_id():
                raise IllegalStateError(
                    "Cannot perform a 'send' before completing a call to init_transactions() when transactions are enabled"
                )
            if self._state is not State.IN_TRANSACTION:
                raise IllegalStateError(
                    f"Cannot call send in state {self._state.name}: the transactional producer is not in a transaction "
                    "(call begin_transaction() first)"
                )

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """After a record for ``tp`` was appended: queue ``tp`` for AddPartitionsToTxn if it is new."""
        with self.lock:
            self.maybe_fail_with_error()
            self._throw_if_pending_state("send")
            if not self.is_transactional():
                return
            if not self.has_producer_id():
                raise IllegalStateError(f"Cannot add partition {tp} to transaction before completing a call to init_transactions()")
            if self._state is not State.IN_TRANSACTION:
                raise IllegalStateError(f"Cannot add partition {tp} to transaction while in state {self._state.name}")
            if tp in self.partitions_in_transaction or tp in self.pending_partitions_in_transaction:
                return
            if tp not in self.new_partitions_in_transaction:
                log.debug("transactional id %s: adding partition %s to the transaction", self.transactional_id, tp)
                self.new_partitions_in_transaction.add(tp)

    def forget_aborted_batch(self, batch: ProducerBatch) -> None:
        """A queued batch failed by an abort. One that was sent before (a retry) took sequence numbers the
        broker never acknowledged: the abort bumps the epoch so that the next transaction restarts at 0."""
        with self.lock:
            if batch.has_sequence():
                self.remove_in_flight_batch(batch)
                self.txn_epoch_bump_required = True

    def is_partition_added(self, tp: TopicPartition) -> bool:
        return tp in self.partitions_in_transaction

    def is_partition_pending_add(self, tp: TopicPartition) -> bool:
        return tp in self.new_partitions_in_transaction or tp in self.pending_partitions_in_transaction

    # --- transactions: request queue (Sender thread) ------------------------------------------------------

    def enqueue(self, handler: TxnRequestHandler) -> None:
        """Queue ``handler`` for the Sender, by priority then order."""
        with self.lock:
            heapq.heappush(self._pending_requests, (handler.priority, next(self._enqueue_order), handler))

    def _enqueue_init_producer_id(self, bump: bool, result: TransactionalRequestResult | None = None) -> TransactionalRequestResult:
        handler = InitProducerIdHandler(self, bump, result)
        self.enqueue(handler)
        return handler.result

    def _add_partitions_handler(self) -> TxnRequestHandler:
        self.pending_partitions_in_transaction |= self.new_partitions_in_transaction
        self.new_partitions_in_transaction.clear()
        return AddPartitionsToTxnHandler(self, sorted(self.pending_partitions_in_transaction))

    def has_pending_requests(self) -> bool:
        return bool(self._pending_requests) or bool(self.new_partitions_in_transaction)

    def has_in_flight_request(self) -> bool:
        return self.in_flight_handler is not None

    def retry(self, handler: TxnRequestHandler) -> None:
        """Put a request that could not be sent back in the queue (no backoff: nothing was sent)."""
        self.enqueue(handler)

    def next_request(self, has_incomplete_batches: bool) -> TxnRequestHandler | None:
        """The next transactional request to send, or None. EndTxn waits until every batch of the transaction
        is acknowledged (statement 76); a queued request fails at once in an error state (FindCoordinator may
        still go when the error is abortable); EndTxn is skipped when nothing was added (statement 84)."""
        with self.lock:
            if self.new_partitions_in_transaction:
                self.enqueue(self._add_partitions_handler())
            if not self._pending_requests:
                return None
            handler = self._pending_requests[0][2]
            if isinstance(handler, EndTxnHandler) and has_incomplete_batches:
                return None
            heapq.heappop(self._pending_requests)
            if self.has_error() and not (self.has_abortable_error() and isinstance(handler, FindCoordinatorHandler)):
                assert self._last_error is not None
                handler.result.fail(self._last_error)
                return None
            if isinstance(handler, EndTxnHandler) and not self.transaction_started:
                log.debug("transactional id %s: no EndTxn since nothing was added to the transaction", self.transactional_id)
                self.complete_transaction(handler.result)
                return heapq.heappop(self._pending_requests)[2] if self._pending_requests else None
            return handler

    def complete_transaction(self, result: TransactionalRequestResult) -> None:
        """EndTxn succeeded (or was not needed): READY and ``result`` done, or, when the epoch must be bumped
        (an abort after a failed send), INITIALIZING and ``result`` left to the InitProducerId that bumps it."""
        with self.lock:
            bump = self.txn_epoch_bump_required
            self._transition_to(State.INITIALIZING if bump else State.READY)
            self.txn_epoch_bump_required = False
            self.transaction_started = False
            self.new_partitions_in_transaction.clear()
            self.pending_partitions_in_transaction.clear()
            self.partitions_in_transaction.clear()
            self.pending_txn_offset_commits.clear()
            if bump:
                log.info("transactional id %s: bumping the epoch of %s after the abort", self.transactional_id, self._pid_epoch)
                self._enqueue_init_producer_id(bump=True, result=result)
            else:
                result.done()

    def lookup_coordinator(self, key_type: int, key: str) -> None:
        """Forget the coordinator and queue a FindCoordinator for it (once)."""
        with self.lock:
            if key_type == TRANSACTION_COORDINATOR:
                self.transaction_coordinator = None
            else:
                self.group_coordinator = None
            for _, _, h in self._pending_requests:
                if isinstance(h, FindCoordinatorHandler) and h.key_type == key_type and h.key == key:
                    return
            self.enqueue(FindCoordinatorHandler(self, key_type, key))

    def coordinator(self, key_type: int) -> Node | None:
        return self.transaction_coordinator if key_type == TRANSACTION_COORDINATOR else self.group_coordinator

    def resume_transaction(self, producer_id: int, epoch: int) -> None:
        """Adopt the open transaction of another producer instance with the same ``transactional.id``, by its
        producer id and epoch, so that this one can end it (``commit_transaction`` / ``abort_transaction``).

        Not a Java API: it is what Flink's Kafka sink does to Java's producer by reflection (a two-phase
        commit coordinator, here the Spark exactly-once sink, commits on the driver the transactions its
        tasks left open). No InitProducerId is sent (it would bump the epoch and abort the transaction);
        the manager goes UNINITIALIZED -> INITIALIZING -> READY -> IN_TRANSACTION with ``transaction_started``
        set, so the next EndTxn is sent with exactly ``producer_id`` / ``epoch``. The broker answers it as it
        would the original producer: NONE (also for a transaction already completed with the same result),
        PRODUCER_FENCED when the epoch was bumped since (the transaction was aborted), INVALID_TXN_STATE for
        the other result. Only on a fresh producer (no ``init_transactions``) and with nothing to send."""
        with self.lock:
            self._ensure_transactional()
            if self._state is not State.UNINITIALIZED:
                raise IllegalStateError(
                    f"resume_transaction needs a fresh producer (state {self._state.name}): create a new "
                    "producer with the transactional.id and do not call init_transactions() on it"
                )
            if producer_id < 0 or epoch < 0:
                raise IllegalStateError(f"resume_transaction: invalid producer id {producer_id} / epoch {epoch}")
            self._transition_to(State.INITIALIZING)
            self._pid_epoch = ProducerIdAndEpoch(producer_id, epoch)
            self._transition_to(State.READY)
            self._transition_to(State.IN_TRANSACTION)
            self.transaction_started = True
            log.info("transactional id %s: resumed the transaction of producer id %d epoch %d",
                     self.transactional_id, producer_id, epoch)

    def set_producer_id_and_epoch_for_transaction(self, producer_id: int, epoch: int) -> None:
        with self.lock:
            self._pid_epoch = ProducerIdAndEpoch(producer_id, epoch)
            self._transition_to(State.READY)
            self._last_error = None

    def close(self) -> None:
        """Force close: fail every queued transactional request and the pending call (statement 85)."""
        with self.lock:
            exc = KafkaError("The producer closed forcefully")
            for _, _, h in self._pending_requests:
                h.result.fail(exc)
            self._pending_requests.clear()
            if self.in_flight_handler is not None:
                self.in_flight_handler.result.fail(exc)
            self._fail_pending_transition(exc)


#: GroupMetadata and the coordinator key types live with the handlers that use them; importable from here too.
__all__ = ["GROUP_COORDINATOR", "TRANSACTION_COORDINATOR", "GroupMetadata", "State", "TransactionManager"]
