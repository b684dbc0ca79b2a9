"""The log's common append (a client's one batch, checked and read by one kernel call: ``single_client_batch``,
offsets from the fields: ``assign_client_batch``, the producer state from the fields: ``prepare_next_append``) gives
exactly what the general path gives: the same header fields as the reference's batch view, and over random sequences
of appends (producers' next batches, retries, gaps, new epochs, transactions, bad bytes, several batches, compressed
ones, LogAppendTime and compacted topics, small ``max.message.bytes``) the same results or errors, the same log files
and the same producer state."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_broker.log import Log, LogConfig
from mini_broker.log import unified_log as unified_log_module
from mini_broker.log.log_config import LONG_MAX
from mini_broker.log.log_validator import AppendChecks, AppendOrigin, analyze_and_validate, single_client_batch
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.utils.time import MockTime

from .helpers import log_files

NOW = 1_700_000_000_000


def _batch(producer_id: int, epoch: int, sequence: int, records: int, timestamp: int, transactional: bool,
           keyed: bool, gzip: bool) -> bytes:
    builder = MemoryRecordsBuilder(CompressionType.GZIP if gzip else CompressionType.NONE, write_limit=1 << 20,
                                   producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                                   is_transactional=transactional)
    for i in range(records):
        assert builder.append(timestamp + i, b"k" if keyed else None, b"v" * (i + 1))
    return builder.build()


# one append: (producer id (-1: none), epoch, sequence: next / retry / jump / zero, records, timestamp offset,
# transactional, keyed, gzip, what is done to the bytes)
appends = st.tuples(
    st.sampled_from([-1, 7, 7, 7, 8]), st.sampled_from([0, 0, 0, 1]),
    st.sampled_from(["next", "next", "next", "retry", "jump", "zero"]), st.integers(1, 5),
    st.sampled_from([0, 0, -10_000_000, 10_000_000, -NOW - 1]), st.booleans(), st.booleans(),
    st.sampled_from([False, False, False, True]),
    st.sampled_from(["none", "none", "none", "none", "two batches", "flip a record byte", "flip the crc",
                     "truncate", "a byte more"]),
)
configs = st.fixed_dictionaries({}, optional={
    "message.timestamp.type": st.sampled_from(["CreateTime", "LogAppendTime"]),
    "cleanup.policy": st.just("compact"),
    "max.message.bytes": st.sampled_from([90, 120, 200]),
    "message.timestamp.before.max.ms": st.just(1_000_000),
    "message.timestamp.after.max.ms": st.just(1_000_000),
})


def _mangle(data: bytes, how: str, other: bytes) -> bytes:
    if how == "two batches":
        return data + other
    if how == "flip a record byte":
        return data[:-1] + bytes([data[-1] ^ 0x01])
    if how == "flip the crc":
        return data[:17] + bytes([data[17] ^ 0x01]) + data[18:]
    if how == "truncate":
        return data[:-3]
    if how == "a byte more":
        return data + b"\x00"
    return data


def _outcome(lg: Log, data: bytes) -> object:
    try:
        return lg.append(memoryview(bytearray(data)), raise_high_watermark=True)
    except KafkaError as e:
        return type(e).__name__, str(e)


def _state(lg: Log) -> dict[int, tuple[object, ...]]:
    return {pid: (e.producer_epoch, e.last_timestamp, e.current_txn_first_offset, list(e.batch_metadata))
            for pid, e in lg.producer_state.active_producers.items()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=configs, ops=st.lists(appends, min_size=1, max_size=14))
def test_the_common_append_answers_as_the_general_path(tmp_path_factory: pytest.TempPathFactory,
                                                       monkeypatch: pytest.MonkeyPatch, config: dict[str, object],
                                                       ops: list[tuple[int, int, str, int, int, bool, bool, bool, str]]
                                                       ) -> None:
    d = tmp_path_factory.mktemp("fast")
    log_config = LogConfig.from_props(config)
    fast = Log(str(d / "fast" / "t-0"), log_config, time=MockTime(current_time_ms=NOW), had_clean_shutdown=True)
    general = Log(str(d / "general" / "t-0"), log_config, time=MockTime(current_time_ms=NOW), had_clean_shutdown=True)
    next_seq = {7: 0, 8: 0}
    last_seq = {7: 0, 8: 0}
    for pid, epoch, how, records, ts_offset, transactional, keyed, gzip, mangle in ops:
        seq = -1 if pid < 0 else {"next": next_seq[pid], "retry": last_seq[pid], "jump": next_seq[pid] + 2,
                                  "zero": 0}[how]
        data = _batch(pid, epoch if pid >= 0 else -1, seq, records, NOW + ts_offset, transactional and pid >= 0,
                      keyed, gzip)
        data = _mangle(data, mangle, _batch(-1, -1, -1, 1, NOW, False, keyed, False))
        got = _outcome(fast, data)
        with monkeypatch.context() as m:
            m.setattr(unified_log_module, "single_client_batch", lambda *args: None)
            expected = _outcome(general, data)
        assert got == expected
        if pid >= 0 and not isinstance(got, tuple):
            last_seq[pid] = seq
            next_seq[pid] = seq + records
    assert log_files(fast) == log_files(general)
    assert _state(fast) == _state(general)
    assert fast.log_end_offset == general.log_end_offset and fast.high_watermark == general.high_watermark
    fast.close()
    general.close()


@pytest.mark.skipif(not _native.native_available(), reason="the compiled kernel is not built")
@settings(max_examples=300, deadline=None)
@given(op=appends, log_append_time=st.booleans(), compacted=st.booleans(),
       max_message_bytes=st.sampled_from([90, 200, 1 << 20]), bounds=st.sampled_from([LONG_MAX, 1_000_000]))
def test_the_kernel_reads_the_one_batch_the_reference_accepts(
        op: tuple[int, int, str, int, int, bool, bool, bool, str], log_append_time: bool, compacted: bool,
        max_message_bytes: int, bounds: int) -> None:
    pid, epoch, _, records, ts_offset, transactional, keyed, gzip, mangle = op
    data = _mangle(_batch(pid, epoch if pid >= 0 else -1, 0 if pid >= 0 else -1, records, NOW + ts_offset,
                          transactional and pid >= 0, keyed, gzip), mangle, _batch(-1, -1, -1, 1, NOW, False, True, False))
    checks = AppendChecks(log_append_time, compacted, max_message_bytes, LONG_MAX if log_append_time else bounds,
                          LONG_MAX if log_append_time else bounds, LONG_MAX)
    buf = bytearray(data)
    previous = _native.use_native(True)
    try:
        got = single_client_batch(buf, checks, NOW)
    finally:
        _native.use_native(previous)
    try:
        batches = analyze_and_validate(bytearray(data), AppendOrigin.CLIENT, checks, NOW)
    except KafkaError:
        assert got is None
        return
    if got is None:  # declined: several batches, or a compressed one (the reference decodes it)
        assert len(batches) != 1 or gzip
        return
    (b,) = batches
    assert got == (b.size_in_bytes, b.producer_id, b.producer_epoch, b.base_sequence, b.last_offset_delta,
                   b.max_timestamp, b.attributes, b.records_count)
    assert buf == data  # read only


def test_the_reference_runs_without_the_kernel(tmp_path: Path) -> None:
    previous = _native.use_native(False)
    try:
        checks = AppendChecks(False, False, 1 << 20, LONG_MAX, LONG_MAX, LONG_MAX)
        assert single_client_batch(bytearray(_batch(-1, -1, -1, 1, NOW, False, False, False)), checks, NOW) is None
    finally:
        _native.use_native(previous)
