"""The partition Log: append/read, offsets, roll, retention, indexes and timestamps (MockTime, tmp_path)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.log import FetchIsolation, Log, LogConfig
from mini_broker.log.log_offset_metadata import LogOffsetMetadata
from mini_broker.log.unified_log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AppendOrigin,
)
from pykafka_client.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.protocol.records.record_batch import TimestampType
from pykafka_client.utils.time import MockTime

from .helpers import batch, records_of, values_of


@pytest.fixture
def time() -> MockTime:
    return MockTime()


def open_log(path: Path, time: MockTime, **props: object) -> Log:
    return Log(str(path / "topic-0"), LogConfig.from_props(props), time=time, had_clean_shutdown=True)


@pytest.fixture
def log(tmp_path: Path, time: MockTime) -> Iterator[Log]:
    lg = open_log(tmp_path, time)
    yield lg
    lg.close()


def append_values(lg: Log, n_batches: int, per_batch: int = 2, ts: int | None = None, size: int = 10) -> None:
    for b in range(n_batches):
        start = lg.log_end_offset
        values = [f"v{start + i}".encode().ljust(size, b".") for i in range(per_batch)]
        lg.append(batch(values, ts if ts is not None else 1_700_000_000_000 + b))
        lg.update_high_watermark(lg.log_end_offset)


def test_append_and_read_round_trip(log: Log) -> None:
    info = log.append(batch([b"a", b"b", b"c"]))
    assert (info.first_offset, info.last_offset, info.num_records, info.shallow_count) == (0, 2, 3, 1)
    assert info.log_append_time == -1 and info.valid_bytes > 0
    info2 = log.append(batch([b"d"], timestamp=1_700_000_000_500) + batch([b"e", b"f"], timestamp=1_700_000_000_400))
    assert (info2.first_offset, info2.last_offset, info2.shallow_count) == (3, 5, 2)
    assert (info2.max_timestamp, info2.offset_of_max_timestamp) == (1_700_000_000_500, 3)
    assert log.log_end_offset == 6
    log.update_high_watermark(6)
    data = log.read(0, 1 << 20)
    assert values_of(data.to_bytes()) == [(i, v) for i, v in enumerate([b"a", b"b", b"c", b"d", b"e", b"f"])]
    assert data.fetch_offset_metadata == LogOffsetMetadata(0, 0, 0)
    # The region is the segment file itself (zero copy).
    assert data.records is not None and data.records.file is log.active_segment.file


def test_read_starts_at_the_batch_holding_the_offset(log: Log) -> None:
    log.append(batch([b"a", b"b", b"c"]))
    log.append(batch([b"d", b"e"]))
    data = log.read(4, 1 << 20)
    assert [o for o, _ in values_of(data.to_bytes())] == [3, 4]
    data = log.read(1, 1 << 20)
    assert [o for o, _ in values_of(data.to_bytes())] == [0, 1, 2, 3, 4]


def test_read_limits_min_one_message_and_max_offset(log: Log) -> None:
    log.append(batch([b"x" * 100]))
    log.append(batch([b"y" * 100]))
    first_size = log.read(0, 1).size
    assert first_size > 100
    assert log.read(0, 1, min_one_message=False).size == 1
    # max_offset excludes the second batch; a read at/after max_offset is empty.
    assert log.read(0, 1 << 20, max_offset=1).size == first_size
    assert log.read(1, 1 << 20, max_offset=1).size == 0
    assert log.read(0, 1 << 20).size == 2 * first_size


def test_offset_out_of_range(log: Log) -> None:
    log.append(batch([b"a"]))
    assert log.read(1, 100).size == 0  # at the log end: empty, not an error
    assert log.read(1, 100).fetch_offset_metadata.message_offset == 1
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_log_append_time(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, **{"message.timestamp.type": "LogAppendTime"})
    try:
        time.sleep(1234)
        info = lg.append(batch([b"a", b"b"], timestamp=5))
        now = time.milliseconds()
        assert info.log_append_time == now and info.max_timestamp == now
        recs = records_of(lg.read(0, 1 << 20).to_bytes())  # check_crcs: the rewritten CRC is valid
        assert [r.timestamp for r in recs] == [now, now]
        assert all(r.timestamp_type == TimestampType.LOG_APPEND_TIME for r in recs)
    finally:
        lg.close()


def test_leader_epoch_is_stamped(log: Log) -> None:
    log.append(batch([b"a"]), leader_epoch=7)
    b = DefaultRecordBatch(log.read(0, 1 << 20).to_bytes())
    assert b.partition_leader_epoch == 7 and b.is_valid()


def test_max_message_bytes(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, **{"max.message.bytes": 200})
    try:
        small = batch([b"s"])
        with pytest.raises(RecordTooLargeError):
            lg.append(small + batch([b"x" * 300]))
        assert lg.log_end_offset == 0 and lg.size() == 0
        assert lg.append(small).first_offset == 0
    finally:
        lg.close()


def test_default_max_message_bytes_is_kafkas() -> None:
    assert LogConfig().max_message_bytes == 1048588


def test_crc_corrupt_batch_is_rejected_and_nothing_written(log: Log) -> None:
    good = batch([b"good"])
    bad = bytearray(batch([b"evil"]))
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append(good + bytes(bad))
    assert log.log_end_offset == 0 and log.size() == 0
    with pytest.raises(CorruptRecordError):
        log.append(good + b"\x00\x01\x02")  # trailing garbage
    with pytest.raises(CorruptRecordError):
        log.append(good[:-5])  # truncated batch
    assert log.size() == 0


def test_client_rules_are_enforced(log: Log) -> None:
    raw = bytearray(batch([b"a", b"b"]))
    # lastOffsetDelta (at byte 23) inconsistent with the record count: re-CRC so only that rule fails.
    raw[23:27] = (5).to_bytes(4, "big")
    from pykafka_client.protocol.records.batch_ops import _rewrite_crc

    _rewrite_crc(raw, 0)
    with pytest.raises(InvalidRecordError):
        log.append(bytes(raw))


def test_records_inside_a_batch_are_validated(log: Log) -> None:
    from pykafka_client.protocol.records.batch_ops import _rewrite_crc

    raw = bytearray(batch([b"a"]))
    # Corrupt the record's length varint (first byte of the records section) and re-CRC the batch.
    raw[61] = 0x7E
    _rewrite_crc(raw, 0)
    with pytest.raises((CorruptRecordError, InvalidRecordError)):
        log.append(bytes(raw))
    assert log.size() == 0


def test_empty_append_is_a_no_op(log: Log) -> None:
    info = log.append(b"")
    assert info.first_offset == -1 and log.log_end_offset == 0


def test_timestamp_bounds(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, **{"message.timestamp.after.max.ms": 1000})
    try:
        with pytest.raises(InvalidTimestampError):
            lg.append(batch([b"future"], timestamp=time.milliseconds() + 5000))
        lg.append(batch([b"ok"], timestamp=time.milliseconds() + 500))
    finally:
        lg.close()


def test_roll_by_size_and_segment_file_names(tmp_path: Path, time: MockTime) -> None:
    one = len(batch([b"v".ljust(10, b".")] * 2))
    lg = open_log(tmp_path, time, **{"segment.bytes": 3 * one})
    try:
        append_values(lg, 10)
        assert [s.base_offset for s in lg.segments] == [0, 6, 12, 18]
        assert all(s.size <= 3 * one for s in lg.segments)
        names = sorted(os.listdir(lg.dir_path))
        assert "00000000000000000006.log" in names and "00000000000000000006.index" in names
        assert "00000000000000000006.timeindex" in names
        # Reading across segments returns each batch in turn.
        offset, seen = 0, []
        while offset < lg.log_end_offset:
            recs = records_of(lg.read(offset, 1).to_bytes())
            seen += [r.offset for r in recs]
            offset = recs[-1].offset + 1
        assert seen == list(range(20))
    finally:
        lg.close()


def test_roll_by_time(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, **{"segment.ms": 1000})
    try:
        t0 = time.milliseconds()
        lg.append(batch([b"a"], timestamp=t0))
        time.sleep(500)
        lg.append(batch([b"b"], timestamp=t0 + 500))
        assert len(lg.segments) == 1
        time.sleep(600)
        lg.append(batch([b"c"], timestamp=t0 + 1100))
        assert [s.base_offset for s in lg.segments] == [0, 2]
        # An empty active segment never rolls by time.
        time.sleep(5000)
        lg.roll()
        assert [s.base_offset for s in lg.segments] == [0, 2, 3]
        lg.roll()
        assert [s.base_offset for s in lg.segments] == [0, 2, 3]
    finally:
        lg.close()


def test_segment_jitter_is_within_the_configured_range(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, **{"segment.ms": 1000, "segment.jitter.ms": 500})
    try:
        assert 0 <= lg.active_segment.roll_jitter_ms < 500
    finally:
        lg.close()


def test_roll_when_offset_index_is_full(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, **{"segment.index.bytes": 24, "index.interval.bytes": 1})
    try:
        append_values(lg, 8, per_batch=1)
        assert len(lg.segments) > 1
        assert all(s.offset_index.entries() <= 3 for s in lg.segments)
        assert [r.offset for r in records_of(lg.read(0, 1 << 20).to_bytes())][:1] == [0]
    finally:
        lg.close()


@pytest.mark.parametrize("constant_ts", [False, True])
def test_a_segment_rolls_exactly_when_one_of_its_indexes_is_full(
    tmp_path: Path, time: MockTime, constant_ts: bool
) -> None:
    """The roll check asks the indexes only once the segment's count of index appends left reached 0 (h/prodappend):
    the segment still rolls at the first append after either index filled, never earlier, with timestamps that fill
    the time index first or that it never takes twice (the offset index fills), and after a reopen with entries
    loaded from the files (the count starts from them)."""
    props = {"segment.index.bytes": 36, "index.interval.bytes": 1}  # room for 4 offset and 3 time entries
    lg = open_log(tmp_path, time, **props)
    try:
        for n in range(40):
            if n in (5, 13):
                lg.close()
                lg = open_log(tmp_path, time, **props)
            active = lg.active_segment
            full = active.offset_index.is_full() or active.time_index.is_full()
            segments = len(lg.segments)
            append_values(lg, 1, per_batch=1, ts=1_700_000_000_000 + (0 if constant_ts else n))
            assert len(lg.segments) == segments + (1 if full else 0), n
            assert active.offset_index.entries() <= 4
    finally:
        lg.close()


def test_offset_index_is_sparse_and_lookups_find_batches(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, **{"index.interval.bytes": 200})
    try:
        append_values(lg, 30, per_batch=3, size=40)
        seg = lg.active_segment
        n = seg.offset_index.entries()
        assert 0 < n < 30
        for k in range(n):
            offset, position = seg.offset_index.entry(k)
            header = seg.read_header(position, seg.size)
            assert header is not None and header.last_offset == offset
        for target in range(lg.log_end_offset):
            header = seg.translate_offset(target)
            assert header is not None and header.base_offset <= target <= header.last_offset
        assert seg.translate_offset(lg.log_end_offset) is None
    finally:
        lg.close()


def test_time_index_and_fetch_offset_by_timestamp(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, **{"index.interval.bytes": 1, "segment.bytes": 400})
    try:
        base = 1_700_000_000_000
        for i in range(20):
            lg.append(batch([b"a", b"b"], timestamps=[base + 10 * i, base + 10 * i + 5]))
        lg.update_high_watermark(lg.log_end_offset)
        assert len(lg.segments) > 2
        seg = lg.segments[0]
        assert seg.time_index.entries() > 0
        ts, off = seg.time_index.lookup(base + 1_000_000)
        assert ts == seg.max_timestamp_so_far and off == seg.offset_of_max_timestamp_so_far
        for i in range(20):
            assert lg.fetch_offset_by_timestamp(base + 10 * i).offset == 2 * i  # type: ignore[union-attr]
            found = lg.fetch_offset_by_timestamp(base + 10 * i + 1)
            assert found is not None and (found.timestamp, found.offset) == (base + 10 * i + 5, 2 * i + 1)
        assert lg.fetch_offset_by_timestamp(base - 100).offset == 0  # type: ignore[union-attr]
        assert lg.fetch_offset_by_timestamp(base + 10_000) is None
        assert lg.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == 0  # type: ignore[union-attr]
        assert lg.fetch_offset_by_timestamp(LATEST_TIMESTAMP).offset == 40  # type: ignore[union-attr]
        assert lg.fetch_offset_by_timestamp(LATEST_TIERED_TIMESTAMP) is None
        mx = lg.fetch_offset_by_timestamp(MAX_TIMESTAMP)
        assert mx is not None and (mx.timestamp, mx.offset) == (base + 195, 39)
    finally:
        lg.close()


def test_max_timestamp_finds_the_exact_record_inside_a_batch(log: Log) -> None:
    base = 1_700_000_000_000
    log.append(batch([b"a", b"b", b"c"], timestamps=[base, base + 50, base + 10]))
    log.append(batch([b"d"], timestamp=base + 20))
    mx = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert mx is not None and (mx.timestamp, mx.offset) == (base + 50, 1)


def test_latest_under_isolation_is_the_high_watermark(log: Log) -> None:
    log.append(batch([b"a", b"b"]))
    log.update_high_watermark(1)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP, FetchIsolation.HIGH_WATERMARK).offset == 1  # type: ignore[union-attr]
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP).offset == 2  # type: ignore[union-attr]


def test_high_watermark_is_clamped_and_has_metadata(log: Log) -> None:
    log.append(batch([b"a"]))
    log.append(batch([b"b"]))
    assert log.high_watermark == 0
    assert log.update_high_watermark(99) == 2
    assert log.end_offset_metadata(FetchIsolation.HIGH_WATERMARK) == log.log_end_offset_metadata
    log.update_high_watermark(1)
    hw_md = log.end_offset_metadata(FetchIsolation.HIGH_WATERMARK)
    assert hw_md.message_offset == 1 and hw_md.segment_base_offset == 0
    assert hw_md.relative_position_in_segment == log.read(1, 1).fetch_offset_metadata.relative_position_in_segment
    assert log.last_stable_offset == 1
    assert log.end_offset_metadata(FetchIsolation.LOG_END).message_offset == 2
    # A fetch bounded by the high watermark does not see offset 1.
    data = log.read(0, 1 << 20, max_offset=log.max_offset_for(FetchIsolation.HIGH_WATERMARK))
    assert [r.offset for r in records_of(data.to_bytes())] == [0]


def test_retention_by_time(tmp_path: Path, time: MockTime) -> None:
    one = len(batch([b"v".ljust(10, b".")] * 2))
    lg = open_log(tmp_path, time, **{"segment.bytes": 2 * one, "retention.ms": 10_000})
    try:
        t0 = time.milliseconds()
        append_values(lg, 4, ts=t0)  # segments [0,4) and [4,8)
        time.sleep(6000)
        append_values(lg, 3, ts=t0 + 6000)  # segments [8,12) and active [12,14)
        assert [s.base_offset for s in lg.segments] == [0, 4, 8, 12]
        assert lg.delete_old_segments() == 0
        time.sleep(4001)  # the first two segments are now 10001 ms old
        assert lg.delete_old_segments() == 2
        assert [s.base_offset for s in lg.segments] == [8, 12]
        assert lg.log_start_offset == 8
        with pytest.raises(OffsetOutOfRangeError):
            lg.read(3, 100)
        assert not os.path.exists(os.path.join(lg.dir_path, "00000000000000000000.log"))
        time.sleep(20_000)  # everything expired: the active segment goes too, after a roll
        assert lg.delete_old_segments() == 2
        assert [s.base_offset for s in lg.segments] == [14]
        assert lg.log_start_offset == 14 and lg.log_end_offset == 14
        lg.append(batch([b"after"]))
        assert lg.log_end_offset == 15
    finally:
        lg.close()


def test_retention_by_size(tmp_path: Path, time: MockTime) -> None:
    one = len(batch([b"v".ljust(10, b".")] * 2))
    lg = open_log(tmp_path, time, **{"segment.bytes": 2 * one, "retention.bytes": 3 * one})
    try:
        append_values(lg, 7)  # 3 full segments of 2 batches + active with 1
        assert lg.size() == 7 * one
        assert lg.delete_old_segments() == 2  # 7-2-2 = 3 batches left
        assert lg.size() == 3 * one and lg.log_start_offset == 8
    finally:
        lg.close()


def test_segments_above_the_high_watermark_are_kept(tmp_path: Path, time: MockTime) -> None:
    one = len(batch([b"v".ljust(10, b".")] * 2))
    lg = open_log(tmp_path, time, **{"segment.bytes": 2 * one, "retention.bytes": 0})
    try:
        append_values(lg, 6)
        lg.update_high_watermark(4)
        assert lg.delete_old_segments() == 1  # only [0,4) is below the high watermark
        assert lg.log_start_offset == 4
    finally:
        lg.close()


def test_delete_records_before(tmp_path: Path, time: MockTime) -> None:
    one = len(batch([b"v".ljust(10, b".")] * 2))
    lg = open_log(tmp_path, time, **{"segment.bytes": 2 * one})
    try:
        append_values(lg, 6)
        assert [s.base_offset for s in lg.segments] == [0, 4, 8]
        lg.update_high_watermark(10)
        with pytest.raises(OffsetOutOfRangeError):
            lg.delete_records_before(11)
        assert lg.delete_records_before(5) == 5
        assert [s.base_offset for s in lg.segments] == [4, 8]
        with pytest.raises(OffsetOutOfRangeError):
            lg.read(4, 100)
        # Reading at the log start returns the batch holding it (offset 4 comes along, as in Kafka).
        assert [r.offset for r in records_of(lg.read(5, 1).to_bytes())] == [4, 5]
        assert lg.delete_records_before(2) == 5  # never moves backwards
        assert lg.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == 5  # type: ignore[union-attr]
    finally:
        lg.close()


def test_replication_origin_keeps_offsets(log: Log) -> None:
    from pykafka_client.protocol.records.builder import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(base_offset=10)
    builder.append(1, None, b"r")
    log.append(builder.build(), origin=AppendOrigin.REPLICATION)
    assert log.log_end_offset == 11
    assert [r.offset for r in records_of(log.read(10, 100).to_bytes())] == [10]
    with pytest.raises(CorruptRecordError):
        log.append(builder.build(), origin=AppendOrigin.REPLICATION)


def test_flush_messages_moves_the_recovery_point(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, **{"flush.messages": 3})
    try:
        lg.append(batch([b"a", b"b"]))
        assert lg.recovery_point == 0
        lg.append(batch([b"c"]))
        assert lg.recovery_point == 3
        lg.append(batch([b"d"]))
        assert not lg.flush_if_due(time.milliseconds())
        assert lg.recovery_point == 3
    finally:
        lg.close()


def test_flush_ms(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, **{"flush.ms": 1000})
    try:
        lg.append(batch([b"a"]))
        assert not lg.flush_if_due(time.milliseconds())
        time.sleep(1000)
        assert lg.flush_if_due(time.milliseconds())
        assert lg.recovery_point == 1
    finally:
        lg.close()


def test_reads_concurrent_with_appends_see_whole_valid_batches(log: Log) -> None:
    stop = threading.Event()
    failures: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            end = log.log_end_offset
            if end == 0:
                continue
            data = log.read(0, 1 << 30).to_bytes()
            recs = MemoryRecords(data, check_crcs=True)
            offsets = [r.offset for r in recs.records()]
            if offsets != list(range(len(offsets))) or len(offsets) < end:
                failures.append(f"read {len(offsets)} records with LEO {end} before the read")

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(150):
            log.append(batch([f"m{i}".encode()] * 3))
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not failures
    assert log.log_end_offset == 450


def test_closed_log_rejects_appends_and_reads(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    lg.append(batch([b"a"]))
    lg.close()
    lg.close()
    with pytest.raises(KafkaStorageError):
        lg.append(batch([b"b"]))
    with pytest.raises(OSError):
        lg.read(0, 100)


def test_header_scan_crosses_read_chunks(log: Log) -> None:
    """Batches larger than the 16 KiB scan chunk, mixed with small ones, are all found."""
    sizes = [10, 40_000, 10, 10, 70_000, 10]
    for n in sizes:
        log.append(batch([b"z" * n]))
    seg = log.active_segment
    headers = list(seg.iter_headers())
    assert [h.base_offset for h in headers] == list(range(len(sizes)))
    assert sum(h.size for h in headers) == seg.size
    for offset in range(len(sizes)):
        header = seg.translate_offset(offset)
        assert header is not None and header.base_offset == offset
        recs = records_of(log.read(offset, 1).to_bytes())
        assert recs[0].offset == offset and len(recs[0].value or b"") == sizes[offset]
    assert seg.next_offset() == len(sizes)


def test_segment_ms_changed_by_a_config_update_rolls_by_the_new_value(tmp_path: Path, time: MockTime) -> None:
    """The active segment keeps its roll age per config (read on every append): an update must replace it."""
    lg = open_log(tmp_path, time)  # segment.ms a week
    now = time.milliseconds()
    lg.append(batch([b"a"], timestamp=now))
    lg.append(batch([b"b"], timestamp=now + 5_000))
    assert len(lg.segments) == 1
    lg.update_config(LogConfig.from_props({"segment.ms": "1000"}))
    lg.append(batch([b"c"], timestamp=now + 5_000))
    assert len(lg.segments) == 2  # 5 s since the segment's first record > the new segment.ms
    lg.close()
