"""Producer id, epoch and per-partition sequence bookkeeping (Java ``TransactionManager``, idempotent part).

State kept per partition (Java ``TxnPartitionEntry``): the producer id/epoch its sequences belong to, the
next sequence to assign, the last acknowledged sequence, the last acknowledged offset and the in-flight
batches ordered by base sequence.

Rules (contract statements 67-74):

* sequences are assigned when a batch is drained and advance by its record count, wrapping from
  Int.MAX_VALUE to 0; the last acknowledged sequence only moves forward;
* a retried batch may go out only when it is the first in flight for its partition, so at most one
  retried batch is in flight and order is kept;
* UNKNOWN_PRODUCER_ID and a real OUT_OF_ORDER_SEQUENCE_NUMBER gap bump the epoch locally (KIP-360):
  the in-flight batches of the partition are re-stamped from sequence 0 under the new epoch and retried;
  at epoch Short.MAX_VALUE a new producer id is requested instead;
* a sent batch that expires leaves its partition "unresolved": new batches wait until the in-flight ones
  complete; if the later batches succeed the gap is known to be filled, otherwise the epoch is bumped;
* CLUSTER_AUTHORIZATION_FAILED (and the other fatal errors) move the manager to FATAL_ERROR: every
  pending batch fails and later sends raise.

The transactional flow is added on top by :class:`pykafka_client.producer.transaction_manager.TransactionManager`.
"""

from __future__ import annotations

import bisect
import logging
import threading
from dataclasses import dataclass
from typing import Any

from pykafka_client.errors import (
    ClusterAuthorizationFailedError,
    IllegalArgumentError,
    IllegalStateError,
    OutOfOrderSequenceError,
    ProducerFencedError,
    TransactionalIdAuthorizationError,
    UnsupportedVersionError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.producer.producer_batch import INT_MAX, NO_SEQUENCE, ProducerBatch, increment_sequence
from pykafka_client.producer.transaction_state import State, is_transition_valid
from pykafka_client.producer.transactional_request_result import TransactionalRequestResult
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, Time

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_LAST_ACKED_SEQUENCE = -1
SHORT_MAX = 2**15 - 1

# The states the predicates below compare with, read once: in Python 3.11 each ``State.X`` goes through the enum
# class's ``__getattr__`` hook (a few hundred instructions a read), and a tuple of them would be built per call.
_READY = State.READY
_FATAL_ERROR = State.FATAL_ERROR
_ABORTING = State.ABORTING_TRANSACTION
_IN_TRANSACTION = State.IN_TRANSACTION
_ABORTABLE_ERROR = State.ABORTABLE_ERROR
_COMPLETING = (State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION)
_ONGOING = (State.IN_TRANSACTION, State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION, State.ABORTABLE_ERROR)
_ERRORS = (State.FATAL_ERROR, State.ABORTABLE_ERROR)
_BEFORE_READY = (State.UNINITIALIZED, State.INITIALIZING)
_WITHOUT_VALID_ID = (State.UNINITIALIZED, State.INITIALIZING, State.FATAL_ERROR)

_FATAL = (ClusterAuthorizationFailedError, TransactionalIdAuthorizationError, ProducerFencedError, UnsupportedVersionError)


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    producer_id: int
    epoch: int

    def is_valid(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID


NONE = ProducerIdAndEpoch(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)


@dataclass(slots=True)
class PendingTransition:
    """A commit/abort/init whose wait may have timed out: the same call returns the same result."""

    result: TransactionalRequestResult
    state: State
    operation: str


class PartitionEntry:
    """A partition's sequence state (Java ``TxnPartitionEntry``). Its slots are read and written by the kernel's
    produce completion (``records/kernel/producer_batch_release.c.h``) as :meth:`IdempotenceManager.handle_completed_batch`
    does, under the manager's lock."""

    __slots__ = ("in_flight", "last_acked_offset", "last_acked_sequence", "next_sequence", "producer_id_and_epoch")

    def __init__(self, pid_epoch: ProducerIdAndEpoch) -> None:
        self.producer_id_and_epoch = pid_epoch
        self.next_sequence = 0
        self.last_acked_sequence = NO_LAST_ACKED_SEQUENCE
        self.last_acked_offset = -1
        self.in_flight: list[ProducerBatch] = []  # sorted by base sequence

    def add_in_flight(self, batch: ProducerBatch) -> None:
        """Track ``batch`` (which has a sequence) in base sequence order, after those with the same base sequence;
        a batch already tracked stays where it is."""
        in_flight = self.in_flight
        if not in_flight or in_flight[-1].base_sequence <= batch.base_sequence:
            # the common case, a batch stamped after those in flight: no search
            if batch not in in_flight:
                in_flight.append(batch)
        elif batch not in in_flight:
            keys = [b.base_sequence for b in in_flight]
            in_flight.insert(bisect.bisect_right(keys, batch.base_sequence), batch)

    def remove_in_flight(self, batch: ProducerBatch) -> None:
        if batch in self.in_flight:
            self.in_flight.remove(batch)


class IdempotenceManager:
    """Idempotent-producer bookkeeping shared by the accumulator (drain) and the Sender (responses): the
    state and its transitions, the producer id and epoch, the per-partition sequences and in-flight batches."""

    #: the state in a slot: read once per record by the kernel's send path (STATE_ATTRIBUTE); and what is_settled()
    #: reads, read by the kernel's Sender iteration each iteration (SETTLED_PARTS); the rest of the manager's state is
    #: in the instance dict
    __slots__ = (
        "__dict__", "__weakref__", "_state", "transactional_id", "_unresolved", "_epoch_bump_required",
        "_pid_reset_required", "init_producer_id_in_flight", "_pid_epoch",
    )

    def __init__(
        self,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        retry_backoff_ms: int = 100,
        time: Time = SYSTEM_TIME,
    ) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.time = time
        self.lock = threading.RLock()
        self._pid_epoch = NONE
        self._state = State.UNINITIALIZED
        self._partitions: dict[TopicPartition, PartitionEntry] = {}
        self._unresolved: dict[TopicPartition, int] = {}  # partition -> sequence expected after the expired batch
        self._to_rewrite: set[TopicPartition] = set()
        self._epoch_bump_required = False
        self._pid_reset_required = False
        self._last_error: BaseException | None = None
        self.init_producer_id_in_flight = False
        self._poison = threading.local()  # .enabled on the Sender thread: invalid transitions are fatal there
        self.txn_epoch_bump_required = False
        self._pending_transition: PendingTransition | None = None

    # --- state -------------------------------------------------------------------------------------

    @property
    def state(self) -> State:
        return self._state

    def is_transactional(self) -> bool:
        return self.transactional_id is not None

    def is_completing(self) -> bool:
        return self._state in _COMPLETING

    def is_aborting(self) -> bool:
        return self._state is _ABORTING

    def is_in_transaction(self) -> bool:
        return self._state is _IN_TRANSACTION

    def has_ongoing_transaction(self) -> bool:
        return self._state in _ONGOING

    def has_fatal_error(self) -> bool:
        return self._state is _FATAL_ERROR

    def has_abortable_error(self) -> bool:
        return self._state is _ABORTABLE_ERROR

    def has_error(self) -> bool:
        return self._state in _ERRORS

    @property
    def last_error(self) -> BaseException | None:
        return self._last_error

    def set_poison_state_on_invalid_transition(self, enabled: bool) -> None:
        """Called by the Sender on its own thread: an invalid transition there means a bug, and the
        producer must not go on as if nothing happened (contract statement 75)."""
        self._poison.enabled = enabled

    def _transition_to(self, target: State, error: BaseException | None = None) -> None:
        with self.lock:
            if not is_transition_valid(self._state, target):
                message = f"TransactionalId {self.transactional_id}: Invalid transition attempted from state {self._state.name} to state {target.name}"
                if getattr(self._poison, "enabled", False):
                    exc = IllegalStateError(message)
                    self._state = State.FATAL_ERROR
                    self._last_error = exc
                    self._fail_pending_transition(exc)
                    raise exc
                raise IllegalStateError(message)
            if target in (State.FATAL_ERROR, State.ABORTABLE_ERROR):
                if error is None:
                    raise IllegalArgumentError(f"Cannot transition to {target.name} without an error")
                self._last_error = error
            elif target is not State.ABORTING_TRANSACTION:
                self._last_error = None  # aborting keeps the error that made the abort necessary
            if error is not None:
                log.info("transactional id %s: %s -> %s because of %r", self.transactional_id, self._state.name, target.name, error)
            else:
                log.debug("transactional id %s: %s -> %s", self.transactional_id, self._state.name, target.name)
            self._state = target

    def transition_to_fatal_error(self, exc: BaseException) -> None:
        with self.lock:
            self._transition_to(State.FATAL_ERROR, exc)
            self._fail_pending_transition(exc)

    def transition_to_abortable_error(self, exc: BaseException) -> None:
        with self.lock:
            if self._state is State.ABORTING_TRANSACTION:
                log.debug("not moving to ABORTABLE_ERROR: the transaction is being aborted already (%r)", exc)
                return
            self._transition_to(State.ABORTABLE_ERROR, exc)

    def _fail_pending_transition(self, exc: BaseException) -> None:
        if self._pending_transition is not None:
            self._pending_transition.result.fail(exc)

    def maybe_transition_to_error_state(self, exc: BaseException) -> None:
        if isinstance(exc, _FATAL):
            self.transition_to_fatal_error(exc)
        elif self.is_transactional():
            with self.lock:
                if not self.is_completing():
                    self.txn_epoch_bump_required = True
                self.transition_to_abortable_error(exc)

    # --- producer id and epoch -----------------------------------------------------------------------

    def producer_id_and_epoch(self) -> tuple[int, int]:
        p = self._pid_epoch
        return p.producer_id, p.epoch

    def has_producer_id(self) -> bool:
        return self._pid_epoch.is_valid()

    def has_valid_producer_id(self) -> bool:
        return self._pid_epoch.is_valid() and self._state not in _WITHOUT_VALID_ID

    def needs_producer_id(self) -> bool:
        """True when an idempotent producer's InitProducerId should be sent (bumps and resets applied first).
        A transactional producer asks through its request queue instead."""
        if self.is_transactional():
            return False
        with self.lock:
            self.bump_idempotent_epoch_and_reset_id_if_needed()
            return self._state in _BEFORE_READY and not self.init_producer_id_in_flight

    def is_settled(self) -> bool:
        """True when the Sender's per-iteration idempotence step (:meth:`maybe_resolve_sequences`, the fatal error
        check, :meth:`bump_idempotent_epoch_and_reset_id_if_needed`, :meth:`needs_producer_id`) has nothing to do:
        an idempotent, not transactional, producer in READY with a producer id, no sequence unresolved, no epoch
        bump or producer id reset asked for and no InitProducerId in flight. Reads of the manager's own state, no
        lock: every field but the state is written on the Sender thread, the caller's."""
        return (
            self._state is _READY and self.transactional_id is None and not self._unresolved
            and not self._epoch_bump_required and not self._pid_reset_required and not self.init_producer_id_in_flight
            and self._pid_epoch.is_valid()
        )

    def bump_idempotent_epoch_and_reset_id_if_needed(self) -> None:
        if self.is_transactional():
            return  # a transaction's epoch is bumped by its coordinator (InitProducerId after an abort)
        with self.lock:
            if self.has_fatal_error():
                return
            if self._pid_reset_required:
                self._pid_reset_required = False
                self._epoch_bump_required = False
                self.reset_idempotent_producer_id()
            elif self._epoch_bump_required:
                self._bump_idempotent_producer_epoch()
            if self._state is not State.INITIALIZING and not self.has_producer_id():
                self._state = State.INITIALIZING

    def set_producer_id_and_epoch(self, producer_id: int, epoch: int) -> None:
        """The outcome of a successful InitProducerId."""
        with self.lock:
            self._pid_epoch = ProducerIdAndEpoch(producer_id, epoch)
            self._state = State.READY
            self.init_producer_id_in_flight = False
            for tp in self._to_rewrite:
                self._start_sequences_at_beginning(tp, self._pid_epoch)
                self._unresolved.pop(tp, None)
            self._to_rewrite.clear()

    def request_producer_id_reset_for_partition(self, tp: TopicPartition) -> None:
        """Drop the producer id; once InitProducerId gives a new one, ``tp``'s batches restart at sequence 0."""
        with self.lock:
            self._pid_reset_required = True
            self._to_rewrite.add(tp)

    def request_epoch_bump_for_partition(self, tp: TopicPartition) -> None:
        with self.lock:
            self._epoch_bump_required = True
            self._to_rewrite.add(tp)

    @property
    def epoch_bump_required(self) -> bool:
        return self._epoch_bump_required

    def _bump_idempotent_producer_epoch(self) -> None:
        if self._pid_epoch.epoch == SHORT_MAX:
            # No epoch left: a new producer id; the partitions are re-stamped when it arrives.
            self.reset_idempotent_producer_id()
            self._epoch_bump_required = False
            return
        self._pid_epoch = ProducerIdAndEpoch(self._pid_epoch.producer_id, self._pid_epoch.epoch + 1)
        for tp in self._to_rewrite:
            self._start_sequences_at_beginning(tp, self._pid_epoch)
            self._unresolved.pop(tp, None)
        self._to_rewrite.clear()
        self._epoch_bump_required = False

    def reset_idempotent_producer_id(self) -> None:
        with self.lock:
            self._pid_epoch = NONE
            self._state = State.UNINITIALIZED

    # --- per-partition sequences ---------------------------------------------------------------------

    def _entry(self, tp: TopicPartition) -> PartitionEntry:
        e = self._partitions.get(tp)
        if e is None:
            e = self._partitions[tp] = PartitionEntry(self._pid_epoch)
        return e

    def sequence_number(self, tp: TopicPartition) -> int:
        with self.lock:
            return self._entry(tp).next_sequence

    def increment_sequence_number(self, tp: TopicPartition, increment: int) -> None:
        with self.lock:
            e = self._entry(tp)
            e.next_sequence = increment_sequence(e.next_sequence, increment)

    def last_acked_sequence(self, tp: TopicPartition) -> int:
        e = self._partitions.get(tp)
        return NO_LAST_ACKED_SEQUENCE if e is None else e.last_acked_sequence

    def last_acked_offset(self, tp: TopicPartition) -> int:
        e = self._partitions.get(tp)
        return -1 if e is None else e.last_acked_offset

    def has_stale_producer_id_and_epoch(self, tp: TopicPartition) -> bool:
        with self.lock:
            return self._entry(tp).producer_id_and_epoch != self._pid_epoch

    def maybe_update_producer_id_and_epoch(self, tp: TopicPartition) -> None:
        """Before stamping a new batch: a partition still on an old id/epoch restarts at sequence 0 once
        nothing of the old epoch is in flight."""
        with self.lock:
            if self.has_fatal_error():
                return
            e = self._entry(tp)
            if e.producer_id_and_epoch != self._pid_epoch and not e.in_flight:
                self._start_sequences_at_beginning(tp, self._pid_epoch)

    def is_send_to_partition_allowed(self, tp: TopicPartition) -> bool:
        """Batches of ``tp`` may be drained: no fatal error (a transactional manager adds its own condition)."""
        return not self.has_fatal_error()

    def prepare_for_drain(self, batch: ProducerBatch, tp: TopicPartition) -> bool:
        """The drain's idempotence step for ``batch``, the first queued batch of ``tp``, under one lock acquisition.

        False when ``tp`` must wait (Java ``shouldStopDrainBatchesForPartition``): no valid producer id (or a fatal
        error), ``tp`` not sendable in the transaction, a batch without a sequence while batches of an older
        producer id/epoch are in flight or while ``tp`` has an unresolved sequence, or a retried batch that is not
        the first in flight (this keeps order across retries). Otherwise True, and a batch without a sequence is
        stamped as Java's drain does: ``tp`` restarts at sequence 0 if it is on an old producer id/epoch with
        nothing in flight, the batch gets the producer id, epoch and ``tp``'s next sequence, the sequence advances
        by its record count and the batch is tracked in flight."""
        # (once per batch drained: is_transactional, has_valid_producer_id, has_sequence, _entry, set_producer_state,
        # record_count and increment_sequence's common case inlined)
        with self.lock:
            transactional = self.transactional_id is not None
            pid_epoch = self._pid_epoch
            if (
                pid_epoch.producer_id == NO_PRODUCER_ID or self._state in _WITHOUT_VALID_ID
                or (transactional and not self.is_send_to_partition_allowed(tp))
            ):
                return False
            if batch.base_sequence != NO_SEQUENCE:
                e = self._partitions.get(tp)
                return e is None or not e.in_flight or e.in_flight[0].base_sequence == batch.base_sequence
            if tp in self._unresolved:
                return False
            e = self._partitions.get(tp)
            if e is None:
                e = self._entry(tp)
            if e.producer_id_and_epoch is not pid_epoch and e.producer_id_and_epoch != pid_epoch:
                if e.in_flight:
                    return False  # wait for the batches of the old epoch to resolve before restarting at 0
                self._start_sequences_at_beginning(tp, pid_epoch)
            seq = e.next_sequence
            batch.producer_id = pid_epoch.producer_id
            batch.producer_epoch = pid_epoch.epoch
            batch.base_sequence = seq
            batch.is_transactional = transactional
            count = len(batch.pending)
            e.next_sequence = seq + count if seq <= INT_MAX - count else increment_sequence(seq, count)
            e.add_in_flight(batch)
            return True

    def _start_sequences_at_beginning(self, tp: TopicPartition, pid_epoch: ProducerIdAndEpoch) -> None:
        e = self._entry(tp)
        seq = 0
        for b in e.in_flight:
            b.reset_producer_state(pid_epoch.producer_id, pid_epoch.epoch, seq)
            seq = increment_sequence(seq, b.record_count)
        e.producer_id_and_epoch = pid_epoch
        e.next_sequence = seq
        e.last_acked_sequence = NO_LAST_ACKED_SEQUENCE

    # --- in-flight batches ---------------------------------------------------------------------------

    def add_in_flight_batch(self, batch: ProducerBatch) -> None:
        with self.lock:
            if not batch.has_sequence():
                raise IllegalStateError(f"cannot track a batch without a sequence: {batch}")
            self._entry(batch.topic_partition).add_in_flight(batch)

    def remove_in_flight_batch(self, batch: ProducerBatch) -> None:
        with self.lock:
            e = self._partitions.get(batch.topic_partition)
            if e is not None:
                e.remove_in_flight(batch)

    def has_inflight_batches(self, tp: TopicPartition) -> bool:
        e = self._partitions.get(tp)
        return e is not None and bool(e.in_flight)

    def first_in_flight_sequence(self, tp: TopicPartition) -> int:
        with self.lock:
            e = self._partitions.get(tp)
            if e is None or not e.in_flight:
                return NO_SEQUENCE
            return e.in_flight[0].base_sequence

    def next_batch_by_sequence(self, tp: TopicPartition) -> ProducerBatch | None:
        e = self._partitions.get(tp)
        return e.in_flight[0] if e is not None and e.in_flight else None

    # --- outcomes ------------------------------------------------------------------------------------

    def handle_completed_batch(self, batch: ProducerBatch, base_offset: int) -> None:
        """A batch succeeded: its partition's last acknowledged sequence and offset move up to the batch's last ones,
        and the batch is no longer in flight."""
        # (once per batch completed: _entry's common case, the batch's last_sequence and record_count, max() and
        # remove_in_flight inlined; the batch completed is almost always the first in flight)
        count = len(batch.pending)
        with self.lock:
            e = self._partitions.get(batch.topic_partition)
            if e is None:
                e = self._entry(batch.topic_partition)
            seq = batch.base_sequence
            if seq != NO_SEQUENCE:
                last = seq + count - 1 if seq <= INT_MAX - (count - 1) else increment_sequence(seq, count - 1)
                if last > e.last_acked_sequence:
                    e.last_acked_sequence = last
            if base_offset >= 0:
                last_offset = base_offset + count - 1
                if last_offset > e.last_acked_offset:
                    e.last_acked_offset = last_offset
            in_flight = e.in_flight
            if in_flight and in_flight[0] is batch:
                del in_flight[0]
            elif batch in in_flight:
                in_flight.remove(batch)

    def sequence_parts(self) -> tuple[dict[TopicPartition, PartitionEntry], threading.RLock] | None:
        """What :meth:`handle_completed_batch` changes and the lock it holds (the partition entries, :attr:`lock`) while
        it is this class's method (else None: a subclass's override or a replacement on the instance is called). Read
        once, when the Sender is built: the kernel's completion (``SenderCompletion``) then does that method's work
        itself, under the lock, for a partition that has its entry."""
        if getattr(self.handle_completed_batch, "__func__", None) is not _REFERENCE_HANDLE_COMPLETED_BATCH:
            return None
        return self._partitions, self.lock

    def drain_parts(self) -> tuple[Any, ...] | None:
        """What :meth:`prepare_for_drain` reads and changes while it is this class's method (else None: a subclass's
        override is called): the partition entries, the unresolved sequences, :attr:`lock`, the attributes (slots) of
        the producer id and epoch and of the state, the states without a valid producer id, NO_PRODUCER_ID, NO_SEQUENCE
        and INT_MAX. Read once, when the Sender is built: the kernel's ``DrainStamp`` then does that method's common case
        itself, under the lock (a replacement on the instance is called instead)."""
        if type(self).prepare_for_drain is not _REFERENCE_PREPARE_FOR_DRAIN:
            return None
        return (self._partitions, self._unresolved, self.lock, PID_EPOCH_ATTRIBUTE, STATE_ATTRIBUTE, _WITHOUT_VALID_ID,
                NO_PRODUCER_ID, NO_SEQUENCE, INT_MAX)

    def handle_failed_batch(self, batch: ProducerBatch, exc: BaseException, adjust_sequence_numbers: bool) -> None:
        with self.lock:
            self.maybe_transition_to_error_state(exc)
            self.remove_in_flight_batch(batch)
            if self.has_fatal_error() or self.is_transactional():
                return  # a transaction is aborted (its epoch bumped by the coordinator) rather than repaired
            if isinstance(exc, OutOfOrderSequenceError):
                # Nothing after this batch can be trusted under the current epoch.
                self.request_epoch_bump_for_partition(batch.topic_partition)
                return
            if adjust_sequence_numbers:
                self.request_epoch_bump_for_partition(batch.topic_partition)

    def can_retry(self, error_code: int, log_start_offset: int, batch: ProducerBatch, retriable: bool) -> bool:
        """Whether a partition error can be retried, bumping the epoch where Java's idempotent producer does."""
        with self.lock:
            tp = batch.topic_partition
            if self.is_transactional() and error_code in (45, 59):
                return False  # the transaction cannot be repaired locally: fail the batch, abort the transaction
            if error_code == 59:  # UNKNOWN_PRODUCER_ID: the broker lost our state
                if log_start_offset == -1 or not batch.response_is_for_current_stamp():
                    return True  # the log start is unknown, or the batch was already re-stamped: just retry
                if batch.reopened:
                    # Restarted at sequence 0 under a bumped epoch and the broker still does not know the id
                    # (it lost it, e.g. a broker without persistent producer ids): get a new producer id.
                    self.request_producer_id_reset_for_partition(tp)
                    return True
                self.request_epoch_bump_for_partition(tp)
                return True
            if error_code == 45:  # OUT_OF_ORDER_SEQUENCE_NUMBER
                if not self.has_unresolved_sequence(tp) and (batch.reopened or not self.is_next_sequence(tp, batch.base_sequence)):
                    return True  # not the next batch: an earlier one is being retried, wait for it
                if not self.has_unresolved_sequence(tp) or self.is_next_sequence_for_unresolved_partition(tp, batch.base_sequence):
                    self.request_epoch_bump_for_partition(tp)
                return True
            return retriable

    def is_next_sequence(self, tp: TopicPartition, sequence: int) -> bool:
        return sequence - self.last_acked_sequence(tp) == 1

    # --- unresolved sequences (expired in-flight batches) ---------------------------------------------

    def mark_sequence_unresolved(self, batch: ProducerBatch) -> None:
        with self.lock:
            nxt = increment_sequence(batch.last_sequence, 1)
            tp = batch.topic_partition
            cur = self._unresolved.get(tp)
            self._unresolved[tp] = nxt if cur is None else max(cur, nxt)

    def has_unresolved_sequence(self, tp: TopicPartition) -> bool:
        return tp in self._unresolved

    def has_unresolved_sequences(self) -> bool:
        return bool(self._unresolved)

    def is_next_sequence_for_unresolved_partition(self, tp: TopicPartition, sequence: int) -> bool:
        return self._unresolved.get(tp) == sequence

    def maybe_resolve_sequences(self) -> None:
        """Partitions with nothing in flight any more are resolved (later batches filled the gap) or bumped."""
        with self.lock:
            for tp in list(self._unresolved):
                if self.has_inflight_batches(tp):
                    continue
                if not self.is_next_sequence(tp, self.sequence_number(tp)):
                    if self.is_transactional():
                        self.txn_epoch_bump_required = True
                        self.transition_to_abortable_error(
                            KafkaError(
                                "The client has no acknowledgment for some previously sent records and can no longer "
                                "retry them; abort the transaction and send them again in a new one"
                            )
                        )
                    else:
                        self.request_epoch_bump_for_partition(tp)
                del self._unresolved[tp]

    def fail_pending(self) -> KafkaError:
        """The error pending batches should fail with after a fatal error."""
        err = self._last_error
        if isinstance(err, KafkaError):
            return err
        return KafkaError(f"the producer is in a fatal error state: {err!r}")


#: The attribute (a slot) that holds a manager's ``state``: the kernel's send path reads it there, without the
#: property's Python frame, once per record to decline sends of a producer in a fatal error state
#: (``SendRecord``'s ``fatal_check = (manager, STATE_ATTRIBUTE, State.FATAL_ERROR)``).
STATE_ATTRIBUTE = "_state"

#: What the kernel's ``idempotence_settled(manager, SETTLED_PARTS)`` (the Sender's iteration) answers
#: :meth:`IdempotenceManager.is_settled` with, when that is the manager's method: the reference method, the attributes
#: is_settled reads (slots, in its order: the state, the transactional id, the unresolved sequences, the epoch bump and
#: producer id reset flags, the InitProducerId in flight, the producer id and epoch), READY, and the producer id that
#: is not valid.
SETTLED_PARTS = (
    IdempotenceManager.is_settled,
    ("_state", "transactional_id", "_unresolved", "_epoch_bump_required", "_pid_reset_required",
     "init_producer_id_in_flight", "_pid_epoch"),
    State.READY,
    NO_PRODUCER_ID,
)


#: The attribute (a slot) that holds a manager's producer id and epoch (``drain_parts``).
PID_EPOCH_ATTRIBUTE = "_pid_epoch"
#: the reference method :meth:`IdempotenceManager.drain_parts` compares with
_REFERENCE_PREPARE_FOR_DRAIN = IdempotenceManager.prepare_for_drain

#: the reference method :meth:`IdempotenceManager.sequence_parts` compares with (as defined: one replaced on the class
#: later is not it)
_REFERENCE_HANDLE_COMPLETED_BATCH = IdempotenceManager.handle_completed_batch
