"""The single broker's high watermark under two concurrent appenders (two network threads handling Produce).

Each appender raises the high watermark to its own log end offset, under the append's lock. When the other one
appends (and raises it) in between, the slower appender must not move it back: an acks=all produce of the
faster one waits (DelayedProduce) for the high watermark to reach its last offset + 1, and with both producers
parked behind such a wait no later append brings it back before the request timeout (bench/spark.py's pykafka
writes that took 33-35 s instead of 3-5 s)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mini_broker.log import Log, LogConfig
from mini_broker.log.unified_log import AppendOrigin
from mini_broker.server.replication_strategy import SingleBrokerReplication
from pykafka_client.protocol.records import MemoryRecordsBuilder
from pykafka_client.utils.time import MockTime
from tests.unit.broker.log.helpers import batch


class _InterleavingLog(Log):
    """A log whose next append, about to raise the high watermark to its own log end, first runs ``between`` (the
    log's lock is reentrant: another appender's whole append lands there, as if it had appended after this one's
    write and before its high-watermark update)."""

    _pending: Callable[[], None] | None = None

    def arm(self, between: Callable[[], None]) -> None:
        self._pending = between

    def _increment_high_watermark_locked(self, offset: int) -> bool:
        between, self._pending = self._pending, None
        if between is not None:
            between()
        return super()._increment_high_watermark_locked(offset)


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


def test_a_single_brokers_append_raises_the_high_watermark_under_its_lock(log: _InterleavingLog) -> None:
    """Log.append(raise_high_watermark=True) (what SingleBrokerReplication.append_as_leader asks): the high watermark
    is at the log end when the append returns, a duplicate leaves it there, and without the flag it stays."""
    idempotent = MemoryRecordsBuilder(write_limit=1 << 20, producer_id=7, producer_epoch=0, base_sequence=0)
    for value in (b"a", b"b"):
        idempotent.append(1_700_000_000_000, None, value)
    first = idempotent.build()
    info = log.append(first, raise_high_watermark=True)
    assert (info.first_offset, info.last_offset, log.high_watermark) == (0, 1, 2)
    log.append(batch([b"c"]))
    assert (log.log_end_offset, log.high_watermark) == (3, 2)
    dup = log.append(first, raise_high_watermark=True)
    assert (dup.first_offset, log.log_end_offset, log.high_watermark) == (0, 3, 3)


def test_a_config_update_changes_what_appends_check(log: _InterleavingLog) -> None:
    """Log.append_checks (the config's append values, computed once per config) follow update_config."""
    assert not log.append_checks.compacted and log.append_checks.max_message_bytes == LogConfig().max_message_bytes
    log.update_config(LogConfig.from_props({"cleanup.policy": "compact", "max.message.bytes": "2000"}))
    assert log.append_checks.compacted and log.append_checks.max_message_bytes == 2000
