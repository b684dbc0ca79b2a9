"""A buffer of batches as found in a fetch response or a log segment (Java ``MemoryRecords``).

Iteration frames each batch from its 12-byte prefix and the magic byte at position 16, yielding a
:class:`DefaultRecordBatch` (v2) or a :class:`LegacyRecordBatch` (v0/v1). A partial trailing batch
(the broker cuts fetch responses at ``max.bytes``) ends the iteration silently; a length below the
format's minimum, or an unknown magic, raises ``CorruptRecordError``. CRCs are checked only on
request (``check_crcs``, the consumer's ``check.crcs``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from pykafka_client.errors import CorruptRecordError
from pykafka_client.protocol.records.default_record_batch import MIN_BATCH_LENGTH, DefaultRecordBatch
from pykafka_client.protocol.records.legacy_records import RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1, LegacyRecordBatch
from pykafka_client.protocol.records.record import Record
from pykafka_client.protocol.records.record_batch import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_VALUE_V0,
    MAGIC_VALUE_V1,
    MAGIC_VALUE_V2,
    RecordBatch,
)

Buffer = bytes | bytearray | memoryview

_INT32 = struct.Struct(">i")
_MIN_SIZE = {MAGIC_VALUE_V0: RECORD_OVERHEAD_V0, MAGIC_VALUE_V1: RECORD_OVERHEAD_V1, MAGIC_VALUE_V2: MIN_BATCH_LENGTH}


class MemoryRecords:
    """Read-only view of consecutive record batches in ``buf`` (no copy is made)."""

    __slots__ = ("_buf", "check_crcs", "max_decompressed_size")

    def __init__(self, buf: Buffer, *, check_crcs: bool = False, max_decompressed_size: int | None = None) -> None:
        self._buf = buf
        self.check_crcs = check_crcs
        self.max_decompressed_size = max_decompressed_size

    @property
    def buffer(self) -> Buffer:
        return self._buf

    def size_in_bytes(self) -> int:
        return len(self._buf)

    def first_batch_size(self) -> int | None:
        """Size of the first batch per its header, or None when fewer than 12 bytes are present."""
        if len(self._buf) < LOG_OVERHEAD:
            return None
        return int(_INT32.unpack_from(self._buf, 8)[0]) + LOG_OVERHEAD

    def valid_bytes(self) -> int:
        """Bytes covered by complete batches (the partial tail excluded)."""
        end = 0
        for batch in self.batches():
            end += batch.size_in_bytes
        return end

    def batches(self) -> Iterator[RecordBatch]:
        """Complete batches in order; with ``check_crcs`` each one's CRC is verified first."""
        buf = self._buf
        n = len(buf)
        pos = 0
        while n - pos >= LOG_OVERHEAD:
            (length,) = _INT32.unpack_from(buf, pos + 8)
            if length < RECORD_OVERHEAD_V0:
                raise CorruptRecordError(
                    f"batch at byte {pos}: size {length} is less than the minimum record overhead {RECORD_OVERHEAD_V0}"
                )
            size = length + LOG_OVERHEAD
            if size > n - pos:
                return
            magic = buf[pos + MAGIC_OFFSET]
            minimum = _MIN_SIZE.get(magic)
            if minimum is None:
                raise CorruptRecordError(f"batch at byte {pos}: invalid magic {magic}")
            if length < minimum:
                raise CorruptRecordError(
                    f"batch at byte {pos}: size {length} is below the minimum {minimum} for magic {magic}"
                )
            batch: RecordBatch
            batch = DefaultRecordBatch(buf, pos) if magic == MAGIC_VALUE_V2 else LegacyRecordBatch(buf, pos)
            if self.check_crcs:
                batch.ensure_valid()
            yield batch
            pos += size

    __iter__ = batches

    def records(self) -> Iterator[Record]:
        """Every record of every complete batch, control records included."""
        limit = self.max_decompressed_size
        for batch in self.batches():
            if isinstance(batch, DefaultRecordBatch):
                yield from batch.records(limit)
            elif isinstance(batch, LegacyRecordBatch):
                yield from batch.records(limit, check_crcs=self.check_crcs)
            else:  # pragma: no cover - only the two formats exist
                yield from batch.records()

    def __repr__(self) -> str:
        return f"MemoryRecords(size={len(self._buf)})"
