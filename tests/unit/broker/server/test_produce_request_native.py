"""The compiled Produce request reader (``_kernel.read_produce_request``, what ``produce_wire.read_produce_request``
runs first on the broker's network thread) against its reference, ``produce_wire._read`` (the kernel switched off):
for random requests at every version, whole, cut, with bytes changed, added or removed, and for random bytes, both
give equal objects (the same classes, the records views into the frame) or both decline. And through
``KafkaApis.parse_request``: the same request, or the same error (type and message) once the generated reader has
judged a frame both decline."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.network.request_channel import RequestChannel
from mini_broker.server.apis.produce_wire import MAX_VERSION, MIN_VERSION, read_produce_request
from mini_broker.server.apis.registry import ALL_APIS
from mini_broker.server.kafka_apis import KafkaApis
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records import _native
from tests.unit.broker.server.test_produce_wire import frame_payload, requests, text

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

VERSIONS = range(MIN_VERSION, MAX_VERSION + 1)


def kernel_read(payload: memoryview, version: int) -> tuple[str | None, ProduceRequest] | None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    return kernel.read_produce_request(payload, version, ProduceRequest)


def reference_read(payload: memoryview, version: int) -> tuple[str | None, ProduceRequest] | None:
    previous = _native.use_native(False)
    try:
        return read_produce_request(payload, version)
    finally:
        _native.use_native(previous)


def assert_same(payload: bytes, version: int) -> tuple[str | None, ProduceRequest] | None:
    """The kernel's result is the reference's: both None, or equal objects of the same classes whose records are
    views of the frame's memory."""
    frame = bytearray(payload)
    got = kernel_read(memoryview(frame), version)
    expected = reference_read(memoryview(frame), version)
    assert got == expected
    if got is not None:
        client_id, body = got
        assert type(client_id) is type(expected[0]) and type(body) is ProduceRequest  # type: ignore[index]
        assert body.unknown_tagged_fields is None
        for topic in body.topic_data:
            assert type(topic) is ProduceRequest.TopicProduceData and topic.unknown_tagged_fields is None
            for part in topic.partition_data:
                assert type(part) is ProduceRequest.PartitionProduceData and part.unknown_tagged_fields is None
                if part.records is not None:
                    assert isinstance(part.records, memoryview) and part.records.obj is frame
    return got


@settings(max_examples=400, deadline=None)
@given(requests, st.sampled_from(VERSIONS), st.none() | text)
def test_reads_every_request_as_the_reference_does(body: ProduceRequest, version: int, client_id: str | None) -> None:
    assert assert_same(frame_payload(body, version, client_id), version) == (client_id, body)


@settings(max_examples=1500, deadline=None)
@given(requests, st.sampled_from(VERSIONS), st.data())
def test_damaged_frames_give_what_the_reference_gives(body: ProduceRequest, version: int, data: st.DataObject) -> None:
    payload = bytearray(frame_payload(body, version, "c"))
    for _ in range(data.draw(st.integers(1, 3))):
        action = data.draw(st.sampled_from(["flip", "cut", "append", "insert", "delete"]))
        at = data.draw(st.integers(0, max(0, len(payload) - 1)))
        if action == "flip" and payload:
            payload[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del payload[at:]
        elif action == "append":
            payload += data.draw(st.binary(min_size=1, max_size=4))
        elif action == "insert":
            payload[at:at] = data.draw(st.binary(min_size=1, max_size=4))
        else:
            del payload[at:at + data.draw(st.integers(1, 4))]
    assert_same(bytes(payload), data.draw(st.sampled_from([version, *VERSIONS])))


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 12))
def test_random_bytes_give_what_the_reference_gives(payload: bytes, version: int) -> None:
    assert_same(payload, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_long_varints_and_lengths_past_the_end(version: int) -> None:
    """Records of 2 MB (a 4-byte varint length when flexible), and each length made to reach one byte further."""
    body = ProduceRequest(acks=-1, timeout_ms=30000, transactional_id="tx", topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=b"r" * (2 << 20)),
            ProduceRequest.PartitionProduceData(index=1, records=None)])])
    payload = frame_payload(body, version, "producer-1")
    assert assert_same(payload, version) == ("producer-1", body)
    for cut in (1, 2, 5, len(payload) - 8):
        assert assert_same(payload[:-cut], version) is None


def test_what_it_leaves_to_the_reference() -> None:
    body = ProduceRequest(acks=1, topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[
        ProduceRequest.PartitionProduceData(index=0, records=b"xy")])])
    payload = bytearray(frame_payload(body, 9, "c"))
    # not a memoryview, or not a contiguous one of bytes: the kernel declines, the reference reads it
    assert kernel_read(bytes(payload), 9) is None  # type: ignore[arg-type]
    strided = memoryview(bytearray(b"".join(bytes((b, 0)) for b in payload)))[::2]
    assert kernel_read(strided, 9) is None
    with pytest.raises(BufferError):  # the reference's struct reads take contiguous buffers only
        read_produce_request(strided, 9)
    assert kernel_read(memoryview(payload).cast("b"), 9) is None
    # a released view: declined, and the reference raises as it always did
    released = memoryview(payload)
    released.release()
    assert kernel_read(released, 9) is None
    with pytest.raises(ValueError):
        reference_read(released, 9)
    with pytest.raises(TypeError):
        _native.loaded_kernel().read_produce_request(memoryview(payload), 9, dict)  # type: ignore[union-attr]


def parse_outcome(apis: KafkaApis, payload: bytes) -> tuple[str, Any]:
    try:
        request = apis.parse_request(0, "c", "a", "L", memoryview(bytearray(payload)), 0)
    except Exception as e:
        return "error", (type(e), str(e))
    return "ok", ({f.name: getattr(request.context, f.name) for f in dataclasses.fields(request.context)}, request.body)


@settings(max_examples=300, deadline=None)
@given(requests, st.sampled_from(VERSIONS), st.data())
def test_parse_request_gives_the_same_request_or_error_with_the_kernel_on_or_off(
        body: ProduceRequest, version: int, data: st.DataObject) -> None:
    apis = KafkaApis(RequestChannel(1), ALL_APIS)
    payload = bytearray(frame_payload(body, version, "c"))
    if data.draw(st.booleans()) and len(payload) > 8:
        at = data.draw(st.integers(8, len(payload) - 1))
        if data.draw(st.booleans()):
            payload[at] = data.draw(st.integers(0, 255))
        else:
            del payload[at:]
    on = parse_outcome(apis, bytes(payload))
    previous = _native.use_native(False)
    try:
        off = parse_outcome(apis, bytes(payload))
    finally:
        _native.use_native(previous)
    assert on == off
