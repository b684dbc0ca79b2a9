"""Per-partition producer state for idempotent producers (Kafka ``storage.internals.log`` producer classes)
and durable producer-id allocation. See ``producer_state_manager`` for how the log and the Produce /
InitProducerId handlers call into it."""

from __future__ import annotations

from mini_broker.producer_state.producer_append_info import AppendOrigin, BatchInfo, ProducerAppendInfo
from mini_broker.producer_state.producer_id_manager import ProducerIdManager
from mini_broker.producer_state.producer_state_entry import NUM_BATCHES_TO_RETAIN, BatchMetadata, ProducerStateEntry
from mini_broker.producer_state.producer_state_manager import (
    PendingAppend,
    ProducerStateManager,
    rebuild_from_log,
)
from mini_broker.producer_state.txn_metadata import CompletedTxn, TxnMetadata

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "AppendOrigin",
    "BatchInfo",
    "BatchMetadata",
    "CompletedTxn",
    "PendingAppend",
    "ProducerAppendInfo",
    "ProducerIdManager",
    "ProducerStateEntry",
    "ProducerStateManager",
    "TxnMetadata",
    "rebuild_from_log",
]
