"""arrow_rows.columns_to_batch: decoded columns of whole Kafka batches to Spark's Arrow rows, sliced to the
read's range, on both record implementations."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from pykafka_client.consumer.column_fetch import FetchedColumns
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import MemoryRecords, MemoryRecordsBuilder
from pykafka_client.protocol.records.columns import decode_columns
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from pykafka_client.protocol.records.record_batch import TimestampType
from spark_connector.arrow_rows import arrow_schema, columns_to_batch
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)

pytest.importorskip("pyarrow")
pytestmark = pytest.mark.usefixtures("record_impl")

Rec = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def columns(base_offset: int, records: list[Rec], *, codec: int = 0, log_append_time: int | None = None) -> Any:
    b = MemoryRecordsBuilder(
        CompressionType(codec), base_offset=base_offset, write_limit=1 << 30,
        timestamp_type=TimestampType.CREATE_TIME if log_append_time is None else TimestampType.LOG_APPEND_TIME,
        log_append_time=-1 if log_append_time is None else log_append_time)
    for i, (k, v, h) in enumerate(records):
        b.append(10_000 + i, k, v, h)
    (batch,) = MemoryRecords(b.build()).batches()
    assert isinstance(batch, DefaultRecordBatch)
    return decode_columns(batch)


def ts(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, timezone.utc)


def test_rows_of_two_batches_sliced_to_the_range() -> None:
    first = columns(10, [(b"k%d" % i, b"v%d" % i, []) for i in range(5)], codec=3)
    second = columns(15, [(None, None, [("a", b"1"), ("b", None)]), (b"k", b"", [])])
    batch = columns_to_batch([FetchedColumns(12, [first, second])], "t", 3, 16, True)
    assert batch is not None and batch.schema == arrow_schema(True)
    assert batch.to_pylist() == [
        {"key": b"k2", "value": b"v2", "topic": "t", "partition": 3, "offset": 12, "timestamp": ts(10_002),
         "timestampType": 0, "headers": None},
        {"key": b"k3", "value": b"v3", "topic": "t", "partition": 3, "offset": 13, "timestamp": ts(10_003),
         "timestampType": 0, "headers": None},
        {"key": b"k4", "value": b"v4", "topic": "t", "partition": 3, "offset": 14, "timestamp": ts(10_004),
         "timestampType": 0, "headers": None},
        {"key": None, "value": None, "topic": "t", "partition": 3, "offset": 15, "timestamp": ts(10_000),
         "timestampType": 0, "headers": [{"key": "a", "value": b"1"}, {"key": "b", "value": None}]},
    ]


def test_nothing_in_range_and_no_headers_column() -> None:
    cols = columns(0, [(b"k", b"v", [("h", b"x")])] * 3)
    assert columns_to_batch([FetchedColumns(3, [cols])], "t", 0, 10, False) is None
    assert columns_to_batch([FetchedColumns(0, [cols])], "t", 0, 0, False) is None
    batch = columns_to_batch([FetchedColumns(0, [cols])], "t", 0, 2, False)
    assert batch is not None and batch.schema == arrow_schema(False) and batch.num_rows == 2


def test_log_append_time_batch() -> None:
    cols = columns(0, [(b"k", b"v", [])] * 2, log_append_time=77_000)
    batch = columns_to_batch([FetchedColumns(0, [cols])], "t", 0, 2, False)
    assert batch is not None
    assert [(r["timestamp"], r["timestampType"]) for r in batch.to_pylist()] == [(ts(77_000), 1)] * 2


def test_header_key_not_utf8_is_replaced_as_java_does() -> None:
    bad_key = b"\xff\xfek".decode("utf-8", "surrogateescape")
    cols = columns(0, [(b"k", b"v", [(bad_key, b"x"), ("ok", b"y")])])
    batch = columns_to_batch([FetchedColumns(0, [cols])], "t", 0, 1, True)
    assert batch is not None
    assert batch.to_pylist()[0]["headers"] == [{"key": "\ufffd\ufffdk", "value": b"x"}, {"key": "ok", "value": b"y"}]
