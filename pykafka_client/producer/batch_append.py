"""The per-record loops of ``KafkaProducer.send_batch``: reading a pyarrow column from its buffers, checking the
records, the key partitions, and appending many records to a batch's pending list in one call.

Each function runs the compiled kernel (``protocol/records/kernel/producer_send_batch.c.h``, the key partitions
in ``producer_partitioner.c.h``) when it is active and otherwise, or when the kernel declines the input, its
``*_reference`` twin here, which defines the result. Both produce the same pending records (tuples, or their bytes
in the kernel's ``PendingRecords``) and sizes as :meth:`ProducerBatch.try_append` one record at a time, so a batch
filled by ``send_batch`` encodes to the same bytes as one filled by as many ``send`` calls.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, SupportsIndex, overload

from pykafka_client.producer.partitioner import murmur2, to_positive
from pykafka_client.producer.record_size import RECORD_BATCH_OVERHEAD, Callback, Header, record_size_in_bytes
from pykafka_client.protocol.records import _native

#: largest timestamp send_batch takes (the kernel keeps timestamp deltas within 64 bits)
MAX_TIMESTAMP = 1 << 62

#: (next index, size, base timestamp, max timestamp, max record size, produced bytes, sticky switch due)
AppendState = tuple[int, int, int, int, int, int, bool]


class PendingList(Protocol):
    """A batch's records as ``(timestamp, key, value, headers, callback)`` tuples (``ProducerBatch.pending``): a list
    of them (the reference), or with the kernel its ``PendingRecords``, which encodes each record at its append
    (Java ``MemoryRecordsBuilder``) and rebuilds a tuple when one is read."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...

    @overload
    def __getitem__(self, index: SupportsIndex, /) -> Any: ...

    @overload
    def __getitem__(self, index: slice, /) -> list[Any]: ...

    def append(self, record: Any, /) -> None: ...


def _payload(data: object) -> int:
    if data is None:
        return 0
    if data.__class__ is bytes:
        return len(data)
    return -1


def scan_records_reference(
    keys: Sequence[Any] | None, values: Sequence[Any], timestamps: Sequence[Any] | None
) -> int:
    """The largest ``len(key) + len(value)`` (None counts 0); -1 when a key or value is not bytes or None, -2
    when a timestamp is not None or an int in [0, 2**62]."""
    best = 0
    for i, value in enumerate(values):
        v = _payload(value)
        k = 0 if keys is None else _payload(keys[i])
        if v < 0 or k < 0:
            return -1
        best = max(best, k + v)
    if timestamps is not None:
        for ts in timestamps:
            if ts is not None and (ts.__class__ is not int or not 0 <= ts <= MAX_TIMESTAMP):
                return -2
    return best


def scan_records(keys: Sequence[Any] | None, values: Sequence[Any], timestamps: Sequence[Any] | None) -> int:
    kernel = _native.kernel
    if kernel is not None:
        return kernel.scan_records(keys, values, timestamps)
    return scan_records_reference(keys, values, timestamps)


def key_partitions_reference(keys: Sequence[Any], num_partitions: int) -> list[int]:
    """The default partitioner's choice per key (Java: ``toPositive(murmur2(key)) % numPartitions``), -1 for None."""
    return [-1 if k is None else to_positive(murmur2(k)) % num_partitions for k in keys]


def key_partitions(keys: Sequence[Any], num_partitions: int) -> list[int]:
    kernel = _native.kernel
    if kernel is not None:
        out = kernel.key_partitions(keys, num_partitions)
        if out is not None:
            return out
    return key_partitions_reference(keys, num_partitions)


def _estimated(size: int, ratio: float) -> int:
    """``ProducerBatch.estimated_size_in_bytes`` of a batch of ``size`` uncompressed bytes."""
    return size if ratio == 1.0 else RECORD_BATCH_OVERHEAD + int((size - RECORD_BATCH_OVERHEAD) * ratio)


def append_pending_reference(
    pending: PendingList,
    keys: Sequence[Any] | None,
    values: Sequence[Any],
    start: int,
    stop: int,
    timestamps: Sequence[Any] | None,
    timestamp: int,
    headers: Sequence[Header],
    callback: Callback | None,
    size: int,
    limit: int,
    base_ts: int,
    max_ts: int,
    max_rec: int,
    ratio: float,
    produced: int,
    switch_bytes: int,
    sticky_bytes: int,
) -> AppendState:
    """Append ``(timestamp, key, value, headers, callback)`` of records ``start..stop`` to ``pending`` (a batch's
    pending list, ``size`` bytes so far of at most ``limit``) while they fit; the first record of an empty batch
    always fits. With ``switch_bytes > 0`` the appended bytes (estimated, as the sticky partitioner counts them)
    are added to ``produced`` and appending stops after the record that makes a partition switch due (Java's
    rules: ``switch_bytes`` produced, or ``sticky_bytes`` and the batch full). Records are checked by
    :func:`scan_records` beforehand."""
    i = start
    due = False
    while i < stop:
        key = None if keys is None else keys[i]
        value = values[i]
        ts = timestamp if timestamps is None or timestamps[i] is None else timestamps[i]
        count = len(pending)
        if count == 0:
            base_ts = ts
        rs = record_size_in_bytes(count, ts - base_ts, key, value, headers)
        if count > 0 and size + rs > limit:
            break
        pending.append((ts, key, value, headers, callback))
        before = _estimated(size, ratio)
        size += rs
        max_ts = max(max_ts, ts)
        max_rec = max(max_rec, rs)
        i += 1
        if switch_bytes > 0:
            produced += _estimated(size, ratio) - before
            if produced >= switch_bytes or (size >= limit and produced >= sticky_bytes):
                due = True
                break
    return i, size, base_ts, max_ts, max_rec, produced, due


class BinaryColumnReference(Sequence["bytes | None"]):
    """The items ``offset..offset+length`` of one Arrow binary or string array (``large``: 64-bit offsets) over its
    buffers (``Array.buffers()``: the validity bitmap or None, the offsets, the data or None): each item's bytes,
    None where the bitmap marks a null, made when read. The offsets are read and checked once, at the making
    (ValueError on buffers that do not hold such an array). With the kernel, :func:`binary_column` makes its
    ``BinaryColumn`` instead, which send_batch's kernel steps read without an object per item."""

    __slots__ = ("_bits", "_data", "_offset", "_starts")

    def __init__(self, validity: object, offsets: object, data: object, offset: int, length: int, large: bool) -> None:
        width = 8 if large else 4
        offs_view = memoryview(offsets).cast("B")  # type: ignore[arg-type]
        if offset < 0 or length < 0 or len(offs_view) < (offset + length + 1) * width:
            raise ValueError(
                f"an Arrow array of {length} items at offset {offset} needs {(offset + length + 1) * width} bytes of"
                f" offsets, its offsets buffer has {len(offs_view)}: pass the array itself, not rebuilt buffers"
            )
        starts = struct.unpack_from(f"<{length + 1}{'q' if large else 'i'}", offs_view, offset * width)
        values = memoryview(b"") if data is None else memoryview(data).cast("B")  # type: ignore[arg-type]
        bits = None if validity is None else memoryview(validity).cast("B")  # type: ignore[arg-type]
        if bits is not None and length and len(bits) < (offset + length + 7) // 8:
            raise ValueError(f"the validity bitmap of an Arrow array of {length} items at offset {offset} is too short")
        for i in range(length):
            start, end = starts[i], starts[i + 1]
            if start < 0 or end < start or end > len(values):
                raise ValueError(
                    f"item {i} of an Arrow array spans bytes {start}..{end} of a {len(values)}-byte data buffer: the"
                    " offsets are corrupt"
                )
        self._starts = starts
        self._data = values
        self._bits = bits
        self._offset = offset

    def __len__(self) -> int:
        return len(self._starts) - 1

    def _item(self, i: int) -> bytes | None:
        j = self._offset + i
        bits = self._bits
        if bits is not None and not (bits[j >> 3] >> (j & 7)) & 1:
            return None
        return bytes(self._data[self._starts[i] : self._starts[i + 1]])

    @overload
    def __getitem__(self, index: int) -> bytes | None: ...

    @overload
    def __getitem__(self, index: slice) -> list[bytes | None]: ...

    def __getitem__(self, index: int | slice) -> bytes | list[bytes | None] | None:
        n = len(self)
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(n))]
        i = operator.index(index)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("BinaryColumn index out of range")
        return self._item(i)


def binary_column(
    validity: object, offsets: object, data: object, offset: int, length: int, large: bool
) -> Sequence[bytes | None]:
    """:class:`BinaryColumnReference`, the kernel's ``BinaryColumn`` when the kernel is active and takes the buffers."""
    kernel = _native.kernel
    if kernel is not None:
        out = kernel.binary_column(validity, offsets, data, offset, length, large)
        if out is not None:
            return out
    return BinaryColumnReference(validity, offsets, data, offset, length, large)


def arrow_binary_items_reference(
    validity: object, offsets: object, data: object, offset: int, length: int, large: bool
) -> list[bytes | None]:
    """The items of :class:`BinaryColumnReference` as a list. Raises ValueError on buffers that do not hold such an
    array."""
    return list(BinaryColumnReference(validity, offsets, data, offset, length, large))


def arrow_binary_items(
    validity: object, offsets: object, data: object, offset: int, length: int, large: bool
) -> list[bytes | None]:
    """:func:`arrow_binary_items_reference`, read through the kernel's column when it is active."""
    return list(binary_column(validity, offsets, data, offset, length, large))


def arrow_column(column: Any) -> Sequence[bytes | None] | None:
    """A pyarrow ``Array`` or ``ChunkedArray`` of binary, string, large_binary or large_string (strings as their UTF-8
    bytes) as a :func:`binary_column` over its buffers, sliced arrays at their offset (the chunks of a chunked array
    concatenated first, by Arrow); None for another type."""
    import pyarrow as pa

    t = column.type
    if pa.types.is_binary(t) or pa.types.is_string(t):
        large = False
    elif pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        large = True
    else:
        return None
    if isinstance(column, pa.ChunkedArray):
        column = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    validity, offsets, data = column.buffers()
    return binary_column(validity, offsets, data, column.offset, len(column), large)


def arrow_column_items(column: Any) -> list[bytes | None] | None:
    """The items of :func:`arrow_column` as a list (None for another type)."""
    items = arrow_column(column)
    return None if items is None else list(items)
