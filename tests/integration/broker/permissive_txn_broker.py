"""TEST-ONLY: ``python -m tests.integration.broker.permissive_txn_broker`` runs ``mini_broker`` with a transaction
verifier that accepts every partition, so wire tests can write transactional batches and WriteTxnMarkers without
a transaction coordinator (the partition side of transactions alone)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from mini_broker import __main__ as broker_main
from mini_broker.broker import MiniBroker
from pykafka_client.structs import TopicPartition


class AcceptAll:
    """A :class:`~mini_broker.transaction.seams.TransactionVerifier` for which every partition is in the
    transaction; records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int, list[TopicPartition]]] = []

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> Mapping[TopicPartition, int]:
        self.calls.append((transactional_id, producer_id, producer_epoch, list(partitions)))
        return {tp: 0 for tp in partitions}


def install() -> None:
    original = MiniBroker._start

    def start(self: MiniBroker) -> None:
        original(self)
        assert self.context is not None
        self.context.transaction_verifier = AcceptAll()

    MiniBroker._start = start  # type: ignore[method-assign]


if __name__ == "__main__":
    install()
    sys.exit(broker_main.main())
