"""One transactional id's state (Kafka: ``TransactionMetadata`` / ``TxnTransitMetadata``).

A change is two-phase, as in Kafka: ``prepare_*`` checks the edge, sets ``pending_state`` and returns the
:class:`TxnTransitMetadata` to append to ``__transaction_state``; once the append is durable,
:meth:`TransactionMetadata.complete_transition` applies it (or :meth:`abort_transition` drops it when the
append failed). While a transition is pending the coordinator answers CONCURRENT_TRANSACTIONS.
No I/O, no clock: callers pass ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from mini_broker.transaction.transaction_state import TransactionState, check_transition
from pykafka_client.structs import TopicPartition

NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
#: Kafka's ``Short.MaxValue``.
MAX_PRODUCER_EPOCH: Final = 32767


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch for fencing: ``epoch >= Short.MaxValue - 1`` means rotate the id."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    """A transactional id's state as one ``__transaction_state`` record holds it."""

    producer_id: int
    previous_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int


@dataclass(eq=False)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    previous_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    pending_state: TransactionState | None = None

    @classmethod
    def from_transit(cls, transactional_id: str, t: TxnTransitMetadata) -> TransactionMetadata:
        return cls(transactional_id, t.producer_id, t.previous_producer_id, t.producer_epoch, t.last_producer_epoch,
                   t.txn_timeout_ms, t.state, set(t.partitions), t.txn_start_timestamp, t.txn_last_update_timestamp)

    # -- preparing ------------------------------------------------------------------------------------
    def _transit(self, state: TransactionState, *, producer_id: int | None = None,
                 previous_producer_id: int | None = None, producer_epoch: int | None = None,
                 last_producer_epoch: int | None = None, txn_timeout_ms: int | None = None,
                 partitions: frozenset[TopicPartition] | None = None, start: int | None = None,
                 now: int) -> TxnTransitMetadata:
        check_transition(self.pending_state or self.state, state)
        self.pending_state = state
        return TxnTransitMetadata(
            producer_id=self.producer_id if producer_id is None else producer_id,
            previous_producer_id=self.previous_producer_id if previous_producer_id is None else previous_producer_id,
            producer_epoch=self.producer_epoch if producer_epoch is None else producer_epoch,
            last_producer_epoch=self.last_producer_epoch if last_producer_epoch is None else last_producer_epoch,
            txn_timeout_ms=self.txn_timeout_ms if txn_timeout_ms is None else txn_timeout_ms,
            state=state,
            partitions=frozenset(self.partitions) if partitions is None else partitions,
            txn_start_timestamp=self.txn_start_timestamp if start is None else start,
            txn_last_update_timestamp=now)

    def prepare_increment_producer_epoch(self, txn_timeout_ms: int, expected_epoch: int | None,
                                         now: int) -> TxnTransitMetadata | None:
        """InitProducerId on Empty/Complete*: epoch + 1 (None: ``expected_epoch`` is stale -> fenced). A fresh
        id (no epoch yet) is bumped whatever the client expected; a retry carrying the epoch this id had before
        the last bump gets the current epoch again."""
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return None
        return self._transit(TransactionState.EMPTY, producer_epoch=epoch, last_producer_epoch=last,
                             txn_timeout_ms=txn_timeout_ms, partitions=frozenset(), start=-1, now=now)

    def prepare_producer_id_rotation(self, new_producer_id: int, txn_timeout_ms: int, now: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        """The epoch is exhausted: continue under a new producer id at epoch 0."""
        return self._transit(TransactionState.EMPTY, producer_id=new_producer_id,
                             previous_producer_id=self.producer_id, producer_epoch=0,
                             last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             txn_timeout_ms=txn_timeout_ms, partitions=frozenset(), start=-1, now=now)

    def prepare_add_partitions(self, partitions: frozenset[TopicPartition], now: int) -> TxnTransitMetadata:
        start = now if self.state in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT,
                                      TransactionState.COMPLETE_ABORT) else self.txn_start_timestamp
        return self._transit(TransactionState.ONGOING, partitions=frozenset(self.partitions) | partitions,
                             start=start, now=now)

    def prepare_fence_producer_epoch(self) -> int:
        """Ongoing -> (pending) PrepareEpochFence: the epoch the abort that follows carries."""
        if self.producer_epoch >= MAX_PRODUCER_EPOCH:
            raise OverflowError(f"cannot fence producer {self.producer_id}: its epoch is {self.producer_epoch}")
        check_transition(self.state, TransactionState.PREPARE_EPOCH_FENCE)
        self.pending_state = TransactionState.PREPARE_EPOCH_FENCE
        return self.producer_epoch + 1

    def prepare_abort_or_commit(self, state: TransactionState, now: int,
                                producer_epoch: int | None = None) -> TxnTransitMetadata:
        last = None if producer_epoch is None else NO_PRODUCER_EPOCH
        return self._transit(state, producer_epoch=producer_epoch, last_producer_epoch=last, now=now)

    def prepare_complete(self, now: int) -> TxnTransitMetadata:
        state = (TransactionState.COMPLETE_COMMIT if self.state is TransactionState.PREPARE_COMMIT
                 else TransactionState.COMPLETE_ABORT)
        return self._transit(state, partitions=frozenset(), now=now)

    def prepare_dead(self, now: int) -> TxnTransitMetadata:
        return self._transit(TransactionState.DEAD, partitions=frozenset(), now=now)

    # -- completing -----------------------------------------------------------------------------------
    def complete_transition(self, t: TxnTransitMetadata) -> None:
        if self.pending_state is not t.state:
            raise RuntimeError(f"completing {t.state.state_name} for {self.transactional_id!r} while "
                               f"{self.pending_state} is pending")
        check_transition(self.state, t.state)
        self.producer_id = t.producer_id
        self.previous_producer_id = t.previous_producer_id
        self.producer_epoch = t.producer_epoch
        self.last_producer_epoch = t.last_producer_epoch
        self.txn_timeout_ms = t.txn_timeout_ms
        self.state = t.state
        self.partitions = set(t.partitions)
        self.txn_start_timestamp = t.txn_start_timestamp
        self.txn_last_update_timestamp = t.txn_last_update_timestamp
        self.pending_state = None

    def abort_transition(self) -> None:
        """The append failed: nothing changes."""
        self.pending_state = None

    def to_transit(self) -> TxnTransitMetadata:
        return TxnTransitMetadata(self.producer_id, self.previous_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, self.state,
                                  frozenset(self.partitions), self.txn_start_timestamp, self.txn_last_update_timestamp)
