"""The transaction coordinator's sans-IO core (Kafka: ``TransactionCoordinator`` handle* methods and the
marker completion of ``TransactionMarkerChannelManager``).

Typed requests and ``step.now`` in; transactional ids' state changed, effects out
(:mod:`transaction_effects`). Every state change is two-phase: the core prepares a transition (the id gets
a pending state and CONCURRENT_TRANSACTIONS answers meanwhile) and emits an :class:`AppendTxnState`; the
driver hands it back with the append's result (:meth:`TransactionCore.on_append_complete`), and only then is
the state changed and the client answered. A Prepare* state then emits :class:`WriteTxnMarkers`; when every
partition has its marker the Complete* record is appended.

Producer ids come from ``generate_producer_id`` (the broker's ProducerIdManager in production, a counter in
unit tests).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from mini_broker.coordinator.partitioning import drop_keys_of_partition
from mini_broker.transaction.transaction_effects import (
    AppendTxnState,
    Response,
    ScheduleMarkerRetry,
    SendErrorResponse,
    SendInitProducerIdResponse,
    Step,
    WriteTxnMarkers,
)
from mini_broker.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from mini_broker.transaction.transaction_requests import (
    NONE,
    AddPartitionsParams,
    EndTxnParams,
    ErrorCallback,
    InitProducerIdCallback,
    InitProducerIdParams,
    InitProducerIdResult,
    TransactionDescription,
)
from mini_broker.transaction.transaction_state import (
    EXPIRABLE_STATES,
    IllegalTransitionError,
    TransactionState,
)
from pykafka_client.errors import (
    ConcurrentTransactionsError,
    InvalidPidMappingError,
    InvalidProducerEpochError,
    InvalidRequestError,
    InvalidTxnStateError,
    InvalidTxnTimeoutError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionalIdNotFoundError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.protocol.messages import WriteTxnMarkersRequest
from pykafka_client.structs import TopicPartition

_log = logging.getLogger(__name__)

S = TransactionState
#: This broker is the only transaction coordinator; its partition of ``__transaction_state`` never moves.
COORDINATOR_EPOCH = 0
#: Marker errors that cannot be cured by sending again (the partition is gone, or a newer coordinator or
#: producer epoch owns it): the partition is dropped from the transaction, with an ERROR log.
_UNRETRIABLE_MARKER_ERRORS = frozenset({UnknownTopicOrPartitionError.code, InvalidProducerEpochError.code, 52})


class TransactionCore:
    """Every transactional id of this coordinator and the decisions about them. Not thread-safe: the driver
    serialises calls."""

    def __init__(self, generate_producer_id: Callable[[], int], coordinator_epoch: int = COORDINATOR_EPOCH) -> None:
        self.transactions: dict[str, TransactionMetadata] = {}
        self._generate_producer_id = generate_producer_id
        #: written in every marker (a partition fences markers of an older coordinator epoch); on a cluster the
        #: leader epoch of the ``__transaction_state`` partition of the transactional id (:attr:`partition_epochs`)
        self.coordinator_epoch = coordinator_epoch
        #: ``__transaction_state`` partition -> the leader epoch this coordinator was elected with for it
        self.partition_epochs: dict[int, int] = {}
        #: the ``__transaction_state`` partition of a transactional id
        self.partition_of: Callable[[str], int] = lambda transactional_id: 0

    def coordinator_epoch_of(self, transactional_id: str) -> int:
        return self.partition_epochs.get(self.partition_of(transactional_id), self.coordinator_epoch)

    def unload(self, in_partition: Callable[[str], bool]) -> list[str]:
        """Drop the transactional ids ``in_partition`` (a partition this coordinator no longer serves)."""
        dropped = [t for t in self.transactions if in_partition(t)]
        drop_keys_of_partition(in_partition, self.transactions)
        return dropped

    # -- replay -----------------------------------------------------------------------------------------
    def load(self, step: Step, loaded: Mapping[str, TxnTransitMetadata]) -> None:
        """Take over what ``__transaction_state`` holds; a transaction found in Prepare* has its markers
        (re)written and then completes."""
        for txn_id, transit in loaded.items():
            self.transactions[txn_id] = TransactionMetadata.from_transit(txn_id, transit)
        for metadata in [self.transactions[txn_id] for txn_id in loaded]:
            if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._send_markers(step, metadata)

    # -- InitProducerId -----------------------------------------------------------------------------------
    def init_producer_id(self, step: Step, request: InitProducerIdParams, reply: InitProducerIdCallback) -> None:
        def answer(error: int) -> None:
            step.emit(SendInitProducerIdResponse(reply, InitProducerIdResult(error)))

        if not request.transactional_id:
            answer(InvalidRequestError.code)
            return
        if not 0 < request.transaction_timeout_ms <= step.config.transaction_max_timeout_ms:
            answer(InvalidTxnTimeoutError.code)
            return
        metadata = self.transactions.get(request.transactional_id)
        if metadata is None:
            metadata = TransactionMetadata(request.transactional_id, self._generate_producer_id(), NO_PRODUCER_ID,
                                           NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, request.transaction_timeout_ms,
                                           S.EMPTY, txn_last_update_timestamp=step.now)
            self.transactions[request.transactional_id] = metadata
        expected = None if request.producer_id == NO_PRODUCER_ID else (request.producer_id, request.producer_epoch)
        if metadata.pending_state is not None:
            answer(ConcurrentTransactionsError.code)
            return
        if expected is not None and not self._is_valid_producer_id(metadata, *expected):
            answer(ProducerFencedError.code)
            return
        state = metadata.state
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            answer(ConcurrentTransactionsError.code)
            return
        if state is S.ONGOING:
            # Fence the producer of the open transaction and abort it; the client retries and gets a bump.
            try:
                fenced_epoch = metadata.prepare_fence_producer_epoch()
            except OverflowError:
                _log.error("cannot fence transactional id %r: its epoch is %d", metadata.transactional_id,
                           metadata.producer_epoch)
                answer(UnknownServerError.code)
                return
            transit = metadata.prepare_abort_or_commit(S.PREPARE_ABORT, step.now, producer_epoch=fenced_epoch)
            step.emit(AppendTxnState(metadata.transactional_id, transit, SendInitProducerIdResponse(
                reply, InitProducerIdResult(ConcurrentTransactionsError.code))))
            return
        if state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            _log.error("InitProducerId for %r in state %s", metadata.transactional_id, state.state_name)
            answer(UnknownServerError.code)
            return
        if is_epoch_exhausted(metadata.producer_epoch) and (expected is None or expected[1] == metadata.producer_epoch):
            new_transit: TxnTransitMetadata | None = metadata.prepare_producer_id_rotation(
                self._generate_producer_id(), request.transaction_timeout_ms, step.now,
                record_last_epoch=expected is not None)
        else:
            new_transit = metadata.prepare_increment_producer_epoch(
                request.transaction_timeout_ms, None if expected is None else expected[1], step.now)
        if new_transit is None:
            answer(ProducerFencedError.code)
            return
        step.emit(AppendTxnState(metadata.transactional_id, new_transit, SendInitProducerIdResponse(
            reply, InitProducerIdResult(NONE, new_transit.producer_id, new_transit.producer_epoch))))

    @staticmethod
    def _is_valid_producer_id(metadata: TransactionMetadata, producer_id: int, producer_epoch: int) -> bool:
        """KIP-360: a client's current pid/epoch is accepted when the id is fresh, when it is the current pid
        (its epoch is checked by the epoch bump; an Ongoing transaction is fenced whatever it is), or the previous
        pid of a rotation at an exhausted epoch (a retry whose answer was lost)."""
        return (metadata.producer_epoch == NO_PRODUCER_EPOCH or producer_id == metadata.producer_id
                or (producer_id == metadata.previous_producer_id and is_epoch_exhausted(producer_epoch)))

    # -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------------------
    def _check_producer(self, transactional_id: str, producer_id: int,
                        producer_epoch: int) -> tuple[int, TransactionMetadata | None]:
        if not transactional_id:
            return InvalidRequestError.code, None
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.state is S.DEAD or metadata.producer_id != producer_id:
            return InvalidPidMappingError.code, None
        if metadata.producer_epoch != producer_epoch:
            return ProducerFencedError.code, None
        return NONE, metadata

    def add_partitions(self, step: Step, request: AddPartitionsParams, reply: ErrorCallback) -> None:
        error, metadata = self._check_producer(request.transactional_id, request.producer_id,
                                               request.producer_epoch)
        if metadata is None:
            step.emit(SendErrorResponse(reply, error))
            return
        if metadata.pending_state is not None or metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            step.emit(SendErrorResponse(reply, ConcurrentTransactionsError.code))
            return
        partitions = frozenset(request.partitions)
        if metadata.state is S.ONGOING and partitions <= metadata.partitions:
            step.emit(SendErrorResponse(reply, NONE))
            return
        transit = metadata.prepare_add_partitions(partitions, step.now)
        step.emit(AppendTxnState(metadata.transactional_id, transit, SendErrorResponse(reply, NONE)))

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """KIP-890 verify-only AddPartitionsToTxn: NONE for a partition of the ongoing transaction,
        TRANSACTION_ABORTABLE for one that is not (the producer must abort), pid/epoch errors as for adds."""
        error, metadata = self._check_producer(transactional_id, producer_id, producer_epoch)
        if metadata is None:
            return {tp: error for tp in partitions}
        ongoing = metadata.state is S.ONGOING and metadata.pending_state is None
        return {tp: NONE if ongoing and tp in metadata.partitions else TransactionAbortableError.code
                for tp in partitions}

    # -- EndTxn -----------------------------------------------------------------------------------------
    def end_txn(self, step: Step, request: EndTxnParams, reply: ErrorCallback) -> None:
        error, metadata = self._check_producer(request.transactional_id, request.producer_id,
                                               request.producer_epoch)
        if metadata is None:
            step.emit(SendErrorResponse(reply, error))
            return
        if metadata.pending_state is not None:
            step.emit(SendErrorResponse(reply, ConcurrentTransactionsError.code))
            return
        commit = request.committed
        state = metadata.state
        if state is S.ONGOING:
            transit = metadata.prepare_abort_or_commit(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, step.now)
            step.emit(AppendTxnState(metadata.transactional_id, transit, SendErrorResponse(reply, NONE)))
            return
        if state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT):
            answer = NONE  # a retry of an EndTxn that completed
        elif state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
            answer = ConcurrentTransactionsError.code  # its markers are being written
        else:
            answer = InvalidTxnStateError.code  # the other result, or no transaction (Empty)
        step.emit(SendErrorResponse(reply, answer))

    # -- appends and markers ------------------------------------------------------------------------------
    def on_append_complete(self, step: Step, append: AppendTxnState, error: int) -> None:
        """The driver appended ``append`` (``error`` NONE) or failed to (the transition is dropped and the
        waiting client gets ``error``)."""
        metadata = self.transactions.get(append.transactional_id)
        if metadata is None or metadata.pending_state is not append.transit.state:
            _log.error("append of %s for %r completed but the transactional id moved on",
                       append.transit.state.state_name, append.transactional_id)
            self._respond(step, append.response, UnknownServerError.code)
            return
        if error != NONE:
            metadata.abort_transition()
            if metadata.state is S.EMPTY and metadata.producer_epoch == NO_PRODUCER_EPOCH:
                del self.transactions[append.transactional_id]  # never made it to the log
            self._respond(step, append.response, error)
            return
        try:
            metadata.complete_transition(append.transit)
        except IllegalTransitionError:
            _log.exception("transaction state table violated for %r", append.transactional_id)
            metadata.abort_transition()
            self._respond(step, append.response, UnknownServerError.code)
            return
        if metadata.state is S.DEAD:
            del self.transactions[append.transactional_id]
        if append.response is not None:
            step.emit(append.response)
        if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            self._send_markers(step, metadata)

    @staticmethod
    def _respond(step: Step, response: Response | None, error: int) -> None:
        if isinstance(response, SendInitProducerIdResponse):
            step.emit(replace(response, result=InitProducerIdResult(error)))
        elif isinstance(response, SendErrorResponse):
            step.emit(replace(response, error_code=error))

    def _send_markers(self, step: Step, metadata: TransactionMetadata) -> None:
        if not metadata.partitions:
            self._complete(step, metadata)
            return
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(metadata.partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        marker = WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=metadata.producer_id, producer_epoch=metadata.producer_epoch,
            transaction_result=metadata.state is S.PREPARE_COMMIT,
            topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=p)
                    for t, p in by_topic.items()],
            coordinator_epoch=self.coordinator_epoch_of(metadata.transactional_id))
        step.emit(WriteTxnMarkers(metadata.transactional_id, WriteTxnMarkersRequest(markers=[marker])))

    def on_markers_written(self, step: Step, markers: WriteTxnMarkers,
                           errors: Mapping[TopicPartition, int]) -> None:
        """The answers to ``markers``: written partitions leave the transaction; when none is left the
        Complete* record is appended; the rest are sent again after ``marker_retry_backoff_ms``."""
        metadata = self.transactions.get(markers.transactional_id)
        marker = markers.request.markers[0]
        if (metadata is None or metadata.producer_id != marker.producer_id
                or metadata.producer_epoch != marker.producer_epoch
                or metadata.state is not (S.PREPARE_COMMIT if marker.transaction_result else S.PREPARE_ABORT)):
            return  # stale answer: the transaction completed or moved on
        retry = False
        for tp, error in errors.items():
            if error == NONE:
                metadata.partitions.discard(tp)
            elif error in _UNRETRIABLE_MARKER_ERRORS:
                _log.error("the %s marker of transactional id %r cannot be written to %s (error %d): the "
                           "partition is dropped from the transaction", "COMMIT" if marker.transaction_result
                           else "ABORT", markers.transactional_id, tp, error)
                metadata.partitions.discard(tp)
            else:
                retry = True
        if not metadata.partitions:
            self._complete(step, metadata)
        elif retry:
            step.emit(ScheduleMarkerRetry(markers.transactional_id, step.config.marker_retry_backoff_ms))

    def retry_markers(self, step: Step, transactional_id: str) -> None:
        metadata = self.transactions.get(transactional_id)
        if metadata is not None and metadata.pending_state is None and metadata.state in (S.PREPARE_COMMIT,
                                                                                           S.PREPARE_ABORT):
            self._send_markers(step, metadata)

    def _complete(self, step: Step, metadata: TransactionMetadata) -> None:
        if metadata.pending_state is None:
            step.emit(AppendTxnState(metadata.transactional_id, metadata.prepare_complete(step.now)))

    # -- timers -----------------------------------------------------------------------------------------
    def abort_timed_out_transactions(self, step: Step) -> list[str]:
        """Ongoing transactions past their timeout (and with nothing pending): fence the producer and abort.
        Returns the transactional ids being aborted."""
        aborted = []
        for metadata in list(self.transactions.values()):
            if (metadata.state is not S.ONGOING or metadata.pending_state is not None
                    or metadata.txn_start_timestamp + metadata.txn_timeout_ms >= step.now):
                continue
            try:
                fenced_epoch = metadata.prepare_fence_producer_epoch()
            except OverflowError:
                _log.error("transactional id %r timed out but its epoch cannot be bumped", metadata.transactional_id)
                continue
            _log.info("aborting the transaction of %r (producer id %d): it is older than its timeout of %d ms",
                      metadata.transactional_id, metadata.producer_id, metadata.txn_timeout_ms)
            transit = metadata.prepare_abort_or_commit(S.PREPARE_ABORT, step.now, producer_epoch=fenced_epoch)
            step.emit(AppendTxnState(metadata.transactional_id, transit))
            aborted.append(metadata.transactional_id)
        return aborted

    def expire_transactional_ids(self, step: Step) -> list[str]:
        """Ids idle in Empty/Complete* for ``transactional.id.expiration.ms``: Dead, tombstoned, removed."""
        expired = []
        for metadata in list(self.transactions.values()):
            if (metadata.state in EXPIRABLE_STATES and metadata.pending_state is None
                    and metadata.txn_last_update_timestamp + step.config.transactional_id_expiration_ms
                    <= step.now):
                step.emit(AppendTxnState(metadata.transactional_id, metadata.prepare_dead(step.now)))
                expired.append(metadata.transactional_id)
        return expired

    # -- admin ------------------------------------------------------------------------------------------
    def describe(self, transactional_id: str) -> tuple[int, TransactionDescription | None]:
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.state is S.DEAD:
            return TransactionalIdNotFoundError.code, None
        return NONE, _describe(metadata)

    def list_transactions(self, now: int, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                          duration_ms: int = -1) -> tuple[list[str], list[TransactionDescription]]:
        """(unknown state filters, matching transactions). ``duration_ms`` >= 0: only those whose transaction
        started more than that long ago (as in Kafka, ids without a transaction, start time -1, match too)."""
        wanted_states: set[TransactionState] = set()
        unknown: list[str] = []
        for name in states:
            state = S.from_name(name)
            if state is None:
                unknown.append(name)
            else:
                wanted_states.add(state)
        pids = set(producer_ids)
        out = []
        for metadata in self.transactions.values():
            if states and metadata.state not in wanted_states:
                continue
            if pids and metadata.producer_id not in pids:
                continue
            if metadata.state is S.DEAD or (duration_ms >= 0 and now - metadata.txn_start_timestamp <= duration_ms):
                continue
            out.append(_describe(metadata))
        return unknown, out


def _describe(metadata: TransactionMetadata) -> TransactionDescription:
    return TransactionDescription(metadata.transactional_id, metadata.state.state_name, metadata.txn_timeout_ms,
                                  metadata.txn_start_timestamp, metadata.producer_id, metadata.producer_epoch,
                                  sorted(metadata.partitions))
