"""The log's end (:mod:`mini_broker.log.log_end`): the kernel's ``LogEnd``, whose ``append_client`` does a client's
common append of one batch in one call, gives over random sequences of operations exactly what the reference gives
(a log built and driven without the kernel: every append by ``Log.append``'s Python steps). The operations: idempotent
producers' next batches, retries of one of the last batches (duplicates), out-of-order sequences, epoch bumps, new
producers, batches without a producer id, transactional batches and their COMMIT/ABORT markers (the LSO, the
unreplicated transactions the high watermark's raise forgets), read-only bytes (copied, not rewritten), corrupt
batches, explicit rolls, rolls by size and by a full index, flushes by ``flush.messages``, high watermark raises and
not, explicit high watermark moves, a reopen (recovery). Compared after every step: the results or
errors, the LEO, the high watermark, the LSO, the map end offset, the producers; at the end, the files."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mini_broker.log import Log, LogConfig
from mini_broker.log.log_end import LogEnd, new_log_end
from mini_broker.log.unified_log import AppendOrigin
from pykafka_client.errors_base import KafkaError
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime

from .helpers import log_files

NOW = 1_700_000_000_000
T = TypeVar("T")

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled kernel is not built")


def _data(pid: int, epoch: int, seq: int, n: int, txn: bool, value_size: int) -> bytes:
    if pid < 0:
        builder = MemoryRecordsBuilder(write_limit=1 << 20)
        for i in range(n):
            assert builder.append(NOW + i, None, b"v" * value_size)
        return builder.build()
    b = ProducerBatch(TopicPartition("t", 0), 1 << 20, 0)
    for i in range(n):
        assert b.try_append(NOW + i, None, b"v" * value_size, [], None, 0) is not None
    b.set_producer_state(pid, epoch, seq, txn)
    return b.records()


def _marker(pid: int, epoch: int, abort: bool) -> bytes:
    kind = ControlRecordType.ABORT if abort else ControlRecordType.COMMIT
    return build_end_transaction_marker(EndTransactionMarker(kind, 0), producer_id=pid, producer_epoch=epoch,
                                        timestamp=NOW)


# one step: (what, producer, records, value size, raise the high watermark)
steps = st.tuples(
    st.sampled_from(["next"] * 10 + ["retry", "retry", "jump", "epoch", "zero", "plain", "txn", "commit", "abort",
                                     "bytes", "corrupt", "roll", "hw", "reopen"]),
    st.sampled_from([7, 8, 9]), st.integers(1, 5), st.sampled_from([1, 30, 200]), st.booleans(),
)
configs = st.fixed_dictionaries({}, optional={
    "segment.bytes": st.sampled_from([700, 3000]),
    "index.interval.bytes": st.sampled_from([0, 200]),
    "segment.index.bytes": st.sampled_from([24, 60]),
    "flush.messages": st.sampled_from([3, 20]),
})


class _Producer:
    def __init__(self) -> None:
        self.epoch = 0
        self.next = 0
        self.sent: list[tuple[int, int]] = []  # (sequence, records) of the batches sent
        self.in_txn = False


def _outcome(fn: Callable[[], T]) -> T | str:
    try:
        return fn()
    except KafkaError as e:
        return f"{type(e).__name__}: {e}"


def _state(lg: Log) -> tuple[object, ...]:
    producers = {pid: (e.producer_epoch, e.last_timestamp, e.current_txn_first_offset, list(e.batch_metadata))
                 for pid, e in lg.producer_state.active_producers.items()}
    return (lg.log_end_offset, lg.log_end_offset_metadata, lg.high_watermark, lg.last_stable_offset,
            lg.producer_state.map_end_offset, lg.recovery_point, producers, len(lg.segments))


def _with_kernel(enabled: bool, fn: Callable[[], T]) -> T:
    previous = _native.use_native(enabled)
    try:
        return fn()
    finally:
        _native.use_native(previous)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=configs, ops=st.lists(steps, min_size=1, max_size=30))
# a committed transaction left unreplicated (its marker appended without the raise), then a common append raising the
# high watermark past it: the reference forgets it there (the LSO moves)
@example(config={}, ops=[("next", 8, 1, 1, True), ("txn", 7, 2, 1, True), ("commit", 7, 1, 1, False),
                         ("next", 8, 1, 1, True), ("next", 8, 1, 1, True)])
def test_the_compiled_log_end_appends_as_the_reference(tmp_path_factory: pytest.TempPathFactory,
                                                      config: dict[str, object],
                                                      ops: list[tuple[str, int, int, int, bool]]) -> None:
    d = tmp_path_factory.mktemp("end")
    log_config = LogConfig.from_props(config)
    time = MockTime(current_time_ms=NOW)

    def open_log(kernel: bool, name: str) -> Log:
        return _with_kernel(kernel, lambda: Log(str(d / name / "t-0"), log_config, time=time, had_clean_shutdown=True))

    logs = {True: open_log(True, "compiled"), False: open_log(False, "reference")}
    producers = {7: _Producer(), 8: _Producer(), 9: _Producer()}
    for what, pid, records, value_size, raise_hw in ops:
        p = producers[pid]
        origin = AppendOrigin.CLIENT
        data: bytes | None = None
        if what in ("next", "bytes", "corrupt", "txn"):
            if what == "txn":
                p.in_txn = True
            data = _data(pid, p.epoch, p.next, records, p.in_txn, value_size)
            if what == "corrupt":
                data = data[:-1] + bytes([data[-1] ^ 1])
        elif what == "retry" and p.sent:
            seq, n = p.sent[-1 - (records % len(p.sent))]
            data = _data(pid, p.epoch, seq, n, p.in_txn, value_size)
        elif what == "jump":
            data = _data(pid, p.epoch, p.next + 3, records, p.in_txn, value_size)
        elif what == "epoch":
            p.epoch, p.next, p.sent, p.in_txn = p.epoch + 1, 0, [], False
            data = _data(pid, p.epoch, 0, records, False, value_size)
        elif what == "zero":
            data = _data(pid, p.epoch, 0, records, p.in_txn, value_size)
        elif what == "plain":
            data = _data(-1, -1, -1, records, False, value_size)
        elif what in ("commit", "abort"):
            data, origin = _marker(pid, p.epoch, what == "abort"), AppendOrigin.COORDINATOR
        results: list[object] = []
        for kernel, lg in logs.items():
            if data is not None:
                payload = data if what == "bytes" else memoryview(bytearray(data))
                results.append(_with_kernel(kernel, partial(_outcome, partial(
                    lg.append, payload, origin=origin, raise_high_watermark=raise_hw))))
            elif what == "roll":
                _with_kernel(kernel, lg.roll)
            elif what == "hw":
                results.append(lg.update_high_watermark(lg.log_end_offset - records))
        assert results[:1] == results[1:]
        if what == "reopen":
            for kernel in (True, False):
                logs[kernel].close()
                logs[kernel] = open_log(kernel, "compiled" if kernel else "reference")
        if data is not None and not (results and isinstance(results[0], str)):
            if what in ("commit", "abort"):
                p.in_txn = False
            elif what in ("next", "bytes", "txn", "epoch", "zero", "jump"):
                first = p.next if what in ("next", "bytes", "txn") else (p.next + 3 if what == "jump" else 0)
                p.sent = [*p.sent, (first, records)][-5:]
                p.next = first + records
        assert _state(logs[True]) == _state(logs[False])
    for kernel in (True, False):
        logs[kernel].flush()
    assert log_files(logs[True]) == log_files(logs[False])
    for lg in logs.values():
        lg.close()


def test_the_common_append_is_the_compiled_call(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The compiled end takes a producer's next batch in one call (no Python step of Log.append's reference runs)."""
    d = tmp_path_factory.mktemp("one")

    def run() -> None:
        assert not isinstance(new_log_end(), LogEnd)
        lg = Log(str(d / "t-0"), LogConfig(), time=MockTime(current_time_ms=NOW))
        assert lg.append(memoryview(bytearray(_data(7, 0, 0, 2, False, 10))), raise_high_watermark=True).first_offset == 0
        with pytest.MonkeyPatch.context() as m:
            from mini_broker.log import unified_log

            m.setattr(unified_log, "single_client_batch", None)  # the reference's first step: would raise if reached
            info = lg.append(memoryview(bytearray(_data(7, 0, 2, 3, False, 10))), raise_high_watermark=True)
        assert (info.first_offset, info.last_offset, info.num_records) == (2, 4, 3)
        assert lg.high_watermark == lg.log_end_offset == 5
        lg.close()

    _with_kernel(True, run)


def test_the_reference_end_declines() -> None:
    end = LogEnd()
    assert end.append_client(memoryview(bytearray(_data(7, 0, 0, 1, False, 1))), NOW, 0, True, 0, 0) is None


def test_a_closed_end_declines_even_with_a_tail_set_after(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Log.close closes the end first: its common append declines from then on (the caller's Log.append raises), also
    after a close that failed before it closed the segments' files, and with a segment's tail set after the close."""
    def run() -> None:
        lg = Log(str(tmp_path_factory.mktemp("closed") / "t-0"), LogConfig(), time=MockTime(current_time_ms=NOW))
        assert lg.append(memoryview(bytearray(_data(7, 0, 0, 2, False, 10))), raise_high_watermark=True).first_offset == 0
        parts = lg.client_append_parts()
        assert parts is not None
        lock, end, now = parts
        segment = lg.active_segment

        def failing_fsync() -> None:
            raise OSError(5, "injected: fsync failed")

        segment.flush = failing_fsync  # type: ignore[method-assign]  # the close fails before the files are closed
        with pytest.raises(OSError):
            lg.close()
        del segment.flush
        for _ in range(2):
            with lock:
                assert end.append_client(memoryview(bytearray(_data(7, 0, 2, 1, False, 10))), now, 0, True, 0, 0) is None
            end.set_tail(segment.tail)  # (kept by no closed end)
        with pytest.raises(KafkaError, match="is closed"):
            lg.append(memoryview(bytearray(_data(7, 0, 2, 1, False, 10))), raise_high_watermark=True)
        assert lg.log_end_offset == 2
        segment.close()

    _with_kernel(True, run)
    _with_kernel(False, run)
