"""The producer state owned by each partition Log (Kafka UnifiedLog): duplicates, sequence/epoch errors,
snapshots at roll / clean close, replay after a kill, truncation, expiry via the LogManager task."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mini_broker.log.log_config import LogConfig
from mini_broker.log.log_manager import LogManager
from mini_broker.log.unified_log import Log
from mini_broker.producer_state import ProducerIdManager
from pykafka_client.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime

PID = 42
TS = 1_700_000_000_000


def batch(epoch: int, seq: int, n: int, pid: int = PID, ts: int = TS) -> bytes:
    b = ProducerBatch(TopicPartition("t", 0), 1 << 20, 0)
    for i in range(n):
        assert b.try_append(ts, None, b"v%d" % (seq + i), [], None, 0) is not None
    if pid >= 0:
        b.set_producer_state(pid, epoch, seq, False)
    return b.records()


def open_log(tmp_path: Path, time: MockTime, clean: bool = True, segment_bytes: str | None = None) -> Log:
    props = {} if segment_bytes is None else {"segment.bytes": segment_bytes}
    return Log(str(tmp_path / "t-0"), LogConfig.from_props(props, LogConfig()), time=time, had_clean_shutdown=clean,
               recovery_point=0)


def kill(lg: Log) -> None:
    """What a kill -9 leaves: files as written, no close (close would snapshot the producer state)."""
    for seg in lg.segments:
        seg.close()


def snapshots(tmp_path: Path) -> list[str]:
    return sorted(n for n in os.listdir(tmp_path / "t-0") if n.endswith(".snapshot"))


@pytest.fixture
def time() -> MockTime:
    return MockTime(current_time_ms=TS)


def test_duplicate_returns_original_offsets_and_writes_nothing(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    first = lg.append(batch(0, 0, 3))
    assert (first.first_offset, first.last_offset) == (0, 2)
    lg.append(batch(0, 3, 2))
    size = lg.size()
    dup = lg.append(batch(0, 0, 3))
    assert (dup.first_offset, dup.last_offset, dup.max_timestamp, dup.log_append_time) == (0, 2, TS, -1)
    assert lg.size() == size and lg.log_end_offset == 5
    dup2 = lg.append(batch(0, 3, 2))
    assert (dup2.first_offset, dup2.last_offset) == (3, 4)
    assert lg.log_end_offset == 5
    lg.close()


def test_duplicate_only_within_the_last_five_batches(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    for i in range(6):
        lg.append(batch(0, i, 1))
    assert lg.append(batch(0, 1, 1)).first_offset == 1  # still among the last 5
    with pytest.raises(OutOfOrderSequenceError):
        lg.append(batch(0, 0, 1))  # evicted from the window: Kafka answers out of order
    with pytest.raises(OutOfOrderSequenceError):
        lg.append(batch(0, 4, 3))  # partial overlap
    assert lg.log_end_offset == 6
    lg.close()


def test_out_of_order_and_fenced_epoch_write_nothing(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    lg.append(batch(3, 0, 2))
    with pytest.raises(OutOfOrderSequenceError):
        lg.append(batch(3, 5, 1))  # gap
    with pytest.raises(OutOfOrderSequenceError):
        lg.append(batch(4, 1, 1))  # new epoch must start at 0
    with pytest.raises(InvalidProducerEpochError):
        lg.append(batch(2, 2, 1))  # older epoch
    assert lg.log_end_offset == 2
    assert lg.append(batch(4, 0, 1)).first_offset == 2  # bumped epoch from 0
    with pytest.raises(InvalidProducerEpochError):
        lg.append(batch(3, 2, 1))  # fenced now
    # a non-idempotent batch is never checked
    assert lg.append(batch(0, 0, 1, pid=-1)).first_offset == 3
    lg.close()


def test_unknown_producer_any_first_sequence_accepted(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    assert lg.append(batch(0, 17, 2)).first_offset == 0  # no state (e.g. expired): accepted, as Kafka
    assert lg.append(batch(0, 19, 1)).first_offset == 2
    lg.close()


def test_clean_restart_uses_the_snapshot_at_the_log_end(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    lg.append(batch(0, 0, 2))
    lg.append(batch(0, 2, 2))
    lg.close()
    assert snapshots(tmp_path) == ["00000000000000000004.snapshot"]
    lg = open_log(tmp_path, time)
    assert lg.producer_state.map_end_offset == 4
    assert lg.append(batch(0, 2, 2)).first_offset == 2  # the last batch is in the snapshot
    with pytest.raises(OutOfOrderSequenceError):
        lg.append(batch(0, 5, 1))
    assert lg.append(batch(0, 4, 1)).first_offset == 4
    lg.close()


def test_unclean_restart_replays_the_log_after_the_roll_snapshot(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, segment_bytes="200")
    offsets = [lg.append(batch(0, 2 * i, 2)).first_offset for i in range(8)]
    assert offsets == list(range(0, 16, 2))
    assert len(lg.segments) > 1
    rolled = snapshots(tmp_path)
    assert rolled and all(int(n[:20]) == s.base_offset for n, s in zip(rolled, lg.segments[1:], strict=False))
    kill(lg)
    lg = open_log(tmp_path, time, clean=False, segment_bytes="200")
    assert lg.log_end_offset == 16
    # a snapshot keeps each producer's last batch (as Kafka's); the batches after it come back by replay:
    # all of those are duplicates with their original offsets
    last_snapshot = int(rolled[-1][:20])
    assert last_snapshot < 14
    for first in range(last_snapshot - 2, 16, 2):
        info = lg.append(batch(0, first, 2))
        assert (info.first_offset, info.last_offset) == (first, first + 1)
    assert lg.log_end_offset == 16
    assert lg.append(batch(0, 16, 1)).first_offset == 16
    lg.close()


def test_truncated_tail_truncates_producer_state(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time)
    lg.append(batch(0, 0, 2))
    lg.append(batch(0, 2, 2))
    last_size = lg.size()
    lg.close()  # snapshot at 4
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    with open(seg, "r+b") as fh:  # tear the last batch
        fh.truncate(last_size - 5)
    lg = open_log(tmp_path, time, clean=False)
    assert lg.log_end_offset == 2
    assert snapshots(tmp_path) == []  # the snapshot past the new log end is gone
    # the torn batch is not a duplicate any more: it is written again at offset 2
    assert lg.append(batch(0, 2, 2)).first_offset == 2
    assert lg.append(batch(0, 0, 2)).first_offset == 0  # the surviving one still is
    lg.close()


def test_log_manager_expires_idle_producers(tmp_path: Path, time: MockTime) -> None:
    lm = LogManager([str(tmp_path)], LogConfig(), time, producer_id_expiration_ms=1000,
                    producer_id_expiration_check_interval_ms=500)
    lm.startup(start_scheduler=False)
    assert ("PeriodicProducerExpirationCheck", 500, lm.remove_expired_producers) in lm.scheduled_tasks()
    lg = lm.get_or_create_log("t", 0)
    lg.append(batch(0, 0, 1))
    lg.append(batch(0, 0, 1, pid=PID + 1, ts=TS + 900))
    time.sleep(999)
    assert lm.remove_expired_producers() == 0
    time.sleep(1)
    assert lm.remove_expired_producers() == 1
    assert lg.producer_state.last_entry(PID) is None and lg.producer_state.last_entry(PID + 1) is not None
    # expired: its retry is no longer recognised, and any sequence is accepted again (Kafka)
    assert lg.append(batch(0, 0, 1)).first_offset == 2
    lm.shutdown()


def test_producer_ids_unique_across_restarts_and_above_the_floor(tmp_path: Path) -> None:
    m = ProducerIdManager(str(tmp_path), block_size=10, first_id=5000)
    ids = [m.generate_producer_id() for _ in range(3)]
    assert ids == [5000, 5001, 5002]
    m2 = ProducerIdManager(str(tmp_path), block_size=10, first_id=0)
    assert m2.generate_producer_id() == 5010  # the rest of the persisted block is skipped


def test_failed_write_leaves_the_producer_state_untouched(tmp_path: Path, time: MockTime,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    lg = open_log(tmp_path, time)
    lg.append(batch(0, 0, 2))
    segment = lg.active_segment

    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(segment, "append", broken)
    # the write fails for the segment's compiled append state too (its append_one writes the file itself): its
    # descriptor is pointed at a file opened read-only meanwhile
    fd = segment.file.fileno()
    saved = os.dup(fd)
    readonly = os.open(os.path.join(lg.dir_path, "readonly"), os.O_RDONLY | os.O_CREAT, 0o644)
    os.dup2(readonly, fd)
    try:
        with pytest.raises(OSError):
            lg.append(batch(0, 2, 2))
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(readonly)
        os.unlink(os.path.join(lg.dir_path, "readonly"))
    monkeypatch.undo()
    assert lg.log_end_offset == 2 and segment.size == os.path.getsize(segment.log_path)
    entry = lg.producer_state.last_entry(PID)
    assert entry is not None and entry.last_seq == 1
    # the retry is a new write, not a duplicate of a batch that never reached the log
    info = lg.append(batch(0, 2, 2))
    assert (info.first_offset, info.last_offset) == (2, 3) and lg.log_end_offset == 4
    lg.close()


def test_snapshots_below_the_first_segment_go_with_their_segments(tmp_path: Path, time: MockTime) -> None:
    lg = open_log(tmp_path, time, segment_bytes="200")
    for i in range(8):
        lg.append(batch(0, 2 * i, 2))
    bases = [s.base_offset for s in lg.segments]
    assert [int(n[:20]) for n in snapshots(tmp_path)] == bases[1:]
    lg.update_high_watermark(lg.log_end_offset)
    lg.delete_records_before(bases[-1])
    assert [int(n[:20]) for n in snapshots(tmp_path)] == [bases[-1]]
    lg.close()
    assert [int(n[:20]) for n in snapshots(tmp_path)] == [bases[-1], 16]
