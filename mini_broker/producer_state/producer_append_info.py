"""Validation of one producer's batches in one append (Kafka ``ProducerAppendInfo``).

Works on a copy of the producer's entry; the manager commits it only when every batch of the append
passed. Rules (error codes as Kafka's, for the ``CLIENT`` origin):

* epoch: an epoch lower than the current one -> INVALID_PRODUCER_EPOCH (replication only logs);
* sequence, new epoch: the first sequence must be 0, unless the producer had no epoch at all;
* sequence, same epoch: ``first_seq == last_seq + 1`` (Int.MAX_VALUE wraps to 0), except that any sequence is
  accepted when the producer has no state (expired, deleted, or never seen) -> else OUT_OF_ORDER_SEQUENCE_NUMBER;
* sequences are not checked for the ``REPLICATION`` and ``COORDINATOR`` origins;
* a non-transactional batch while the producer has an open transaction -> INVALID_TXN_STATE;
* a COMMIT/ABORT marker (:meth:`ProducerAppendInfo.append_end_txn_marker`) with a coordinator epoch lower
  than the one stored for the producer -> TRANSACTION_COORDINATOR_FENCED (not for replication); it ends the
  open transaction and yields a :class:`CompletedTxn` only if the transaction wrote data here.
"""

from __future__ import annotations

import enum
import logging
from typing import NamedTuple

from mini_broker.producer_state.producer_state_entry import INT_MAX, NO_PRODUCER_EPOCH, NO_SEQUENCE, ProducerStateEntry
from mini_broker.producer_state.txn_metadata import CompletedTxn
from pykafka_client.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)

_log = logging.getLogger(__name__)


class AppendOrigin(enum.Enum):
    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


#: read once (an Enum class attribute read goes through EnumType.__getattr__ on Python 3.11)
_CLIENT = AppendOrigin.CLIENT


class BatchInfo(NamedTuple):
    """The producer fields of one batch plus the offsets it got (or will get) in the log (a named tuple: one made
    per batch appended, cheaper than a frozen dataclass)."""

    producer_id: int
    producer_epoch: int
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    is_transactional: bool = False
    is_control: bool = False
    #: For a COMMIT/ABORT control batch: (is_abort, coordinator_epoch) of its marker.
    marker: tuple[bool, int] | None = None

    @property
    def offset_delta(self) -> int:
        return self.last_offset - self.first_offset


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


class ProducerAppendInfo:
    """Accumulates one producer's batches of an append on a copy of its entry."""

    def __init__(self, topic_partition: str, producer_id: int, current: ProducerStateEntry, origin: AppendOrigin) -> None:
        self.topic_partition = topic_partition
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.updated = current.copy()
        #: First offsets of the transactions this append starts (Kafka: ``transactions``).
        self.started_txns: list[int] = []
        #: Transactions with data that a marker of this append ended, in offset order.
        self.completed_txns: list[CompletedTxn] = []

    def _check_producer_epoch(self, epoch: int, offset: int) -> None:
        current = self.updated.producer_epoch
        if epoch < current:
            msg = (
                f"Epoch of producer {self.producer_id} at offset {offset} in {self.topic_partition} is {epoch}, "
                f"which is smaller than the last seen epoch {current}"
            )
            if self.origin is AppendOrigin.REPLICATION:
                _log.warning(msg)
            else:
                raise InvalidProducerEpochError(msg)

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        updated = self.updated
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {self.producer_id} at offset {offset} in "
                    f"partition {self.topic_partition}: {epoch} (request epoch), {first_seq} (seq. number), "
                    f"{updated.producer_epoch} (current producer epoch)"
                )
            return
        if not updated.is_empty():
            current_last = updated.last_seq
        elif epoch == self.current.producer_epoch:
            current_last = self.current.last_seq
        else:
            current_last = NO_SEQUENCE
        if not (self.current.producer_epoch == NO_PRODUCER_EPOCH or in_sequence(current_last, first_seq)):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {self.producer_id} at offset {offset} in partition "
                f"{self.topic_partition}: {first_seq} (incoming seq. number), {current_last} (current end sequence number)"
            )

    def append(self, batch: BatchInfo) -> None:
        """Validate one batch and add it to the copy (raises; the copy is then discarded by the caller)."""
        if batch.is_control:
            if batch.marker is not None:
                is_abort, coordinator_epoch = batch.marker
                self.append_end_txn_marker(batch, is_abort, coordinator_epoch)
            return
        epoch, first_offset, updated = batch.producer_epoch, batch.first_offset, self.updated
        self._check_producer_epoch(epoch, first_offset)
        if self.origin is _CLIENT:
            self._check_sequence(epoch, batch.first_seq, first_offset)
        txn_first_offset = updated.current_txn_first_offset
        if txn_first_offset is not None and not batch.is_transactional:
            raise InvalidTxnStateError(
                f"Expected transactional write from producer {self.producer_id} at offset {first_offset} in "
                f"partition {self.topic_partition}"
            )
        if batch.is_transactional and txn_first_offset is None:
            updated.current_txn_first_offset = first_offset
            self.started_txns.append(first_offset)
        last_offset = batch.last_offset
        updated.add_batch(epoch, batch.last_seq, last_offset, last_offset - first_offset, batch.max_timestamp)

    def append_end_txn_marker(self, batch: BatchInfo, is_abort: bool, coordinator_epoch: int) -> CompletedTxn | None:
        """A COMMIT/ABORT marker at ``batch.first_offset``: ends the producer's open transaction (Kafka
        ``appendEndTxnMarker``). Raises INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED."""
        offset = batch.first_offset
        self._check_producer_epoch(batch.producer_epoch, offset)
        if self.origin is not AppendOrigin.REPLICATION and self.updated.coordinator_epoch > coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"Invalid coordinator epoch for producer {self.producer_id} at offset {offset} in partition "
                f"{self.topic_partition}: {coordinator_epoch} (zombie), {self.updated.coordinator_epoch} (current)"
            )
        completed: CompletedTxn | None = None
        first = self.updated.current_txn_first_offset
        if first is not None:
            completed = CompletedTxn(self.producer_id, first, offset, is_abort)
            self.completed_txns.append(completed)
        self.updated.maybe_update_producer_epoch(batch.producer_epoch)
        self.updated.current_txn_first_offset = None
        self.updated.coordinator_epoch = coordinator_epoch
        self.updated.last_timestamp = batch.max_timestamp
        return completed
