"""What a partition remembers about one producer (Kafka ``ProducerStateEntry`` / ``BatchMetadata``).

An entry holds the producer's current epoch and the metadata of its last :data:`NUM_BATCHES_TO_RETAIN` (5)
batches, oldest first (a deque bounded to that length). A 6th batch evicts the oldest; a new epoch clears them. A retried batch whose
``[first_seq, last_seq]`` equals a cached one (same epoch) is a duplicate, answered with the cached offsets.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Final, NamedTuple

from mini_broker.utils.positional_tuple import positional_tuple

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT_MAX = 2**31 - 1
_object_new = object.__new__


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``sequence - decrement`` with the Int.MAX_VALUE -> 0 wrap undone."""
    if sequence < decrement:
        return INT_MAX - (decrement - sequence) + 1
    return sequence - decrement


class BatchMetadata(NamedTuple):
    """One appended batch: its last sequence, last offset, offset delta (records - 1) and max timestamp (a named
    tuple: one made per batch appended, cheaper than a frozen dataclass)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class ProducerStateEntry:
    """The state of one producer id on one partition."""

    __slots__ = ("batch_metadata", "coordinator_epoch", "current_txn_first_offset", "last_timestamp", "producer_epoch", "producer_id")

    def __init__(
        self,
        producer_id: int,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        coordinator_epoch: int = -1,
        last_timestamp: int = -1,
        current_txn_first_offset: int | None = None,
        batches: Iterable[BatchMetadata] | None = None,
    ) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self.batch_metadata: deque[BatchMetadata] = deque(batches or (), NUM_BATCHES_TO_RETAIN)

    @classmethod
    def empty(cls, producer_id: int) -> ProducerStateEntry:
        return cls(producer_id)

    def copy(self) -> ProducerStateEntry:
        # (the fields set here rather than through __init__: one copy per idempotent append, and a frame less)
        new = _object_new(ProducerStateEntry)
        new.producer_id = self.producer_id
        new.producer_epoch = self.producer_epoch
        new.coordinator_epoch = self.coordinator_epoch
        new.last_timestamp = self.last_timestamp
        new.current_txn_first_offset = self.current_txn_first_offset
        new.batch_metadata = deque(self.batch_metadata, NUM_BATCHES_TO_RETAIN)
        return new

    def is_empty(self) -> bool:
        return not self.batch_metadata

    @property
    def first_seq(self) -> int:
        return NO_SEQUENCE if self.is_empty() else self.batch_metadata[0].first_seq

    @property
    def last_seq(self) -> int:
        batches = self.batch_metadata
        return batches[-1].last_seq if batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return -1 if self.is_empty() else self.batch_metadata[-1].last_offset

    @property
    def last_offset_delta(self) -> int:
        return 0 if self.is_empty() else self.batch_metadata[-1].offset_delta

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        if self.producer_epoch != producer_epoch:
            self.maybe_update_producer_epoch(producer_epoch)
        # (the deque's bound evicts the oldest of more than NUM_BATCHES_TO_RETAIN)
        self.batch_metadata.append(new_batch_metadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        """A new epoch forgets the cached batches. True if the epoch changed."""
        if self.producer_epoch != producer_epoch:
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
            return True
        return False

    def find_duplicate_batch(self, producer_epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if producer_epoch != self.producer_epoch:
            return None
        for b in self.batch_metadata:
            if b[LAST_SEQ] == last_seq and b.first_seq == first_seq:  # the cheap field first: one check per append
                return b
        return None

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(pid={self.producer_id}, epoch={self.producer_epoch}, "
            f"batches={list(self.batch_metadata)}, txn_first_offset={self.current_txn_first_offset})"
        )


#: BatchMetadata made without its Python-level __new__ (one per batch appended; public: the producer state manager hands
#: it to the kernel)
new_batch_metadata = positional_tuple(BatchMetadata)
#: the place of BatchMetadata.last_seq, read by index on every append (on Python 3.11 a named tuple's field read by name
#: is a generic attribute lookup, ~50-150 instructions; by index ~10)
LAST_SEQ: Final = BatchMetadata._fields.index("last_seq")
