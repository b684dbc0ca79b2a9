"""LogManager: data dirs, load on start, checkpoints, clean shutdown marker, retention pass."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from mini_broker.log import LogConfig, LogManager
from mini_broker.log.checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    OffsetCheckpointFile,
)
from pykafka_client.errors import KafkaStorageError
from pykafka_client.utils.time import MockTime

from .helpers import batch


def make_manager(tmp_path: Path, time: MockTime, config: LogConfig | None = None) -> LogManager:
    mgr = LogManager([str(tmp_path / "d1"), str(tmp_path / "d2")], config, time)
    mgr.startup(start_scheduler=False)
    return mgr


def test_create_append_restart(tmp_path: Path) -> None:
    time = MockTime()
    mgr = make_manager(tmp_path, time)
    a = mgr.get_or_create_log("orders", 0)
    b = mgr.get_or_create_log("orders", 1)
    assert mgr.get_or_create_log("orders", 0) is a
    assert {os.path.dirname(a.dir_path), os.path.dirname(b.dir_path)} == {str(tmp_path / "d1"), str(tmp_path / "d2")}
    a.append(batch([b"x", b"y"]))
    b.append(batch([b"z"]))
    mgr.shutdown()
    mgr.shutdown()
    for d in ("d1", "d2"):
        assert (tmp_path / d / CLEAN_SHUTDOWN_FILE).exists()
    rp = OffsetCheckpointFile(str(tmp_path / "d1" / RECOVERY_POINT_CHECKPOINT_FILE)).read()
    rp.update(OffsetCheckpointFile(str(tmp_path / "d2" / RECOVERY_POINT_CHECKPOINT_FILE)).read())
    assert rp == {("orders", 0): 2, ("orders", 1): 1}

    mgr2 = make_manager(tmp_path, time)
    try:
        a2 = mgr2.get_log("orders", 0)
        assert a2 is not None and a2.log_end_offset == 2
        assert mgr2.get_log("orders", 1).log_end_offset == 1  # type: ignore[union-attr]
        assert mgr2.get_log("orders", 2) is None
        assert not (tmp_path / "d1" / CLEAN_SHUTDOWN_FILE).exists()  # removed while running
    finally:
        mgr2.shutdown()


def test_crash_then_recovery_and_log_start_checkpoint(tmp_path: Path) -> None:
    time = MockTime()
    mgr = make_manager(tmp_path, time, LogConfig.from_props({"segment.bytes": 200}))
    lg = mgr.get_or_create_log("t", 0)
    for i in range(10):
        lg.append(batch([f"m{i}".encode().ljust(40, b"-")]))
    lg.update_high_watermark(lg.log_end_offset)
    assert mgr.delete_records("t", 0, 4) == 4
    path = lg.active_segment.log_path
    size = lg.active_segment.size
    lg.flush()
    # "Crash": no shutdown (no marker); tear the tail of the active segment.
    for log in mgr.all_logs():
        log.close()
    with open(path, "r+b") as f:
        f.truncate(size - 5)
    mgr2 = make_manager(tmp_path, time, LogConfig.from_props({"segment.bytes": 200}))
    try:
        lg2 = mgr2.get_log("t", 0)
        assert lg2 is not None
        assert lg2.log_start_offset == 4
        assert lg2.log_end_offset == 9
    finally:
        mgr2.shutdown()
    starts = OffsetCheckpointFile(str(tmp_path / "d1" / LOG_START_OFFSET_CHECKPOINT_FILE)).read()
    assert starts.get(("t", 0), 4) == 4


def test_retention_pass_and_delete_log(tmp_path: Path) -> None:
    time = MockTime()
    mgr = make_manager(tmp_path, time, LogConfig.from_props({"segment.bytes": 150, "retention.ms": 1000}))
    try:
        lg = mgr.get_or_create_log("r", 0)
        for i in range(6):
            lg.append(batch([f"m{i}".encode().ljust(40, b"-")], timestamp=time.milliseconds()))
        lg.update_high_watermark(lg.log_end_offset)
        n = len(lg.segments)
        assert n > 2
        assert mgr.cleanup_logs() == 0
        time.sleep(1001)
        assert mgr.cleanup_logs() == n
        assert lg.log_start_offset == 6 == lg.log_end_offset
        names = [name for name, _, _ in mgr.scheduled_tasks()]
        assert "kafka-log-retention" in names
        assert mgr.delete_log("r", 0)
        assert not os.path.exists(lg.dir_path)
        assert not mgr.delete_log("r", 0)
        with pytest.raises(KafkaStorageError):
            mgr.delete_records("r", 0, 0)
    finally:
        mgr.shutdown()


def test_topic_config_update_applies_to_partitions(tmp_path: Path) -> None:
    time = MockTime()
    mgr = make_manager(tmp_path, time)
    try:
        lg = mgr.get_or_create_log("c", 0)
        cfg = LogConfig.from_props({"retention.ms": "5"})
        mgr.update_topic_config("c", cfg)
        assert lg.config.retention_ms == 5
        assert mgr.get_or_create_log("c", 1).config.retention_ms == 5
    finally:
        mgr.shutdown()


def test_background_scheduler_starts_and_stops(tmp_path: Path) -> None:
    mgr = LogManager([str(tmp_path / "d")], time=MockTime(), retention_check_interval_ms=1)
    mgr.startup()
    mgr.shutdown()
    assert (tmp_path / "d" / CLEAN_SHUTDOWN_FILE).exists()


def test_unclean_shutdown_is_reported_only_when_there_are_logs_to_recover(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    time = MockTime()
    with caplog.at_level(logging.INFO, logger="mini_broker.log"):
        mgr = make_manager(tmp_path, time)  # brand-new directories: nothing to report
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING or "clean" in str(r.msg)]
        mgr.get_or_create_log("t", 0).append(batch([b"x"]))
        mgr.shutdown(clean=False)  # as after a failed start: no marker
        assert not (tmp_path / "d1" / CLEAN_SHUTDOWN_FILE).exists()
        assert not (tmp_path / "d2" / CLEAN_SHUTDOWN_FILE).exists()
        caplog.clear()
        mgr2 = make_manager(tmp_path, time)
        mgr2.shutdown()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # only the directory that holds the log
    assert "without a clean shutdown" in warnings[0] and "recovering 1 logs" in warnings[0]


def test_truncate_fully_and_start_at_empties_the_log_and_restarts_it_there(tmp_path: Path) -> None:
    time = MockTime()
    mgr = make_manager(tmp_path, time, LogConfig.from_props({"segment.bytes": 200}))
    try:
        old = mgr.get_or_create_log("orders", 0)
        for i in range(20):
            old.append(batch([b"record-%d" % i]))
        new = mgr.truncate_fully_and_start_at("orders", 0, 500)
        assert mgr.get_log("orders", 0) is new
        assert (new.log_start_offset, new.log_end_offset) == (500, 500)
        assert sorted(f for f in os.listdir(new.dir_path) if f.endswith(".log")) == ["00000000000000000500.log"]
        new.append(batch([b"next"]))
        assert new.log_end_offset == 501
        start = OffsetCheckpointFile(str(tmp_path / "d1" / LOG_START_OFFSET_CHECKPOINT_FILE)).read()
        start.update(OffsetCheckpointFile(str(tmp_path / "d2" / LOG_START_OFFSET_CHECKPOINT_FILE)).read())
        assert start[("orders", 0)] == 500
        with pytest.raises(KafkaStorageError):
            mgr.truncate_fully_and_start_at("orders", 9, 0)
    finally:
        mgr.shutdown()
