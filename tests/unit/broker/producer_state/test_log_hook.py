"""The producer-state hook on the real partition Log (how the lead is meant to wire it; see ARCHITECTURE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_broker.log.fetch_data_info import LogAppendInfo
from mini_broker.log.log_config import LogConfig
from mini_broker.log.unified_log import Log
from mini_broker.producer_state import BatchMetadata, ProducerStateManager, log_before_append_hook, rebuild_from_log
from pykafka_client.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.producer.record_metadata import TopicPartition

PID = 77


def batch(epoch: int, seq: int, n: int) -> bytes:
    b = ProducerBatch(TopicPartition("t", 0), 1 << 20, 0)
    for i in range(n):
        b.try_append(1000 + i, None, b"v%d" % i, [], None, 0)
    b.set_producer_state(PID, epoch, seq, False)
    return b.records()


class Partition:
    def __init__(self, path: Path) -> None:
        self.log = Log(str(path / "t-0"), LogConfig())
        self.psm = ProducerStateManager("t-0", str(path / "t-0"))

        def dup_info(dup: BatchMetadata) -> LogAppendInfo:
            return LogAppendInfo(dup.first_offset, dup.last_offset, dup.timestamp, dup.last_offset, -1,
                                 self.log.log_start_offset, dup.offset_delta + 1, 1, 0)

        self.hook = log_before_append_hook(self.psm, lambda: self.log.log_end_offset, dup_info)

    def append(self, data: bytes) -> tuple[int, int]:
        info = self.log.append(data, before_append=self.hook)
        return info.first_offset, info.last_offset

    def reopen(self, path: Path, clean: bool) -> int:
        """Close and reopen; returns the offset replay started from."""
        if clean:
            self.psm.take_snapshot(self.log.log_end_offset)
            self.log.close()
        else:  # a kill: no close (the Log's own close would also snapshot its producer state at the LEO)
            for seg in self.log.segments:
                seg.close()
        self.__init__(path)  # type: ignore[misc]
        self.psm.load(self.log.log_end_offset, now_ms=2000)
        start = self.psm.map_end_offset
        rebuild_from_log(self.psm, self.log, now_ms=2000, chunk_bytes=1)  # 1 byte: one batch per read
        return start


def test_duplicates_and_sequence_errors_on_a_real_log(tmp_path: Path) -> None:
    p = Partition(tmp_path)
    assert p.append(batch(0, 0, 3)) == (0, 2)
    assert p.append(batch(0, 3, 2)) == (3, 4)
    assert p.append(batch(0, 0, 3)) == (0, 2)  # retry of the first batch: original offsets, nothing written
    assert p.log.log_end_offset == 5
    with pytest.raises(OutOfOrderSequenceError):
        p.append(batch(0, 9, 1))
    assert p.log.log_end_offset == 5
    assert p.append(batch(1, 0, 1)) == (5, 5)  # epoch bump restarts at 0
    with pytest.raises(InvalidProducerEpochError):
        p.append(batch(0, 5, 1))


def test_state_survives_restart_via_snapshot_and_replay(tmp_path: Path) -> None:
    p = Partition(tmp_path)
    p.append(batch(0, 0, 2))
    p.psm.take_snapshot(p.log.log_end_offset)  # as at a segment roll
    p.append(batch(0, 2, 2))  # only in the log: found by replay
    assert p.reopen(tmp_path, clean=False) == 2
    assert p.append(batch(0, 2, 2)) == (2, 3)  # still detected as a duplicate
    assert p.append(batch(0, 4, 1)) == (4, 4)
    with pytest.raises(OutOfOrderSequenceError):
        p.append(batch(0, 9, 1))
    assert p.reopen(tmp_path, clean=True) == 5
    assert p.append(batch(0, 4, 1)) == (4, 4)
