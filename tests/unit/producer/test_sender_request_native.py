"""The Sender's produce request written straight from the drained parts (``DrainedProduceRequest``, framed by
``_kernel.encode_produce_request`` through ``_kernel.produce_request_data``) == the generic encoder of the same
request built as dataclasses (``ProduceRequest.encode`` / ``headers.encode_request``): for random topics,
partitions, records, transactional ids and every version, the same body bytes and the same frame chunks. Its
``topic_data``, built when read, is the request's dataclass form (equal to the ProduceRequest the Sender used to
build); once read, or set, the fields are the request. Without the kernel the same bytes come out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.request_encoding import encode_request_frame
from pykafka_client.producer.sender import DrainedProduceRequest
from pykafka_client.protocol import headers
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from tests.doubles.frames import chunk_bytes, frame_bytes

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

_topics = st.sampled_from(["t", "topic-b", "é" * 12, ""])
_records = st.one_of(st.binary(max_size=40), st.binary(min_size=500, max_size=600), st.just(b"r" * 20000))
_parts = st.lists(
    st.tuples(st.builds(TopicPartition, _topics, st.integers(0, 2**31 - 1)), _records), max_size=8,
    unique_by=lambda p: (p[0].topic, p[0].partition),
)
_tids = st.one_of(st.none(), st.text(max_size=10))


def _dataclasses(tid: str | None, acks: int, timeout_ms: int, parts: list[tuple[TopicPartition, bytes]]) -> ProduceRequest:
    """The request as the Sender built it before: partitions grouped by topic in first-seen order."""
    topics: dict[str, list[ProduceRequest.PartitionProduceData]] = {}
    for tp, data in parts:
        topics.setdefault(tp.topic, []).append(ProduceRequest.PartitionProduceData(index=tp.partition, records=data))
    return ProduceRequest(tid, acks, timeout_ms, [ProduceRequest.TopicProduceData(name=t, partition_data=p) for t, p in topics.items()])


def _frame(body: ProduceRequest, version: int, native: bool) -> list[bytes]:
    previous = _native.use_native(native)
    try:
        return [chunk_bytes(c) for c in encode_request_frame(body, version, 17, "client")]
    finally:
        _native.use_native(previous)


@settings(max_examples=300, deadline=None)
@given(_tids, st.sampled_from([-1, 0, 1]), st.integers(0, 2**31 - 1), _parts, st.integers(3, 11))
def test_body_and_frame_are_the_generic_encoders(
    tid: str | None, acks: int, timeout_ms: int, parts: list[tuple[TopicPartition, bytes]], version: int
) -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    reference = _dataclasses(tid, acks, timeout_ms, parts)
    assert kernel.produce_request_data(tid, acks, timeout_ms, parts, version) == reference.encode(version)
    expected = [chunk_bytes(c) for c in headers.encode_request(reference, version, 17, "client")]
    drained = DrainedProduceRequest.of(tid, acks, timeout_ms, parts)
    assert _frame(drained, version, True) == expected  # from the parts
    assert drained.parts is not None  # (nothing read topic_data)
    assert _frame(drained, version, False) == expected  # the reference reads topic_data
    assert drained.parts is None
    fields = ("transactional_id", "acks", "timeout_ms", "topic_data", "unknown_tagged_fields")
    assert [getattr(drained, f) for f in fields] == [getattr(reference, f) for f in fields]
    assert _frame(drained, version, True) == expected  # from the fields


def test_the_kernel_writes_from_the_parts_and_keeps_large_payloads_whole() -> None:
    payload = b"x" * 16000
    parts = [(TopicPartition("a", 1), b"small"), (TopicPartition("b", 0), payload), (TopicPartition("a", 0), b"")]
    drained = DrainedProduceRequest.of(None, 1, 30000, parts)
    kernel = _native.loaded_kernel()
    assert kernel is not None
    chunks = kernel.encode_produce_request(drained, 9, 5, "client")
    assert chunks is not None
    assert any(c is payload for c in chunks)
    assert drained.parts is parts  # topic_data was never built
    reference = _dataclasses(None, 1, 30000, parts)
    assert [t.name for t in reference.topic_data] == ["a", "b"]
    assert frame_bytes(chunks) == frame_bytes(headers.encode_request(reference, 9, 5, "client"))


def test_setting_topic_data_replaces_the_parts() -> None:
    drained = DrainedProduceRequest.of(None, 1, 30000, [(TopicPartition("a", 0), b"one")])
    other = _dataclasses(None, 1, 30000, [(TopicPartition("b", 3), b"two")])
    drained.topic_data = other.topic_data
    assert drained.parts is None
    assert _frame(drained, 11, True) == [chunk_bytes(c) for c in headers.encode_request(other, 11, 17, "client")]


@pytest.mark.parametrize(
    "args",
    [
        (None, 1, 1000, [(TopicPartition("t", 0), b"r")], 2),  # before v3: the generic encoder
        (None, 1, 1000, [(TopicPartition("t", 0), b"r")], 12),
        (None, 1 << 20, 1000, [(TopicPartition("t", 0), b"r")], 9),  # acks out of int16
        (None, 1, 1000, [(TopicPartition("t", 0), bytearray(b"r"))], 9),  # records not bytes
        (None, 1, 1000, [(TopicPartition("t" * 40000, 0), b"r")], 9),  # a name over 32767 bytes
        (5, 1, 1000, [(TopicPartition("t", 0), b"r")], 9),  # a transactional id that is not a str
    ],
)
def test_produce_request_data_declines_what_the_generic_encoder_judges(args: tuple[object, ...]) -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    assert kernel.produce_request_data(*args) is None  # type: ignore[arg-type]  # inputs the encoder must decline
