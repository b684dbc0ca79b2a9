"""The offset and time indexes on their shared base (AbstractIndex): file round trip, capacity, lookup,
truncation, torn files and the sanity checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_broker.log.abstract_index import CorruptIndexError
from mini_broker.log.offset_index import OffsetIndex
from mini_broker.log.time_index import NO_TIMESTAMP, TimeIndex


def test_offset_index_round_trip_lookup_and_truncate(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000100.index")
    idx = OffsetIndex(path, 100, max_index_size=3 * 8)
    assert idx.entry_size == 8 and idx.max_entries == 3
    assert idx.lookup(150) == (100, 0)
    for offset, position in ((110, 400), (120, 900), (130, 1500)):
        idx.append(offset, position)
    idx.append(140, 2000)  # full: ignored
    assert idx.is_full() and idx.entries() == 3
    with pytest.raises(CorruptIndexError):
        idx.append(125, 1000)  # offsets must increase
    assert [idx.lookup(o) for o in (105, 110, 119, 135)] == [(100, 0), (110, 400), (110, 400), (130, 1500)]
    idx.close()

    again = OffsetIndex(path, 100, max_index_size=3 * 8)
    assert [again.entry(i) for i in range(again.entries())] == [(110, 400), (120, 900), (130, 1500)]
    again.sanity_check(log_size=2000)
    again.truncate_to(120)
    assert again.entries() == 1 and again.last_offset() == 110
    assert Path(path).stat().st_size == 8
    with pytest.raises(CorruptIndexError):
        again.sanity_check(log_size=400)  # points at the end of the log
    again.reset()
    assert again.entries() == 0 and Path(path).stat().st_size == 0
    again.delete()
    assert not Path(path).exists()


def test_time_index_lookup_truncate_and_only_growing_timestamps(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000000.timeindex")
    idx = TimeIndex(path, 0, max_index_size=10 * 12)
    assert idx.entry_size == 12 and idx.last_entry() == (NO_TIMESTAMP, 0)
    idx.maybe_append(1000, 5)
    idx.maybe_append(1000, 9)  # not a larger timestamp: ignored
    idx.maybe_append(2000, 9)
    idx.maybe_append(3000, 20)
    assert idx.entries() == 3
    assert [idx.lookup(t) for t in (999, 1000, 2500, 9999)] == [(NO_TIMESTAMP, 0), (1000, 5), (2000, 9), (3000, 20)]
    idx.truncate_to(9)
    assert idx.last_entry() == (1000, 5)
    idx.sanity_check(max_offset=5)
    idx.close()


def test_a_torn_index_file_fails_its_sanity_check(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(str(path), 0, max_index_size=1024)
    idx.append(3, 100)
    idx.close()
    with open(path, "ab") as fh:
        fh.write(b"\x00\x01\x02")  # part of an entry
    torn = OffsetIndex(str(path), 0, max_index_size=1024)
    assert torn.entries() == 1  # the whole entries are still read
    with pytest.raises(CorruptIndexError, match="not a multiple of 8"):
        torn.sanity_check(log_size=1000)
    torn.close()


def test_new_entries_are_written_together_at_flush_close_truncate_or_a_full_buffer(tmp_path: Path) -> None:
    """Appended entries are in memory at once and reach the file together (one write per PENDING_BYTES of
    entries, or at flush, close and truncate_to), where they land after the entries already written."""
    from mini_broker.log.abstract_index import PENDING_BYTES

    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(str(path), 0, max_index_size=1 << 20)
    idx.append(1, 10)
    idx.append(2, 20)
    assert idx.lookup(2) == (2, 20) and path.stat().st_size == 0  # not written yet
    idx.flush()
    assert path.stat().st_size == 16
    idx.append(3, 30)
    idx.truncate_to(3)  # writes the pending entry, then cuts it
    assert idx.entries() == 2 and path.stat().st_size == 16
    per_write = PENDING_BYTES // 8
    for i in range(per_write):
        idx.append(10 + i, 100 + i)
    assert path.stat().st_size == 16 + PENDING_BYTES  # a full buffer is written without a flush
    idx.append(5000, 9000)
    idx.close()
    again = OffsetIndex(str(path), 0, max_index_size=1 << 20)
    assert [again.entry(i) for i in range(again.entries())] == (
        [(1, 10), (2, 20)] + [(10 + i, 100 + i) for i in range(per_write)] + [(5000, 9000)])
    again.reset()
    again.append(7, 70)
    again.reset()  # a pending entry is dropped with the others
    again.close()
    assert path.stat().st_size == 0


def test_the_time_index_writes_its_entries_at_close(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.timeindex"
    idx = TimeIndex(str(path), 0, max_index_size=1024)
    idx.maybe_append(1000, 5)
    idx.maybe_append(2000, 9)
    assert path.stat().st_size == 0 and idx.last_entry() == (2000, 9)
    idx.close()
    again = TimeIndex(str(path), 0, max_index_size=1024)
    assert [again.lookup(t) for t in (1000, 2000)] == [(1000, 5), (2000, 9)]
    again.close()


def test_the_time_index_ignores_no_timestamp_and_a_full_index_but_when_told(tmp_path: Path) -> None:
    idx = TimeIndex(str(tmp_path / "00000000000000000000.timeindex"), 0, max_index_size=2 * 12)
    idx.maybe_append(NO_TIMESTAMP, 3)  # not above the empty index's -1: ignored
    assert idx.entries() == 0
    idx.maybe_append(1000, 5)
    idx.maybe_append(2000, 9)
    idx.maybe_append(3000, 12)  # full: ignored
    assert idx.entries() == 2 and idx.last_entry() == (2000, 9)
    idx.maybe_append(3000, 12, skip_full_check=True)  # a segment becoming inactive: its last entry goes in anyway
    assert idx.last_entry() == (3000, 12)
    with pytest.raises(CorruptIndexError):
        idx.maybe_append(4000, 11, skip_full_check=True)  # offsets must not go back
    idx.close()
