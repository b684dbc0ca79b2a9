"""Control records (Java ``ControlRecordType``, ``EndTransactionMarker``).

A control record's key is ``version int16 (0) + type int16``. For ABORT/COMMIT the value is
``version int16 (0) + coordinatorEpoch int32``. Markers are written in their own control batch
(transactional + control attributes, no sequence), built by :func:`build_end_transaction_marker`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from pykafka_client.errors import CorruptRecordError, IllegalArgumentError
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.protocol.records.record import Record
from pykafka_client.protocol.records.record_batch import NO_PARTITION_LEADER_EPOCH

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")
CONTROL_RECORD_KEY_VERSION = 0
END_TRANSACTION_MARKER_VERSION = 0


class ControlRecordType(IntEnum):
    """The type stored in a control record's key; unknown types parse as UNKNOWN."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    def record_key(self) -> bytes:
        if self == ControlRecordType.UNKNOWN:
            raise IllegalArgumentError("cannot serialize the UNKNOWN control record type")
        return _KEY.pack(CONTROL_RECORD_KEY_VERSION, int(self))

    @classmethod
    def parse(cls, key: bytes | None) -> ControlRecordType:
        """The type in a control record key (``CorruptRecordError`` if shorter than 4 bytes)."""
        if key is None or len(key) < 4:
            raise CorruptRecordError(f"invalid control record key of {0 if key is None else len(key)} bytes")
        version, type_id = _KEY.unpack_from(key, 0)
        if version < 0:
            raise CorruptRecordError(f"invalid control record key version {version}")
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """The value of an ABORT/COMMIT control record."""

    control_type: ControlRecordType
    coordinator_epoch: int

    def __post_init__(self) -> None:
        if self.control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            raise IllegalArgumentError(f"invalid control type for an end transaction marker: {self.control_type!r}")

    def value(self) -> bytes:
        return _MARKER.pack(END_TRANSACTION_MARKER_VERSION, self.coordinator_epoch)

    @classmethod
    def deserialize(cls, record: Record) -> EndTransactionMarker:
        """Read the marker from a control record (``CorruptRecordError`` when it is not a marker)."""
        control_type = ControlRecordType.parse(record.key)
        if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            raise CorruptRecordError(f"control record of type {control_type.name} is not an end transaction marker")
        value = record.value
        if value is None or len(value) < 6:
            raise CorruptRecordError("end transaction marker value is shorter than 6 bytes")
        version, coordinator_epoch = _MARKER.unpack_from(value, 0)
        if version < 0:
            raise CorruptRecordError(f"invalid end transaction marker version {version}")
        return cls(control_type, coordinator_epoch)


def build_end_transaction_marker(
    marker: EndTransactionMarker,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A control batch holding one ABORT/COMMIT marker (Java ``MemoryRecords.withEndTransactionMarker``)."""
    builder = MemoryRecordsBuilder(
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control_batch=True,
        partition_leader_epoch=partition_leader_epoch,
    )
    builder.append(timestamp, marker.control_type.record_key(), marker.value())
    return builder.build()
