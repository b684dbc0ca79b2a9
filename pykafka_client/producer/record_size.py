"""The size of a v2 record and of a batch's header, and the record types a batch holds (shared by
``producer_batch`` and ``batch_append``, which appends many records at once)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pykafka_client.producer.record_metadata import RecordMetadata

#: Size of the magic v2 batch header (an empty batch).
RECORD_BATCH_OVERHEAD = 61
#: Head-room on an estimated compressed size (Java ``COMPRESSION_RATE_ESTIMATION_FACTOR``).
COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05

Header = tuple[str, "bytes | None"]
Callback = Callable[[RecordMetadata | None, BaseException | None], None]


def _varint_size(value: int) -> int:
    """Bytes of the zig-zag varint of ``value`` (64-bit range)."""
    if -64 <= value < 64:
        return 1
    return (((value << 1) ^ (value >> 63)).bit_length() + 6) // 7


def record_size_in_bytes(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None, headers: Sequence[Header]) -> int:
    """Exact encoded size of one v2 record, including its own length prefix (Java ``DefaultRecord.sizeInBytes``).

    Written out for the common cases (varints of 1 or 2 bytes) without function calls: it runs once per send."""
    body = 1 + (1 if -64 <= offset_delta < 64 else 2 if -8192 <= offset_delta < 8192 else _varint_size(offset_delta))
    body += 1 if -64 <= timestamp_delta < 64 else 2 if -8192 <= timestamp_delta < 8192 else _varint_size(timestamp_delta)
    if key is None:
        body += 1
    else:
        n = len(key)
        body += n + (1 if n < 64 else 2 if n < 8192 else _varint_size(n))
    if value is None:
        body += 1
    else:
        n = len(value)
        body += n + (1 if n < 64 else 2 if n < 8192 else _varint_size(n))
    if headers:
        body += _varint_size(len(headers))
        for hk, hv in headers:
            kb = len(hk.encode("utf-8", "surrogateescape"))
            body += _varint_size(kb) + kb
            body += 1 if hv is None else _varint_size(len(hv)) + len(hv)
    else:
        body += 1
    return (1 if body < 64 else 2 if body < 8192 else _varint_size(body)) + body


#: Worst-case overhead of one record besides its key, value and headers (Java ``MAX_RECORD_OVERHEAD``).
MAX_RECORD_OVERHEAD = 21


def estimate_size_upper_bound(key: bytes | None, value: bytes | None, headers: Sequence[Header]) -> int:
    """An upper bound of a record's size in a batch of its own (Java ``estimateSizeInBytesUpperBound``); O(1)
    without headers."""
    size = RECORD_BATCH_OVERHEAD + MAX_RECORD_OVERHEAD + 10
    if key is not None:
        size += len(key)
    if value is not None:
        size += len(value)
    for hk, hv in headers:
        size += 10 + 4 * len(hk) + (0 if hv is None else len(hv))
    return size
