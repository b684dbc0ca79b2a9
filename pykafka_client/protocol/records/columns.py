"""A v2 batch's records as column buffers (for Arrow), without a Python object per record.

:func:`decode_columns` turns one batch into a :class:`RecordColumns`: fixed-width columns as packed arrays and
variable-width ones (keys, values, header keys and values) as one contiguous data buffer plus ``num + 1``
int32 offsets, with a validity bitmap (bit i set when item i is not null, least significant bit first, as
Arrow) for the nullable ones. Numbers are in the machine's byte order (little-endian on every platform Arrow
runs on). The buffers map one to one onto Arrow arrays; :func:`to_arrow` does that when pyarrow is installed.

On the compiled record kernel the batch is scanned once with the GIL released; the pure-Python path below
(:func:`decode_columns_reference`, built from :meth:`DefaultRecordBatch.records`) is the reference and runs
whenever the kernel is off or does not accept the bytes (it then raises the reference's error).
"""

from __future__ import annotations

import importlib
from array import array
from typing import Any, NamedTuple

from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.default_record_batch import TIMESTAMP_TYPE_MASK, DefaultRecordBatch
from pykafka_client.protocol.records.record import Record
from pykafka_client.protocol.records.record_batch import TimestampType


class RecordColumns(NamedTuple):
    """The records of one batch as buffers (see the module docstring for the layout)."""

    num_records: int
    #: int64 per record: the absolute offset.
    offsets: bytes
    #: int64 per record: the timestamp (the batch's max timestamp for LOG_APPEND_TIME, as ``Record``).
    timestamps: bytes
    key_validity: bytes
    #: int32 per record + 1: record i's key is ``key_data[key_offsets[i]:key_offsets[i + 1]]``.
    key_offsets: bytes
    key_data: bytes
    value_validity: bytes
    value_offsets: bytes
    value_data: bytes
    #: int32 per record + 1: record i's headers are entries ``header_offsets[i] .. header_offsets[i + 1] - 1``.
    header_offsets: bytes
    #: int32 per header + 1 into ``header_key_data`` (raw UTF-8 bytes; never null).
    header_key_offsets: bytes
    header_key_data: bytes
    header_value_validity: bytes
    header_value_offsets: bytes
    header_value_data: bytes
    timestamp_type: TimestampType


def decode_columns(batch: DefaultRecordBatch, max_decompressed_size: int | None = None) -> RecordColumns:
    """The records of ``batch`` as columns; raises what :meth:`DefaultRecordBatch.records` raises on bad bytes."""
    ts_type = TimestampType.LOG_APPEND_TIME if batch.attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME
    kernel = _native.kernel
    if kernel is not None:
        data = batch.records_data(max_decompressed_size)
        if data is None:
            return columns_of_records([], ts_type)
        log_append = batch.max_timestamp if ts_type is TimestampType.LOG_APPEND_TIME else None
        out = kernel.decode_columns(data, batch.records_count, batch.base_offset, batch.base_timestamp, log_append)
        if out is not None:
            return RecordColumns._make((*out, ts_type))
    return decode_columns_reference(batch, max_decompressed_size)


def decode_columns_reference(batch: DefaultRecordBatch, max_decompressed_size: int | None = None) -> RecordColumns:
    """:func:`decode_columns` in pure Python, from the decoded records (the reference of the kernel)."""
    ts_type = TimestampType.LOG_APPEND_TIME if batch.attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME
    return columns_of_records(batch.records(max_decompressed_size), ts_type)


class _Binary:
    """A nullable variable-width column being built."""

    def __init__(self) -> None:
        self.valid = bytearray()
        self.offsets = array("i", [0])
        self.data = bytearray()
        self.count = 0

    def add(self, item: bytes | None) -> None:
        if self.count % 8 == 0:
            self.valid.append(0)
        if item is not None:
            self.valid[-1] |= 1 << (self.count % 8)
            self.data += item
        self.offsets.append(len(self.data))
        self.count += 1


def columns_of_records(records: list[Record], ts_type: TimestampType) -> RecordColumns:
    """Decoded records as columns (legacy v0/v1 batches, and the reference of the kernel)."""
    keys, values, hkeys, hvalues = _Binary(), _Binary(), _Binary(), _Binary()
    header_offsets = array("i", [0])
    for r in records:
        keys.add(r.key)
        values.add(r.value)
        for hk, hv in r.headers:
            hkeys.add(hk.encode("utf-8", "surrogateescape"))
            hvalues.add(hv)
        header_offsets.append(hkeys.count)
    return RecordColumns(
        len(records),
        array("q", [r.offset for r in records]).tobytes(),
        array("q", [r.timestamp for r in records]).tobytes(),
        bytes(keys.valid), keys.offsets.tobytes(), bytes(keys.data),
        bytes(values.valid), values.offsets.tobytes(), bytes(values.data),
        header_offsets.tobytes(),
        hkeys.offsets.tobytes(), bytes(hkeys.data),
        bytes(hvalues.valid), hvalues.offsets.tobytes(), bytes(hvalues.data),
        ts_type,
    )


def to_arrow(columns: RecordColumns) -> Any:
    """A ``pyarrow.Table`` (offset int64, timestamp int64, key binary, value binary, headers
    list<struct<key: binary, value: binary>>) over the column buffers, without copying them. Header keys stay
    binary because Kafka does not enforce UTF-8 on them; cast them to string where they are known valid. Needs
    pyarrow."""
    pa = importlib.import_module("pyarrow")

    n = columns.num_records
    h = len(columns.header_key_offsets) // 4 - 1

    def binary(valid: bytes, offsets: bytes, data: bytes, count: int) -> Any:
        return pa.Array.from_buffers(pa.binary(), count, [pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)])

    header_struct = pa.StructArray.from_arrays(
        [
            pa.Array.from_buffers(
                pa.binary(), h, [None, pa.py_buffer(columns.header_key_offsets), pa.py_buffer(columns.header_key_data)]
            ),
            binary(columns.header_value_validity, columns.header_value_offsets, columns.header_value_data, h),
        ],
        names=["key", "value"],
    )
    return pa.table(
        {
            "offset": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(columns.offsets)]),
            "timestamp": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(columns.timestamps)]),
            "key": binary(columns.key_validity, columns.key_offsets, columns.key_data, n),
            "value": binary(columns.value_validity, columns.value_offsets, columns.value_data, n),
            "headers": pa.ListArray.from_arrays(
                pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(columns.header_offsets)]), header_struct
            ),
        }
    )
