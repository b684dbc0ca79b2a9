"""Transactions as a partition sees them (Kafka ``TxnMetadata``, ``CompletedTxn``).

A transaction is *ongoing* on a partition from its producer's first transactional batch there until the
COMMIT/ABORT marker the coordinator writes; its first offset bounds the last stable offset. A marker that
ends a transaction which wrote data there yields a :class:`CompletedTxn`; a marker for a producer with
no data on the partition yields nothing (an empty transaction touches neither the LSO nor the index).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class TxnMetadata:
    """An ongoing (or completed but not yet below the high watermark) transaction on one partition."""

    producer_id: int
    first_offset: int
    #: The marker's offset once completed (-1 while ongoing).
    last_offset: int = -1


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker: its first data offset, the marker's offset and whether it aborted."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool
