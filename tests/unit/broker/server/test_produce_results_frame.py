"""The Produce answer's frame written by the kernel straight from the partitions' results (#27, h/brkresp): the same
bytes as the generated codec writes for the body the handler builds from them, at every version the broker serves,
whatever the error codes, offsets and record errors; it declines exactly what the handler's body path must answer
(record errors or a message at v8+, a leader hint at v10+, a topic whose partitions are apart); and
``KafkaApis.send_frame`` sends such a frame only where nothing changes the body on the way (no response gate, no
active quota)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.network.request_channel import Request, RequestChannel, RequestContext, Response, SendResponse
from mini_broker.server.apis import api_versions
from mini_broker.server.apis.produce_wire import MAX_VERSION, MIN_VERSION
from mini_broker.server.kafka_apis import KafkaApis, fit_to_version
from mini_broker.server.replica_manager import PartitionResponse
from pykafka_client.errors import FencedLeaderEpochError, NotLeaderOrFollowerError
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ProduceResponse
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.unit.broker.server.test_produce_build import reference_body

pytestmark = pytest.mark.skipif(_native.kernel is None, reason="the compiled record kernel is off")

VERSIONS = range(MIN_VERSION, MAX_VERSION + 1)
HINT_CODES = frozenset({NotLeaderOrFollowerError.code, FencedLeaderEpochError.code})
int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
codes = st.sampled_from([0, 0, 0, 1, 2, 10, 45, 87, NotLeaderOrFollowerError.code, FencedLeaderEpochError.code]) | int16
results = st.builds(
    PartitionResponse, error_code=codes, base_offset=int64, log_append_time_ms=int64, log_start_offset=int64,
    record_errors=st.just([]) | st.lists(st.tuples(int32, st.none() | st.text(max_size=5)), max_size=2),
    error_message=st.none() | st.none() | st.text(max_size=8), last_offset=int64)
names = st.sampled_from(["t", "topic-b", "é☃", "", "n" * 200])


def generic(version: int, order: list[TopicPartition], res: dict[TopicPartition, PartitionResponse],
            correlation_id: int) -> bytes:
    body = reference_body(version, order, res)  # the handler's body (test_produce_build checks it is)
    fit_to_version(body, version)
    pieces = headers.encode_response(body, int(ApiKey.PRODUCE), version, correlation_id)
    return b"".join(bytes(c) for c in pieces)  # type: ignore[arg-type]  # a response's pieces are bytes here


def frame(version: int, order: list[TopicPartition], res: dict[TopicPartition, PartitionResponse],
          correlation_id: int) -> bytes | None:
    assert _native.kernel is not None
    return _native.kernel.produce_results_frame(order, res, version, correlation_id, HINT_CODES)


def must_decline(version: int, order: list[TopicPartition], res: dict[TopicPartition, PartitionResponse]) -> bool:
    """What only the handler's body path answers: record errors or a message at v8+, a leader hint at v10+, a topic
    whose partitions are apart in the order."""
    for tp in order:
        r = res[tp]
        if version >= 8 and (r.record_errors or r.error_message is not None):
            return True
        if version >= 10 and r.error_code in HINT_CODES:
            return True
    topics = [tp.topic for tp in order]
    runs = [t for i, t in enumerate(topics) if i == 0 or topics[i - 1] != t]
    return len(runs) != len(set(runs))


@settings(max_examples=500, deadline=None)
@given(version=st.sampled_from(VERSIONS), correlation_id=int32,
       parts=st.lists(st.tuples(names, int32, results), max_size=7, unique_by=lambda x: (x[0], x[1])))
def test_the_frame_is_the_generated_codecs_or_declined(version: int, correlation_id: int,
                                                       parts: list[tuple[str, int, PartitionResponse]]) -> None:
    order = [TopicPartition(t, p) for t, p, _ in parts]
    res = {TopicPartition(t, p): r for t, p, r in parts}
    got = frame(version, order, res, correlation_id)
    if must_decline(version, order, res):
        assert got is None
    else:
        assert got == generic(version, order, res, correlation_id)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_usual_answer(version: int) -> None:
    """One topic, one partition, no error: the bench's answer, also as bytes decoded back."""
    tp = TopicPartition("t", 0)
    res = {tp: PartitionResponse(error_code=0, base_offset=4440, log_append_time_ms=-1, log_start_offset=0,
                                 last_offset=4587)}
    got = frame(version, [tp], res, 12)
    assert got is not None and got == generic(version, [tp], res, 12)
    decoded = headers.decode_response(memoryview(got)[4:], int(ApiKey.PRODUCE), version, 12)
    assert isinstance(decoded, ProduceResponse)
    assert decoded.responses[0].partition_responses[0].base_offset == 4440


@pytest.mark.parametrize("version", VERSIONS)
def test_many_partitions_and_long_names(version: int) -> None:
    """Counts and a name past one varint byte (the flexible versions' multi-byte varints); topics in runs."""
    order = [TopicPartition("n" * 300, i) for i in range(130)] + [TopicPartition("u", i) for i in range(3)]
    res = {tp: PartitionResponse(error_code=3 if tp.partition % 7 == 0 else 0, base_offset=tp.partition)
           for tp in order}
    got = frame(version, order, res, 5)
    assert got is not None and got == generic(version, order, res, 5)


def test_declines_what_the_wire_cannot_hold_and_what_is_not_a_result() -> None:
    tp = TopicPartition("t", 0)
    too_big = {tp: PartitionResponse(error_code=2**15)}
    assert frame(11, [tp], too_big, 1) is None
    assert frame(11, [TopicPartition("t", 2**31)], {TopicPartition("t", 2**31): PartitionResponse()}, 1) is None
    assert frame(11, [tp], {}, 1) is None  # no result for a partition
    assert frame(12, [tp], {tp: PartitionResponse()}, 1) is None  # a version the broker does not serve
    assert frame(2, [tp], {tp: PartitionResponse()}, 1) is None
    assert frame(11, [tp], {tp: PartitionResponse()}, 2**31) is None
    assert frame(11, [TopicPartition("\ud800", 0)], {TopicPartition("\ud800", 0): PartitionResponse()}, 1) is None


# --- KafkaApis.send_frame ----------------------------------------------------------------------------------------


class Sink:
    def __init__(self) -> None:
        self.responses: list[Response] = []

    def enqueue_response(self, response: Response) -> None:
        self.responses.append(response)


def _apis() -> tuple[KafkaApis, Sink]:
    channel = RequestChannel(10)
    sink = Sink()
    channel.add_processor(0, sink)
    return KafkaApis(channel, [api_versions.API], None, None, MockTime()), sink


def _request() -> Request:
    return Request(0, RequestContext(int(ApiKey.PRODUCE), 11, 7, None, "c", "127.0.0.1:1", "PLAINTEXT"), None, 10, 1)


class Gate:
    def __init__(self, keys: frozenset[int]) -> None:
        self.api_keys = keys
        self.held: list[object] = []

    def hold(self, request: Request, body: object, release: Callable[[], None]) -> None:
        self.held.append(body)


class Quotas:
    def __init__(self, active: bool) -> None:
        self.active = active

    def any_active(self) -> bool:
        return self.active


def test_send_frame_sends_the_frame_as_the_whole_answer() -> None:
    apis, sink = _apis()
    request = _request()
    frame_bytes = b"\x00\x00\x00\x04\x00\x00\x00\x07"
    assert apis.send_frame(request, frame_bytes)
    (sent,) = sink.responses
    assert isinstance(sent, SendResponse) and sent.request is request
    assert sent.buffers == [frame_bytes] and sent.size == 8 and sent.body is None and sent.on_complete is None
    assert request.response_complete_time_ns >= 0 and request.api_local_complete_time_ns >= 0


@pytest.mark.parametrize("obstacle", ["gate", "quota"])
def test_send_frame_sends_nothing_where_the_body_may_change(obstacle: str) -> None:
    """A response gate holding Produce (a cluster's coordinator appends) or an active client quota (a throttle time
    in the body): nothing is sent, the caller answers with the body."""
    apis, sink = _apis()
    any_apis: Any = apis
    if obstacle == "gate":
        any_apis.response_gate = Gate(frozenset({int(ApiKey.PRODUCE)}))
    else:
        any_apis.quotas = Quotas(True)
    request = _request()
    assert not apis.send_frame(request, b"\x00\x00\x00\x04\x00\x00\x00\x07")
    assert sink.responses == [] and request.response_complete_time_ns == -1


@pytest.mark.parametrize("obstacle", ["gate of other apis", "inactive quota"])
def test_send_frame_sends_past_what_does_not_apply(obstacle: str) -> None:
    apis, sink = _apis()
    any_apis: Any = apis
    if obstacle == "gate of other apis":
        any_apis.response_gate = Gate(frozenset({int(ApiKey.TXN_OFFSET_COMMIT)}))
    else:
        any_apis.quotas = Quotas(False)
    assert apis.send_frame(_request(), b"\x00\x00\x00\x04\x00\x00\x00\x07")
    assert len(sink.responses) == 1


# --- the transactional bit of each partition's first batch ----------------------------------------------------------


def _transactional_by_spec(entries: list[tuple[TopicPartition, object]]) -> bool:
    """A v2 batch header's magic (byte 16) is 2 and its attributes' transactional bit (0x10 of byte 22) is set."""
    for _, records in entries:
        if isinstance(records, (bytes, bytearray, memoryview)) and len(records) >= 23:
            data = bytes(records)
            if data[16] == 2 and data[22] & 0x10:
                return True
    return False


headers_bytes = st.builds(lambda head, magic, attributes, tail: head[:16] + bytes([magic]) + head[17:22]
                          + bytes([attributes]) + tail,
                          st.binary(min_size=22, max_size=22), st.sampled_from([0, 1, 2, 2, 2]),
                          st.integers(0, 255), st.binary(max_size=8))
records_values = st.one_of(
    st.none(), st.binary(max_size=30), headers_bytes,
    headers_bytes.map(bytearray), headers_bytes.map(lambda b: memoryview(b)),
    headers_bytes.map(lambda b: memoryview(bytearray(b"..." + b))[3:]))


@settings(max_examples=400, deadline=None)
@given(st.lists(records_values, max_size=4))
def test_any_transactional_reads_the_first_batchs_bit(values: list[object]) -> None:
    assert _native.kernel is not None
    entries = [(TopicPartition("t", i), v) for i, v in enumerate(values)]
    assert _native.kernel.any_transactional(entries) is _transactional_by_spec(entries)


def test_any_transactional_declines_views_it_does_not_read_as_bytes() -> None:
    assert _native.kernel is not None
    data = bytearray(32)
    data[16], data[22] = 2, 0x10
    assert _native.kernel.any_transactional([(TopicPartition("t", 0), memoryview(data).cast("H"))]) is None
    assert _native.kernel.any_transactional([(TopicPartition("t", 0), memoryview(data)[::2])]) is None
    released = memoryview(data)
    released.release()
    assert _native.kernel.any_transactional([(TopicPartition("t", 0), released)]) is None
    assert _native.kernel.any_transactional([(TopicPartition("t", 0), memoryview(data))]) is True
