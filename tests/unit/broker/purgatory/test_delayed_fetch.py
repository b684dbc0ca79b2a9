"""DelayedFetch completion rules with a fake partition state."""

from __future__ import annotations

from collections.abc import Hashable, Iterator

import pytest

from mini_broker.log.log_offset_metadata import FetchIsolation, LogOffsetMetadata
from mini_broker.purgatory import (
    DelayedFetch,
    DelayedOperationPurgatory,
    FetchParams,
    FetchPartitionStatus,
    TopicPartitionOperationKey,
)
from mini_broker.timer import SystemTimer
from pykafka_client.errors import NotLeaderOrFollowerError
from pykafka_client.errors_base import KafkaError
from pykafka_client.utils.time import MockTime

TP0 = TopicPartitionOperationKey("t", 0)
TP1 = TopicPartitionOperationKey("t", 1)


class FakeLogs:
    def __init__(self) -> None:
        self.ends: dict[Hashable, LogOffsetMetadata] = {}
        self.errors: dict[Hashable, KafkaError] = {}
        self.isolations: list[FetchIsolation] = []

    def end_offset(self, tp: Hashable, isolation: FetchIsolation) -> LogOffsetMetadata:
        self.isolations.append(isolation)
        if tp in self.errors:
            raise self.errors[tp]
        return self.ends[tp]


@pytest.fixture
def time() -> MockTime:
    return MockTime()


@pytest.fixture
def purgatory(time: MockTime) -> Iterator[DelayedOperationPurgatory[DelayedFetch]]:
    timer = SystemTimer("fetch", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    p: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory("Fetch", timer, reaper_enabled=False)
    yield p
    p.shutdown()


def make_fetch(logs: FakeLogs, responses: list[DelayedFetch], min_bytes: int, max_wait_ms: int = 500) -> DelayedFetch:
    statuses = [
        FetchPartitionStatus(TP0, LogOffsetMetadata(10, 0, 1000), 1_000_000),
        FetchPartitionStatus(TP1, LogOffsetMetadata(5, 0, 500), 100),
    ]
    return DelayedFetch(
        FetchParams(max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=10_000_000),
        statuses,
        logs.end_offset,
        responses.append,
    )


def test_completes_when_accumulated_bytes_reach_min_bytes(purgatory: DelayedOperationPurgatory[DelayedFetch]) -> None:
    logs = FakeLogs()
    logs.ends = {TP0: LogOffsetMetadata(10, 0, 1000), TP1: LogOffsetMetadata(5, 0, 500)}
    responses: list[DelayedFetch] = []
    fetch = make_fetch(logs, responses, min_bytes=300)
    assert not purgatory.try_complete_else_watch(fetch, [TP0, TP1])
    logs.ends[TP0] = LogOffsetMetadata(12, 0, 1200)  # 200 bytes
    assert purgatory.check_and_complete(TP0) == 0
    logs.ends[TP1] = LogOffsetMetadata(9, 0, 900)  # 400 bytes, capped at the partition max of 100
    assert purgatory.check_and_complete(TP1) == 1
    assert responses == [fetch] and not fetch.expired
    assert set(logs.isolations) == {FetchIsolation.HIGH_WATERMARK}


def test_expiry_answers_with_whatever_is_there(
    time: MockTime, purgatory: DelayedOperationPurgatory[DelayedFetch]
) -> None:
    logs = FakeLogs()
    logs.ends = {TP0: LogOffsetMetadata(10, 0, 1000), TP1: LogOffsetMetadata(5, 0, 500)}
    responses: list[DelayedFetch] = []
    fetch = make_fetch(logs, responses, min_bytes=1, max_wait_ms=500)
    assert not purgatory.try_complete_else_watch(fetch, [TP0, TP1])
    time.sleep(499)
    purgatory.advance_clock(0)
    assert responses == []
    time.sleep(1)
    purgatory.advance_clock(0)
    assert responses == [fetch] and fetch.expired


@pytest.mark.parametrize(
    "end",
    [
        LogOffsetMetadata(8, 0, 800),  # truncated below the fetch offset
        LogOffsetMetadata(11, 100, 10),  # the fetch segment rolled
        LogOffsetMetadata(11),  # position unknown, but data is there
    ],
)
def test_force_complete_conditions(end: LogOffsetMetadata) -> None:
    logs = FakeLogs()
    logs.ends = {TP0: end, TP1: LogOffsetMetadata(5, 0, 500)}
    responses: list[DelayedFetch] = []
    fetch = make_fetch(logs, responses, min_bytes=1_000_000)
    assert fetch.safe_try_complete()
    assert responses == [fetch]


def test_partition_error_forces_completion_and_is_reported() -> None:
    logs = FakeLogs()
    logs.ends = {TP1: LogOffsetMetadata(5, 0, 500)}
    logs.errors = {TP0: NotLeaderOrFollowerError()}
    responses: list[DelayedFetch] = []
    fetch = make_fetch(logs, responses, min_bytes=1_000_000)
    assert fetch.safe_try_complete()
    assert isinstance(fetch.error_by_partition[TP0], NotLeaderOrFollowerError)


def test_min_bytes_not_reached_stays_pending() -> None:
    logs = FakeLogs()
    logs.ends = {TP0: LogOffsetMetadata(11, 0, 1050), TP1: LogOffsetMetadata(5, 0, 500)}
    fetch = make_fetch(logs, [], min_bytes=51)
    assert not fetch.safe_try_complete()
    logs.ends[TP0] = LogOffsetMetadata(11, 0, 1051)
    assert fetch.safe_try_complete()
