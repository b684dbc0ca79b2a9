"""The compiled Produce response decoder (``_kernel.decode_produce_response``, used by
``protocol.headers.decode_response`` on the producer's I/O thread) against the reference: for random responses
at every version, whole or truncated or with a byte changed, and for a correlation id that does not match, both
paths give equal bodies or the same error (type and message). Responses the kernel leaves to the reference
(record errors, a current leader, node endpoints, unknown tagged fields, versions before 3) come out as before."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ProduceResponse
from pykafka_client.protocol.records import _native
from tests.doubles.frames import frame_bytes

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

R = ProduceResponse
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
strings = st.one_of(st.text(max_size=8), st.just("é" * 5))
plain_partitions = st.builds(
    R.PartitionProduceResponse, index=int32, error_code=st.integers(-(2**15), 2**15 - 1), base_offset=int64,
    log_append_time_ms=int64, log_start_offset=int64, error_message=st.one_of(st.none(), strings),
)
unusual_partitions = st.builds(
    R.PartitionProduceResponse, index=int32, error_code=st.integers(0, 100), base_offset=int64,
    record_errors=st.lists(st.builds(R.BatchIndexAndErrorMessage, batch_index=int32,
                                     batch_index_error_message=st.one_of(st.none(), strings)), max_size=2),
    current_leader=st.builds(R.LeaderIdAndEpoch, leader_id=int32, leader_epoch=int32),
)
topics = st.builds(R.TopicProduceResponse, name=strings,
                   partition_responses=st.lists(st.one_of(plain_partitions, plain_partitions, unusual_partitions), max_size=3))
responses = st.builds(
    R, responses=st.lists(topics, max_size=3), throttle_time_ms=int32,
    node_endpoints=st.one_of(st.just([]), st.lists(st.builds(R.NodeEndpoint, node_id=int32, host=strings, port=int32), max_size=1)),
)


def frame(resp: ProduceResponse, version: int, correlation_id: int) -> bytes | None:
    try:
        chunks = headers.encode_response(resp, ApiKey.PRODUCE, version, correlation_id)
    except Exception:
        return None  # a field this version cannot carry
    return frame_bytes(chunks)[4:]


def outcome(payload: bytes, version: int, correlation_id: int) -> tuple[str, Any]:
    try:
        body = headers.decode_response(payload, ApiKey.PRODUCE, version, correlation_id)
    except Exception as e:
        return "error", (type(e), str(e))
    assert type(body) is ProduceResponse
    return "ok", (body, frame(body, version, correlation_id))


def both(payload: bytes, version: int, correlation_id: int) -> tuple[str, Any]:
    previous = _native.use_native(True)
    try:
        native = outcome(payload, version, correlation_id)
        _native.use_native(False)
        reference = outcome(payload, version, correlation_id)
    finally:
        _native.use_native(previous)
    assert native == reference
    return native


@settings(max_examples=300, deadline=None)
@given(responses, st.integers(0, 11), int32, st.data())
def test_random_produce_responses_decode_the_same_on_both_paths(
    resp: ProduceResponse, version: int, correlation_id: int, data: st.DataObject
) -> None:
    payload = frame(resp, version, correlation_id)
    if payload is None:
        return
    assert both(payload, version, correlation_id)[0] == "ok"
    both(payload, version, correlation_id ^ 1)  # another request's response: the reference's error
    cut = data.draw(st.integers(0, len(payload)))
    both(payload[:cut], version, correlation_id)
    both(payload + b"\0", version, correlation_id)  # a trailing byte
    if payload:
        at = data.draw(st.integers(0, len(payload) - 1))
        flipped = bytearray(payload)
        flipped[at] ^= data.draw(st.integers(1, 255))
        both(bytes(flipped), version, correlation_id)


def test_the_kernel_decodes_the_common_response_itself() -> None:
    """The response to the producer's request is parsed by the kernel at every version from 3, not handed
    back (a memoryview payload, as the network layer passes it, too)."""
    resp = R([R.TopicProduceResponse("t", [R.PartitionProduceResponse(0, 0, 42, -1, 7)])], 0)
    kernel = _native.loaded_kernel()
    assert kernel is not None
    for version in range(3, 12):
        payload = frame(resp, version, 9)
        assert payload is not None
        body = kernel.decode_produce_response(memoryview(payload), version, 9, ProduceResponse)
        previous = _native.use_native(False)
        try:
            assert body == headers.decode_response(payload, ApiKey.PRODUCE, version, 9)
        finally:
            _native.use_native(previous)
