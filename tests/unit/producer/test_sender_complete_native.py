"""The compiled completion of a produce response (``_kernel.complete_produce_response``) == the Python reference
(``Sender._handle_produce_response_reference``): for the same request and the same broker answer, the same futures'
results (offsets, timestamps, sizes) and errors, delivery and done-callbacks, batch states, in-flight and muted
partitions, idempotence bookkeeping, metrics and the requests sent next. The kernel takes the common case (every
partition error NONE, no delivery callbacks) and declines, having changed nothing, for everything else: errors,
record errors, delivery callbacks, a partition missing, repeated or not in the request."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.client_response import ClientResponse, RequestHeaderInfo
from pykafka_client.producer.future_record_metadata import (
    NOT_COLLECTED,
    BatchMetadata,
    CallSegment,
    FutureRecordMetadata,
    SendBatchFuture,
    new_future,
)
from pykafka_client.producer.producer_batch import FinalState, ProducerBatch
from pykafka_client.producer.sender import DecodedProduceResponse
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ProduceResponse
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from tests.doubles.frames import chunk_bytes, frame_bytes
from tests.unit.producer.sender_harness import TOPIC, Harness

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

PARTITIONS = 4
NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE, CORRUPT_MESSAGE, DUPLICATE_SEQUENCE_NUMBER, INVALID_RECORD = 6, 10, 2, 46, 87
MUTATIONS = ["ok", "error", "record_errors", "missing", "duplicate", "extra", "callback", "done_callback"]


class _Spy:
    """The kernel, recording what handle_produce_response (the Sender's produce callback) answered."""

    def __init__(self, kernel: Any) -> None:
        self._kernel = kernel
        self.answers: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kernel, name)

    def handle_produce_response(self, *args: Any) -> bool:
        out: bool = self._kernel.handle_produce_response(*args)
        self.answers.append(out)
        return out


@contextmanager
def _kernel(native: bool) -> Iterator[_Spy | None]:
    saved = _native.kernel
    spy = _Spy(_native.loaded_kernel()) if native else None
    _native.kernel = spy
    try:
        yield spy
    finally:
        _native.kernel = saved


def _response(parts: list[tuple[TopicPartition, int, int, int, list[tuple[int, str]]]]) -> ProduceResponse:
    """``parts``: (tp, error code, base offset, log append time, record errors), in this order."""
    by_topic: dict[str, list[ProduceResponse.PartitionProduceResponse]] = {}
    for tp, code, base, lat, errors in parts:
        p = ProduceResponse.PartitionProduceResponse(
            index=tp.partition, error_code=code, base_offset=base, log_append_time_ms=lat, log_start_offset=0
        )
        p.record_errors = [ProduceResponse.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m) for i, m in errors]
        by_topic.setdefault(tp.topic, []).append(p)
    return ProduceResponse(
        responses=[ProduceResponse.TopicProduceResponse(name=t, partition_responses=ps) for t, ps in by_topic.items()]
    )


def _decoded(resp: ProduceResponse) -> ProduceResponse:
    """``resp`` as the network client hands the Sender its response: through the kernel's decode_produce_results
    (a DecodedProduceResponse holding results, its ``responses`` not built) when it takes it, else as it is."""
    kernel = _native.loaded_kernel()
    assert kernel is not None
    payload = frame_bytes(headers.encode_response(resp, ApiKey.PRODUCE, 9, 1))[4:]
    body = kernel.decode_produce_results(DecodedProduceResponse, payload, 9, 1)
    if body is None:
        return resp
    assert body.results is not None
    assert kernel.decode_produce_results(DecodedProduceResponse, payload, 9, 1) == resp  # (comparing builds responses)
    return body


def _outcome(f: FutureRecordMetadata) -> object:
    if not f.done():
        return "pending"
    e = f.exception(0)
    if e is not None:
        return (type(e).__name__, str(e))
    return tuple(f.result(0))


def _call_outcome(f: SendBatchFuture) -> object:
    if not f.done():
        return "pending"
    e = f.exception(0)
    return (None if e is None else (type(e).__name__, str(e)), [_outcome(f.record_future(i)) for i in range(f.record_count)])  # type: ignore[arg-type]


def _call_logger(log: list[object], c: int) -> Callable[[Future[BatchMetadata]], None]:
    """A done-callback logging call ``c``'s outcome."""

    def logged(f: Future[BatchMetadata]) -> None:
        assert isinstance(f, SendBatchFuture)
        log.append(("call", c, _call_outcome(f)))

    return logged


def _send_batch_calls(futures: list[FutureRecordMetadata], per_partition: list[int], log: list[object]) -> list[SendBatchFuture]:
    """Two send_batch calls over the records (the first half of each partition's records, then the rest), as
    send_batch records them: segments of (outcome, index) runs; their completions logged as done-callbacks."""
    halves: list[list[FutureRecordMetadata]] = [[], []]
    k = 0
    for n in per_partition:
        for j in range(n):
            halves[0 if j < (n + 1) // 2 else 1].append(futures[k])
            k += 1
    calls = []
    for c, fs in enumerate(halves):
        call = SendBatchFuture(len(fs), None)
        for pos, f in enumerate(fs):
            call.add_segment(pos, 1, f.outcome, f.index)
        call.seal()
        call.add_done_callback(_call_logger(log, c))
        calls.append(call)
    return calls


#: per partition, its records' (key, value size)
Records = list[list[tuple[bytes | None, int]]]


def _scenario(
    native: bool, idempotent: bool, ordered: bool, records: list[list[tuple[bytes | None, int]]], lat: int,
    mutation: str, error: int, victim: int, send_batch: bool = False, decoded: bool = False,
) -> tuple[Any, list[bool]]:
    """Send one request with ``records[i]`` (key, value size) on partition i, answer it (``mutation`` applied to
    partition ``victim``), handle the answer with the kernel or the reference; then everything observable.
    ``send_batch``: the records are also those of two send_batch calls (:func:`_send_batch_calls`); ``decoded``: the
    response as the kernel decodes it for the Sender (:func:`_decoded`)."""
    h = Harness(idempotent=idempotent, max_in_flight=1 if ordered else 5, partitions=PARTITIONS, acks=-1)
    victim %= len(records)
    log: list[object] = []
    futures: list[FutureRecordMetadata] = []
    tps = [TopicPartition(TOPIC, i) for i in range(len(records))]
    for i, (tp, recs) in enumerate(zip(tps, records, strict=True)):
        for j, (key, size) in enumerate(recs):
            cb = None
            if mutation == "callback" and i == victim and j == 0:
                def cb(md: object, err: object, j: int = j) -> None:
                    log.append(("cb", j, tuple(md) if md is not None else None, repr(err)))  # type: ignore[arg-type]
            r = h.accumulator.append(tp.topic, tp.partition, 1000 + j, key, b"v" * size, [], cb, 0, h.metadata)
            futures.append(r.future)
    calls = _send_batch_calls(futures, [len(r) for r in records], log) if send_batch else []
    if mutation == "done_callback":
        futures[0].add_done_callback(lambda f: log.append(("done", _outcome(f))))  # type: ignore[arg-type]
    # the kernel (or none) from the send on: the request's completion callback is chosen when it is sent
    with _kernel(native) as spy:
        h.run_once()
        assert h.client.has_in_flight_request()
        batches: list[ProducerBatch] = [b for lst in h.sender.in_flight_batches.values() for b in lst]
        parts: list[tuple[TopicPartition, int, int, int, list[tuple[int, str]]]] = [
            (tp, 0, 100 * (i + 1), lat, []) for i, tp in enumerate(tps)]
        vtp = parts[victim][0]
        if mutation == "error":
            parts[victim] = (vtp, error, -1, -1, [])
        elif mutation == "record_errors":
            parts[victim] = (vtp, INVALID_RECORD if error != 0 else 0, -1, -1, [(0, "bad record")])
        elif mutation == "missing":
            del parts[victim]
        elif mutation == "duplicate":
            parts.insert(victim, (vtp, 0, 7, lat, []))
        elif mutation == "extra":
            parts.insert(victim, (TopicPartition(TOPIC, PARTITIONS + 3), 0, 5, lat, []))
        response = _response(parts)
        h.client.respond(_decoded(response) if decoded else response)
        h.run_once()
    for _ in range(3):  # what goes out next (retries, split batches)
        h.time.sleep(200)
        h.run_once()
    tm = h.tm
    observed = (
        [_outcome(f) for f in futures],
        [_call_outcome(c) for c in calls],
        log,
        [(b.final_state, b.split, b.allocated_bytes) for b in batches],
        {tp: len(v) for tp, v in h.sender.in_flight_batches.items()},
        [h.accumulator.is_muted(tp) for tp in tps],
        len(h.accumulator.incomplete_batches()),
        [(tm.last_acked_sequence(tp), tm.last_acked_offset(tp), tm.has_inflight_batches(tp)) for tp in tps] if tm else None,
        asdict(h.sender.metrics),
        [[(t.name, p.index, chunk_bytes(p.records or b"")) for t in r.topic_data for p in t.partition_data] for r in h.produce_requests()],
    )
    return observed, spy.answers if spy is not None else []


_records = st.lists(
    st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=20)), st.integers(0, 300)), min_size=1, max_size=12),
    min_size=1, max_size=PARTITIONS,
)


@settings(max_examples=150, deadline=None)
@given(
    idempotent=st.booleans(), ordered=st.booleans(), records=_records, lat=st.sampled_from([-1, 1_700_000_000_123]),
    mutation=st.sampled_from(MUTATIONS),
    error=st.sampled_from([NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE, CORRUPT_MESSAGE, DUPLICATE_SEQUENCE_NUMBER, 0]),
    victim=st.integers(0, PARTITIONS - 1), send_batch=st.booleans(), decoded=st.tuples(st.booleans(), st.booleans()),
)
def test_compiled_completion_equals_the_reference(
    idempotent: bool, ordered: bool, records: list[list[tuple[bytes | None, int]]], lat: int, mutation: str, error: int,
    victim: int, send_batch: bool, decoded: tuple[bool, bool],
) -> None:
    """``decoded``: whether the kernel's and the reference's run get the response as decode_produce_results makes it
    (results, ``responses`` built only when the reference reads them) or as the reference decoder makes it."""
    native, answers = _scenario(True, idempotent, ordered, records, lat, mutation, error, victim, send_batch, decoded[0])
    reference, _ = _scenario(False, idempotent, ordered, records, lat, mutation, error, victim, send_batch, decoded[1])
    assert native == reference
    # the kernel took exactly the common case (an "error" of code 0 is a success too)
    common = mutation in ("ok", "done_callback") or (mutation == "error" and error == 0)
    assert answers == [common]


def test_common_case_completes_in_the_kernel() -> None:
    """Pinned without hypothesis: offsets and log-append timestamps come from the response, create times from the
    records, and the kernel (not the reference) completed them."""
    records: Records = [[(None, 10), (b"k", 20)], [(b"key", 0)]]
    (outcomes, *_), answers = _scenario(True, True, False, records, -1, "ok", 0, 0)
    assert answers == [True]
    assert outcomes == [(TOPIC, 0, 100, 1000, -1, 10), (TOPIC, 0, 101, 1001, 1, 20), (TOPIC, 1, 200, 1000, 3, 0)]
    (outcomes, *_), answers = _scenario(True, False, True, records, 555, "ok", 0, 0)
    assert answers == [True]
    assert [o[3] for o in outcomes] == [555, 555, 555]


@pytest.mark.parametrize("mutation", ["error", "record_errors", "missing", "duplicate", "extra", "callback"])
def test_the_kernel_declines_anything_else(mutation: str) -> None:
    records: Records = [[(None, 10)], [(None, 10), (None, 5)]]
    native, answers = _scenario(True, True, False, records, -1, mutation, NOT_LEADER_OR_FOLLOWER, 1)
    assert answers == [False]
    assert native == _scenario(False, True, False, records, -1, mutation, NOT_LEADER_OR_FOLLOWER, 1)[0]


def test_a_decoded_response_completes_from_its_results_without_building_them() -> None:
    """The response the network client decodes for the Sender (decode_produce_results) completes in the kernel
    straight from its results: the offsets are the response's and its ``responses`` dataclasses are never built."""
    records: Records = [[(None, 10), (b"k", 20)], [(b"key", 0)]]
    h = Harness(partitions=PARTITIONS)
    futures = h.append(TopicPartition(TOPIC, 0), b"abc", 2) + h.append(TopicPartition(TOPIC, 1), b"de", 1)
    with _kernel(True) as spy:  # from the send on: the completion callback is chosen when it is sent
        h.run_once()
        body = _decoded(_response([(TopicPartition(TOPIC, 1), 0, 70, -1, []), (TopicPartition(TOPIC, 0), 0, 40, -1, [])]))
        assert type(body) is DecodedProduceResponse
        h.client.respond(body)
        h.run_once()
    assert spy is not None and spy.answers == [True]
    assert body.results is not None  # never read through ``responses``
    assert [f.result(0).offset for f in futures] == [40, 41, 70]
    assert not h.sender.in_flight_batches and not h.accumulator.incomplete_batches()
    native, answers = _scenario(True, True, False, records, -1, "ok", 0, 0, decoded=True)
    assert answers == [True] and native == _scenario(False, True, False, records, -1, "ok", 0, 0)[0]


def test_a_decoded_response_read_before_its_completion_completes_from_its_responses() -> None:
    """Once something read ``responses`` (built from the results, which are dropped), the kernel completes from them."""
    h = Harness(partitions=PARTITIONS)
    futures = h.append(TopicPartition(TOPIC, 0), b"abc", 2)
    with _kernel(True) as spy:  # from the send on: the completion callback is chosen when it is sent
        h.run_once()
        body = _decoded(_response([(TopicPartition(TOPIC, 0), 0, 40, -1, [])]))
        assert type(body) is DecodedProduceResponse and body.responses[0].partition_responses[0].base_offset == 40
        assert body.results is None
        h.client.respond(body)
        h.run_once()
    assert spy is not None and spy.answers == [True]
    assert [f.result(0).offset for f in futures] == [40, 41]


def test_the_kernel_completes_an_unwatched_outcome_under_its_lock_and_lets_it_go() -> None:
    """The outcome the kernel completes itself (no future watched) is FINISHED with the response's fields, and its
    condition's lock is free again afterwards (a reader blocked on it would otherwise hang)."""
    h = Harness(partitions=PARTITIONS)
    futures = h.append(TopicPartition(TOPIC, 0), b"abc", 3)
    with _kernel(True) as spy:  # from the send on: the completion callback is chosen when it is sent
        h.run_once()
        (batch,) = [b for lst in h.sender.in_flight_batches.values() for b in lst]
        outcome = batch.outcome
        h.client.respond(_response([(TopicPartition(TOPIC, 0), 0, 40, -1, [])]))
        h.run_once()
    assert spy is not None and spy.answers == [True]
    assert outcome.state == "FINISHED" and outcome.base_offset == 40 and outcome.key_sizes == -1
    assert outcome.condition.acquire(blocking=False)
    outcome.condition.release()
    assert [f.result(0).offset for f in futures] == [40, 41, 42]
    assert not h.sender.in_flight_batches and not h.accumulator.incomplete_batches()


def _in_flight(h: Harness) -> dict[TopicPartition, ProducerBatch]:
    return {b.topic_partition: b for lst in h.sender.in_flight_batches.values() for b in lst}


def test_an_outcome_nothing_refers_to_completes_without_its_columns() -> None:
    """Every future of a batch dropped (send()'s futures, unused): nothing can read the batch's per-record columns,
    so the kernel does not collect them; the batch completes as the reference completes it otherwise."""
    h = Harness(partitions=PARTITIONS)
    h.append(TopicPartition(TOPIC, 0), b"abc", 3)  # the futures are dropped at once
    kept = h.append(TopicPartition(TOPIC, 1), b"de", 2)
    with _kernel(True) as spy:  # from the send on: the completion callback is chosen when it is sent
        h.run_once()
        batches = _in_flight(h)
        h.client.respond(_response([(TopicPartition(TOPIC, 0), 0, 40, -1, []), (TopicPartition(TOPIC, 1), 0, 70, -1, [])]))
        h.run_once()
    assert spy is not None and spy.answers == [True]
    unread, read = batches[TopicPartition(TOPIC, 0)], batches[TopicPartition(TOPIC, 1)]
    assert unread.final_state is read.final_state is FinalState.SUCCEEDED
    assert unread.allocated_bytes == read.allocated_bytes == 0 and not h.sender.in_flight_batches
    assert (unread.outcome.state, unread.outcome.base_offset, unread.outcome.log_append_time) == ("FINISHED", 40, -1)
    assert unread.outcome.key_sizes is NOT_COLLECTED and unread.outcome.timestamps is None  # not collected
    assert read.outcome.key_sizes == -1 and read.outcome.value_sizes == 2  # one value each: an int
    assert [f.result(0).offset for f in kept] == [70, 71]


def test_an_outcome_referred_to_after_the_plan_gets_its_columns() -> None:
    """A future of a batch made while the response is being completed (here by a done-callback of a batch before
    it in the response) reads the batch's outcome: the batch then completes with its columns, as the reference's."""
    h = Harness(partitions=PARTITIONS)
    (first,) = h.append(TopicPartition(TOPIC, 0), b"abc", 1)
    h.append(TopicPartition(TOPIC, 1), b"de", 2)  # dropped: unread when the response is planned
    with _kernel(True) as spy:  # from the send on: the completion callback is chosen when it is sent
        h.run_once()
        batches = _in_flight(h)
        late: list[FutureRecordMetadata] = []
        first.add_done_callback(lambda _f: late.extend(new_future(batches[TopicPartition(TOPIC, 1)].outcome, i) for i in range(2)))
        h.client.respond(_response([(TopicPartition(TOPIC, 0), 0, 40, -1, []), (TopicPartition(TOPIC, 1), 0, 70, -1, [])]))
        h.run_once()
    assert spy is not None and spy.answers == [True]
    assert first.result(0).offset == 40
    ts = h.time.milliseconds()
    assert [tuple(f.result(0)) for f in late] == [(TOPIC, 1, 70, ts, -1, 2), (TOPIC, 1, 71, ts, -1, 2)]


@pytest.mark.parametrize("mutation", ["ok", "error", "done_callback"])
def test_send_batch_calls_complete_as_the_reference(mutation: str) -> None:
    """Pinned without hypothesis: two send_batch calls over three batches (a MESSAGE_TOO_LARGE split of one
    with "error"); the calls' results, errors and done-callbacks as the reference's."""
    records: Records = [[(None, 10), (b"k", 20), (None, 3)], [(b"key", 0)], [(None, 1), (None, 2)]]
    native, answers = _scenario(True, True, False, records, -1, mutation, MESSAGE_TOO_LARGE, 0, True)
    assert native == _scenario(False, True, False, records, -1, mutation, MESSAGE_TOO_LARGE, 0, True)[0]
    assert answers == [mutation != "error"]
    calls = native[1]
    if mutation == "error":  # the split batch's pieces are still to be answered: its calls wait for them
        assert calls == ["pending", "pending"]
    else:
        assert [c[0] for c in calls] == [None, None]
        assert [o[2] for o in calls[0][1]] == [100, 101, 200, 300]
        assert [o[2] for o in calls[1][1]] == [102, 301]


def test_the_kernel_releases_send_batch_segments_without_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """The outcomes of a send_batch call's batches complete in the kernel's common path: no watched future, and of
    the call's segments only the last calls Python (it completes the call); the reference calls each."""
    invoked: list[int] = []
    real = CallSegment.release

    def counting(seg: CallSegment) -> None:
        invoked.append(seg.index)
        real(seg)

    monkeypatch.setattr(CallSegment, "release", counting)
    records: Records = [[(None, 10), (None, 5)], [(b"key", 0)], [(None, 1)]]
    for native, calls in ((True, 2), (False, 3 + 1)):  # two calls: segments on 3 and on 1 of the batches
        invoked.clear()
        (_outcomes, results, log, *_), answers = _scenario(native, False, False, records, -1, "ok", 0, 0, True)
        assert len(invoked) == calls
        assert answers == ([True] if native else [])
        assert [r[0] for r in results] == [None, None]
        assert [e[:2] for e in log] == [("call", 1), ("call", 0)] or [e[:2] for e in log] == [("call", 0), ("call", 1)]


def _complete_two_batches(h: Harness) -> list[FutureRecordMetadata]:
    futures = h.append(TopicPartition(TOPIC, 0), b"abc", 2) + h.append(TopicPartition(TOPIC, 1), b"de", 1)
    h.run_once()
    h.client.respond(_decoded(_response([(TopicPartition(TOPIC, 0), 0, 40, -1, []), (TopicPartition(TOPIC, 1), 0, 70, -1, [])])))
    return futures


@pytest.mark.parametrize("where", ["accumulator", "accumulator class", "incomplete", "pool"])
def test_a_replaced_deallocate_is_called(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's completion deallocates through the accumulator's public method: one replaced on the class or
    on the instance (a test's spy, a subclass's override), and what it calls, is called. (The Sender decides when it
    is built whether its compiled completion releases batches itself: the replacement is made before.)"""
    from pykafka_client.producer.buffer_pool import BufferPool
    from pykafka_client.producer.incomplete_batches import IncompleteBatches
    from pykafka_client.producer.record_accumulator import RecordAccumulator

    calls: list[object] = []

    def replace(h: Harness) -> None:
        if where == "accumulator":
            original = h.accumulator.deallocate

            def deallocate(batch: ProducerBatch) -> None:
                calls.append(batch)
                original(batch)

            monkeypatch.setattr(h.accumulator, "deallocate", deallocate)
        elif where == "accumulator class":
            original_cls = RecordAccumulator.deallocate

            def deallocate_of(self: RecordAccumulator, batch: ProducerBatch) -> None:
                calls.append(batch)
                original_cls(self, batch)

            monkeypatch.setattr(RecordAccumulator, "deallocate", deallocate_of)
        elif where == "incomplete":
            original_remove = IncompleteBatches.remove

            def remove(self: IncompleteBatches, batch: ProducerBatch) -> None:
                calls.append(batch)
                original_remove(self, batch)

            monkeypatch.setattr(IncompleteBatches, "remove", remove)
        else:
            original_pool = BufferPool.deallocate

            def pool_deallocate(self: BufferPool, size: int) -> None:
                calls.append(size)
                original_pool(self, size)

            monkeypatch.setattr(BufferPool, "deallocate", pool_deallocate)

    if where == "incomplete":
        # the reference set, whose class can be patched: the accumulator made without the kernel
        previous = _native.use_native(False)
        try:
            h = Harness(partitions=PARTITIONS, before_sender=replace)
        finally:
            _native.use_native(previous)
    else:
        h = Harness(partitions=PARTITIONS, before_sender=replace)
    before = h.accumulator.free.available_memory()
    with _kernel(True) as spy:  # from the send on: the completion callback is chosen when it is sent
        futures = _complete_two_batches(h)
        h.run_once()
    assert spy is not None and spy.answers == [True]
    assert len(calls) == 2
    assert [f.result(0).offset for f in futures] == [40, 41, 70]
    assert h.accumulator.free.available_memory() == before and not h.accumulator.has_incomplete()


class _OtherProduceResponse(ProduceResponse):
    """A ProduceResponse subclass the kernel was not set up with."""


@settings(max_examples=60, deadline=None)
@given(
    disconnected=st.booleans(), mismatch=st.booleans(),
    body=st.sampled_from(["produce", "decoded", "other subclass", "none", "not a response"]),
)
def test_the_produce_callback_calls_the_reference_for_anything_but_a_plain_answer(
    disconnected: bool, mismatch: bool, body: str
) -> None:
    """``handle_produce_response`` (the Sender's produce callback with the kernel) tries the kernel's completion only for
    a response not disconnected, without a version mismatch, whose body is exactly a ProduceResponse or the Sender's
    DecodedProduceResponse (as Sender._handle_produce_response does); for anything else it calls the reference with
    (sender, batches, response), as given. An empty answer to an empty request completes in the kernel."""
    kernel = _native.loaded_kernel()
    assert kernel is not None
    bodies: dict[str, Any] = {
        "produce": ProduceResponse(responses=[]), "decoded": _decoded(ProduceResponse(responses=[])),
        "other subclass": _OtherProduceResponse(responses=[]), "none": None, "not a response": object(),
    }
    response = ClientResponse(
        RequestHeaderInfo(int(ApiKey.PRODUCE), 9, "c", 1), None, "0", 0, 1, was_disconnected=disconnected,
        was_timed_out=disconnected, version_mismatch=RuntimeError("v") if mismatch else None, response_body=bodies[body],
    )
    h = Harness(partitions=PARTITIONS)
    batches: dict[TopicPartition, ProducerBatch] = {}
    called: list[tuple[object, ...]] = []
    answered = kernel.handle_produce_response(lambda *a: called.append(a), FinalState.SUCCEEDED, h.sender, batches, response)
    plain = not disconnected and not mismatch and body in ("produce", "decoded")
    assert answered is plain
    assert called == ([] if plain else [(h.sender, batches, response)])
    assert called == [] or (called[0][1] is batches and called[0][2] is response)
