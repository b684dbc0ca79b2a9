"""Records to Arrow: what ``read()`` yields. One ``pa.RecordBatch`` per chunk of consumed records, built
column by column (one list per column, converted once), never row tuples.

The Arrow schema is exactly ``to_arrow_schema`` of the Spark schema (Spark rejects any difference):
int32 for ``int``, int64 for ``long``, ``timestamp[us, tz=UTC]``. ``timestampType`` is Java's id
(0 CreateTime, 1 LogAppendTime, -1 none), which our ``TimestampType`` already uses. ``headers`` is null for
a record without headers, as in Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from pykafka_client.consumer.consumer_record import ConsumerRecord

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


def arrow_schema(include_headers: bool) -> pa.Schema:
    return ARROW_SCHEMA_WITH_HEADERS if include_headers else ARROW_SCHEMA


def records_to_batch(
    records: Sequence[ConsumerRecord[bytes | None, bytes | None]], topic: str, partition: int, include_headers: bool
) -> pa.RecordBatch:
    """The rows of ``records`` (all of one partition) as one RecordBatch of :func:`arrow_schema`."""
    n = len(records)
    columns: list[Any] = [
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.array([topic] * n, pa.string()),
        pa.array([partition] * n, pa.int32()),
        pa.array([r.offset for r in records], pa.int64()),
        pa.array([r.timestamp * 1000 for r in records], _TIMESTAMP),
        pa.array([int(r.timestamp_type) for r in records], pa.int32()),
    ]
    if include_headers:
        columns.append(pa.array(
            [[{"key": k, "value": v} for k, v in r.headers] if r.headers else None for r in records],
            HEADERS_ARROW_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))
