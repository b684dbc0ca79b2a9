"""The compiled Produce path (the kernel's ``ProduceAppender``, mini_broker/server/produce_append.py) fails exactly as
the reference does. Two single brokers, one on the compiled kernel and one on the pure-Python reference
(``_native.use_native(False)`` around everything it does, so that its logs' ends and segment tails are the reference's
too), get the same random Produce requests with the same faults injected: the partition's log closed before the request
(a shutdown racing it), its topic deleted between the lookup and the append, the segment's writes failing (ENOSPC from
``/dev/full``, EBADF from a read-only descriptor, put in place of the segment's descriptor for the one request), the
log's ``client_append_parts`` or ``append`` raising (a storage error, an I/O error, a corrupt-record error, a plain
RuntimeError), and records the log refuses (corrupt, empty, too large, a timestamp out of range, an unknown codec,
sequence gaps). After every request: the same answer (kind and bytes, up to the brokers' own data directories and the
clock's now in a timestamp error) and the same completed purgatory operations; at the end the same logs (files,
offsets, producers) and produce metrics."""

from __future__ import annotations

import contextlib
import errno
import glob
import itertools
import os
import re
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.broker import MiniBroker
from mini_broker.log.unified_log import Log
from mini_broker.network.request_channel import Request, Response
from mini_broker.purgatory import TopicPartitionOperationKey
from mini_broker.purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from mini_broker.server.replica_manager import ReplicaManager
from pykafka_client.errors import CorruptRecordError, KafkaStorageError
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.protocol.records.crc import crc32c
from tests.unit.broker.server.test_produce_append import METRICS, Watcher, answer, batch, frame

pytestmark = pytest.mark.skipif(_native.kernel is None, reason="the compiled record kernel is off")

#: what the log's append raises where a fault makes it raise
EXCEPTIONS: dict[str, Callable[[], Exception]] = {
    "storage": lambda: KafkaStorageError("injected: the log directory is offline"),
    "eio": lambda: OSError(errno.EIO, "injected: Input/output error"),
    "corrupt": lambda: CorruptRecordError("injected: corrupt"),
    "runtime": lambda: RuntimeError("injected: a bug"),
}
#: each fault: none; the log closed before the request; its close failed (an fsync error: the log is closed, its
#: segments' files still open); its topic deleted between the lookup and the append; the
#: segment's writes failing; the log lending no parts; the log's client_append_parts (and append) or only its append
#: raising; both raising and the read of its append checks' compacted flag too (the reference reads it first); a
#: delayed fetch watching the partition raising at the append's wake-up (after the append: the handler fails, the
#: connection is closed, in both)
FAULTS = ["none", "closed", "close_failed", "deleted", "parts_none", "wake_raises",
          # (a descriptor swapped under the segment: Linux's /proc/self/fd and /dev/full)
          *(["enospc", "ebadf"] if os.path.isdir("/proc/self/fd") and os.path.exists("/dev/full") else []),
          *(f"parts_raise:{e}" for e in EXCEPTIONS), *(f"append_raise:{e}" for e in EXCEPTIONS),
          *(f"checks_raise:{e}" for e in EXCEPTIONS)]
#: records: the next batch of a producer, one without a producer, and ones the log refuses
KINDS = ["next", "next", "none", "corrupt", "empty", "gap", "retry", "large", "future", "codec", "keyless"]
#: the topics' config: a small max.message.bytes, a timestamp at most an hour ahead
TOPIC_CONFIG = {"max.message.bytes": "600", "message.timestamp.after.max.ms": "3600000"}


class World:
    """One single broker whose every call runs on the compiled kernel or on the pure-Python reference."""

    def __init__(self, data_dir: str, compiled: bool) -> None:
        self.compiled = compiled
        self.data_dir = data_dir
        self.sent: list[Response] = []
        self.completed: list[object] = []
        with self.running():
            self.broker = MiniBroker(data_dir=data_dir)
            self.broker.start()
        assert self.broker.apis is not None
        broker = self.broker
        assert broker.apis is not None
        broker.apis.channel.send_response = self.sent.append  # type: ignore[method-assign, assignment]  # kept

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        previous = _native.use_native(self.compiled)
        try:
            yield
        finally:
            _native.use_native(previous)

    @property
    def rm(self) -> ReplicaManager:
        rm = self.broker.replica_manager
        assert rm is not None
        return rm

    def log(self, topic: str, partition: int) -> Log | None:
        return self.rm.log_manager.get_log(topic, partition)

    def handle(self, data: bytes) -> None:
        apis = self.broker.apis
        assert apis is not None
        request: Request = apis.parse_request(0, "c", "127.0.0.1", "PLAINTEXT", memoryview(bytearray(data))[4:], 0)
        apis.handle(request)

    def close(self) -> None:
        with self.running():
            self.broker.stop()


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, World]]:
    root = tmp_path_factory.mktemp("failures")
    # (directories of the same length: an error message naming a log's directory has the same size in both answers)
    pair = World(str(root / "a"), True), World(str(root / "b"), False)
    assert pair[0].rm.client_appender is not None
    yield pair
    for world in pair:
        world.close()


def records(kind: str, producer: int, state: dict[int, tuple[int, int]], count: int, stamp: int) -> bytes:
    """The test_produce_append kinds, and: ``large`` (over the topic's max.message.bytes), ``future`` (a timestamp
    past message.timestamp.after.max.ms), ``codec`` (a compression id no codec has, its CRC valid)."""
    if kind == "large":
        builder = MemoryRecordsBuilder(write_limit=1 << 20)
        for i in range(count + 2):
            builder.append(1_700_000_000_000 + stamp + i, b"k", b"v" * 300)
        return bytes(builder.build())
    if kind == "future":
        builder = MemoryRecordsBuilder(write_limit=1 << 20)
        builder.append(4_000_000_000_000 + stamp, b"k", b"v")
        return bytes(builder.build())
    if kind == "codec":
        data = bytearray(batch("none", producer, state, count, stamp))
        data[22] = (data[22] & ~0x07) | 5
        struct.pack_into(">I", data, 17, crc32c(memoryview(data)[21:]))
        return bytes(data)
    return batch(kind, producer, state, count, stamp)


def _descriptors_of(path: str) -> list[int]:
    """This process's descriptors open on ``path``."""
    fds = []
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{name}") == path:
                fds.append(int(name))
    return fds


@contextlib.contextmanager
def failing_writes(lg: Log, how: str) -> Iterator[None]:
    """The log's active segment's writes fail while inside: each descriptor on its file replaced by one on
    ``/dev/full`` (ENOSPC) or a read-only one on the same file (EBADF), put back after."""
    path = os.path.realpath(lg.active_segment.log_path)
    fds = _descriptors_of(path)
    replacement = os.open("/dev/full", os.O_WRONLY) if how == "enospc" else os.open(path, os.O_RDONLY)
    saved = [(fd, os.dup(fd)) for fd in fds]
    try:
        for fd, _ in saved:
            os.dup2(replacement, fd, inheritable=False)
        yield
    finally:
        for fd, copy in saved:
            os.dup2(copy, fd, inheritable=False)
            os.close(copy)
        os.close(replacement)


def _raiser(make: Callable[[], Exception]) -> Callable[..., Any]:
    def raising(*args: object, **kwargs: object) -> Any:
        raise make()
    return raising


def _deleting_once(rm: ReplicaManager, topic: str, lg: Log) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The log's client_append_parts and append, the first of them called deleting the topic first (a deletion
    between the lookup and the append; not at the ask for the parts of a compacted log, which the compiled call
    declines after it: the reference's own lookup would then come after the deletion, where the reference's
    answer comes from a lookup before it)."""
    done: list[bool] = []
    parts, append = lg.client_append_parts, lg.append

    def delete() -> None:
        if not done:
            done.append(True)
            rm.delete_topic(topic)

    def deleting_parts() -> Any:
        if not lg.append_checks.compacted:
            delete()
        return parts()

    def deleting_append(*args: Any, **kwargs: Any) -> Any:
        delete()
        return append(*args, **kwargs)

    return deleting_parts, deleting_append


@contextlib.contextmanager
def injected(world: World, fault: str, topic: str, partition: int) -> Iterator[None]:
    """``fault`` on the partition's log while inside (a closed log or a deleted topic stays so)."""
    lg = world.log(topic, partition)
    if lg is None or fault == "none":
        yield
        return
    if fault == "closed":
        lg.close()
        yield
        return
    if fault == "close_failed":
        segment = lg.active_segment
        segment.flush = _raiser(lambda: OSError(errno.EIO, "injected: fsync failed"))  # type: ignore[method-assign]
        with contextlib.suppress(OSError):
            lg.close()
        del segment.flush
        yield
        return
    if fault == "wake_raises":
        purgatory: DelayedOperationPurgatory[Any] = world.rm.fetch_purgatory
        watcher = RaisingWatcher(world.completed, "raised")
        purgatory.try_complete_else_watch(watcher, [TopicPartitionOperationKey(topic, partition)])
        yield
        watcher.force_complete()  # (this request's fault only: nothing checks it later)
        return
    if fault in ("enospc", "ebadf"):
        with failing_writes(lg, fault):
            yield
        return
    if fault == "deleted":
        patched = _deleting_once(world.rm, topic, lg)
    elif fault == "parts_none":
        patched = (lambda: None), lg.append
    else:
        where, _, exc = fault.partition(":")
        raising = _raiser(EXCEPTIONS[exc])
        if where == "checks_raise":
            raising = _raiser(EXCEPTIONS["runtime" if exc != "runtime" else "eio"])
        patched = (raising if where in ("parts_raise", "checks_raise") else (lambda: None)), raising
    checks = lg.append_checks
    if fault.startswith("checks_raise:"):
        lg.append_checks = RaisingChecks(EXCEPTIONS[fault.partition(":")[2]])  # type: ignore[assignment]  # the fault
    lg.client_append_parts, lg.append = patched  # type: ignore[method-assign]  # the fault, this request only
    try:
        yield
    finally:
        del lg.client_append_parts, lg.append
        lg.append_checks = checks


class RaisingWatcher(Watcher):
    """A delayed operation that raises at its first check after it is watched (once), then completes at the next."""

    def try_complete(self) -> bool:
        self.checks += 1
        if self.checks == 3:
            raise RuntimeError("injected: a delayed operation's check failed")
        return self.checks > 3 and self.force_complete()


class RaisingChecks:
    """Append checks whose compacted flag raises when read."""

    def __init__(self, make: Callable[[], Exception]) -> None:
        self.make = make

    @property
    def compacted(self) -> bool:
        raise self.make()


def normalized(world: World, sent: list[Response]) -> list[tuple[str, bytes]]:
    """The answers with the broker's data directory and the clock's now in a timestamp error made neutral."""
    out = []
    for response in sent:
        kind, data = answer(response)
        data = re.sub(rb"\(now \d{13},", b"(now N,", data.replace(world.data_dir.encode(), b"DATA"))
        out.append((kind, data))
    return out


def log_state(world: World, topic: str, partition: int) -> object:
    lg = world.log(topic, partition)
    if lg is None:
        return None
    with contextlib.suppress(OSError, ValueError):  # (a closed log: flushed at its close)
        lg.flush()
    data = b"".join(Path(path).read_bytes() for path in sorted(glob.glob(os.path.join(lg.dir_path, "*")))
                    if path.endswith((".log", ".index", ".timeindex")))
    producers = sorted((pid, e.producer_epoch, e.last_seq, e.last_data_offset)
                       for pid, e in lg.producer_state.active_producers.items())
    return lg.log_end_offset, lg.high_watermark, lg.log_start_offset, data, producers


def metrics(world: World) -> list[int]:
    assert world.rm.metrics is not None
    return [world.rm.metrics.counter(name).value for name in METRICS]


#: fault, records kind, acks, partition (0, 1; 2: the compacted topic's 0), a delayed fetch and produce watching it
Op = tuple[str, str, int, int, bool]
ops_strategy = st.tuples(st.sampled_from(["none"] * 3 + FAULTS), st.sampled_from(KINDS), st.sampled_from([1, 1, -1]),
                         st.sampled_from([0, 0, 1, 2]), st.booleans())
_topics = itertools.count()


def run_both(worlds: tuple[World, World], ops: list[Op], version: int = 11) -> None:
    """``ops`` on both worlds, on topics of their own (one of two partitions, one compacted), then a plain append to
    each partition: the same answers and completions after each, the same logs and metrics at the end."""
    n = next(_topics)
    targets = [(f"f{n}", 0), (f"f{n}", 1), (f"f{n}c", 0)]
    for world in worlds:
        with world.running():
            world.rm.create_topic(f"f{n}", 2, dict(TOPIC_CONFIG))
            world.rm.create_topic(f"f{n}c", 1, {**TOPIC_CONFIG, "cleanup.policy": "compact"})
    states: dict[int, tuple[int, int]] = {}
    # the topics' first append by the reference (their names checked), then the compiled call takes the common ones
    warm_up: list[Op] = [("none", "next", 1, i, False) for i in range(3)]
    final: list[Op] = [("none", "next", -1, 0, False), ("none", "next", 1, 1, False), ("none", "next", 1, 2, False)]
    for step, (fault, kind, acks, target, watch) in enumerate([*warm_up, *ops, *final]):
        topic, partition = targets[target]
        data = frame(acks, None, [(topic, partition, records(kind, 5000 + target, states, 2, step))], step, version)
        got = []
        for world in worlds:
            with world.running():
                before = len(world.sent)
                if watch and world.log(topic, partition) is not None:
                    rm = world.rm
                    key = TopicPartitionOperationKey(topic, partition)
                    purgatories: list[DelayedOperationPurgatory[Any]] = [rm.fetch_purgatory, rm.produce_purgatory]
                    for purgatory in purgatories:
                        purgatory.try_complete_else_watch(Watcher(world.completed, (step, purgatory.purgatory_name)),
                                                          [key])
                with injected(world, fault, topic, partition):
                    world.handle(data)
                got.append(normalized(world, world.sent[before:]))
        assert got[0] == got[1], (step, fault, kind, acks, target)
        assert len(got[0]) == 1, (step, fault)  # answered (or the connection closed: acks=0 is not drawn)
        assert worlds[0].completed == worlds[1].completed, (step, fault)
    for topic, partition in targets:
        states_now = []
        for world in worlds:
            with world.running():
                states_now.append(log_state(world, topic, partition))
        assert states_now[0] == states_now[1], (topic, partition)
    assert metrics(worlds[0]) == metrics(worlds[1])
    for world in worlds:  # (their files closed: the module's brokers keep few descriptors open)
        with world.running():
            for name in (f"f{n}", f"f{n}c"):
                with contextlib.suppress(KafkaError):
                    world.rm.delete_topic(name)


@settings(max_examples=100, deadline=None)
@given(ops=st.lists(ops_strategy, min_size=1, max_size=8), version=st.integers(3, 11))
def test_the_compiled_append_fails_as_the_reference(worlds: tuple[World, World], ops: list[Op], version: int) -> None:
    run_both(worlds, ops, version)


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("acks", [1, -1])
def test_each_fault_answers_as_the_reference(worlds: tuple[World, World], fault: str, acks: int) -> None:
    run_both(worlds, [(fault, "next", acks, 0, True), ("none", "next", acks, 0, False), (fault, "none", acks, 1, False),
                      (fault, "next", acks, 2, False), (fault, "keyless", acks, 2, True)])


@pytest.mark.parametrize("kind", KINDS)
def test_each_refused_batch_answers_as_the_reference(worlds: tuple[World, World], kind: str) -> None:
    run_both(worlds, [("none", kind, 1, 0, False), ("none", kind, -1, 0, True), ("none", "next", 1, 0, False)])


@pytest.mark.parametrize("version", range(3, 12))
def test_each_version_answers_a_failed_append_as_the_reference(worlds: tuple[World, World], version: int) -> None:
    run_both(worlds, [("parts_raise:storage", "next", 1, 0, False), ("enospc", "next", -1, 0, False),
                      ("closed", "next", 1, 1, False)], version)


def test_a_raising_client_append_parts_is_answered_not_escaped(worlds: tuple[World, World]) -> None:
    # the compiled call itself (not the handler around it): the partition answered with append_failed's result
    world = worlds[0]
    topic = f"f{next(_topics)}"
    world.rm.create_topic(topic, 1, dict(TOPIC_CONFIG))
    states: dict[int, tuple[int, int]] = {}
    world.handle(frame(1, None, [(topic, 0, records("next", 1, states, 1, 0))], 0))  # the name's first check
    appender = world.rm.client_appender
    assert appender is not None
    lg = world.log(topic, 0)
    assert lg is not None
    apis = world.broker.apis
    assert apis is not None
    body = apis.parse_request(0, "c", "127.0.0.1", "PLAINTEXT", memoryview(bytearray(
        frame(1, None, [(topic, 0, records("next", 1, states, 1, 1))], 1)))[4:], 0).body
    lg.client_append_parts = _raiser(EXCEPTIONS["eio"])  # type: ignore[method-assign]  # the fault
    try:
        done = appender.append(body, world.rm, 11, 1)
    finally:
        del lg.client_append_parts
    assert done is not None
    order, results, pending, frame_ = done
    assert pending is None and frame_ is None
    assert results[order[0]].error_code == KafkaStorageError.code
    assert results[order[0]].error_message == "[Errno 5] injected: Input/output error"
    assert lg.log_end_offset == 1
