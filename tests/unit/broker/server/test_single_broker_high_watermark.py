"""The single broker's high watermark under two concurrent appenders (two network threads handling Produce).

Each appender raises the high watermark to the log end offset it read after its own append. When the other one
appends (and raises it) in between, the slower appender must not move it back: an acks=all produce of the
faster one waits (DelayedProduce) for the high watermark to reach its last offset + 1, and with both producers
parked behind such a wait no later append brings it back before the request timeout (bench/spark.py's pykafka
writes that took 33-35 s instead of 3-5 s)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.log import Log, LogConfig
from mini_broker.log.fetch_data_info import LogAppendInfo
from mini_broker.log.unified_log import AppendOrigin
from mini_broker.server.replication_strategy import SingleBrokerReplication
from pykafka_client.utils.time import MockTime
from tests.unit.broker.log.helpers import batch


class _InterleavingLog(Log):
    """A log whose first read of the log end offset after the next append returns runs ``between`` before returning
    the value read: another appender's whole append lands between this appender's read and its high-watermark
    update, as when two network threads append to the partition at once."""

    _pending: Callable[[], None] | None = None
    _armed: Callable[[], None] | None = None

    def arm(self, between: Callable[[], None]) -> None:
        self._pending = between

    def append(self, records: bytes | bytearray | memoryview, **kwargs: Any) -> LogAppendInfo:
        info = super().append(records, **kwargs)
        self._armed, self._pending = self._pending, None
        return info

    @property
    def log_end_offset(self) -> int:
        value = super().log_end_offset
        between, self._armed = self._armed, None
        if between is not None:
            between()
        return value


@pytest.fixture
def log(tmp_path: Path) -> Iterator[_InterleavingLog]:
    lg = _InterleavingLog(str(tmp_path / "topic-0"), LogConfig.from_props({}), time=MockTime(), had_clean_shutdown=True)
    yield lg
    lg.close()


def test_a_slower_appender_never_moves_the_high_watermark_below_a_faster_ones_records(log: _InterleavingLog) -> None:
    replication = SingleBrokerReplication(None)  # type: ignore[arg-type]  # append_as_leader needs only the log
    second_required: list[int] = []

    def second_append() -> None:
        replication.append_as_leader(None, log, batch([b"b1", b"b2", b"b3"]), AppendOrigin.CLIENT, -1)  # type: ignore[arg-type]
        second_required.append(log.log_end_offset)  # what its DelayedProduce waits for: last offset + 1

    log.arm(second_append)
    replication.append_as_leader(None, log, batch([b"a1", b"a2"]), AppendOrigin.CLIENT, -1)  # type: ignore[arg-type]

    assert second_required == [5]
    assert log.high_watermark == log.log_end_offset == 5
    assert replication.check_enough_replicas(None, log, second_required[0]) == (True, 0)  # type: ignore[arg-type]


def test_maybe_increment_high_watermark_raises_only(log: _InterleavingLog) -> None:
    log.append(batch([b"a", b"b", b"c", b"d"]))
    assert log.maybe_increment_high_watermark(3) is True
    assert log.maybe_increment_high_watermark(2) is False
    assert log.high_watermark == 3
    assert log.maybe_increment_high_watermark(10) is True  # clamped to the log end offset
    assert log.high_watermark == 4
    assert log.maybe_increment_high_watermark(10) is False
