"""The seams between the transaction coordinator and the rest of the broker, fixed before either side is
built so both can be written (and unit-tested) apart.

* The coordinator writes COMMIT/ABORT markers through :class:`TxnMarkerWriter`, the in-process form of
  Kafka's WriteTxnMarkers request (the partition side implements it: control batches appended with the
  COORDINATOR origin, producer state and the last stable offset updated, waiting read_committed fetches
  completed, and for ``__consumer_offsets`` partitions the group coordinator told through
  :class:`TxnOffsetsListener`).
* The partition side asks the coordinator, before a transactional batch opens a transaction on a partition,
  whether that partition is part of the producer's ongoing transaction (KIP-890 verification, Kafka's
  verify-only AddPartitionsToTxn): :class:`TransactionVerifier`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from pykafka_client.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from pykafka_client.structs import TopicPartition


class TxnMarkerWriter(Protocol):
    def write_txn_markers(
        self, request: WriteTxnMarkersRequest, on_complete: Callable[[WriteTxnMarkersResponse], None]
    ) -> None:
        """Append every marker of ``request`` to its partitions and call ``on_complete`` (from any thread)
        with the per-partition error codes once all are written (or failed)."""
        ...


class TransactionVerifier(Protocol):
    def verify_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[TopicPartition]
    ) -> Mapping[TopicPartition, int]:
        """The error code per partition: 0 when it is in the producer's ongoing transaction,
        INVALID_PRODUCER_ID_MAPPING / PRODUCER_FENCED / INVALID_TXN_STATE / TRANSACTION_ABORTABLE otherwise
        (Kafka's verify-only AddPartitionsToTxn answers)."""
        ...


class TxnOffsetsListener(Protocol):
    def on_transaction_completed(self, producer_id: int, committed: bool, partitions: Sequence[int]) -> None:
        """The marker of ``producer_id``'s transaction was written to these ``__consumer_offsets``
        partitions: materialize (commit) or drop (abort) its pending transactional offset commits."""
        ...


__all__ = ["TransactionVerifier", "TxnMarkerWriter", "TxnOffsetsListener"]
