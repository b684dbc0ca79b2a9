"""A segment's append state (:mod:`mini_broker.log.segment_tail`): the kernel's ``SegmentTail``, whose ``append_one``
writes and indexes a batch in one call, gives over random sequences of appends (batch sizes, timestamps up and down or
none, several batches at once, ``LogAppendTime``; small ``segment.bytes``, ``index.interval.bytes``,
``segment.index.bytes`` and ``segment.ms``: rolls by size, age, full index), explicit rolls, flushes and reopens
(recovery) exactly what the reference gives (every append by the segment's own methods): the same results, the same
log and index files, the same state of every segment."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_broker.log import Log, LogConfig
from mini_broker.log import abstract_index as abstract_index_module
from mini_broker.log import log_segment as log_segment_module
from mini_broker.log.segment_tail import SegmentTail, new_segment_tail
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.utils.time import MockTime

from .helpers import log_files

NOW = 1_700_000_000_000
T = TypeVar("T")

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled kernel is not built")


def _batch(records: int, value_size: int, timestamp: int, sequence: int) -> bytes:
    builder = MemoryRecordsBuilder(write_limit=1 << 20, producer_id=9, producer_epoch=0, base_sequence=sequence)
    for i in range(records):
        assert builder.append(timestamp + i, None, b"v" * value_size)
    return builder.build()


# one step: (what, records, value size, timestamp offset, the clock's step in ms)
steps = st.tuples(
    st.sampled_from(["append"] * 8 + ["two batches", "roll", "flush", "reopen"]), st.integers(1, 6),
    st.sampled_from([1, 10, 100, 400]), st.sampled_from([0, 0, 5, 1000, -1000, -NOW]),
    st.sampled_from([0, 0, 1, 500, 5000]),
)
configs = st.fixed_dictionaries({}, optional={
    "segment.bytes": st.sampled_from([600, 2000, 8000]),
    "index.interval.bytes": st.sampled_from([0, 100, 1000]),
    "segment.index.bytes": st.sampled_from([24, 48, 120]),
    "segment.ms": st.sampled_from([1000, 3000]),
    "message.timestamp.type": st.sampled_from(["CreateTime", "LogAppendTime"]),
})


@contextmanager
def _reference() -> Iterator[None]:
    """Segments made meanwhile get the reference's append state."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(log_segment_module, "new_segment_tail", lambda fd, base, offsets, times: SegmentTail(base))
        yield


def _run(reference: bool, fn: Callable[[], T]) -> T | str:
    """``fn``'s result, or its error as a string."""
    try:
        if reference:
            with _reference():
                return fn()
        return fn()
    except KafkaError as e:
        return f"{type(e).__name__}: {e}"


def _append(lg: Log, data: bytes) -> object:
    return lg.append(memoryview(bytearray(data)), raise_high_watermark=True)


def _roll(lg: Log) -> int:
    return lg.roll().base_offset


def _segments(lg: Log) -> list[tuple[object, ...]]:
    """Every segment's state, with its index files' sizes on disk (their pending entries written or not yet)."""
    return [(os.path.getsize(s.offset_index.path), os.path.getsize(s.time_index.path), s.base_offset, s.size, s.max_timestamp_so_far, s.offset_of_max_timestamp_so_far, s.tail.index_room,
             s.tail.bytes_since_last_index_entry, s.tail.rolling_based_timestamp, s.offset_index.entries(),
             s.time_index.entries()) for s in lg.segments]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=configs, ops=st.lists(steps, min_size=1, max_size=25))
def test_the_compiled_append_state_gives_what_the_reference_gives(
        tmp_path_factory: pytest.TempPathFactory, config: dict[str, object],
        ops: list[tuple[str, int, int, int, int]]) -> None:
    d = tmp_path_factory.mktemp("tail")
    # an index writes its new entries every 2 or 3 (not every 4 KiB of them): the writes are compared too
    previous_pending = abstract_index_module.PENDING_BYTES
    abstract_index_module.PENDING_BYTES = 24
    try:
        _compare(d, config, ops)
    finally:
        abstract_index_module.PENDING_BYTES = previous_pending


def _compare(d: Path, config: dict[str, object], ops: list[tuple[str, int, int, int, int]]) -> None:
    log_config = LogConfig.from_props({**config, "segment.jitter.ms": 0})
    clocks = {False: MockTime(current_time_ms=NOW), True: MockTime(current_time_ms=NOW)}
    paths = {False: str(d / "kernel" / "t-0"), True: str(d / "reference" / "t-0")}

    def open_log(reference: bool) -> Log:
        opened = _run(reference, lambda: Log(paths[reference], log_config, time=clocks[reference],
                                             recovery_point=0))
        assert isinstance(opened, Log)
        return opened

    logs = {False: open_log(False), True: open_log(True)}
    sequence = 0
    for what, records, value_size, ts_offset, clock_step in ops:
        for c in clocks.values():
            c.sleep(clock_step / 1000)
        data = _batch(records, value_size, NOW + ts_offset, sequence)
        if what == "two batches":
            data += _batch(1, value_size, NOW + ts_offset + 1, sequence + records)
        outcomes: list[object] = []
        for reference, lg in logs.items():
            if what in ("append", "two batches"):
                outcomes.append(_run(reference, partial(_append, lg, data)))
            elif what == "roll":
                outcomes.append(_run(reference, partial(_roll, lg)))
            elif what == "flush":
                lg.flush()
            else:
                lg.close()
                logs[reference] = open_log(reference)
        assert outcomes[:1] == outcomes[1:]
        if what in ("append", "two batches") and not isinstance(outcomes[0], str):
            sequence += records + (1 if what == "two batches" else 0)
        assert _segments(logs[False]) == _segments(logs[True])
    assert log_files(logs[False]) == log_files(logs[True])
    assert logs[False].log_end_offset == logs[True].log_end_offset
    for lg in logs.values():
        lg.close()


def test_the_kernel_state_is_the_compiled_one_and_the_reference_runs_without_it(tmp_path: Path) -> None:
    lg = Log(str(tmp_path / "t-0"), LogConfig.from_props({}), time=MockTime(current_time_ms=NOW))
    segment = lg.active_segment
    # (the kernel's type when the kernel is on, the reference's otherwise)
    assert isinstance(segment.tail, SegmentTail) == (_native.kernel is None)
    lg.append(_batch(3, 10, NOW, 0))
    assert segment.size == os.path.getsize(segment.log_path) and segment.max_timestamp_so_far == NOW + 2
    lg.close()
    previous = _native.use_native(False)
    try:
        tail = new_segment_tail(-1, 0, segment.offset_index, segment.time_index)
        assert isinstance(tail, SegmentTail) and tail.append_one(b"x", 0, 0, 0) == -1
    finally:
        _native.use_native(previous)
