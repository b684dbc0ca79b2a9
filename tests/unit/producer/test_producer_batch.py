from __future__ import annotations

import concurrent.futures
import gc
import threading
import weakref
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.errors import KafkaTimeoutError
from pykafka_client.producer.producer_batch import INT_MAX, ProducerBatch, increment_sequence
from pykafka_client.producer.record_metadata import RecordMetadata
from pykafka_client.producer.record_size import RECORD_BATCH_OVERHEAD, estimate_size_upper_bound, record_size_in_bytes
from pykafka_client.protocol.records.builder import record_size_in_bytes as builder_size
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.structs import TopicPartition
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)

pytestmark = pytest.mark.usefixtures("record_impl")  # every test on the kernel and on the reference

TP = TopicPartition("t", 0)


def test_record_size_matches_builder() -> None:
    for args in [(0, 0, None, None, []), (3, 1000, b"k", b"v" * 300, [("h", b"x"), ("n", None)]), (200, -5, b"", b"", [])]:
        assert record_size_in_bytes(*args) == builder_size(*args)


def test_first_record_always_fits_and_limit_applies() -> None:
    b = ProducerBatch(TP, 100, 0)
    assert b.try_append(1, None, b"x" * 500, [], None, 0) is not None
    assert b.try_append(1, None, b"y", [], None, 0) is None
    b2 = ProducerBatch(TP, 200, 0)
    n = 0
    while b2.try_append(1, None, b"v" * 10, [], None, 0) is not None:
        n += 1
    assert b2.estimated_size_in_bytes() <= 200 < b2.estimated_size_in_bytes() + 20
    assert n == (200 - RECORD_BATCH_OVERHEAD) // 17  # 1 length + 1 attrs + 2 deltas + 1 null key + 1 + 10 value + 1 headers


def test_encoded_size_and_content() -> None:
    b = ProducerBatch(TP, 16384, 0)
    for i in range(3):
        b.try_append(1000 + i, b"k%d" % i, b"v%d" % i, [("h", b"1")], None, 0)
    b.set_producer_state(7, 2, 10, False)
    data = b.records()
    assert len(data) == b.estimated_size_in_bytes()
    (batch,) = list(MemoryRecords(data).batches())
    assert isinstance(batch, DefaultRecordBatch)
    assert batch.producer_id == 7 and batch.producer_epoch == 2 and batch.base_sequence == 10
    assert [r.value for r in batch.records()] == [b"v0", b"v1", b"v2"]
    b.reset_producer_state(7, 3, 0)
    (batch2,) = list(MemoryRecords(b.records()).batches())
    assert isinstance(batch2, DefaultRecordBatch)
    assert batch2.producer_epoch == 3 and batch2.base_sequence == 0


def test_done_completes_futures_and_callbacks_once() -> None:
    b = ProducerBatch(TP, 16384, 0)
    seen: list[tuple[RecordMetadata | None, BaseException | None]] = []
    f1 = b.try_append(5, b"ab", b"cde", [], lambda m, e: seen.append((m, e)), 0)
    f2 = b.try_append(6, None, None, [], None, 0)
    assert f1 is not None and f2 is not None
    assert not f1.done()
    assert b.done(100, -1, None)
    assert f1.result(0) == RecordMetadata("t", 0, 100, 5, 2, 3)
    assert f2.result(0) == RecordMetadata("t", 0, 101, 6, -1, -1)
    assert seen == [(RecordMetadata("t", 0, 100, 5, 2, 3), None)]
    assert not b.done(0, -1, KafkaTimeoutError("late"))
    assert f1.result(0).offset == 100
    assert not f1.cancel()
    done, _ = concurrent.futures.wait([f1, f2], timeout=0)
    assert done == {f1, f2}


def test_failed_batch_with_record_errors() -> None:
    b = ProducerBatch(TP, 16384, 0)
    fs = [b.try_append(1, None, b"v", [], None, 0) for _ in range(3)]
    top = ValueError("top")
    b.done(-1, -1, top, lambda i: KeyError(i) if i == 1 else top)
    assert fs[0] is not None and fs[0].exception(0) is top
    assert fs[1] is not None and isinstance(fs[1].exception(0), KeyError)


def test_log_append_time_overrides_timestamp() -> None:
    b = ProducerBatch(TP, 16384, 0)
    f = b.try_append(5, None, b"v", [], None, 0)
    b.done(0, 999, None)
    assert f is not None and f.result(0).timestamp == 999


def test_split_keeps_futures_and_sequences_range() -> None:
    b = ProducerBatch(TP, 10_000, 0)
    fs = [b.try_append(1, None, b"x" * 100, [], None, 0) for _ in range(10)]
    pieces = b.split_into(300, 5)
    assert sum(p.record_count for p in pieces) == 10
    assert all(p.estimated_size_in_bytes() <= 300 for p in pieces)
    assert b.split and not b.done(0, -1, None)
    for i, p in enumerate(pieces):
        p.done(i * 100, -1, None)
    assert all(f is not None and f.done() for f in fs)


@pytest.mark.parametrize(("seq", "inc", "expected"), [(0, 5, 5), (INT_MAX, 1, 0), (INT_MAX - 1, 3, 1), (INT_MAX - 5, 5, INT_MAX)])
def test_sequence_wraps(seq: int, inc: int, expected: int) -> None:
    assert increment_sequence(seq, inc) == expected


def test_last_sequence_wraps() -> None:
    b = ProducerBatch(TP, 16384, 0)
    for _ in range(3):
        b.try_append(1, None, b"v", [], None, 0)
    b.set_producer_state(1, 0, INT_MAX - 1, False)
    assert b.last_sequence == 0  # INT_MAX-1, INT_MAX, 0


def test_delivery_timeout() -> None:
    b = ProducerBatch(TP, 16384, 1000)
    assert not b.has_reached_delivery_timeout(500, 1499)
    assert b.has_reached_delivery_timeout(500, 1500)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**31 - 1),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.lists(st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=200))), max_size=3),
)
def test_record_size_matches_builder_property(
    offset_delta: int, ts_delta: int, key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]]
) -> None:
    exact = record_size_in_bytes(offset_delta, ts_delta, key, value, headers)
    assert exact == builder_size(offset_delta, ts_delta, key, value, headers)
    assert RECORD_BATCH_OVERHEAD + exact <= estimate_size_upper_bound(key, value, headers)


def test_future_works_with_concurrent_futures_helpers() -> None:
    b = ProducerBatch(TP, 16384, 0)
    f1 = b.try_append(1, None, b"a", [], None, 0)
    f2 = b.try_append(1, None, b"b", [], None, 0)
    assert f1 is not None and f2 is not None
    got: list[object] = []
    f1.add_done_callback(lambda f: got.append(f.result()))
    done, not_done = concurrent.futures.wait([f1, f2], timeout=0)
    assert not done and not_done == {f1, f2}
    b.done(7, -1, None)
    assert got == [f1.result(0)]
    pending: list[concurrent.futures.Future[RecordMetadata]] = [f2]
    assert list(concurrent.futures.as_completed(pending, timeout=0)) == [f2]
    late: list[object] = []
    f2.add_done_callback(late.append)  # added after completion: runs at once
    assert late == [f2]
    assert not hasattr(f1, "__dict__") or not f1.__dict__


def test_callbacks_run_before_futures_complete() -> None:
    b = ProducerBatch(TP, 16384, 0)
    states: list[bool] = []
    futures: list[object] = []

    def cb(md: RecordMetadata | None, exc: BaseException | None) -> None:
        states.append(all(f.done() for f in futures))  # type: ignore[attr-defined]

    for _ in range(3):
        futures.append(b.try_append(1, None, b"v", [], cb, 0))
    b.done(0, -1, None)
    assert states == [False, False, False]
    assert all(f.done() for f in futures)  # type: ignore[attr-defined]


class _CompletingCondition(threading.Condition):
    """A Condition whose ``wait`` runs the next action, as if another thread did it while the caller waited,
    and then returns as after a notify: a deterministic stand-in for a second thread."""

    def __init__(self) -> None:
        super().__init__()
        self.actions: list[Callable[[], object]] = []

    def wait(self, timeout: float | None = None) -> bool:
        if self.actions:
            self.actions.pop(0)()
        return True


def test_result_is_not_woken_by_the_other_half_of_a_split_batch() -> None:
    """Bug fix: the halves of a split batch share their futures' condition, so completing the first half woke
    ``result()`` of a record of the second half, which then raised TimeoutError while its record was in flight."""
    cond = _CompletingCondition()
    b = ProducerBatch(TP, 10_000, 0, condition=cond)
    fs = [b.try_append(1, None, b"x" * 100, [], None, 0) for _ in range(4)]
    first, second = b.split_into(300, 5)
    assert first.record_count == 2 and second.record_count == 2
    cond.actions = [lambda: first.done(0, -1, None), lambda: second.done(10, -1, None)]
    last = fs[3]
    assert last is not None
    assert last.result(timeout=30) == RecordMetadata("t", 0, 11, 1, -1, 100)
    assert fs[0] is not None and fs[0].result(0).offset == 0


def test_future_metadata_is_the_records_own() -> None:
    """Each future reports its own record's offset, timestamp and sizes, after a split too, and as the
    delivery callback saw it."""
    b = ProducerBatch(TP, 10_000, 0)
    seen: dict[int, RecordMetadata | None] = {}

    def remember(i: int) -> Callable[[RecordMetadata | None, BaseException | None], None]:
        return lambda m, e: seen.__setitem__(i, m)

    fs = [
        b.try_append(100 + i, None if i % 2 else b"k" * i, None if i == 3 else b"v" * (i + 1), [],
                     remember(i) if i % 3 == 0 else None, 0)
        for i in range(6)
    ]
    pieces = b.split_into(120, 5)
    assert len(pieces) > 1
    offset = 50
    for p in pieces:
        p.done(offset, -1, None)
        offset += 100
    mds = [f.result(0) for f in fs if f is not None]
    assert [(m.timestamp, m.serialized_key_size, m.serialized_value_size) for m in mds] == [
        (100 + i, -1 if i % 2 else i, -1 if i == 3 else i + 1) for i in range(6)
    ]
    assert mds[0].offset == 50 and all(m.topic == "t" and m.partition == 0 for m in mds)
    assert seen == {0: mds[0], 3: mds[3]}


def test_user_completed_future_keeps_its_outcome() -> None:
    b = ProducerBatch(TP, 16384, 0)
    f1 = b.try_append(1, None, b"a", [], None, 0)
    f2 = b.try_append(1, None, b"b", [], None, 0)
    assert f1 is not None and f2 is not None
    mine = RecordMetadata("x", 9, 9, 9, 9, 9)
    f1.set_result(mine)
    with pytest.raises(concurrent.futures.InvalidStateError):
        f1.set_result(mine)
    b.done(7, -1, None)
    assert f1.result(0) is mine and f2.result(0).offset == 8


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=-100, max_value=100),
            st.one_of(st.none(), st.binary(max_size=80)),
            st.one_of(st.none(), st.binary(max_size=9000)),
            st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=1),
        ),
        min_size=1, max_size=80,
    )
)
def test_appended_size_is_the_encoded_size(records: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]) -> None:
    """The size try_append accounts (its inlined common case included) is exactly the encoded batch's."""
    b = ProducerBatch(TP, 10**7, 0)
    for ts, key, value, headers in records:
        assert b.try_append(1_000 + ts, key, value, headers, None, 0) is not None
    b.set_producer_state(1, 0, 0, False)
    assert b.uncompressed_size_in_bytes() == len(b.records())


def test_batch_does_not_keep_the_futures_and_split_futures_follow_their_records() -> None:
    b = ProducerBatch(TP, 10_000, 0)
    dropped = b.try_append(1, None, b"x" * 100, [], None, 0)
    ref = weakref.ref(dropped)
    del dropped
    assert ref() is None  # freed at once: the batch holds no future
    fs = [b.try_append(2 + i, None, b"x" * 100, [], None, 0) for i in range(4)]
    assert all(f is not None for f in fs)
    got: list[RecordMetadata] = []
    fs[3].add_done_callback(lambda f: got.append(f.result(0)))  # type: ignore[union-attr]
    pieces = b.split_into(300, 5)
    again = pieces[1].split_into(200, 5)  # a split batch split again
    assert len(pieces) == 3 and len(again) == 2
    done, not_done = concurrent.futures.wait(fs, timeout=0)  # type: ignore[arg-type]
    assert not done and len(not_done) == 4
    for i, p in enumerate([pieces[0], *again, pieces[2]]):
        p.done(100 * i, -1, None)
    assert [f.result(0).offset for f in fs] == [1, 100, 200, 300]  # type: ignore[union-attr]
    assert [f.result(0).timestamp for f in fs] == [2, 3, 4, 5]  # type: ignore[union-attr]
    assert got == [fs[3].result(0)]  # type: ignore[union-attr]


def test_a_plain_record_is_untracked_by_the_gc_after_one_pass() -> None:
    # A record without headers or callback holds only untracked objects: the garbage collector must stop
    # tracking it at its first pass, else a backlog of batches fills the oldest generation and triggers full
    # collections (long pauses of the producing thread). CPython untracks only exact tuples. With the kernel the
    # records are bytes in the batch's PendingRecords: no object per record at all.
    import gc

    b = ProducerBatch(TP, 16384, 0)
    b.try_append(0, None, b"v" * 100, (), None, 0)
    b.try_append(1, b"k", b"v", (), None, 0)
    gc.collect()
    if type(b.pending) is list:
        assert [gc.is_tracked(rec) for rec in b.pending] == [False, False]
    else:
        assert b.pending.is_encoded() and gc.get_referents(b.pending) == []  # type: ignore[attr-defined]


class _CountingCondition(threading.Condition):
    """A Condition that counts its ``notify_all`` calls and tells when a thread waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.notified = 0
        self.waiting = threading.Event()

    def notify_all(self) -> None:
        self.notified += 1
        super().notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()  # under the lock: the completing thread gets it once this thread waits
        return super().wait(timeout)


def test_completing_a_batch_nobody_waits_on_does_not_notify() -> None:
    """The I/O thread's per-batch completion skips the condition's (Python-level) notify_all when no thread
    waits on a future of the batch; a waiter registers itself, and is notified."""
    cond = _CountingCondition()
    b = ProducerBatch(TP, 16384, 0, condition=cond)
    f = b.try_append(1, None, b"v", [], None, 0)
    assert f is not None
    assert b.done(7, -1, None)
    assert cond.notified == 0
    assert f.result(0).offset == 7


def _wait_in_thread(f: concurrent.futures.Future[RecordMetadata]) -> tuple[threading.Thread, list[object]]:
    """Start a thread blocked in ``f.result()``; returns it and the list its outcome lands in."""
    got: list[object] = []
    started = threading.Event()

    def run() -> None:
        started.set()
        try:
            got.append(f.result(timeout=30))
        except BaseException as e:  # the test asserts on it
            got.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    started.wait(30)
    return t, got


@pytest.mark.parametrize("outcome", ["success", "failure", "split", "set_result"])
def test_a_thread_blocked_in_result_is_woken(outcome: str) -> None:
    cond = _CountingCondition()
    b = ProducerBatch(TP, 10_000, 0, condition=cond)
    fs = [b.try_append(1, None, b"x" * 100, [], None, 0) for _ in range(4)]
    f = fs[3]
    assert f is not None
    t, got = _wait_in_thread(f)
    assert cond.waiting.wait(30)
    if outcome == "success":
        b.done(10, -1, None)
    elif outcome == "failure":
        b.done(-1, -1, KafkaTimeoutError("expired"))
    elif outcome == "split":
        first, second = b.split_into(300, 5)
        first.done(0, -1, None)
        second.done(20, -1, None)
    else:
        f.set_result(RecordMetadata("t", 0, 99, 1, -1, 100))
    t.join(30)
    assert not t.is_alive()
    expected: object = {
        "success": RecordMetadata("t", 0, 13, 1, -1, 100),
        "split": RecordMetadata("t", 0, 21, 1, -1, 100),
        "set_result": RecordMetadata("t", 0, 99, 1, -1, 100),
    }.get(outcome)
    if outcome == "failure":
        assert len(got) == 1 and isinstance(got[0], KafkaTimeoutError)
    else:
        assert got == [expected]
    assert cond.notified >= 1


def test_records_of_one_millisecond_share_one_timestamp_object() -> None:
    """A pending record holds the previous record's timestamp object when the values are equal (one int per
    millisecond, not per record, while the batch waits); the encoded batch and the metadata are unchanged."""
    b = ProducerBatch(TP, 16384, 0)
    base = 1_700_000_000_000
    stamps = [base, base, base + 1, base + 1, base + 1, base]
    futures = [b.try_append(int(str(t)), None, b"v%d" % i, [], None, 0) for i, t in enumerate(stamps)]  # distinct ints
    kept = [rec[0] for rec in b.pending]
    assert kept == stamps
    if type(b.pending) is list:
        assert kept[1] is kept[0] and kept[3] is kept[2] and kept[4] is kept[2]
        assert kept[2] is not kept[0] and kept[5] is not kept[4]
    else:  # the kernel keeps the records' bytes: no timestamp object per record at all
        assert b.pending.is_encoded() and gc.get_referents(b.pending) == []  # type: ignore[attr-defined]
    (batch,) = list(MemoryRecords(b.records()).batches())
    assert [r.timestamp for r in batch] == stamps
    b.done(100, -1, None)
    assert [f.result(0).timestamp for f in futures if f is not None] == stamps
