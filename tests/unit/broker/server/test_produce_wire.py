"""The direct ProduceResponse encoder (mini_broker.server.apis.produce_wire) writes exactly the generated codec's
frame for every body the broker builds, at every version it serves, and leaves what it does not handle to it; its
direct ProduceRequest reader reads exactly what the generated reader reads, or declines."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.network.request_channel import RequestChannel
from mini_broker.server.apis.produce_wire import (
    MAX_VERSION,
    MIN_VERSION,
    encode_produce_response,
    read_produce_request,
)
from mini_broker.server.apis.registry import ALL_APIS
from mini_broker.server.kafka_apis import KafkaApis, fit_to_version
from pykafka_client.errors import IllegalArgumentError
from pykafka_client.protocol import headers
from pykafka_client.protocol.messages import ProduceRequest, ProduceResponse, RequestHeader
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.types import Reader
from tests.doubles.frames import frame_bytes

VERSIONS = range(MIN_VERSION, MAX_VERSION + 1)
Part = ProduceResponse.PartitionProduceResponse
RecordError = ProduceResponse.BatchIndexAndErrorMessage

int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
text = st.text(max_size=40) | st.sampled_from(["", "é☃𝄞", "x" * 200])
record_errors = st.lists(st.builds(RecordError, batch_index=int32, batch_index_error_message=st.none() | text),
                         max_size=3)
partitions = st.builds(Part, index=int32, error_code=int16, base_offset=int64, log_append_time_ms=int64,
                       log_start_offset=int64, record_errors=record_errors | st.just([]),
                       error_message=st.none() | text)
topics = st.builds(ProduceResponse.TopicProduceResponse, name=text,
                   partition_responses=st.lists(partitions, max_size=4))
bodies = st.builds(ProduceResponse, responses=st.lists(topics, max_size=3), throttle_time_ms=int32)


def generic(body: ProduceResponse, version: int, correlation_id: int) -> bytes:
    body = copy.deepcopy(body)
    fit_to_version(body, version)
    return frame_bytes(headers.encode_response(body, 0, version, correlation_id))


def direct(body: ProduceResponse, version: int, correlation_id: int) -> bytes:
    pieces = encode_produce_response(body, version, correlation_id)
    assert pieces is not None, f"v{version}: the direct encoder declined {body}"
    return frame_bytes(pieces)


@settings(max_examples=400, deadline=None)
@given(bodies, st.sampled_from(VERSIONS), int32)
def test_same_bytes_as_the_generated_codec(body: ProduceResponse, version: int, correlation_id: int) -> None:
    assert direct(body, version, correlation_id) == generic(body, version, correlation_id)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_usual_answer_and_its_decoding(version: int) -> None:
    body = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=[
        Part(index=3, error_code=0, base_offset=1234, log_append_time_ms=-1, log_start_offset=0)])])
    frame = direct(body, version, 77)
    assert frame == generic(body, version, 77)
    decoded = headers.decode_response(memoryview(frame)[4:], 0, version, 77)
    assert isinstance(decoded, ProduceResponse)
    assert decoded.responses[0].partition_responses[0].base_offset == 1234


@pytest.mark.parametrize("version", VERSIONS)
def test_long_varints_and_many_partitions(version: int) -> None:
    """Counts and lengths past one varint byte (127+): the flexible versions' multi-byte varints."""
    body = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="n" * 300, partition_responses=[
        Part(index=i, error_code=87, base_offset=-1, error_message="m" * 130,
             record_errors=[RecordError(batch_index=j, batch_index_error_message=None) for j in range(130)])
        for i in range(130)])])
    assert direct(body, version, 1) == generic(body, version, 1)


@pytest.mark.parametrize("version", [2, 12, -1])
def test_versions_outside_its_range_are_left_to_the_codec(version: int) -> None:
    assert encode_produce_response(ProduceResponse(), version, 1) is None


@pytest.mark.parametrize("version", [10, 11])
def test_leader_hints_are_left_to_the_codec(version: int) -> None:
    hinted = Part(index=0, error_code=6, current_leader=ProduceResponse.LeaderIdAndEpoch(leader_id=2, leader_epoch=5))
    topic = ProduceResponse.TopicProduceResponse(name="t", partition_responses=[hinted])
    assert encode_produce_response(ProduceResponse(responses=[topic]), version, 1) is None
    endpoints = [ProduceResponse.NodeEndpoint(node_id=2, host="h", port=9092)]
    assert encode_produce_response(ProduceResponse(node_endpoints=endpoints), version, 1) is None


@pytest.mark.parametrize("body", [
    ProduceResponse(throttle_time_ms=2**31),
    ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="x" * 40000)]),
    ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="\ud800")]),
    ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=[
        Part(error_code=2**15)])]),
])
@pytest.mark.parametrize("version", VERSIONS)
def test_bad_values_are_left_to_the_codec_which_raises(body: ProduceResponse, version: int) -> None:
    assert encode_produce_response(body, version, 1) is None
    with pytest.raises(IllegalArgumentError):
        generic(body, version, 1)


# --- the request reader ------------------------------------------------------------------------------------------

records = st.none() | st.binary(max_size=300)
requests = st.builds(
    ProduceRequest, transactional_id=st.none() | text, acks=int16, timeout_ms=int32,
    topic_data=st.lists(st.builds(ProduceRequest.TopicProduceData, name=text, partition_data=st.lists(
        st.builds(ProduceRequest.PartitionProduceData, index=int32, records=records), max_size=3)), max_size=3))


def frame_payload(body: ProduceRequest, version: int, client_id: str | None) -> bytes:
    return frame_bytes(headers.encode_request(body, version, 9, client_id))[4:]


def generated_read(payload: bytes, version: int) -> tuple[str | None, ProduceRequest, int]:
    reader = Reader(memoryview(payload), 0)
    header = RequestHeader.read(reader, headers.request_header_version(0, version))
    body = ProduceRequest.read(reader, version)
    return header.client_id, body, reader.remaining()


@settings(max_examples=400, deadline=None)
@given(requests, st.sampled_from(VERSIONS), st.none() | text)
def test_reads_what_the_generated_reader_reads(body: ProduceRequest, version: int, client_id: str | None) -> None:
    payload = frame_payload(body, version, client_id)
    parsed = read_produce_request(memoryview(payload), version)
    assert parsed is not None
    client, expected, _ = generated_read(payload, version)
    assert parsed == (client, expected) == (client_id, body)
    for topic in parsed[1].topic_data:
        for p in topic.partition_data:
            assert p.records is None or isinstance(p.records, memoryview)  # a view into the frame, as generated


@pytest.mark.parametrize("version", VERSIONS)
def test_a_producers_request_with_a_large_records_field(version: int) -> None:
    """Records of 16 KB and 2 MB: the flexible versions' 3- and 4-byte varint lengths."""
    for size in (16384, 2 << 20):
        body = ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
            name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"r" * size)])])
        payload = frame_payload(body, version, "producer-1")
        assert read_produce_request(memoryview(payload), version) == ("producer-1", body)


@settings(max_examples=600, deadline=None)
@given(requests, st.sampled_from(VERSIONS), st.data())
def test_damaged_frames_read_the_same_or_are_left_to_the_generated_reader(
        body: ProduceRequest, version: int, data: st.DataObject) -> None:
    """Bytes changed, cut or added anywhere: whatever the direct reader returns is what the generated one returns;
    when it declines, the generated reader decides (and raises or not) as it always did."""
    payload = bytearray(frame_payload(body, version, "c"))
    action = data.draw(st.sampled_from(["flip", "cut", "append"]))
    if action == "flip":
        at = data.draw(st.integers(8, len(payload) - 1))
        payload[at] = data.draw(st.integers(0, 255))
    elif action == "cut":
        del payload[data.draw(st.integers(8, len(payload) - 1)):]
    else:
        payload += data.draw(st.binary(min_size=1, max_size=4))
    parsed = read_produce_request(memoryview(bytes(payload)), version)
    if parsed is None:
        return
    client, expected, trailing = generated_read(bytes(payload), version)
    assert trailing == 0 and parsed == (client, expected)


@pytest.mark.parametrize("version", VERSIONS)
def test_tagged_fields_trailing_bytes_and_other_versions_are_left_to_the_generated_reader(version: int) -> None:
    body = ProduceRequest(acks=1, topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[
        ProduceRequest.PartitionProduceData(index=0, records=b"x")])])
    payload = frame_payload(body, version, None)
    assert read_produce_request(memoryview(payload + b"\x00"), version) is None
    assert read_produce_request(memoryview(payload), 2) is None
    if version >= 9:
        body.topic_data[0].partition_data[0].unknown_tagged_fields = [(5, b"ab")]
        assert read_produce_request(memoryview(frame_payload(body, version, None)), version) is None


def test_kafka_apis_parses_produce_frames_to_the_same_request() -> None:
    apis = KafkaApis(RequestChannel(1), ALL_APIS)
    body = ProduceRequest(acks=1, timeout_ms=5, topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[
        ProduceRequest.PartitionProduceData(index=2, records=b"abc")])])
    for version in VERSIONS:
        request = apis.parse_request(0, "c", "a", "L", memoryview(frame_payload(body, version, "cid")), 0)
        assert request.body == body
        assert (request.context.client_id, request.context.correlation_id, request.context.header_version) == (
            "cid", 9, headers.request_header_version(0, version))


plain_partitions = st.builds(Part, index=int32, error_code=int16, base_offset=int64, log_append_time_ms=int64,
                             log_start_offset=int64)
plain_bodies = st.builds(ProduceResponse, responses=st.lists(st.builds(
    ProduceResponse.TopicProduceResponse, name=text, partition_responses=st.lists(plain_partitions, max_size=4)),
    max_size=3), throttle_time_ms=int32)


def python_encoder(body: ProduceResponse, version: int, correlation_id: int) -> list[bytes] | None:
    previous = _native.use_native(False)
    try:
        return encode_produce_response(body, version, correlation_id)  # type: ignore[return-value]
    finally:
        _native.use_native(previous)


@pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")
@settings(max_examples=400, deadline=None)
@given(plain_bodies | bodies, st.integers(0, 13), int32 | st.sampled_from([2**31, -(2**31) - 1]))
def test_the_kernels_frame_is_the_python_encoders(body: ProduceResponse, version: int, correlation_id: int) -> None:
    """The kernel's encoder (the usual answers) writes what the Python encoder writes, and takes every answer without
    record errors, messages or leader hints at v3-v11; the rest it leaves to the Python encoder."""
    kernel = _native.loaded_kernel()
    assert kernel is not None
    frame = kernel.encode_produce_response(body, version, correlation_id, ProduceResponse.LeaderIdAndEpoch)
    reference = python_encoder(body, version, correlation_id)
    plain = all(not p.record_errors and p.error_message is None for t in body.responses for p in t.partition_responses)
    if frame is None:
        assert not (plain and MIN_VERSION <= version <= MAX_VERSION and -(2**31) <= correlation_id < 2**31
                    and all(len(t.name.encode()) <= 0x7FFF for t in body.responses))
    else:
        assert reference is not None and [frame] == reference
