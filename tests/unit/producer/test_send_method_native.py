"""``producer.send`` through the kernel's ``SendMethod``: the common case calls the producer's SendRecord without
``send()``'s Python frame, a send that lacks an open batch with room and the memory for one goes to ``_send_declined`` told so (no
second round of checks, metadata lookup or kernel append; a new batch is opened by the accumulator's
``open_batch`` for the kernel, under the same queue lock round, when buffer.memory has its room at once), and the bound object behaves as the bound method it
replaces (its arguments, its errors, closing, a patched or overridden ``send``). The records and outcomes equal
the Python path's: ``test_send_native.test_compiled_send_equals_the_python_path`` (its producer "f")."""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pykafka_client import KafkaProducer
from pykafka_client.errors import ProducerClosedError
from pykafka_client.producer.sender import Sender
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.responses import metadata_response, nodes
from tests.unit.producer.test_send_batch import _batches, _complete
from tests.unit.producer.test_send_native import TOPIC, _idle, _producer

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")


@contextmanager
def _python_calls() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """The Python functions called meanwhile (name, arguments), through sys.setprofile."""
    calls: list[tuple[str, dict[str, Any]]] = []

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call":
            calls.append((frame.f_code.co_name, dict(frame.f_locals)))

    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


#: the Python functions of send()'s path
_SEND_PATH = {"send", "_send_declined", "_check_can_send", "add_and_count", "append", "try_append_fast", "try_append"}


def _front(**config: Any) -> KafkaProducer:
    """A producer whose ``send`` is the kernel's (its SendRecord unwrapped), one partition, no Sender running."""
    previous = _native.use_native(True)
    try:
        p = _producer(MockTime(), 1, 0, True, True, False, **config)
    finally:
        _native.use_native(previous)
    return p


def test_the_common_case_and_a_new_batch_run_no_python_frame_of_the_send_path() -> None:
    p = _front(**{"batch.size": 300})
    try:
        assert type(p._send_record).__name__ == "SendRecord"
        first = p.send(TOPIC, b"v" * 40)  # opens the partition's first batch: the Python path, from the start
        fs = []
        with _python_calls() as calls:
            for _ in range(4):
                fs.append(p.send(TOPIC, b"v" * 40))  # into the open batch
        # (the kernel calls MockTime's clock methods, which are Python; none of send()'s)
        assert not {name for name, _ in calls} & _SEND_PATH
        with _python_calls() as calls:
            fs.append(p.send(TOPIC, b"v" * 40))  # the batch is full: a new one, opened by open_batch for the kernel
        names = [name for name, _ in calls]
        # open_batch is the kernel's BatchOpener: no frame of its own, of ProducerBatch's or BatchOutcome's __init__
        assert type(p.accumulator.open_batch).__name__ == "BatchOpener"
        assert not {"open_batch", "_add_batch", "try_allocate", "__init__"} & set(names)
        assert not set(names) & _SEND_PATH
        batches = p.accumulator.batches_for(TopicPartition(TOPIC, 0))
        assert [b.record_count for b in batches] == [5, 1]
        assert [b.closed for b in batches] == [True, False]  # append() closes the full batch too
        _complete(_batches(p, 1))
        assert [f.result(0).offset for f in [first, *fs]] == list(range(6))
    finally:
        p.close(0)


def test_a_new_batch_whose_memory_is_not_free_at_once_goes_to_send_declined_told_no_room() -> None:
    """open_batch never waits: when buffer.memory has no room now, the kernel declines (the full batch closed, as
    append() closes it) and _send_declined's append waits for the memory, told only room was missing."""
    p = _front(**{"batch.size": 300, "buffer.memory": 600, "max.block.ms": 0})
    try:
        p.send(TOPIC, b"v" * 40)
        p.send(TOPIC, b"v" * 200)  # no room: a second batch (300 bytes: the pool is now empty)
        with _python_calls() as calls:
            f = p.send(TOPIC, b"v" * 200)  # no room, no memory: the Python path, which times out waiting for it
        assert [args["no_room"] for name, args in calls if name == "_send_declined"] == [True]
        # the kernel's BatchOpener found no memory at once (nothing changed, no frame), then append() waited for it
        assert "open_batch" not in [name for name, _ in calls] and "append" in [name for name, _ in calls]
        assert "add_and_count" not in [name for name, _ in calls]
        assert f.exception(0).__class__.__name__ == "BufferExhaustedError"
        batches = p.accumulator.batches_for(TopicPartition(TOPIC, 0))
        assert [b.record_count for b in batches] == [1, 1]
        assert [b.closed for b in batches] == [True, True]
    finally:
        p.close(0)


def test_a_declined_send_that_is_not_for_room_runs_the_whole_python_path() -> None:
    """A send the kernel declines for another reason (headers, an unknown topic, a str value...) reaches
    _send_declined with no_room False, which makes every check and the metadata lookup."""
    p = _front()
    try:
        p.send(TOPIC, b"v")
        with _python_calls() as calls:
            p.send(TOPIC, b"v", headers=[("h", b"1")])
        assert [args["no_room"] for name, args in calls if name == "_send_declined"] == [False]
        assert "add_and_count" in [name for name, _ in calls]
    finally:
        p.close(0)


def test_the_bound_send_takes_sends_arguments_by_position_and_keyword() -> None:
    p = _front()
    seen: list[Any] = []
    try:
        fs = [
            p.send(TOPIC, b"a"),
            p.send(TOPIC, b"b", b"k", 0, 7, None, lambda m, e: seen.append(m)),
            p.send(topic=TOPIC, value=b"c", key=b"k", partition=0, timestamp=8, on_delivery=lambda m, e: seen.append(m)),
            p.send(TOPIC, on_delivery=None, timestamp=9, value=b"d"),
            p.send(TOPIC),  # a null value
        ]
        (batch,) = p.accumulator.batches_for(TopicPartition(TOPIC, 0))
        assert [(key, value, ts) for ts, key, value, *_ in batch.pending][1:4] == [
            (b"k", b"b", 7), (b"k", b"c", 8), (None, b"d", 9)
        ]
        assert batch.pending[4][1:3] == (None, None)
        _complete(_batches(p, 1))
        assert [f.result(0).offset for f in fs] == [0, 1, 2, 3, 4]
        assert [m.offset for m in seen] == [1, 2]
    finally:
        p.close(0)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {}),
        ((TOPIC, b"v", None, None, None, None, None, "extra"), {}),
        ((TOPIC,), {"bogus": 1}),
        ((TOPIC, b"v"), {"value": b"w"}),
        ((TOPIC, b"v", b"k", 0), {"on_delivery": None, "partition": 1}),  # a later position given twice
        ((), {"value": b"w"}),
        ((), {"value": b"w", "key": b"k", "on_delivery": None}),  # no topic among keywords
    ],
)
def test_bad_arguments_raise_the_python_functions_type_error(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    p = _front()
    try:
        with pytest.raises(TypeError) as python:
            KafkaProducer.send(p, *args, **kwargs)
        with pytest.raises(TypeError) as bound:
            p.send(*args, **kwargs)
        assert str(bound.value) == str(python.value)
    finally:
        p.close(0)


def test_the_bound_send_looks_like_the_bound_method() -> None:
    p = _front()
    try:
        assert type(KafkaProducer.__dict__["send"]).__name__ == "SendMethod"
        assert isinstance(KafkaProducer.send, types.FunctionType)  # on the class: the function itself
        bound: Any = p.send
        assert bound.__self__ is p and bound.__func__ is KafkaProducer.send
        assert bound == p.send and hash(bound) == hash(p.send) and bound != _front().send
        assert bound.__name__ == "send" and bound.__doc__ == KafkaProducer.send.__doc__
        assert inspect.signature(bound) == inspect.signature(types.MethodType(KafkaProducer.send, p))
        assert repr(bound).startswith("<bound method KafkaProducer.send of ")
    finally:
        p.close(0)


def test_a_send_bound_before_close_raises_after_it() -> None:
    p = _front()
    send = p.send
    send(TOPIC, b"v")
    p.close(0)
    with pytest.raises(ProducerClosedError):
        send(TOPIC, b"v")


def test_a_patched_or_overridden_send_is_the_one_called(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []

    class Mine(KafkaProducer):
        def send(self, *args: Any, **kwargs: Any) -> Any:
            calls.append(args)
            return super().send(*args, **kwargs)

    previous = _native.use_native(True)
    try:
        mine = Mine(
            {"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": False, "max.block.ms": 0},
            io_runner=_idle,
        )
    finally:
        _native.use_native(previous)
    try:
        mine.send(TOPIC, b"v")  # the topic's metadata is unknown: its future fails (max.block.ms 0)
        assert calls == [(TOPIC, b"v")]
    finally:
        mine.close(0)
    p = _front()
    try:
        monkeypatch.setattr(KafkaProducer, "send", lambda self, *args: ("patched", args))
        patched: Any = p.send(TOPIC, b"v")
        assert patched == ("patched", (TOPIC, b"v"))
    finally:
        monkeypatch.undo()
        p.close(0)


def test_the_senders_wakeup_flag_is_a_slot() -> None:
    """The kernel's send path reads Sender._wakeup_pending on each record appended while a wake-up is due: at a
    slot's offset, not through the instance dict (a dict lookup per record)."""
    assert isinstance(Sender.__dict__["_wakeup_pending"], types.MemberDescriptorType)
    assert isinstance(KafkaProducer.__dict__["_send_record"], types.MemberDescriptorType)



def _set_partitions(p: KafkaProducer, partitions: int) -> None:
    now = p._time.hi_res_clock_ms()
    p.metadata.update(
        0, metadata_response(nodes(1), {TOPIC: partitions}, leaders={(TOPIC, i): 0 for i in range(partitions)}), False, now
    )


def test_the_partition_count_the_kernel_remembers_follows_each_metadata_update() -> None:
    """SendRecord remembers the topic's partition count of the metadata index it read it from: a new index (a
    metadata update) is read again, so a partition that is gone goes to the Python path and a new one is taken."""
    p = _producer(MockTime(), 2, 0, True, True, False, **{"max.block.ms": 0})
    try:
        p.send(TOPIC, b"v", None, 0)
        for _ in range(3):
            p.send(TOPIC, b"v", None, 1)
        _set_partitions(p, 1)  # partition 1 is gone: the Python path (which waits for it: max.block.ms 0)
        with _python_calls() as calls:
            p.send(TOPIC, b"v", None, 0)
        assert "_send_declined" not in [name for name, _ in calls]
        with _python_calls() as calls:
            gone = p.send(TOPIC, b"v", None, 1)
        assert [args["no_room"] for name, args in calls if name == "_send_declined"] == [False]
        assert gone.exception(0) is not None
        _set_partitions(p, 3)
        p.send(TOPIC, b"v", None, 2)  # the partition's first batch: the Python path
        with _python_calls() as calls:
            p.send(TOPIC, b"v", None, 2)
            p.send(TOPIC, b"v", None, 1)
        assert not {name for name, _ in calls} & _SEND_PATH
        assert [len(p.accumulator.batches_for(TopicPartition(TOPIC, i))) for i in range(3)] == [1, 1, 1]
        assert [b.record_count for i in range(3) for b in p.accumulator.batches_for(TopicPartition(TOPIC, i))] == [2, 4, 2]
    finally:
        p.close(0)


def test_a_topic_equal_to_the_remembered_one_but_another_str_goes_to_the_same_queue() -> None:
    p = _front()
    try:
        p.send(TOPIC, b"v")
        other = "".join([TOPIC[:1], TOPIC[1:]])  # equal, another object
        assert other == TOPIC
        with _python_calls() as calls:
            fs = [p.send(other, b"v"), p.send(TOPIC, b"v"), p.send(other, b"v")]
        assert not {name for name, _ in calls} & _SEND_PATH
        assert [b.record_count for b in p.accumulator.batches_for(TopicPartition(TOPIC, 0))] == [4]
        _complete(_batches(p, 1))
        assert [f.result(0).offset for f in fs] == [1, 2, 3]
    finally:
        p.close(0)


def test_the_topics_expiry_is_refreshed_by_the_kernel_as_add_and_count_refreshes_it() -> None:
    """SendRecord remembers until when the topic's metadata expiry is fresh (expiry - idle // 2): past that it
    reads it again and refreshes it (ProducerMetadata.add), as the Python path; a topic forgotten by
    retain_topics is added again. Both producers see the same sends at the same MockTime."""
    time = MockTime()
    config = {"metadata.max.idle.ms": 5000}
    kernel = _producer(time, 1, 0, True, True, False, **config)
    python = _producer(time, 1, 0, False, **config)
    try:
        expiries: list[tuple[int | None, int | None]] = []
        for step in [0, 1000, 1499, 1, 1, 2000, 498, 1, 1]:
            time.sleep(step)  # ms
            for p in (kernel, python):
                p.send(TOPIC, b"v")
            expiries.append((kernel.metadata.topic_expiry.get(TOPIC), python.metadata.topic_expiry.get(TOPIC)))
        assert [k for k, _ in expiries] == [py for _, py in expiries]
        assert len({k for k, _ in expiries}) == 3  # refreshed twice
        time.sleep(6000)
        for p in (kernel, python):
            p.metadata.retain_topics(time.hi_res_clock_ms())
            assert TOPIC not in p.metadata.topic_expiry
        with _python_calls() as calls:
            kernel.send(TOPIC, b"v")
        assert not {name for name, _ in calls} & _SEND_PATH  # add() only: the topic's partitions are still known
        assert "add" in [name for name, _ in calls]
        python.send(TOPIC, b"v")
        assert kernel.metadata.topic_expiry == python.metadata.topic_expiry == {TOPIC: time.hi_res_clock_ms() + 5000}
    finally:
        kernel.close(0)
        python.close(0)


def test_send_append_never_opens_a_batch_so_a_transactional_send_adds_its_partition() -> None:
    """The kernel's send_append (the Python path's compiled append, a transactional producer's too) finds no open
    batch with room and returns None having changed nothing: append() then makes the batch and send() adds its
    partition to the transaction (SendRecord, which opens batches itself, is never a transactional producer's)."""
    p = _producer(MockTime(), 1, 0, True, False, **{"batch.size": 300})
    try:
        assert p._send_record is None
        p.send(TOPIC, b"v" * 200, None, 0)
        batch = p.accumulator.batches_for(TopicPartition(TOPIC, 0))[0]
        with _python_calls() as calls:
            p.send(TOPIC, b"v" * 200, None, 0)  # no room: send_append declines, append opens the batch
        names = [name for name, _ in calls]
        assert "append" in names and "open_batch" not in names
        assert [b.record_count for b in p.accumulator.batches_for(TopicPartition(TOPIC, 0))] == [1, 1]
        assert p._send_append is not None
        full = p.accumulator.batches_for(TopicPartition(TOPIC, 1 - 1))[-1]
        full.size_bytes = full.size_limit  # no room for anything
        assert p._send_append(TOPIC, 0, 1, None, None, b"v", None) is None
        assert [b.record_count for b in p.accumulator.batches_for(TopicPartition(TOPIC, 0))] == [1, 1]
        assert not full.closed and batch.closed
    finally:
        p.close(0)
