"""DelayedFetch wired to a real Log: the API-layer pattern end to end (MockTime, no threads)."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path

from mini_broker.log import FetchIsolation, Log, LogConfig
from mini_broker.log.log_offset_metadata import LogOffsetMetadata
from mini_broker.purgatory import (
    DelayedFetch,
    DelayedOperationPurgatory,
    FetchParams,
    FetchPartitionStatus,
    TopicPartitionOperationKey,
)
from mini_broker.timer import SystemTimer
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.utils.time import MockTime

KEY = TopicPartitionOperationKey("t", 0)


def one_batch(value: bytes) -> bytes:
    builder = MemoryRecordsBuilder()
    builder.append(1_700_000_000_000, None, value)
    return builder.build()


def test_long_poll_completes_on_append_and_high_watermark(tmp_path: Path) -> None:
    time = MockTime()
    log = Log(str(tmp_path / "t-0"), LogConfig.from_props({"segment.bytes": 200}), time=time)
    timer = SystemTimer("fetch", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    purgatory: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory("Fetch", timer, reaper_enabled=False)
    responses: list[bytes] = []
    try:

        def end_offset(tp: Hashable, isolation: FetchIsolation) -> LogOffsetMetadata:
            assert tp == KEY
            return log.end_offset_metadata(isolation)

        params = FetchParams(max_wait_ms=500, min_bytes=100, max_bytes=1 << 20)
        first = log.read(0, 1 << 20, log.max_offset_for(params.isolation))
        assert first.size == 0
        status = FetchPartitionStatus(KEY, first.fetch_offset_metadata, 1 << 20)

        def respond(fetch: DelayedFetch) -> None:
            responses.append(log.read(0, 1 << 20, log.max_offset_for(params.isolation)).to_bytes())

        fetch = DelayedFetch(params, [status], end_offset, respond)
        assert not purgatory.try_complete_else_watch(fetch, [KEY])
        log.append(one_batch(b"x"))
        # Appended but not yet below the high watermark: nothing readable for a consumer.
        assert purgatory.check_and_complete(KEY) == 0
        log.update_high_watermark(log.log_end_offset)
        small = len(one_batch(b"x"))
        assert small < 100
        assert purgatory.check_and_complete(KEY) == 0  # fewer than min_bytes
        log.append(one_batch(b"y" * 40))
        log.update_high_watermark(log.log_end_offset)
        assert purgatory.check_and_complete(KEY) == 1
        assert len(responses) == 1 and len(responses[0]) >= 100
    finally:
        purgatory.shutdown()
        log.close()


def test_segment_roll_completes_a_waiting_fetch(tmp_path: Path) -> None:
    time = MockTime()
    log = Log(str(tmp_path / "t-0"), LogConfig(), time=time)
    timer = SystemTimer("fetch", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    purgatory: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory("Fetch", timer, reaper_enabled=False)
    done: list[DelayedFetch] = []
    try:
        log.append(one_batch(b"a"))
        log.update_high_watermark(log.log_end_offset)
        at_end = log.read(1, 100).fetch_offset_metadata
        fetch = DelayedFetch(
            FetchParams(max_wait_ms=500, min_bytes=1_000_000, max_bytes=1 << 20),
            [FetchPartitionStatus(KEY, at_end, 1 << 20)],
            lambda tp, iso: log.end_offset_metadata(iso),
            done.append,
        )
        assert not purgatory.try_complete_else_watch(fetch, [KEY])
        log.roll()
        log.append(one_batch(b"b"))
        log.update_high_watermark(log.log_end_offset)
        # The fetch position is on an older segment than the end now: answer at once.
        assert purgatory.check_and_complete(KEY) == 1 and done == [fetch]
    finally:
        purgatory.shutdown()
        log.close()
