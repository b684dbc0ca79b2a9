"""Constants and the interface shared by every record batch format (Java ``RecordBatch``).

Magic v2 batches are :class:`~pykafka_client.protocol.records.default_record_batch.DefaultRecordBatch`;
legacy v0/v1 message sets are read through
:class:`~pykafka_client.protocol.records.legacy_records.LegacyRecordBatch`. Both satisfy
:class:`RecordBatch`, so consumers iterate them the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from pykafka_client.protocol.records.timestamp_type import TimestampType as TimestampType  # re-exported

if TYPE_CHECKING:
    from pykafka_client.protocol.compression import CompressionType
    from pykafka_client.protocol.records.record import Record

MAGIC_VALUE_V0 = 0
MAGIC_VALUE_V1 = 1
MAGIC_VALUE_V2 = 2
CURRENT_MAGIC_VALUE = MAGIC_VALUE_V2

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

#: baseOffset (int64) + batchLength/messageSize (int32): the prefix every format shares.
LOG_OVERHEAD = 12
#: Position of the magic byte, the same in every format (after offset, length and a 4-byte field).
MAGIC_OFFSET = 16


class RecordBatch(Protocol):
    """A read-only view of one batch (v2) or one top-level message (v0/v1) in a buffer."""

    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def magic(self) -> int: ...
    @property
    def compression_type(self) -> CompressionType: ...
    @property
    def timestamp_type(self) -> TimestampType: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def partition_leader_epoch(self) -> int:
        """The leader epoch the batch was written under; -1 (NO_PARTITION_LEADER_EPOCH) before v2."""
        ...
    @property
    def size_in_bytes(self) -> int: ...
    def is_valid(self) -> bool: ...
    def ensure_valid(self) -> None: ...
    def records(self) -> list[Record]: ...
    def __iter__(self) -> Iterator[Record]: ...
