"""The compiled decoder of the producer's Produce responses into results (``_kernel.decode_produce_results``, used
by ``NetworkClient`` for the Sender's ``DrainedProduceRequest``) against the reference decoder
(``protocol.headers.decode_response`` in pure Python): for random responses at every version, whole, truncated,
with a byte changed or a trailing byte, and for a correlation id that does not match, the kernel either declines
(None: the reference decodes, and raises its errors) or gives a ``DecodedProduceResponse`` equal to the reference's
body, holding the results the Sender's completion reads. It takes exactly the responses whose partitions all
succeeded (error NONE, no record errors, no error message) with nothing tagged, at versions 3-11."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.request_encoding import compiled_codecs
from pykafka_client.producer.sender import DecodedProduceResponse, DrainedProduceRequest
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ProduceResponse
from pykafka_client.protocol.records import _native
from tests.unit.protocol.test_produce_response_native import frame, int32, responses

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

R = ProduceResponse


def reference(payload: bytes, version: int, correlation_id: int) -> tuple[str, Any]:
    previous = _native.use_native(False)
    try:
        return "ok", headers.decode_response(payload, ApiKey.PRODUCE, version, correlation_id)
    except Exception as e:
        return "error", (type(e), str(e))
    finally:
        _native.use_native(previous)


def kernel_results(payload: bytes, version: int, correlation_id: int) -> DecodedProduceResponse | None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    return kernel.decode_produce_results(DecodedProduceResponse, memoryview(payload), version, correlation_id)


def common(body: ProduceResponse) -> bool:
    """The responses the kernel takes: every partition succeeded, nothing the results cannot hold."""
    return not body.node_endpoints and not body.unknown_tagged_fields and all(
        not t.unknown_tagged_fields and all(
            p.error_code == 0 and not p.record_errors and p.error_message is None
            and p.current_leader == R.LeaderIdAndEpoch() and not p.unknown_tagged_fields
            for p in t.partition_responses
        )
        for t in body.responses
    )


def check(payload: bytes, version: int, correlation_id: int) -> DecodedProduceResponse | None:
    ref = reference(payload, version, correlation_id)
    got = kernel_results(payload, version, correlation_id)
    if got is None:
        # declined: the reference decodes it (or raises), and it is not a response the kernel takes
        assert not (ref[0] == "ok" and 3 <= version <= 11 and common(ref[1]))
        return None
    assert ref[0] == "ok" and type(got) is DecodedProduceResponse
    body: ProduceResponse = ref[1]
    assert got.results == [
        (t.name, [(p.index, p.base_offset, p.log_append_time_ms, p.log_start_offset) for p in t.partition_responses])
        for t in body.responses
    ]
    assert got.throttle_time_ms == body.throttle_time_ms and got.node_endpoints == [] and got.unknown_tagged_fields is None
    assert got == body and body == got  # (builds its responses: the reference's dataclasses)
    assert got.results is None and got.responses == body.responses
    assert frame(got, version, correlation_id) == frame(body, version, correlation_id)
    return got


@settings(max_examples=300, deadline=None)
@given(responses, st.integers(0, 11), int32, st.data())
def test_random_produce_responses_decode_as_the_reference(
    resp: ProduceResponse, version: int, correlation_id: int, data: st.DataObject
) -> None:
    payload = frame(resp, version, correlation_id)
    if payload is None:
        return
    check(payload, version, correlation_id)
    assert check(payload, version, correlation_id ^ 1) is None  # another request's response: the reference's error
    cut = data.draw(st.integers(0, len(payload)))
    check(payload[:cut], version, correlation_id)
    assert check(payload + b"\0", version, correlation_id) is None  # a trailing byte
    if payload:
        at = data.draw(st.integers(0, len(payload) - 1))
        flipped = bytearray(payload)
        flipped[at] ^= data.draw(st.integers(1, 255))
        check(bytes(flipped), version, correlation_id)


def test_the_common_response_is_decoded_into_results_at_every_version() -> None:
    resp = R([R.TopicProduceResponse("t", [R.PartitionProduceResponse(0, 0, 42, -1, 7), R.PartitionProduceResponse(3, 0, 50, 9, 7)]),
              R.TopicProduceResponse("t", [R.PartitionProduceResponse(1, 0, 5)])], 12)
    for version in range(3, 12):
        payload = frame(resp, version, 9)
        assert payload is not None
        got = check(payload, version, 9)
        lso = 7 if version >= 5 else -1
        assert got is not None
        got = kernel_results(payload, version, 9)
        assert got is not None and got.results == [("t", [(0, 42, -1, lso), (3, 50, 9, lso)]), ("t", [(1, 5, -1, -1)])]


@pytest.mark.parametrize("version", [2, 12])
def test_versions_outside_3_to_11_are_left_to_the_reference(version: int) -> None:
    resp = R([R.TopicProduceResponse("t", [R.PartitionProduceResponse(0, 0, 42)])])
    payload = frame(resp, min(version, 11), 1)
    assert payload is not None
    assert kernel_results(payload, version, 1) is None


def test_only_the_type_set_up_is_made() -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    payload = frame(R([]), 9, 1)
    assert payload is not None
    assert kernel.decode_produce_results(ProduceResponse, payload, 9, 1) is None
    assert type(kernel.decode_produce_results(DecodedProduceResponse, payload, 9, 1)) is DecodedProduceResponse


def test_the_network_client_uses_it_for_the_senders_requests() -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    previous = _native.use_native(True)
    try:
        decode = compiled_codecs().decoders[DrainedProduceRequest]
        assert compiled_codecs().encoders[DrainedProduceRequest] is kernel.encode_produce_request
    finally:
        _native.use_native(previous)
    payload = frame(R([R.TopicProduceResponse("t", [R.PartitionProduceResponse(0, 0, 42)])]), 9, 1)
    assert payload is not None
    assert type(decode(payload, 9, 1)) is DecodedProduceResponse
    _native.use_native(False)
    try:
        assert compiled_codecs().decoders == {} and compiled_codecs().encoders == {}
    finally:
        _native.use_native(previous)


def test_a_decoded_response_changed_by_its_reader_stays_changed() -> None:
    """``responses`` set (or built and then changed) is what the response holds from then on."""
    payload = frame(R([R.TopicProduceResponse("t", [R.PartitionProduceResponse(0, 0, 42)])]), 9, 1)
    assert payload is not None
    got = kernel_results(payload, 9, 1)
    assert got is not None
    got.responses[0].partition_responses[0].base_offset = 7
    assert got.responses[0].partition_responses[0].base_offset == 7
    got.responses = []
    assert got.results is None and got.responses == [] and got == R([])
