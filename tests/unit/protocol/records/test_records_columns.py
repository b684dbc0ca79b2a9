"""``columns.decode_columns`` / ``to_arrow``: a batch as Arrow-ready buffers (issue 15, for the Spark reader), on
both record implementations (conftest)."""

from __future__ import annotations

from array import array

import pytest

from pykafka_client.errors import CorruptRecordError
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import DefaultRecordBatch, MemoryRecordsBuilder, TimestampType
from pykafka_client.protocol.records.columns import decode_columns, to_arrow


def _batch(codec: CompressionType = CompressionType.NONE, **kw: object) -> DefaultRecordBatch:
    builder = MemoryRecordsBuilder(codec, base_offset=40, **kw)  # type: ignore[arg-type]
    builder.append(1000, b"k0", b"v0", [("a", b"1"), ("b", None)])
    builder.append(1001, None, b"", None)
    builder.append(1002, b"k2", None, [("c\udcff", b"")])
    return DefaultRecordBatch(builder.build())


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.ZSTD])
def test_columns_layout(codec: CompressionType) -> None:
    c = decode_columns(_batch(codec))
    assert c.num_records == 3
    assert list(array("q", c.offsets)) == [40, 41, 42]
    assert list(array("q", c.timestamps)) == [1000, 1001, 1002]
    assert c.key_validity == bytes([0b101]) and list(array("i", c.key_offsets)) == [0, 2, 2, 4]
    assert c.key_data == b"k0k2"
    assert c.value_validity == bytes([0b011]) and list(array("i", c.value_offsets)) == [0, 2, 2, 2]
    assert c.value_data == b"v0"
    assert list(array("i", c.header_offsets)) == [0, 2, 2, 3]
    assert list(array("i", c.header_key_offsets)) == [0, 1, 2, 4] and c.header_key_data == b"abc\xff"
    assert c.header_value_validity == bytes([0b101]) and c.header_value_data == b"1"
    assert c.timestamp_type is TimestampType.CREATE_TIME


def test_log_append_time_batches_carry_the_max_timestamp() -> None:
    c = decode_columns(_batch(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=5000))
    assert list(array("q", c.timestamps)) == [5000] * 3
    assert c.timestamp_type is TimestampType.LOG_APPEND_TIME


def test_corrupt_records_raise_the_reference_error() -> None:
    buf = bytearray(_batch().buffer)
    buf[61] = 0x7F  # the first record's length lies
    with pytest.raises(CorruptRecordError):
        decode_columns(DefaultRecordBatch(bytes(buf)))


def test_to_arrow_wraps_the_buffers() -> None:
    pytest.importorskip("pyarrow")
    table = to_arrow(decode_columns(_batch()))
    assert table.column_names == ["offset", "timestamp", "key", "value", "headers"]
    assert table.to_pylist()[0] == {
        "offset": 40, "timestamp": 1000, "key": b"k0", "value": b"v0",
        "headers": [{"key": b"a", "value": b"1"}, {"key": b"b", "value": None}],
    }
    assert table.column("key").null_count == 1 and table.column("value").null_count == 1
