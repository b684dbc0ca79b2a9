"""The per-record checks of an append (``log_validator.analyze_and_validate`` through ``batch_ops.check_records``),
on both record implementations (conftest): keys on compacted topics, timestamp bounds, inner offsets."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from mini_broker.log.log_config import LogConfig
from mini_broker.log.log_validator import AppendChecks, AppendOrigin
from mini_broker.log.log_validator import analyze_and_validate as _analyze_and_validate
from pykafka_client.errors import CorruptRecordError, InvalidRecordError, InvalidTimestampError
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import MemoryRecordsBuilder

NOW = 1_700_000_000_000


def analyze_and_validate(buf: bytearray, origin: AppendOrigin, config: LogConfig, now: int) -> object:
    """The validator with ``config``'s checks (what a Log passes: ``AppendChecks.of`` its config)."""
    return _analyze_and_validate(buf, origin, AppendChecks.of(config), now)


def batch(*keys: bytes | None, ts: int = NOW, codec: CompressionType = CompressionType.NONE) -> bytearray:
    builder = MemoryRecordsBuilder(codec)
    for key in keys:
        builder.append(ts, key, b"v" * 50)
    return bytearray(builder.build())


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.LZ4])
def test_a_compacted_topic_rejects_a_record_without_key(codec: CompressionType) -> None:
    config = LogConfig(other={"cleanup.policy": "compact"})
    analyze_and_validate(batch(b"a", b"b", codec=codec), AppendOrigin.CLIENT, config, NOW)
    with pytest.raises(InvalidRecordError, match="record 1 has no key, and a compacted topic"):
        analyze_and_validate(batch(b"a", None, codec=codec), AppendOrigin.CLIENT, config, NOW)
    # compact,delete is compacted too; delete is not
    with pytest.raises(InvalidRecordError):
        analyze_and_validate(batch(None), AppendOrigin.CLIENT, LogConfig(other={"cleanup.policy": "compact,delete"}), NOW)
    analyze_and_validate(batch(None), AppendOrigin.CLIENT, LogConfig(), NOW)


def test_record_timestamps_out_of_bounds_are_rejected() -> None:
    config = LogConfig(message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=10)
    analyze_and_validate(batch(b"k", ts=NOW - 1000), AppendOrigin.CLIENT, config, NOW)
    analyze_and_validate(batch(b"k", ts=NOW + 10), AppendOrigin.CLIENT, config, NOW)
    with pytest.raises(InvalidTimestampError, match=f"timestamp {NOW - 1001} of record 0 is out of range"):
        analyze_and_validate(batch(b"k", ts=NOW - 1001), AppendOrigin.CLIENT, config, NOW)
    with pytest.raises(InvalidTimestampError):
        analyze_and_validate(batch(b"k", ts=NOW + 11), AppendOrigin.CLIENT, config, NOW)


def test_inner_offset_deltas_must_count_from_zero() -> None:
    buf = batch(b"a", b"b")
    # the second record's offset delta (byte after length, attributes and the 1-byte timestamp delta)
    first_len = buf[61] >> 1
    second = 61 + 1 + first_len
    assert buf[second + 3] == 2  # zig-zag 1
    buf[second + 3] = 4
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    with pytest.raises(InvalidRecordError, match="record 1 has offset delta 2, expected 1"):
        analyze_and_validate(buf, AppendOrigin.CLIENT, LogConfig(), NOW)


def test_a_malformed_record_is_a_corrupt_record_error() -> None:
    buf = batch(b"a", b"b")
    buf[61] = 0x7F  # the first record's length lies
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    with pytest.raises(CorruptRecordError):
        analyze_and_validate(buf, AppendOrigin.CLIENT, LogConfig(), NOW)
