"""Encoding a :class:`~pykafka_client.producer.producer_batch.ProducerBatch` into one magic v2 record batch
with the shared ``MemoryRecordsBuilder``."""

from __future__ import annotations

from typing import Any, Protocol, cast

from pykafka_client.producer.batch_append import PendingList
from pykafka_client.protocol.compression import CompressionType, compress
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.protocol.records.crc import crc32c


class EncodableBatch(Protocol):
    """What :func:`encode_batch` reads of a producer batch: its records and its producer state."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool

    @property
    def pending(self) -> PendingList:
        """The records, each starting with (timestamp, key, value, headers)."""

_UNLIMITED = 2**62


def compression_type_for(value: Any) -> CompressionType:
    """``compression.type`` config value (name, CompressionType or None) -> CompressionType."""
    if value is None:
        return CompressionType.NONE
    if isinstance(value, CompressionType):
        return value
    return CompressionType.for_name(str(value))


def encode_batch(batch: EncodableBatch, compression_type: Any, compression_level: int | None) -> tuple[bytes, float]:
    """The wire bytes of ``batch`` (base offset 0) with its current producer id, epoch and base sequence, and
    the compression ratio achieved on its records (1.0 without compression).

    An uncompressed batch (one per partition of every produce request) is encoded by the compiled kernel in one
    call when it is active: of a ``PendingRecords`` (records encoded at append) only the header and CRC are written
    around its records' bytes; :func:`encode_batch_reference` decides whenever the kernel declines."""
    kernel = _native.kernel
    if kernel is not None and (
        compression_type is None
        or compression_type is CompressionType.NONE  # (the producer's batches hold the enum: no call)
        or compression_type_for(compression_type) is CompressionType.NONE
    ):
        pending = batch.pending
        if type(pending) is list or type(pending) is kernel.PendingRecords:
            data = kernel.encode_batch(
                pending, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional, crc32c
            )
            if data is not None:
                return data, 1.0
    elif kernel is not None and type(batch.pending) is kernel.PendingRecords:
        # the records section as encoded at append, compressed whole, the header written around it by the kernel
        encoded = cast(_native.PendingRecordsApi, batch.pending)
        raw = encoded.records_bytes()
        if raw:
            codec = compression_type_for(compression_type)
            payload = compress(codec, raw, compression_level)
            data = encoded.encode_compressed(
                payload, int(codec), batch.producer_id, batch.producer_epoch, batch.base_sequence,
                batch.is_transactional, crc32c,
            )
            if data is not None:
                return data, len(payload) / max(len(raw), 1)
    return encode_batch_reference(batch, compression_type, compression_level)


def encode_batch_reference(batch: EncodableBatch, compression_type: Any, compression_level: int | None) -> tuple[bytes, float]:
    """:func:`encode_batch` with the shared ``MemoryRecordsBuilder``: the reference of the compiled path."""
    builder = MemoryRecordsBuilder(
        compression_type_for(compression_type),
        write_limit=_UNLIMITED,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        compression_level=compression_level,
    )
    pending = batch.pending
    # a PendingRecord starts with (timestamp, key, value, headers); the kernel's PendingRecords rebuilds them
    builder.append_all(pending if type(pending) is list else list(pending))
    data = builder.build()
    return data, builder.compression_ratio
