"""The log cleaner on real segment files (tmp_path, MockTime): dedupe, offsets kept, tombstones, transactions,
producer state, choice of log, compaction lag, checkpoints and crash recovery of the swap."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from mini_broker.log import Log, LogConfig
from mini_broker.log.log_cleaner import CleanAbortedError, Cleaner, CleanerConfig, LogCleaner, Throttler
from mini_broker.log.log_cleaner_manager import CLEANER_OFFSET_CHECKPOINT_FILE, LogCleanerManager, measure
from mini_broker.log.log_loader import CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX
from mini_broker.log.log_manager import LogManager
from mini_broker.log.unified_log import AppendOrigin
from pykafka_client.errors import OutOfOrderSequenceError
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.protocol.records.record import Record
from pykafka_client.utils.time import MockTime

DAY = 86_400_000


@pytest.fixture
def time() -> MockTime:
    return MockTime()


def compacted(**overrides: object) -> LogConfig:
    props: dict[str, object] = {"cleanup.policy": "compact", "segment.bytes": 1024, "min.cleanable.dirty.ratio": "0"}
    props.update(overrides)
    return LogConfig.from_props(props)


def kv_batch(
    pairs: Sequence[tuple[bytes | None, bytes | None]], ts: int, *, pid: int = -1, epoch: int = -1, seq: int = -1,
    transactional: bool = False,
) -> bytes:
    builder = MemoryRecordsBuilder(write_limit=1 << 24, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                   is_transactional=transactional)
    for key, value in pairs:
        assert builder.append(ts, key, value)
    return builder.build()


def marker(abort: bool, pid: int, epoch: int, ts: int) -> bytes:
    kind = ControlRecordType.ABORT if abort else ControlRecordType.COMMIT
    return build_end_transaction_marker(EndTransactionMarker(kind, 0), producer_id=pid, producer_epoch=epoch,
                                        timestamp=ts)


def read_all(log: Log) -> list[Record]:
    out: list[Record] = []
    for segment in log.segments:
        data = segment.read_bytes(0, segment.size)
        out += list(MemoryRecords(data, check_crcs=True).records())
    return out


def batches_of(log: Log) -> list[DefaultRecordBatch]:
    out: list[DefaultRecordBatch] = []
    for segment in log.segments:
        data = segment.read_bytes(0, segment.size)
        out += [b for b in MemoryRecords(data, check_crcs=True).batches() if isinstance(b, DefaultRecordBatch)]
    return out


def clean(log: Log, time: MockTime, checkpoint: int | None = None, config: CleanerConfig | None = None) -> int:
    log.update_high_watermark(log.log_end_offset)
    cleaner = Cleaner(config or CleanerConfig(), time)
    return cleaner.clean(measure(log, checkpoint, time.milliseconds())).end_offset


def new_log(tmp_path: Path, time: MockTime, config: LogConfig | None = None, name: str = "t-0") -> Log:
    return Log(str(tmp_path / name), config or compacted(), time=time)


def write_updates(log: Log, time: MockTime, keys: int, rounds: int) -> dict[bytes, tuple[int, bytes]]:
    """``rounds`` updates of each key, one record per batch; the latest (offset, value) per key."""
    latest: dict[bytes, tuple[int, bytes]] = {}
    for r in range(rounds):
        for k in range(keys):
            key, value = f"k{k}".encode(), f"v{k}-{r}".encode()
            info = log.append(kv_batch([(key, value)], time.milliseconds()))
            latest[key] = (info.first_offset, value)
    log.roll()
    log.update_high_watermark(log.log_end_offset)  # a single broker moves it with every append
    return latest


def test_dedupe_keeps_latest_per_key_with_offsets_unchanged(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time)
    latest = write_updates(log, time, keys=20, rounds=5)
    before = log.size()
    end = clean(log, time)
    records = read_all(log)
    assert end == log.active_segment.base_offset
    assert {r.key: (r.offset, r.value) for r in records} == latest
    assert len(records) == 20  # one per key
    offsets = [r.offset for r in records]
    assert offsets == sorted(offsets) and offsets[-1] == log.log_end_offset - 1  # gaps, no renumbering
    assert log.size() < before
    # a reader at any offset of a gap gets the next record
    first = offsets[0]
    assert first > 0
    info = log.read(0, 1 << 20)
    assert next(iter(MemoryRecords(info.to_bytes()).records())).offset == first


def test_small_segments_are_grouped_into_one(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time)
    write_updates(log, time, keys=5, rounds=20)
    segments_before = len(log.segments)
    end = clean(log, time)  # groups by the sizes before cleaning: each full segment alone
    assert segments_before > 3
    clean(log, time, end)  # the small cleaned segments now fit one
    assert len(log.segments) == 2  # one cleaned segment + the active one
    assert not [n for n in os.listdir(log.dir_path) if n.endswith((CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX))]


def test_tombstone_survives_until_delete_retention_after_the_clean_that_saw_it(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time, compacted(**{"delete.retention.ms": DAY}))
    log.append(kv_batch([(b"a", b"1"), (b"b", b"1")], time.milliseconds()))
    log.append(kv_batch([(b"a", None)], time.milliseconds()))
    log.roll()
    time.sleep(2 * DAY)  # the tombstone is already old: the horizon counts from the clean that sees it
    end = clean(log, time)
    assert [(r.key, r.value) for r in read_all(log)] == [(b"b", b"1"), (b"a", None)]
    tomb_batch = next(b for b in batches_of(log) if b.records_count and b.records()[0].key == b"a")
    assert tomb_batch.has_delete_horizon_ms and tomb_batch.base_timestamp == time.milliseconds() + DAY
    assert tomb_batch.records()[0].timestamp == time.milliseconds() - 2 * DAY  # record timestamps unchanged
    time.sleep(DAY - 1)
    clean(log, time, end)  # before the horizon: kept
    assert (b"a", None) in [(r.key, r.value) for r in read_all(log)]
    time.sleep(1)
    clean(log, time, end)
    assert [(r.key, r.value) for r in read_all(log)] == [(b"b", b"1")]


def test_aborted_records_are_removed_and_committed_kept(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time)
    now = time.milliseconds()
    log.append(kv_batch([(b"x", b"aborted")], now, pid=7, epoch=0, seq=0, transactional=True))
    log.append(kv_batch([(b"y", b"committed")], now, pid=8, epoch=0, seq=0, transactional=True))
    log.append(marker(True, 7, 0, now), origin=AppendOrigin.COORDINATOR)
    log.append(marker(False, 8, 0, now), origin=AppendOrigin.COORDINATOR)
    log.append(kv_batch([(b"z", b"plain")], now))
    log.roll()
    assert log.collect_aborted_transactions(0, log.log_end_offset)
    clean(log, time)
    data = [(r.key, r.value) for r in read_all(log) if not _is_control_record(log, r)]
    assert (b"x", b"aborted") not in data
    assert (b"y", b"committed") in data and (b"z", b"plain") in data


def _is_control_record(log: Log, record: Record) -> bool:
    return any(b.is_control and b.base_offset <= record.offset <= b.base_offset + b.last_offset_delta
               for b in batches_of(log))


def test_markers_kept_until_safe_then_removed(tmp_path: Path, time: MockTime) -> None:
    # a producer that later writes more keeps no claim on its old markers (its last data batch is elsewhere)
    log = new_log(tmp_path, time, compacted(**{"delete.retention.ms": 1000}))
    now = time.milliseconds()
    log.append(kv_batch([(b"x", b"aborted")], now, pid=7, epoch=0, seq=0, transactional=True))
    log.append(marker(True, 7, 0, now), origin=AppendOrigin.COORDINATOR)
    log.append(kv_batch([(b"y", b"c1")], now, pid=7, epoch=0, seq=1, transactional=True))
    log.append(marker(False, 7, 0, now), origin=AppendOrigin.COORDINATOR)
    log.append(kv_batch([(b"y", b"c2")], now, pid=7, epoch=0, seq=2, transactional=True))
    log.append(marker(False, 7, 0, now), origin=AppendOrigin.COORDINATOR)
    log.roll()
    def controls() -> list[int]:
        return [b.base_offset for b in batches_of(log) if b.is_control]

    assert len(controls()) == 3
    end = clean(log, time)
    # pass 1: the abort's data was seen (removed now): its marker stays and so does its index entry; the commits
    # whose data was seen stay as well
    assert len(controls()) == 3
    assert log.collect_aborted_transactions(0, log.log_end_offset)
    end = clean(log, time, end)
    # pass 2: the abort marker and the first commit have no data left: they get a delete horizon, still kept
    assert len(controls()) == 3
    time.sleep(1000)
    clean(log, time, end)
    # pass 3 past the horizon: those two go; the last commit (its transaction's data remains) stays
    assert controls() == [5]
    assert not log.collect_aborted_transactions(0, log.log_end_offset)


def test_idempotent_producer_next_sequence_accepted_after_clean_and_restart(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time)
    now = time.milliseconds()
    log.append(kv_batch([(b"k", b"1"), (b"k", b"2")], now, pid=42, epoch=3, seq=0))
    log.append(kv_batch([(b"k", b"3")], now))  # a non-idempotent overwrite of the producer's key
    log.roll()
    clean(log, time)
    kept = [b for b in batches_of(log) if b.producer_id == 42]
    assert len(kept) == 1 and kept[0].records_count == 0  # the producer's last batch stays, empty
    assert kept[0].base_sequence == 0 and kept[0].last_offset_delta == 1 and kept[0].producer_epoch == 3
    dir_path = log.dir_path
    log.close()
    for name in os.listdir(dir_path):  # no snapshot: the state must come from the cleaned log itself
        if name.endswith(".snapshot"):
            os.unlink(os.path.join(dir_path, name))
    reopened = Log(dir_path, compacted(), time=time)
    info = reopened.append(kv_batch([(b"k", b"4")], now, pid=42, epoch=3, seq=2))
    assert info.first_offset == 3
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append(kv_batch([(b"k", b"5")], now, pid=42, epoch=3, seq=9))


def test_dirty_ratio_picks_the_filthiest_log_over_the_threshold(tmp_path: Path, time: MockTime) -> None:
    manager = LogManager([str(tmp_path)], compacted(**{"min.cleanable.dirty.ratio": "0.5"}), time)
    manager.startup(start_scheduler=False)
    dirty = manager.get_or_create_log("dirty", 0)
    write_updates(dirty, time, keys=4, rounds=10)
    other = manager.get_or_create_log("plain", 0, LogConfig.from_props({"segment.bytes": 1024}))
    write_updates(other, time, keys=4, rounds=10)  # not compacted: never chosen
    chosen = manager.cleaner.manager.grab_filthiest_log(time.milliseconds())
    assert chosen is not None and chosen.log is dirty and chosen.cleanable_ratio == 1.0
    manager.cleaner.manager.done_cleaning(dirty, None)
    assert manager.cleaner.clean_filthiest_log()
    # now mostly clean: the ratio is under 0.5 and nothing qualifies
    assert manager.cleaner.manager.grab_filthiest_log(time.milliseconds()) is None
    checkpoint = manager.cleaner.manager.checkpoint_of(dirty)
    assert checkpoint == dirty.active_segment.base_offset
    manager.shutdown()
    assert os.path.exists(tmp_path / CLEANER_OFFSET_CHECKPOINT_FILE)
    reloaded = LogManager([str(tmp_path)], compacted(**{"min.cleanable.dirty.ratio": "0.5"}), time)
    reloaded.startup(start_scheduler=False)
    log = reloaded.get_log("dirty", 0)
    assert log is not None and reloaded.cleaner.manager.checkpoint_of(log) == checkpoint  # survives a restart
    reloaded.shutdown()


def test_min_compaction_lag_keeps_recent_segments_dirty(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time, compacted(**{"min.compaction.lag.ms": 60_000}))
    write_updates(log, time, keys=3, rounds=10)
    to_clean = measure(log, None, time.milliseconds())
    assert to_clean.first_uncleanable_offset == 0 and to_clean.cleanable_bytes == 0
    time.sleep(60_001)
    assert measure(log, None, time.milliseconds()).first_uncleanable_offset == log.active_segment.base_offset


def test_max_compaction_lag_makes_a_log_due_below_the_ratio(tmp_path: Path, time: MockTime) -> None:
    config = compacted(**{"min.cleanable.dirty.ratio": "0.99", "max.compaction.lag.ms": 60_000})
    log = new_log(tmp_path, time, config)
    write_updates(log, time, keys=3, rounds=2)
    end = clean(log, time)
    write_updates(log, time, keys=3, rounds=1)
    assert not measure(log, end, time.milliseconds()).need_compaction_now
    time.sleep(60_001)
    assert measure(log, end, time.milliseconds()).need_compaction_now


def test_segment_ms_and_max_compaction_lag_roll_the_active_segment(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time, compacted(**{"segment.bytes": 1 << 20, "max.compaction.lag.ms": 1000}))
    log.append(kv_batch([(b"a", b"1")], time.milliseconds()))
    time.sleep(1001)
    log.append(kv_batch([(b"a", b"2")], time.milliseconds()))
    assert len(log.segments) == 2  # rolled by the lag (segment.ms is a week)


def test_crash_between_swap_steps_is_recovered_at_load(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time)
    latest = write_updates(log, time, keys=10, rounds=5)
    old = log.segments[:-1]
    dir_path = log.dir_path
    # a crash (SystemExit: no cleanup runs) after the cleaned segment became .swap and the first old segment's
    # files were deleted, before the others' and before the .swap suffix was dropped
    cleaner = Cleaner(CleanerConfig(), time)
    to_clean = measure(log, None, time.milliseconds())

    def crash(new_segment, old_segments):  # type: ignore[no-untyped-def]
        new_segment.flush()
        new_segment.change_file_suffixes(SWAP_FILE_SUFFIX)
        old_segments[0].delete()
        raise SystemExit("crash")

    log.replace_segments = crash  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        cleaner.clean(to_clean)
    names = os.listdir(dir_path)
    assert any(n.endswith(".log" + SWAP_FILE_SUFFIX) for n in names)
    assert len(old) > 2
    log.close()
    reopened = Log(dir_path, compacted(), time=time)
    records = read_all(reopened)
    assert {r.key: (r.offset, r.value) for r in records} == latest  # every latest value is there
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))  # no record twice (the old first segment is gone)
    first_upper = old[1].base_offset
    assert [o for o in offsets if o < first_upper] == []  # its records were all superseded: the swap holds none
    assert len(records) < 50
    assert not [n for n in os.listdir(dir_path) if n.endswith((SWAP_FILE_SUFFIX, CLEANED_FILE_SUFFIX))]


def test_crash_before_swap_leaves_the_sources(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time)
    write_updates(log, time, keys=10, rounds=3)
    before = [(r.offset, r.key, r.value) for r in read_all(log)]
    cleaner = Cleaner(CleanerConfig(), time)

    def crash(new_segment, old_segments):  # type: ignore[no-untyped-def]
        raise SystemExit("crash before the swap")

    log.replace_segments = crash  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        cleaner.clean(measure(log, None, time.milliseconds()))
    dir_path = log.dir_path
    log.close()
    reopened = Log(dir_path, compacted(), time=time)
    assert [(r.offset, r.key, r.value) for r in read_all(reopened)] == before


def test_clean_aborts_when_retention_deletes_a_segment_meanwhile(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time, compacted(**{"cleanup.policy": "compact,delete"}))
    write_updates(log, time, keys=3, rounds=10)
    to_clean = measure(log, None, time.milliseconds())

    class DeletingThrottler(Throttler):
        """Runs DeleteRecords in the middle of the rewrite (as the retention thread could)."""

        calls = 0

        def maybe_throttle(self, observed: int) -> None:
            self.calls += 1
            if self.calls == 31:  # after the 30 batches of the offset map, during the first rewrite
                log.delete_records_before(log.segments[2].base_offset)

    with pytest.raises(CleanAbortedError):
        Cleaner(CleanerConfig(), time, DeletingThrottler(1.0, time)).clean(to_clean)
    assert not any(n.endswith((CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)) for n in os.listdir(log.dir_path))
    cleaner = LogCleaner(CleanerConfig(), [str(tmp_path)], lambda: {("t", 0): log}, time)
    assert cleaner.clean_filthiest_log()  # a fresh measure cleans what is left
    assert len({r.key for r in read_all(log)}) == len(read_all(log))


def test_offset_map_bound_splits_the_clean(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time)
    latest = write_updates(log, time, keys=50, rounds=2)
    small = CleanerConfig(dedupe_buffer_size=24 * 30, dedupe_buffer_load_factor=1.0)  # 30 entries
    end = clean(log, time, None, small)
    assert 0 < end < log.active_segment.base_offset
    while end < log.active_segment.base_offset:
        end = clean(log, time, end, small)
    records = read_all(log)
    assert {r.key: (r.offset, r.value) for r in records} == latest


def test_throttler_sleeps_to_keep_the_rate(time: MockTime) -> None:
    throttler = Throttler(1000.0, time, check_interval_ms=100)
    start = time.milliseconds()
    for _ in range(10):
        throttler.maybe_throttle(500)
    assert time.milliseconds() - start >= 4000  # 5000 bytes at 1000 B/s, less the first check period


def test_cleaner_config_from_broker() -> None:
    values = {"log.cleaner.threads": 3, "log.cleaner.enable": False, "log.cleaner.backoff.ms": 10}
    config = CleanerConfig.from_broker(values.get)
    assert (config.num_threads, config.enable_cleaner, config.backoff_ms) == (3, False, 10)


def test_a_failing_clean_marks_the_log_uncleanable_until_truncated(
    tmp_path: Path, time: MockTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = new_log(tmp_path, time)
    write_updates(log, time, keys=3, rounds=5)
    cleaner = LogCleaner(CleanerConfig(), [str(tmp_path)], lambda: {("t", 0): log}, time)

    def broken(self: Cleaner, to_clean: object) -> None:
        raise RuntimeError("a corrupt batch")

    with monkeypatch.context() as m:
        m.setattr(Cleaner, "clean", broken)
        assert not cleaner.clean_filthiest_log()
    assert cleaner.manager.grab_filthiest_log(time.milliseconds()) is None  # skipped, not retried every round
    cleaner.manager.truncate_checkpoint(log, log.log_end_offset)
    assert cleaner.clean_filthiest_log()


def test_a_registered_log_outside_the_table_is_cleaned(tmp_path: Path, time: MockTime) -> None:
    manager = LogManager([str(tmp_path / "data")], LogConfig(), time)
    manager.startup(start_scheduler=False)
    internal = new_log(tmp_path / "data" / "__group_coordinator", time, name="__consumer_offsets-0")
    latest = write_updates(internal, time, keys=5, rounds=10)
    assert not manager.cleaner.clean_filthiest_log()  # not known yet
    manager.register_for_cleaning(internal)
    assert manager.cleaner.clean_filthiest_log()
    assert {r.key: (r.offset, r.value) for r in read_all(internal)} == latest
    assert len(read_all(internal)) == 5
    manager.unregister_for_cleaning(internal)
    assert manager.all_logs() == []  # never in the table (no retention, no checkpoints of its own)
    internal.close()
    manager.shutdown()


def test_a_leftover_cleaned_file_does_not_leak_into_the_next_clean(tmp_path: Path, time: MockTime) -> None:
    log = new_log(tmp_path, time)
    latest = write_updates(log, time, keys=4, rounds=6)
    with open(os.path.join(log.dir_path, "00000000000000000000.log" + CLEANED_FILE_SUFFIX), "wb") as fh:
        fh.write(kv_batch([(b"stale", b"garbage")], time.milliseconds()))  # a valid batch of a stopped clean
    clean(log, time)
    assert {r.key: (r.offset, r.value) for r in read_all(log)} == latest


def test_cleaner_threads_start_and_stop(tmp_path: Path, time: MockTime) -> None:
    import threading

    cleaner = LogCleaner(CleanerConfig(num_threads=2, backoff_ms=10), [str(tmp_path)], dict, time)
    cleaner.startup()
    names = {t.name for t in threading.enumerate()}
    assert {"kafka-log-cleaner-thread-0", "kafka-log-cleaner-thread-1"} <= names
    cleaner.shutdown()
    assert not {t.name for t in threading.enumerate()} & {"kafka-log-cleaner-thread-0", "kafka-log-cleaner-thread-1"}
    disabled = LogCleaner(CleanerConfig(enable_cleaner=False), [str(tmp_path)], dict, time)
    disabled.startup()
    assert "kafka-log-cleaner-thread-0" not in {t.name for t in threading.enumerate()}
    disabled.shutdown()


def test_a_follower_replicates_a_compacted_log_with_its_gaps_and_empty_batches(tmp_path: Path, time: MockTime) -> None:
    leader = new_log(tmp_path, time, name="leader-0")
    now = time.milliseconds()
    leader.append(kv_batch([(b"k", b"1"), (b"k", b"2")], now, pid=42, epoch=0, seq=0))
    leader.append(kv_batch([(b"k", b"3"), (b"t", b"x")], now))
    leader.append(kv_batch([(b"t", None)], now))
    leader.roll()
    clean(leader, time)
    batches = batches_of(leader)
    assert any(b.records_count == 0 for b in batches) and any(b.has_delete_horizon_ms for b in batches)
    follower = new_log(tmp_path, time, name="follower-0")
    for segment in leader.segments:
        if segment.size:
            follower.append(segment.read_bytes(0, segment.size), origin=AppendOrigin.REPLICATION)
    assert [(r.offset, r.key, r.value) for r in read_all(follower)] == [
        (r.offset, r.key, r.value) for r in read_all(leader)
    ]
    assert follower.log_end_offset == leader.log_end_offset
    entry = follower.producer_state.last_entry(42)
    assert entry is not None and entry.last_seq == 1  # the emptied batch carries the producer's sequence


@pytest.mark.parametrize("seed", range(3))
def test_random_updates_and_cleans_keep_every_latest_value(tmp_path: Path, time: MockTime, seed: int) -> None:
    """Rounds of random updates, tombstones and multi-record batches, each followed by a clean: after each clean
    every key's latest record is there at its offset, and nothing else below the active segment but the latest
    of each key."""
    import random

    rng = random.Random(seed)
    log = new_log(tmp_path, time, compacted(**{"delete.retention.ms": 10_000}))
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    end: int | None = None
    for _ in range(6):
        for _ in range(rng.randrange(20, 60)):
            pairs = [(f"k{rng.randrange(15)}".encode(), None if rng.random() < 0.15 else f"v{rng.random()}".encode())
                     for _ in range(rng.randrange(1, 5))]
            info = log.append(kv_batch(pairs, time.milliseconds()))
            for i, (key, value) in enumerate(pairs):
                latest[key] = (info.first_offset + i, value)
        log.roll()
        time.sleep(rng.randrange(0, 8000))
        end = clean(log, time, end)
        records = read_all(log)
        by_key: dict[bytes, list[tuple[int, bytes | None]]] = {}
        for r in records:
            assert r.key is not None
            by_key.setdefault(r.key, []).append((r.offset, r.value))
        for key, (offset, value) in latest.items():
            if key in by_key:
                assert by_key[key] == [(offset, value)]  # exactly the latest, once
            else:
                assert value is None  # only an expired tombstone may be gone
        assert set(by_key) <= set(latest)


def test_a_stopped_throttler_does_not_sleep(time: MockTime) -> None:
    throttler = Throttler(1000.0, time, check_interval_ms=100)
    throttler.stop()
    start = time.milliseconds()
    throttler.maybe_throttle(1_000_000)  # 1000 s of I/O at this rate
    assert time.milliseconds() == start


def test_a_clean_finishing_after_a_truncation_or_deletion_does_not_raise_the_checkpoint(tmp_path: Path,
                                                                                          time: MockTime) -> None:
    """Kafka stops cleaning before it truncates or deletes a log; here the clean may finish just after, so its end
    offset is capped at the log's end and dropped for a log that is no longer the partition's."""
    log = new_log(tmp_path, time)
    write_updates(log, time, keys=5, rounds=2)
    table: dict[tuple[str, int], Log] = {(log.topic, log.partition): log}
    manager = LogCleanerManager([str(tmp_path)], lambda: table)
    manager.done_cleaning(log, log.log_end_offset + 100)  # a truncation cut the log after the clean's swap
    assert manager.checkpoint_of(log) == log.log_end_offset
    del table[(log.topic, log.partition)]  # deleted meanwhile
    manager.done_cleaning(log, 3)
    assert manager.checkpoint_of(log) == log.log_end_offset  # unchanged: the stale clean writes nothing
