"""Arrow record batches (what Spark hands an Arrow writer) to the arguments of ``KafkaProducer.send``, column
by column: strings become UTF-8 bytes by an Arrow cast (no per-row encode), timestamps become epoch
milliseconds, headers (key, value) pairs. No I/O."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

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


def timestamp_ms_column(column: pa.Array | pa.ChunkedArray) -> list[int | None]:
    unit = getattr(column.type, "unit", "us")
    divisor = {"s": 1, "ms": 1, "us": 1000, "ns": 1_000_000}[unit]
    raw: list[int | None] = column.cast(pa.int64()).to_pylist()
    if unit == "s":
        return [None if v is None else v * 1000 for v in raw]
    return [None if v is None else v // divisor for v in raw]


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
    timestamps = timestamp_ms_column(batch.column(columns.timestamp)) if columns.timestamp else none
    return zip(topics, keys, values, headers, partitions, timestamps, strict=True)
