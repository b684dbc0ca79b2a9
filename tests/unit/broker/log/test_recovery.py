"""Log recovery on open: torn tails, corrupt or missing indexes, unclean shutdown."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mini_broker.log import Log, LogConfig
from pykafka_client.utils.time import MockTime

from .helpers import batch, records_of


@pytest.fixture
def time() -> MockTime:
    return MockTime()


def make_log(
    path: Path, time: MockTime, clean: bool = True, recovery_point: int = 0, props: dict[str, object] | None = None
) -> Log:
    return Log(
        str(path / "t-1"),
        LogConfig.from_props(props or {}),
        time=time,
        had_clean_shutdown=clean,
        recovery_point=recovery_point,
    )


def fill(lg: Log, n: int, per_batch: int = 2) -> list[int]:
    """Append n batches; return each batch's file position in the active segment."""
    positions = []
    for i in range(n):
        positions.append(lg.active_segment.size)
        lg.append(batch([f"r{i}-{j}".encode().ljust(30, b"_") for j in range(per_batch)]))
    return positions


def all_offsets(lg: Log) -> list[int]:
    out: list[int] = []
    offset = lg.log_start_offset
    while offset < lg.log_end_offset:
        recs = records_of(lg.read(offset, 1 << 20).to_bytes())
        out += [r.offset for r in recs if r.offset >= offset]
        offset = out[-1] + 1
    return out


@pytest.mark.parametrize("clean", [True, False])
def test_torn_write_is_truncated_and_offsets_continue(tmp_path: Path, time: MockTime, clean: bool) -> None:
    lg = make_log(tmp_path, time)
    positions = fill(lg, 5)
    path = lg.active_segment.log_path
    lg.close()
    # Cut the last batch in the middle, as a crash during the write would.
    with open(path, "r+b") as f:
        f.truncate(positions[4] + 20)
    lg = make_log(tmp_path, time, clean=clean)
    try:
        assert lg.log_end_offset == 8
        assert os.path.getsize(path) == positions[4]
        assert all_offsets(lg) == list(range(8))
        info = lg.append(batch([b"new"]))
        assert info.first_offset == 8
        assert all_offsets(lg) == list(range(9))
    finally:
        lg.close()


def test_garbage_after_the_last_batch_is_truncated(tmp_path: Path, time: MockTime) -> None:
    lg = make_log(tmp_path, time)
    fill(lg, 3)
    path = lg.active_segment.log_path
    size = lg.active_segment.size
    lg.close()
    with open(path, "ab") as f:
        f.write(os.urandom(100))
    lg = make_log(tmp_path, time)
    try:
        assert lg.active_segment.size == size and lg.log_end_offset == 6
    finally:
        lg.close()


def test_corrupt_batch_in_the_middle_truncates_from_there(tmp_path: Path, time: MockTime) -> None:
    lg = make_log(tmp_path, time)
    positions = fill(lg, 4)
    path = lg.active_segment.log_path
    lg.close()
    with open(path, "r+b") as f:
        f.seek(positions[2] + 70)
        byte = f.read(1)
        f.seek(positions[2] + 70)
        f.write(bytes([byte[0] ^ 0xFF]))
    lg = make_log(tmp_path, time)
    try:
        assert lg.log_end_offset == 4 and all_offsets(lg) == [0, 1, 2, 3]
    finally:
        lg.close()


def test_unclean_shutdown_recovers_every_segment_after_the_recovery_point(tmp_path: Path, time: MockTime) -> None:
    one = len(batch([b"x".ljust(30, b"_")] * 2))
    lg = make_log(tmp_path, time, props={"segment.bytes": 2 * one})
    fill(lg, 6)
    segs = [s.log_path for s in lg.segments]
    assert len(segs) == 3
    lg.close()
    # Tear the middle segment: with an unclean shutdown from recovery point 0 it is re-read, cut, and
    # everything after it is dropped.
    with open(segs[1], "r+b") as f:
        f.truncate(one + 10)
    lg = make_log(tmp_path, time, clean=False, recovery_point=0, props={"segment.bytes": 2 * one})
    try:
        assert [s.base_offset for s in lg.segments] == [0, 4]
        assert lg.log_end_offset == 6
        assert not os.path.exists(segs[2])
        assert all_offsets(lg) == list(range(6))
    finally:
        lg.close()


def test_clean_shutdown_trusts_older_segments(tmp_path: Path, time: MockTime) -> None:
    one = len(batch([b"x".ljust(30, b"_")] * 2))
    lg = make_log(tmp_path, time, props={"segment.bytes": 2 * one})
    fill(lg, 6)
    lg.close()
    lg = make_log(tmp_path, time, clean=True, recovery_point=6, props={"segment.bytes": 2 * one})
    try:
        assert [s.base_offset for s in lg.segments] == [0, 4, 8]
        assert lg.log_end_offset == 12 and lg.recovery_point == 12
    finally:
        lg.close()


def index_entries(lg: Log) -> list[list[tuple[int, int]]]:
    return [[s.offset_index.entry(k) for k in range(s.offset_index.entries())] for s in lg.segments]


@pytest.mark.parametrize("damage", ["delete", "torn", "garbage"])
def test_missing_or_corrupt_indexes_are_rebuilt(tmp_path: Path, time: MockTime, damage: str) -> None:
    props: dict[str, object] = {"segment.bytes": 2000, "index.interval.bytes": 100}
    lg = make_log(tmp_path, time, props=props)
    fill(lg, 40)
    expected = index_entries(lg)
    expected_ts = [s.time_index.last_entry() for s in lg.segments]
    assert len(lg.segments) > 2 and all(expected)
    first = lg.segments[0]
    lg.close()
    for p in (first.offset_index.path, first.time_index.path):
        if damage == "delete":
            os.unlink(p)
        elif damage == "torn":
            with open(p, "ab") as f:
                f.write(b"\x01\x02\x03")
        else:
            with open(p, "r+b") as f:
                f.write(b"\x7f\xff\xff\xff" * 4)
    lg = make_log(tmp_path, time, props=props)
    try:
        assert index_entries(lg) == expected
        assert [s.time_index.last_entry() for s in lg.segments] == expected_ts
        assert all_offsets(lg) == list(range(80))
    finally:
        lg.close()


def test_stray_files_are_removed(tmp_path: Path, time: MockTime) -> None:
    lg = make_log(tmp_path, time)
    fill(lg, 1)
    lg.close()
    d = tmp_path / "t-1"
    (d / "00000000000000000099.index").write_bytes(b"")
    (d / "00000000000000000000.log.deleted").write_bytes(b"x")
    lg = make_log(tmp_path, time)
    try:
        assert sorted(os.listdir(d)) == [
            "00000000000000000000.index",
            "00000000000000000000.log",
            "00000000000000000000.timeindex",
            "00000000000000000002.snapshot",  # producer state written by the clean close
        ]
    finally:
        lg.close()


def test_empty_directory_starts_at_the_log_start_offset(tmp_path: Path, time: MockTime) -> None:
    lg = Log(str(tmp_path / "t-3"), LogConfig(), log_start_offset=42, time=time)
    try:
        assert lg.log_end_offset == 42 and lg.active_segment.base_offset == 42
        assert lg.append(batch([b"a"])).first_offset == 42
    finally:
        lg.close()


def test_bad_directory_name_is_rejected(tmp_path: Path, time: MockTime) -> None:
    with pytest.raises(ValueError):
        Log(str(tmp_path / "nopartition"), LogConfig(), time=time)
