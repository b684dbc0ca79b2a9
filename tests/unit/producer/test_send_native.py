"""``KafkaProducer.send``'s compiled common case (the kernel's ``send_append``, via ``RecordAccumulator.send_append``)
== the Python path it short-cuts: the same partitions (keys, explicit partitions, the sticky partition and its
switches across batch boundaries), the same batches with the same bytes, the same futures' results and
callbacks, the same errors.

Two producers get the same sends at the same MockTime with the same seeded partitioner random source: one
with the compiled path, one with it switched off (``_send_append = None``: exactly the Python path). They run
no Sender: batches stay in the accumulator, where the test reads and completes them by hand.
"""

from __future__ import annotations

import gc
import random
import sys
import threading
import time as _time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client import KafkaProducer
from pykafka_client.errors import BufferExhaustedError, KafkaError, RecordTooLargeError
from pykafka_client.producer.future_record_metadata import FutureRecordMetadata
from pykafka_client.producer.partitioner import murmur2, to_positive
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.producer.record_metadata import RecordMetadata
from pykafka_client.producer.record_size import RECORD_BATCH_OVERHEAD
from pykafka_client.producer.sender import IoRunner, Sender
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.responses import metadata_response, nodes
from tests.unit.producer.test_send_batch import _batches, _complete, _IdleRunner

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

TOPIC = "t"


class _Idle(_IdleRunner):
    def ensure_started(self) -> None:
        return None


def _idle(sender: Sender, client_id: str) -> IoRunner:
    return _Idle()


def _taken(p: KafkaProducer) -> int:
    """The sends the compiled paths took (send_record, or send_append after the Python checks)."""
    return sum(c.taken for c in (p._send_record, p._send_append) if isinstance(c, _Counted))


class _Counted:
    """Wraps the compiled path and counts the sends it took (returned a future for)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.taken = 0

    def __call__(self, *args: Any) -> Any:
        r = self.inner(*args)
        if r is not None and r is not NotImplemented:
            self.taken += 1
        return r


def _producer(
    time: MockTime, partitions: int, seed: int, native: bool, record: bool = True, counted: bool = True, /,
    **config: Any
) -> KafkaProducer:
    """``native``: the compiled paths (``record``: the whole send in the kernel's send_record, else the Python
    checks and metadata lookup before send_append); else the Python path alone. ``counted`` False: send_record
    left unwrapped, so that ``producer.send`` (the kernel's SendMethod) calls it without send()'s Python frame
    (a wrapped one it leaves to send())."""
    previous = _native.use_native(True)
    try:
        p = KafkaProducer(
            {"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": False, "linger.ms": 5, **config},
            time=time, io_runner=_idle,
        )
    finally:
        _native.use_native(previous)
    p.accumulator._rng = random.Random(seed)
    if native:
        assert p._send_append is not None and p._send_record is not None
        p._send_append = _Counted(p._send_append)
        if not record:
            p._send_record = None
        elif counted:
            p._send_record = _Counted(p._send_record)
    else:
        p._send_append = None
        p._send_record = None
    now = time.hi_res_clock_ms()
    p.metadata.add(TOPIC, now)
    p.metadata.update(
        0, metadata_response(nodes(1), {TOPIC: partitions}, leaders={(TOPIC, i): 0 for i in range(partitions)}), False, now
    )
    return p


_bytes = st.one_of(st.none(), st.binary(max_size=40), st.binary(max_size=40), st.binary(min_size=200, max_size=700))
_send = st.tuples(
    _bytes,  # key
    _bytes,  # value
    st.one_of(st.none(), st.none(), st.integers(0, 3)),  # partition (mod the partition count)
    st.one_of(st.none(), st.none(), st.integers(0, 2**41)),  # timestamp
    st.booleans(),  # a callback
    st.sampled_from([None, None, None, [("h", b"v")]]),  # headers (the Python path)
    st.integers(0, 3),  # ms the MockTime advances before the send
    st.sampled_from([1, 1, 1, 5, 30]),  # times the send repeats (runs that fill batches and switch partitions)
)


@settings(max_examples=60, deadline=None)
@given(
    sends=st.lists(_send, min_size=1, max_size=40),
    partitions=st.integers(1, 4),
    codec=st.sampled_from(["none", "none", "gzip", "lz4"]),
    batch_size=st.sampled_from([150, 500, 1024, 4096, 40_000]),  # 40k: byte counters past the kernel's int cache
    ignore_keys=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_compiled_send_equals_the_python_path(
    sends: list[tuple[bytes | None, bytes | None, int | None, int | None, bool, list[tuple[str, bytes]] | None, int, int]],
    partitions: int,
    codec: str,
    batch_size: int,
    ignore_keys: bool,
    seed: int,
) -> None:
    config = {"compression.type": codec, "batch.size": batch_size, "partitioner.ignore.keys": ignore_keys}
    time = MockTime()
    # the whole send compiled (send_record), the Python checks before send_append, the Python path alone (its
    # sends with the kernel switched off: not even ProducerBatch.try_append compiled)
    # "f": send_record called by producer.send's SendMethod, without send()'s frame (and _send_declined told
    # when only room was missing)
    producers = {
        "r": _producer(time, partitions, seed, True, **config),
        "a": _producer(time, partitions, seed, True, False, **config),
        "p": _producer(time, partitions, seed, False, **config),
        "f": _producer(time, partitions, seed, True, True, False, **config),
    }
    seen: dict[str, list[tuple[RecordMetadata | None, BaseException | None]]] = {name: [] for name in producers}
    try:
        futures: dict[str, list[Any]] = {name: [] for name in producers}
        for key, value, partition, timestamp, callback, headers, sleep_ms, repeat in sends:
            part = None if partition is None else partition % partitions
            for _ in range(repeat):
                time.sleep(sleep_ms / 1000)
                for name, p in producers.items():
                    cb = (lambda m, e, out=seen[name]: out.append((m, e))) if callback else None
                    futures[name].append(_send_as(name, p, TOPIC, value, key, part, timestamp, headers, cb))
        batches = {name: _batches(p, partitions) for name, p in producers.items()}
        records = {name: {p: [b.records() for b in bs] for p, bs in got.items()} for name, got in batches.items()}
        assert records["r"] == records["p"]
        assert records["a"] == records["p"]
        assert records["f"] == records["p"]
        # the byte counters the kernel writes per record (a batch's size, the sticky partition's produced bytes)
        counters = {name: _counters(p, batches[name]) for name, p in producers.items()}
        assert counters["r"] == counters["p"]
        assert counters["a"] == counters["p"]
        assert counters["f"] == counters["p"]
        for got in batches.values():
            _complete(got)
        results = {name: [f.result(0) for f in fs] for name, fs in futures.items()}
        assert results["r"] == results["p"]
        assert results["a"] == results["p"]
        assert results["f"] == results["p"]
        assert seen["r"] == seen["p"]
        assert seen["a"] == seen["p"]
        assert seen["f"] == seen["p"]
        expiries = {name: p.metadata.topic_expiry for name, p in producers.items()}
        assert expiries["r"] == expiries["p"]
        assert expiries["f"] == expiries["p"]
    finally:
        for p in producers.values():
            p.close(0)


def _counters(p: KafkaProducer, batches: dict[int, list[ProducerBatch]]) -> tuple[Any, ...]:
    """The byte counts the send path keeps: each batch's size_bytes and max_record_size, the sticky produced bytes."""
    sticky = p.accumulator._topics[TOPIC].partitioner.sticky
    return (
        {part: [(b.size_bytes, b.max_record_size) for b in bs] for part, bs in batches.items()},
        None if sticky is None else (sticky.partition, sticky.produced_bytes),
    )


def test_the_compiled_sends_byte_counters_share_one_int_per_value() -> None:
    """The kernel keeps one int per counter value below 2**15 (as CPython its small ints): two batches holding the
    same bytes share their size_bytes object, where each record would otherwise allocate (and free) an int per
    counter; above that, a new int of the same value."""
    time = MockTime()
    p = _producer(time, 2, 1, True, **{"batch.size": 70_000})
    try:
        for part in (0, 1):
            assert p.send(TOPIC, b"v" * 300, None, part) is not None  # a new batch each, then appends
            assert p.send(TOPIC, b"v" * 300, None, part) is not None
        (b0,), (b1,) = _batches(p, 2).values()
        assert b0.size_bytes == b1.size_bytes > 256
        assert b0.size_bytes is b1.size_bytes
        for part in (0, 1):
            for _ in range(110):  # past 2**15 bytes
                p.send(TOPIC, b"v" * 300, None, part)
        (b0,), (b1,) = _batches(p, 2).values()
        assert b0.size_bytes == b1.size_bytes > 2**15
        assert b0.size_bytes is not b1.size_bytes
    finally:
        p.close(0)


def test_the_common_case_takes_the_compiled_path_with_java_partitions() -> None:
    """Keyed, explicit and unkeyed sends: all compiled but the first to each partition (which opens its batch)
    and the first unkeyed one (which picks the sticky partition), to the partitions Java picks."""
    time = MockTime()
    p = _producer(time, 3, 7, True)
    try:
        keys = [b"a", b"bb", b"", b"key-4", b"k8", b"k9"]
        assert {to_positive(murmur2(k)) % 3 for k in keys} == {0, 1, 2}
        fs = [p.send(TOPIC, b"v", k) for k in keys * 3]
        fs += [p.send(TOPIC, b"w", None, 2) for _ in range(3)]
        fs += [p.send(TOPIC, b"x") for _ in range(4)]
        assert _taken(p) == len(fs) - 3 - 1
        _complete(_batches(p, 3))
        parts = [f.result(0).partition for f in fs]
        assert parts[:18] == [to_positive(murmur2(k)) % 3 for k in keys * 3]
        assert parts[18:21] == [2, 2, 2]
        assert len(set(parts[21:])) == 1
    finally:
        p.close(0)


def test_a_closed_accumulator_fails_the_send_as_the_python_path_does() -> None:
    time = MockTime()
    for native in (True, False):
        p = _producer(time, 1, 1, native)
        try:
            p.send(TOPIC, b"first")
            p.accumulator.close()
            with pytest.raises(KafkaError, match="Producer closed while send in progress"):
                p.send(TOPIC, b"second")
        finally:
            p.close(0)


def test_unusual_input_falls_back_to_the_python_path_with_its_outcomes() -> None:
    """A record over max.request.size, a value the serializer rejects, a bytearray: nothing compiled, and the
    outcome (failed future, exception, appended record) of the Python path."""
    outcomes: dict[bool, list[str]] = {}
    for native in (True, False):
        p = _producer(MockTime(), 2, 1, native, **{"max.request.size": 500})
        seen: list[str] = []
        try:
            p.send(TOPIC, b"open", None, 0)
            too_large = p.send(TOPIC, b"x" * 600, None, 0)
            assert isinstance(too_large.exception(0), RecordTooLargeError)
            seen.append(str(too_large.exception(0)))
            with pytest.raises(Exception) as bad:
                p.send(TOPIC, "not bytes", None, 0)
            seen.append(f"{type(bad.value).__name__}: {bad.value}")
            f = p.send(TOPIC, bytearray(b"ba"), None, 0)
            _complete(_batches(p, 2))
            seen.append(repr(f.result(0)))
            if native:
                assert _taken(p) == 0
        finally:
            p.close(0)
        outcomes[native] = seen
    assert outcomes[True] == outcomes[False]


def test_concurrent_sends_lose_nothing_and_keep_each_threads_order() -> None:
    """Four threads sending keyed and unkeyed records at once (the kernel call takes each queue's lock, the
    sticky partition switches under them): every record lands once, in each thread's order per partition,
    with distinct offsets. Holds for every interleaving."""
    p = _producer(MockTime(), 3, 1, True, **{"batch.size": 2000})
    n = 5000
    futures: dict[int, list[Any]] = {}

    def run(t: int) -> None:
        futures[t] = [p.send(TOPIC, b"%d:%d" % (t, i), None if i % 3 else b"k%d" % (i % 7)) for i in range(n)]

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(previous)
    try:
        batches = _batches(p, 3)
        order: dict[tuple[int, int], list[int]] = {}
        for part, bs in batches.items():
            for b in bs:
                for record in b.pending:
                    value = record[2]
                    assert value is not None
                    t, i = map(int, value.split(b":"))
                    order.setdefault((t, part), []).append(i)
        assert sum(len(v) for v in order.values()) == 4 * n
        assert all(v == sorted(v) for v in order.values())
        _complete(batches)
        placed = [(f.result(0).partition, f.result(0).offset) for fs in futures.values() for f in fs]
        assert len(set(placed)) == 4 * n
        assert _taken(p) > 0
    finally:
        p.close(0)


def test_the_kernel_goes_by_name_for_a_property_and_after_a_class_change() -> None:
    """The kernel reads and writes a batch's slots by offset, remembered per class and class version. A
    subclass that turns ``closed`` and ``size_bytes`` into properties, and a class changed after the kernel
    has appended to its instances, are read and written through Python's attribute lookup: a closed batch
    takes no record, a property's setter sees the new size."""
    kernel = _native.loaded_kernel()
    assert kernel is not None
    tp = TopicPartition(TOPIC, 0)
    assert kernel.batch_try_append(ProducerBatch(tp, 16384, 0), 1, None, b"v", (), None, 0) is not None

    sizes: list[int] = []

    class Watched(ProducerBatch):
        __slots__ = ()
        closed = property(lambda self: True, lambda self, v: None)

    class Sized(ProducerBatch):
        __slots__ = ("_size",)

        @property
        def size_bytes(self) -> int:
            return self._size

        @size_bytes.setter
        def size_bytes(self, v: int) -> None:
            sizes.append(v)
            self._size = v

    assert kernel.batch_try_append(Watched(tp, 16384, 0), 1, None, b"v", (), None, 0) is None
    sized = Sized(tp, 16384, 0)
    assert kernel.batch_try_append(sized, 1, None, b"v", (), None, 0) is not None
    assert sizes == [RECORD_BATCH_OVERHEAD, sized.size_bytes] and sized.size_bytes > RECORD_BATCH_OVERHEAD

    class Changed(ProducerBatch):
        __slots__ = ()

    batch = Changed(tp, 16384, 0)
    assert kernel.batch_try_append(batch, 1, None, b"v", (), None, 0) is not None
    setattr(Changed, "closed", property(lambda self: True, lambda self, v: None))  # noqa: B010 (mypy rejects the assignment to a slot name)
    assert kernel.batch_try_append(batch, 1, None, b"w", (), None, 0) is None
    assert batch.record_count == 1


def test_the_kernel_reads_each_batch_class_at_its_own_offsets_when_appends_alternate() -> None:
    """The kernel resolves a batch's append attributes once per class (and class version) and reads them at those
    offsets; appends alternating between a ProducerBatch and a class holding the same slots in another order
    (other offsets) each go to their own batch's slots: the same records, sizes and timestamps as two
    ProducerBatches given the same appends."""
    kernel = _native.loaded_kernel()
    assert kernel is not None
    tp = TopicPartition(TOPIC, 0)

    class Reordered:
        __slots__ = tuple(reversed(ProducerBatch.__slots__))

    def reordered() -> Any:
        model = ProducerBatch(tp, 16384, 0)
        r = Reordered()
        for name in ProducerBatch.__slots__:
            if hasattr(model, name):
                setattr(r, name, getattr(model, name))
        return r

    got, want = [ProducerBatch(tp, 16384, 0), reordered()], [ProducerBatch(tp, 16384, 0), ProducerBatch(tp, 16384, 0)]
    for i in range(40):
        for batches in (got, want):
            b = batches[i % 2]
            assert kernel.batch_try_append(b, 1000 + i // 3 * (i % 2 + 1), None, b"v" * (i % 7), (), None, i) is not None
    for g, w in zip(got, want, strict=True):
        assert (g.size_bytes, g.max_record_size, g.base_timestamp, g.max_timestamp, g.last_append_ms) == (
            w.size_bytes, w.max_record_size, w.base_timestamp, w.max_timestamp, w.last_append_ms)
        assert list(g.pending) == list(w.pending)


def _outcome(p: KafkaProducer, *args: Any) -> str:
    """What ``p.send(*args)`` did: the exception it raised, the error its future holds, or its partition."""
    try:
        f = p.send(*args)
    except Exception as e:
        return f"raised {type(e).__name__}: {e}"
    if f.done() and f.exception(0) is not None:
        return f"failed {type(f.exception(0)).__name__}: {f.exception(0)}"
    assert isinstance(f, FutureRecordMetadata)
    return f"appended to partition {f.batch_position()[0].partition}"


def test_send_records_checks_and_metadata_end_as_the_python_path() -> None:
    """Input the kernel's send_record declines (a bad topic, partition or timestamp; headers; an unknown topic;
    a partition over the count; a stale metadata index; an idempotent producer's fatal error; a closed
    producer) goes to the Python path, which raises or fails the future exactly as without the kernel; the
    topic's metadata expiry is refreshed alike once half of metadata.max.idle.ms has passed."""
    outcomes: dict[str, list[str]] = {}
    for name, native in (("record", True), ("python", False)):
        time = MockTime()
        p = _producer(time, 2, 1, native, **{"max.block.ms": 0, "metadata.max.idle.ms": 10_000})
        seen = outcomes[name] = []
        try:
            seen.append(_outcome(p, TOPIC, b"v"))
            seen += [
                _outcome(p, *args)
                for args in (
                    (5, b"v"), ("", b"v"), (TOPIC, b"v", None, -1), (TOPIC, b"v", None, True),
                    (TOPIC, b"v", None, 1.0), (TOPIC, b"v", None, None, -5), (TOPIC, b"v", None, None, True),
                    (TOPIC, b"v", None, 2), (TOPIC, b"v", None, 2**70), ("unknown", b"v"),
                    (TOPIC, b"v", None, 1, 2**70), (TOPIC, b"v", b"k", None, None, [("h", b"1")]),
                )
            ]
            expiry = p.metadata.topic_expiry[TOPIC]
            time.sleep(4000)
            seen.append(_outcome(p, TOPIC, b"v", b"k"))
            assert p.metadata.topic_expiry[TOPIC] == expiry  # fresh enough: not refreshed
            time.sleep(2000)
            seen.append(_outcome(p, TOPIC, b"v", b"k"))
            seen.append(f"expiry moved {p.metadata.topic_expiry[TOPIC] - expiry}")
            p.metadata.rebootstrap()
            seen.append(_outcome(p, TOPIC, b"v"))
            taken = _taken(p)
            p.close(0)
            seen.append(_outcome(p, TOPIC, b"v"))
        finally:
            p.close(0)
        if native:
            assert taken == 2  # the two keyed sends between the sleeps (a send with headers opened their batch)
    assert outcomes["record"] == outcomes["python"]
    assert "expiry moved 6000" in outcomes["python"]


def test_an_idempotent_producers_fatal_error_raises_on_both_paths() -> None:
    outcomes: dict[bool, list[str]] = {}
    for native in (True, False):
        p = _producer(MockTime(), 1, 1, native, **{"enable.idempotence": True, "acks": "all"})
        try:
            tm = p.transaction_manager
            assert tm is not None
            first = _outcome(p, TOPIC, b"v")
            second = _outcome(p, TOPIC, b"v")
            tm.transition_to_fatal_error(KafkaError("broken for the test"))
            outcomes[native] = [first, second, _outcome(p, TOPIC, b"v")]
            if native:
                assert _taken(p) == 1
        finally:
            p.close(0)
    assert outcomes[True] == outcomes[False]
    assert outcomes[True][2].startswith("raised")


def test_an_idempotent_producers_fatal_error_comes_after_the_topics_metadata() -> None:
    """As Java's send: the topic's metadata is waited on before the fatal error is raised, so the topic's own
    failure (here: missing from the metadata after max.block.ms) fails the future instead; a topic in the
    metadata gets the fatal error raised. With the fatal error checked first, both sends raised it (an idempotent
    producer without WRITE anywhere then reported CLUSTER_AUTHORIZATION_FAILED for a topic it may not see)."""
    outcomes: dict[bool, list[str]] = {}
    for native in (True, False):
        p = _producer(MockTime(), 1, 1, native, **{"enable.idempotence": True, "acks": "all", "max.block.ms": 0})
        try:
            tm = p.transaction_manager
            assert tm is not None
            tm.transition_to_fatal_error(KafkaError("broken for the test"))
            outcomes[native] = [_outcome(p, "unknown", b"v"), _outcome(p, TOPIC, b"v")]
        finally:
            p.close(0)
    assert outcomes[True] == outcomes[False]
    assert outcomes[True][0].startswith("failed KafkaTimeoutError"), outcomes[True]
    assert outcomes[True][1] == "raised KafkaError: broken for the test", outcomes[True]


def test_compiled_send_takes_the_queue_lock_as_the_lock_methods_do() -> None:
    """The kernel takes a free _thread.lock without its acquire() method and releases it directly: afterwards the
    lock is free and knows it (release() raises as on any unlocked lock); a lock another thread holds makes the
    send wait, through acquire(), until it is released, and the record is appended then."""
    p = _producer(MockTime(), 1, 1, True)
    try:
        p.send(TOPIC, b"first")  # opens the batch (the Python path)
        lock = p.accumulator._topics[TOPIC].queues[0].lock
        p.send(TOPIC, b"second")
        assert _taken(p) == 1
        assert not lock.locked()
        with pytest.raises(RuntimeError):
            lock.release()
        futures: list[Any] = []
        sender = threading.Thread(target=lambda: futures.append(p.send(TOPIC, b"third")))
        with lock:
            sender.start()
            sender.join(0.2)
            assert sender.is_alive() and not futures  # waiting for the lock
        sender.join()
        assert _taken(p) == 2 and not lock.locked()
        assert [r[2] for b in p.accumulator._topics[TOPIC].queues[0].batches for r in b.pending] == [b"first", b"second", b"third"]
        assert futures[0].batch_position()[1] == 2
    finally:
        p.close(0)


def _send_as(name: str, p: KafkaProducer, *args: Any) -> Any:
    """``p.send(*args)``; for the producer named "p" with the kernel switched off for the whole process."""
    previous = _native.use_native(name != "p")
    try:
        return p.send(*args)
    finally:
        _native.use_native(previous)


@pytest.mark.parametrize("idempotent", [False, True])
def test_timestamps_across_the_kernels_int_reading_boundary_equal_the_python_path(idempotent: bool) -> None:
    """The kernel reads an int of up to two internal digits (below 2**60) from its digits and larger ones through
    the C API; timestamps on both sides of that boundary (as a record's, a batch's base and max timestamp), up to
    the 2**62 the kernel takes and past it (the Python path), over batch boundaries, with the default idempotent
    producer too: the same batches, futures and callbacks as the pure Python path (its sends run with the kernel
    switched off, so that not even ProducerBatch.try_append is compiled)."""
    config = {"enable.idempotence": idempotent, "acks": "all" if idempotent else "1", "batch.size": 300}
    stamps = [None, 5, 2**30 - 1, 2**30, 2**60 - 1, 2**60, 2**60 + 7, 2**62, 2**62 + 1, 2**41, None]
    time = MockTime()
    producers = {
        "r": _producer(time, 2, 3, True, **config),
        "p": _producer(time, 2, 3, False, **config),
    }
    seen: dict[str, list[tuple[RecordMetadata | None, BaseException | None]]] = {name: [] for name in producers}
    futures: dict[str, list[Any]] = {name: [] for name in producers}
    try:
        # first, runs of close timestamps around each boundary: a batch's base and max timestamp on either side
        for base in (2**30 + 3, 2**30 - 3, 2**60 - 3, 2**62 - 3):
            for j in range(6):
                for name, p in producers.items():
                    futures[name].append(_send_as(name, p, TOPIC, b"run", None, 0, base + j))
        for round_ in range(6):
            for i, ts in enumerate(stamps):
                for name, p in producers.items():
                    cb = lambda m, e, out=seen[name]: out.append((m, e))  # noqa: E731
                    part = None if i % 3 else round_ % 2
                    futures[name].append(_send_as(name, p, TOPIC, b"v%d" % i, None if i % 2 else b"k%d" % i, part, ts, None, cb))
        assert _taken(producers["r"]) > 0
        batches = {name: _batches(p, 2) for name, p in producers.items()}
        assert {k: [b.records() for b in v] for k, v in batches["r"].items()} == {
            k: [b.records() for b in v] for k, v in batches["p"].items()
        }
        # the append state the kernel reads and writes (sizes decide the batch boundaries)
        state = {
            name: {k: [(b.base_timestamp, b.max_timestamp, b.size_bytes, b.max_record_size) for b in v] for k, v in got.items()}
            for name, got in batches.items()
        }
        assert state["r"] == state["p"]
        for got in batches.values():
            _complete(got)
        assert [f.result(0) for f in futures["r"]] == [f.result(0) for f in futures["p"]]
        assert seen["r"] == seen["p"]
    finally:
        for p in producers.values():
            p.close(0)


def test_buffer_memory_exhaustion_fails_the_new_batchs_send_after_max_block_ms_on_every_path() -> None:
    """Where the kernel finds no open batch with room, send() goes straight to RecordAccumulator.append (which
    tries the last batch again, then allocates): with ``buffer.memory`` for two batches and max.block.ms 0, the
    record that needs a third fails its future (and its callback) with BufferExhaustedError on the compiled paths
    exactly as on the Python path, and the records before it land in the two batches."""
    time = MockTime()
    config = {"batch.size": 1024, "buffer.memory": 2048, "max.block.ms": 0}
    producers = {
        "r": _producer(time, 1, 1, True, **config),
        "a": _producer(time, 1, 1, True, False, **config),
        "p": _producer(time, 1, 1, False, **config),
    }
    try:
        outcomes: dict[str, list[tuple[str, str]]] = {}
        for name, p in producers.items():
            called: list[BaseException | None] = []
            fs = [_send_as(name, p, TOPIC, b"v" * 100, None, None, None, None,
                           lambda m, e, out=called: out.append(e)) for _ in range(20)]
            failed = [f.exception(0) for f in fs if f.done()]
            assert failed and all(isinstance(e, BufferExhaustedError) for e in failed)
            assert "within the configured max blocking time 0 ms" in str(failed[0])
            assert [e for e in called if e is not None] == failed
            assert sum(b.record_count for bs in _batches(p, 1).values() for b in bs) == 20 - len(failed)
            outcomes[name] = [(type(f.exception(0)).__name__, str(f.exception(0))) for f in fs if f.done()]
        assert outcomes["r"] == outcomes["p"]
        assert outcomes["a"] == outcomes["p"]
    finally:
        for p in producers.values():
            p.close(0)


def test_the_compiled_send_skips_the_senders_wakeup_while_one_is_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    """Java wakes the Sender for every record while the partition's deque holds more than one batch; the
    compiled path calls Sender.wakeup only while no wake-up is pending (it would do nothing then), and again
    once the Sender's loop took the pending one."""
    calls: list[bool] = []
    real = Sender.wakeup

    def counting(self: Sender) -> None:
        calls.append(self.wakeup_pending)
        real(self)

    monkeypatch.setattr(Sender, "wakeup", counting)
    time = MockTime()
    p = _producer(time, 1, 0, True, True, **{"batch.size": 300})
    try:
        client_wakeups: list[int] = []
        p.sender.client.wakeup = lambda: client_wakeups.append(1)  # type: ignore[method-assign]
        fs = [p.send(TOPIC, b"v" * 40, None, 0) for _ in range(27)]  # 5 records a batch: the deque grows
        batches = len(p.accumulator.batches_for(TopicPartition(TOPIC, 0)))
        assert batches > 2
        assert _taken(p) == 26  # all but the first, which makes the partition's queue (the kernel opens the rest)
        # once, for the first batch (send()'s Python path); never from the kernel's new batches nor its ~20 appends
        # into the second and later batches, which Java's rule wakes for but which find the wake-up pending
        assert calls == [False]
        assert client_wakeups == [1]
        p.sender._wakeup_pending = False  # as the top of Sender.run_once
        fs.append(p.send(TOPIC, b"v" * 40, None, 0))  # appended to the open last batch: the kernel
        assert _taken(p) == 27
        assert calls == [False, False]
        assert client_wakeups == [1, 1]
        _complete(_batches(p, 1))
        assert [f.result(0).offset for f in fs] == list(range(len(fs)))
    finally:
        p.close(0)


def _on_the_system_clock() -> KafkaProducer:
    """A compiled-path producer on the system clock (the kernel reads the clocks itself), one partition known."""
    previous = _native.use_native(True)
    try:
        p = KafkaProducer({"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": False}, io_runner=_idle)
    finally:
        _native.use_native(previous)
    assert p._send_record is not None
    now = _time.monotonic_ns() // 1_000_000
    p.metadata.add(TOPIC, now)
    p.metadata.update(0, metadata_response(nodes(1), {TOPIC: 1}, leaders={(TOPIC, 0): 0}), False, now)
    return p


def test_the_compiled_send_refreshes_a_stale_topic_expiry_on_the_system_clock() -> None:
    """A producer on the system clock: the kernel reads the monotonic clock itself and, when the topic's expiry
    is due for a refresh, calls ProducerMetadata.add with that time in ms (as add_and_count does)."""
    p = _on_the_system_clock()
    try:
        # the batch opened by the Python path alone: the kernel has not read the topic's expiry yet (it remembers
        # until when one is fresh, as an expiry never goes back in the producer)
        assert p._send_declined(TOPIC, b"a", None, None, None, None, None).done() is False
        p.metadata.topic_expiry[TOPIC] = 0  # stale: the next send refreshes it
        before = _time.monotonic_ns() // 1_000_000
        fut = _compiled_send(p)(TOPIC, None, None, None, b"b", None)
        after = _time.monotonic_ns() // 1_000_000
        assert fut is not NotImplemented
        expiry = p.metadata.topic_expiry[TOPIC]
        assert before + p.metadata.metadata_idle_ms <= expiry <= after + p.metadata.metadata_idle_ms
    finally:
        p.close(0)


def _compiled_send(p: KafkaProducer) -> Callable[..., Any]:
    """The producer's compiled per-record send (None when the kernel's path is off: not in these tests)."""
    send = p._send_record
    assert send is not None
    return send


def test_the_compiled_send_on_the_system_clock_stamps_each_record_with_its_own_millisecond() -> None:
    """The kernel reads the system clock as a number and makes its int at the append: the last pending record's
    when it is the same millisecond, else a new one (never the last record's of another value: an explicit
    timestamp before, a millisecond that passed)."""
    p = _on_the_system_clock()
    try:
        p.send(TOPIC, b"first", None, 0)  # opens the batch (Python path)
        sends: list[tuple[int | None, int, int]] = []  # (explicit timestamp, clock before, clock after)
        for i in range(300):
            explicit = 12345 + i if i % 7 == 3 else None
            before = _time.time_ns() // 1_000_000
            assert _compiled_send(p)(TOPIC, 0, explicit, None, b"v", None) is not NotImplemented
            after = _time.time_ns() // 1_000_000
            sends.append((explicit, before, after))
        (batch,) = p.accumulator.batches_for(TopicPartition(TOPIC, 0))
        stamps = [rec[0] for rec in batch.pending[1:]]
        for (explicit, lo, hi), ts in zip(sends, stamps, strict=True):
            if explicit is not None:
                assert ts == explicit
            else:  # the system clock's ms (a minute's margin: the clock may be stepped meanwhile)
                assert lo - 60_000 <= ts <= hi + 60_000
        if type(batch.pending) is list:
            for a, b in zip(batch.pending, batch.pending[1:], strict=False):
                if a[0] == b[0]:
                    assert a[0] is b[0]  # one int object per millisecond
        else:  # the records are bytes in the batch's PendingRecords: no timestamp object per record at all
            assert batch.pending.is_encoded() and gc.get_referents(batch.pending) == []  # type: ignore[attr-defined]
        assert batch.max_timestamp == max([*stamps, batch.pending[0][0]])
    finally:
        p.close(0)
