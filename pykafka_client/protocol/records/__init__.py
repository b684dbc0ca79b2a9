"""Record batches (Java ``org.apache.kafka.common.record``): magic v2 batches, legacy v0/v1 reading.

See docs/ARCHITECTURE.md "Record batches" for the contract.
"""

from __future__ import annotations

from pykafka_client.protocol.records.batch_ops import (
    BatchIterator,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    set_producer_state,
    validate_batch,
    validate_records,
)
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from pykafka_client.protocol.records.default_record_batch import RECORD_BATCH_OVERHEAD, DefaultRecordBatch
from pykafka_client.protocol.records.legacy_records import LegacyRecordBatch
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.protocol.records.record import Header, Record
from pykafka_client.protocol.records.record_batch import (
    CURRENT_MAGIC_VALUE,
    LOG_OVERHEAD,
    MAGIC_VALUE_V0,
    MAGIC_VALUE_V1,
    MAGIC_VALUE_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RecordBatch,
    TimestampType,
)

__all__ = [
    "CURRENT_MAGIC_VALUE",
    "LOG_OVERHEAD",
    "MAGIC_VALUE_V0",
    "MAGIC_VALUE_V1",
    "MAGIC_VALUE_V2",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "RECORD_BATCH_OVERHEAD",
    "BatchIterator",
    "ControlRecordType",
    "EndTransactionMarker",
    "LegacyRecordBatch",
    "MemoryRecords",
    "MemoryRecordsBuilder",
    "DefaultRecordBatch",
    "Header",
    "Record",
    "RecordBatch",
    "TimestampType",
    "build_end_transaction_marker",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "set_producer_state",
    "validate_batch",
    "validate_records",
]
