"""Fetched record batches to Arrow: what ``read()`` yields. The consumer hands over whole Kafka record batches
already decoded into column buffers (``pykafka_client.consumer.column_fetch``: the compiled kernel, or the
pure-Python reference); each becomes Arrow arrays over those buffers without a Python object per record, the
rows outside the read's offset range are sliced off, and one ``poll``'s batches are combined into one
``pa.RecordBatch``.

The Arrow schema is exactly ``to_arrow_schema`` of the Spark schema (Spark rejects any difference):
int32 for ``int``, int64 for ``long``, ``timestamp[us, tz=UTC]``. ``timestampType`` is Java's id
(0 CreateTime, 1 LogAppendTime, -1 none), which our ``TimestampType`` already uses. ``headers`` is null for
a record without headers, as in Spark; header keys are UTF-8 (malformed bytes become U+FFFD, as Java's
``new String(bytes, UTF_8)`` in Spark's source).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pykafka_client.consumer.column_fetch import FetchedColumns, RecordColumns

HEADERS_ARROW_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
_TIMESTAMP = pa.timestamp("us", tz="UTC")
_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", _TIMESTAMP),
    pa.field("timestampType", pa.int32()),
]
ARROW_SCHEMA = pa.schema(_BASE_FIELDS)
ARROW_SCHEMA_WITH_HEADERS = pa.schema([*_BASE_FIELDS, pa.field("headers", HEADERS_ARROW_TYPE)])
_INT64 = struct.Struct("=q")


def arrow_schema(include_headers: bool) -> pa.Schema:
    return ARROW_SCHEMA_WITH_HEADERS if include_headers else ARROW_SCHEMA


def columns_to_batch(
    fetched: Sequence[FetchedColumns], topic: str, partition: int, until_offset: int, include_headers: bool
) -> pa.RecordBatch | None:
    """The records of ``fetched`` (one partition) with ``start_offset <= offset < until_offset`` as one
    RecordBatch of :func:`arrow_schema`; None when no record is in that range."""
    parts: list[pa.RecordBatch] = []
    for f in fetched:
        for cols in f.columns:
            part = _batch_rows(cols, topic, partition, f.start_offset, until_offset, include_headers)
            if part is not None:
                parts.append(part)
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    combined = pa.Table.from_batches(parts, schema=arrow_schema(include_headers)).combine_chunks()
    return combined.to_batches()[0]


def _batch_rows(cols: RecordColumns, topic: str, partition: int, start: int, until: int,
                include_headers: bool) -> pa.RecordBatch | None:
    """One Kafka batch's rows in ``[start, until)`` (a batch's offsets increase, so that is a slice)."""
    n = cols.num_records
    offsets = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.offsets)])
    lo = 0 if _INT64.unpack_from(cols.offsets, 0)[0] >= start else _count_below(offsets, start)
    hi = n if _INT64.unpack_from(cols.offsets, (n - 1) * 8)[0] < until else _count_below(offsets, until)
    if lo >= hi:
        return None
    timestamps = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.timestamps)])
    columns: list[Any] = [
        _binary(cols.key_validity, cols.key_offsets, cols.key_data, n),
        _binary(cols.value_validity, cols.value_offsets, cols.value_data, n),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        offsets,
        pc.multiply(timestamps, 1000).cast(_TIMESTAMP),
        pa.repeat(pa.scalar(int(cols.timestamp_type), pa.int32()), n),
    ]
    if include_headers:
        columns.append(_headers(cols, n))
    batch = pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))
    return batch if (lo, hi) == (0, n) else batch.slice(lo, hi - lo)


def _count_below(offsets: pa.Array, bound: int) -> int:
    return int(pc.sum(pc.less(offsets, bound)).as_py() or 0)


def _binary(valid: bytes, offsets: bytes, data: bytes, count: int) -> pa.Array:
    return pa.Array.from_buffers(pa.binary(), count, [pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)])


def _headers(cols: RecordColumns, n: int) -> pa.Array:
    """list<struct<key: string, value: binary>>, null for a record without headers."""
    h = len(cols.header_key_offsets) // 4 - 1
    keys = pa.Array.from_buffers(pa.string(), h, [None, pa.py_buffer(cols.header_key_offsets),
                                                  pa.py_buffer(cols.header_key_data)])
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid:  # not UTF-8: decoded as Java does (malformed input replaced)
        raw = pa.Array.from_buffers(pa.binary(), h, [None, pa.py_buffer(cols.header_key_offsets),
                                                     pa.py_buffer(cols.header_key_data)])
        keys = pa.array([k.decode("utf-8", "replace") for k in raw.to_pylist()], pa.string())
    values = _binary(cols.header_value_validity, cols.header_value_offsets, cols.header_value_data, h)
    entries = pa.StructArray.from_arrays([keys, values], fields=list(HEADERS_ARROW_TYPE.value_type))
    list_offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(cols.header_offsets)])
    no_headers = pc.equal(pc.subtract(list_offsets[1:], list_offsets[:-1]), 0)
    return pa.ListArray.from_arrays(list_offsets, entries, type=HEADERS_ARROW_TYPE, mask=no_headers)
