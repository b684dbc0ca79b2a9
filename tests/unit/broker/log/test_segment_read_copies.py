"""The fetch read path copies batch headers, never record bytes, out of the segment file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.log import Log, LogConfig
from pykafka_client.protocol.types import FileRegion
from pykafka_client.utils.time import MockTime

from .helpers import batch, records_of


@pytest.fixture
def log(tmp_path: Path) -> Iterator[Log]:
    lg = Log(str(tmp_path / "topic-0"), LogConfig.from_props({}), time=MockTime(), had_clean_shutdown=True)
    yield lg
    lg.close()


def test_reading_large_batches_preads_only_their_headers(log: Log, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(5):
        log.append(batch([bytes([65 + i]) * 100_000]))
    log.update_high_watermark(log.log_end_offset)
    read_sizes: list[int] = []
    real_pread = os.pread

    def recording_pread(fd: int, n: int, offset: int) -> bytes:
        read_sizes.append(n)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", recording_pread)
    for offset in range(5):
        info = log.read(offset, 1_000_000)
        assert isinstance(info.records, FileRegion)
    assert read_sizes and max(read_sizes) <= 64  # batch headers (61 bytes), no record bytes
    monkeypatch.undo()
    assert [r.value for r in records_of(log.read(3, 1).to_bytes())] == [b"D" * 100_000]


def test_small_batches_are_still_scanned_in_chunks(log: Log, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(200):
        log.append(batch([b"v%d" % i]))
    calls: list[int] = []
    real_pread = os.pread

    def recording_pread(fd: int, n: int, offset: int) -> bytes:
        calls.append(n)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", recording_pread)
    headers = list(log.active_segment.iter_headers())
    assert [h.base_offset for h in headers] == list(range(200))
    assert len(calls) < 10  # not one pread per batch
