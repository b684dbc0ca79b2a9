"""The compiled ProduceRequest frame encoder (``_kernel.encode_produce_request``, used by
``network.request_encoding.encode_request_frame`` on the producer's I/O thread) against the reference
(``protocol.headers.encode_request``): for random requests at every version, the same chunks (the same bytes
split at the same places) or the same error; requests the kernel declines (versions before 3, tagged fields,
records that are not bytes, out-of-range values) go to the reference and come out exactly as before."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.request_encoding import encode_request_frame
from pykafka_client.protocol import headers
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records import _native
from tests.doubles.frames import chunk_bytes

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

names = st.one_of(st.text(max_size=12), st.just("é" * 20))
records = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=500, max_size=600), st.just(b"r" * 20000))
partitions = st.builds(
    ProduceRequest.PartitionProduceData, index=st.integers(-(2**31), 2**31 - 1), records=records
)
topics = st.builds(ProduceRequest.TopicProduceData, name=names, partition_data=st.lists(partitions, max_size=4))
bodies = st.builds(
    ProduceRequest,
    transactional_id=st.one_of(st.none(), st.text(max_size=10)),
    acks=st.sampled_from([-1, 0, 1]),
    timeout_ms=st.integers(0, 2**31 - 1),
    topic_data=st.lists(topics, max_size=3),
)


def outcome(body: ProduceRequest, version: int, correlation_id: int, client_id: str | None) -> tuple[str, Any]:
    try:
        chunks = encode_request_frame(body, version, correlation_id, client_id)
    except Exception as e:
        return "error", (type(e), str(e))
    return "ok", [chunk_bytes(c) for c in chunks]


def both(body: ProduceRequest, version: int, correlation_id: int, client_id: str | None) -> tuple[str, Any]:
    previous = _native.use_native(True)
    try:
        native = outcome(body, version, correlation_id, client_id)
        _native.use_native(False)
        reference = outcome(body, version, correlation_id, client_id)
    finally:
        _native.use_native(previous)
    assert native == reference
    return native


@settings(max_examples=300, deadline=None)
@given(bodies, st.integers(0, 11), st.integers(-(2**31), 2**31 - 1), st.one_of(st.none(), st.text(max_size=10)))
def test_random_produce_requests_encode_the_same_on_both_paths(
    body: ProduceRequest, version: int, correlation_id: int, client_id: str | None
) -> None:
    both(body, version, correlation_id, client_id)


def test_the_kernel_encodes_the_common_request_itself() -> None:
    """The producer's request (bytes records, v3-11) is answered by the kernel, not handed back, and a large
    payload is its own chunk, the very object (not copied)."""
    payload = b"x" * 16000
    body = ProduceRequest(None, 1, 30000, [ProduceRequest.TopicProduceData("t", [ProduceRequest.PartitionProduceData(0, payload)])])
    kernel = _native.loaded_kernel()
    assert kernel is not None
    for version in range(3, 12):
        chunks = kernel.encode_produce_request(body, version, 5, "client")
        assert chunks is not None
        assert any(c is payload for c in chunks)
        assert [chunk_bytes(c) for c in chunks] == [chunk_bytes(c) for c in headers.encode_request(body, version, 5, "client")]


@pytest.mark.parametrize(
    "body, version",
    [
        (ProduceRequest(None, 1, 1000, [ProduceRequest.TopicProduceData("t", [ProduceRequest.PartitionProduceData(0, b"a")])]), 2),
        (ProduceRequest("txn", 1, 1000, []), 2),  # a transactional id before v3: the reference's error
        (ProduceRequest(None, 1, 1000, [], unknown_tagged_fields=[(5, b"z")]), 11),
        (ProduceRequest(None, 1, 1000, [], unknown_tagged_fields=[(5, b"z")]), 8),  # tagged fields the version lacks
        (ProduceRequest(None, 2**15, 1000, []), 9),  # acks out of int16
        (ProduceRequest(None, 1, 1000, [ProduceRequest.TopicProduceData("t" * 40000, [])]), 9),  # name too long
        (ProduceRequest(None, 1, 1000, [ProduceRequest.TopicProduceData("t", [ProduceRequest.PartitionProduceData(0, memoryview(b"ab" * 400))])]), 9),
        (ProduceRequest(None, 1, 1000, [ProduceRequest.TopicProduceData("t", [ProduceRequest.PartitionProduceData(0, bytearray(b"ab"))])]), 7),
        (ProduceRequest(None, 1, 1000, [ProduceRequest.TopicProduceData("\udc80", [])]), 9),  # not encodable as UTF-8
    ],
)
def test_requests_the_kernel_declines_come_out_as_the_reference_makes_them(body: ProduceRequest, version: int) -> None:
    both(body, version, 9, "c")
