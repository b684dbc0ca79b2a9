"""Arrow record batches (what Spark hands an Arrow writer) to the arguments of ``KafkaProducer.send``, column
by column: strings become UTF-8 bytes by an Arrow cast (no per-row encode), timestamps become epoch
milliseconds (Arrow compute), headers (key, value) pairs. No I/O."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spark_connector.write_options import KafkaWriteOptionError
from spark_connector.write_schema import WriteColumns

#: one record's ``send`` arguments: topic, key, value, headers, partition, timestamp (ms)
SendArgs = tuple[str, "bytes | None", "bytes | None", "list[tuple[str, bytes | None]] | None", "int | None", "int | None"]

NULL_TOPIC_MESSAGE = "null topic present in the data. Use the topic option for setting a topic."


def _bytes_column(column: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    t = column.type
    if pa.types.is_string(t):
        column = column.cast(pa.binary())
    elif pa.types.is_large_string(t):
        column = column.cast(pa.large_binary())
    out: list[bytes | None] = column.to_pylist()
    return out


def timestamp_ms_column(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Epoch milliseconds (int64, nulls kept) of a timestamp column, computed by Arrow: no Python object per row
    (``KafkaProducer.send_batch`` takes the array as is). Sub-millisecond units round down (floor), as ``//``."""
    unit = getattr(column.type, "unit", "us")
    raw = column.cast(pa.int64())
    if unit == "s":
        return pc.multiply_checked(raw, 1000)
    if unit == "ms":
        return raw
    divisor = 1000 if unit == "us" else 1_000_000
    quotient = pc.divide(raw, divisor)  # truncates toward zero: one less where a negative value has a remainder
    inexact_negative = pc.and_(pc.less(raw, 0), pc.not_equal(pc.multiply(quotient, divisor), raw))
    return pc.if_else(inexact_negative, pc.subtract(quotient, 1), quotient)


def _headers_column(column: pa.Array | pa.ChunkedArray) -> list[list[tuple[str, bytes | None]] | None]:
    rows: list[Any] = column.to_pylist()
    return [None if r is None else [(h["key"], h["value"]) for h in r] for r in rows]


def records(batch: pa.RecordBatch, columns: WriteColumns, topic_option: str | None) -> Iterator[SendArgs]:
    """The ``send`` arguments of every row of ``batch``; a null topic raises Spark's message."""
    n = batch.num_rows
    none: list[Any] = [None] * n
    values = _bytes_column(batch.column(columns.value))
    keys = _bytes_column(batch.column(columns.key)) if columns.key else none
    if topic_option is not None:
        topics: list[Any] = [topic_option] * n
    else:
        assert columns.topic is not None
        topic_column = batch.column(columns.topic)
        if topic_column.null_count:
            raise KafkaWriteOptionError(NULL_TOPIC_MESSAGE)
        topics = topic_column.to_pylist()
    headers = _headers_column(batch.column(columns.headers)) if columns.headers else none
    partitions: list[Any] = batch.column(columns.partition).to_pylist() if columns.partition else none
    timestamps = timestamp_ms_column(batch.column(columns.timestamp)).to_pylist() if columns.timestamp else none
    return zip(topics, keys, values, headers, partitions, timestamps, strict=True)
