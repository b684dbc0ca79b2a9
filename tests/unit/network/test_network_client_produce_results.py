"""The network client decodes the response to the producer's ``DrainedProduceRequest`` with the kernel's
``decode_produce_results`` (a ``DecodedProduceResponse`` holding the per-partition results) when every partition
succeeded; any other produce request, any other answer and any bad frame go through the decoders as before (equal
bodies; a frame that cannot be parsed closes the connection with the same error)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.in_flight_requests import InFlightRequests
from pykafka_client.producer.sender import DecodedProduceResponse, DrainedProduceRequest
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import HeartbeatRequest, HeartbeatResponse, ProduceRequest, ProduceResponse
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from tests.doubles.responses import api_versions_response
from tests.unit.network.harness import Harness

R = ProduceResponse
OK = R([R.TopicProduceResponse("t", [R.PartitionProduceResponse(0, 0, 42, -1, 0)])])
ERROR = R([R.TopicProduceResponse("t", [R.PartitionProduceResponse(0, 6, -1, -1, 0)])])


def _produce(h: Harness, body: ProduceRequest, answer: ProduceResponse, correlation_id_offset: int = 0) -> ClientResponse:
    h.await_ready()
    req = h.client.new_client_request(h.node.id_string, body, h.now, callback=h.callbacks.append)
    h.client.send(req, h.now)
    h.poll()
    h.selector.respond(h.node.id_string, answer, api_key=ApiKey.PRODUCE, correlation_id=req.correlation_id + correlation_id_offset)
    h.poll()
    (response,) = h.callbacks
    return response


def _drained() -> DrainedProduceRequest:
    return DrainedProduceRequest.of(None, 1, 30_000, [(TopicPartition("t", 0), b"")])


@pytest.mark.parametrize("native", [True, False])
def test_the_senders_request_gets_its_results(native: bool) -> None:
    if native and not _native.native_available():
        pytest.skip("the compiled record kernel is not built")
    previous = _native.use_native(native)
    try:
        response = _produce(Harness(), _drained(), OK)
    finally:
        _native.use_native(previous)
    body = response.response_body
    expected = DecodedProduceResponse if native else ProduceResponse
    assert type(body) is expected
    if isinstance(body, DecodedProduceResponse):
        assert body.results == [("t", [(0, 42, -1, 0)])]
    assert body == OK


def test_an_error_answer_and_other_produce_requests_decode_as_before() -> None:
    body = _produce(Harness(), _drained(), ERROR).response_body
    assert type(body) is ProduceResponse and body == ERROR
    plain = ProduceRequest(None, 1, 30_000, [ProduceRequest.TopicProduceData("t", [ProduceRequest.PartitionProduceData(0, b"")])])
    body = _produce(Harness(), plain, OK).response_body
    assert type(body) is ProduceResponse and body == OK


def test_an_answer_to_another_request_closes_the_connection_as_before() -> None:
    response = _produce(Harness(), _drained(), OK, correlation_id_offset=1)
    assert response.was_disconnected and response.response_body is None
    assert "correlation id" in str(response.disconnect_exception)


THROTTLED = R([R.TopicProduceResponse("t", [R.PartitionProduceResponse(0, 0, 43, -1, 0)])], throttle_time_ms=5)
_ANSWERS = {"ok": OK, "error": ERROR, "throttled": THROTTLED, "heartbeat": HeartbeatResponse(error_code=0)}


def _summary(r: ClientResponse) -> tuple[object, ...]:
    return (
        r.request_header, r.destination, r.created_time_ms, r.received_time_ms, r.was_disconnected, r.was_timed_out,
        type(r.response_body).__name__, r.response_body, str(r.disconnect_exception),
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(
    st.sampled_from(["drained", "plain", "heartbeat", "ok", "error", "throttled", "wrong", "garbage", "poll", "ready"]),
    st.integers(0, 1),
), max_size=40))
def test_the_kernel_types_answers_are_the_references(ops: list[tuple[str, int]]) -> None:
    """The producer's answers taken by the kernel's InFlightRequests (complete_receives, with the producer's compiled decoder) and the rest by the
    reference loop give the callbacks what the reference InFlightRequests with the reference loop gives them, whatever
    the mix of requests, answers (errors, throttling, a wrong correlation id, garbage) and polls."""
    if not _native.native_available():
        pytest.skip("the compiled record kernel is not built")
    previous = _native.use_native(True)
    try:
        compiled, reference = Harness(), Harness()
        reference.client.in_flight_requests = InFlightRequests(5)
        assert not isinstance(compiled.client.in_flight_requests, InFlightRequests)
        for h in (compiled, reference):
            for node in h.nodes[:2]:
                h.await_ready(node)
        for op, n in ops:
            for h in (compiled, reference):
                node = h.nodes[n]
                nid = node.id_string
                if op in ("drained", "plain", "heartbeat"):
                    if not h.client.ready(node, h.now):
                        continue
                    body = _drained() if op == "drained" else HeartbeatRequest("g", 1, "m") if op == "heartbeat" else (
                        ProduceRequest(None, 1, 30_000, [
                            ProduceRequest.TopicProduceData("t", [ProduceRequest.PartitionProduceData(0, b"")])]))
                    h.client.send(h.client.new_client_request(nid, body, h.now, callback=h.callbacks.append), h.now)
                elif op in ("ok", "error", "throttled", "wrong"):
                    pending = [r for r in h.selector.unanswered(nid) if r.api_key in (ApiKey.PRODUCE, ApiKey.HEARTBEAT)]
                    if pending:
                        heartbeat = pending[0].api_key == ApiKey.HEARTBEAT
                        answer = _ANSWERS["heartbeat" if heartbeat else "ok" if op == "wrong" else op]
                        h.selector.respond(
                            nid, answer, api_key=pending[0].api_key,
                            correlation_id=pending[0].correlation_id + (op == "wrong"),
                        )
                elif op == "garbage":
                    if h.selector.unanswered(nid):
                        h.selector.complete_receive(nid, b"\x00\x01")
                elif op == "ready":  # (a node disconnected connects again after its backoff)
                    h.time.sleep(100)
                    h.client.ready(node, h.now)
                    h.poll()
                    if h.selector.unanswered(nid, ApiKey.API_VERSIONS):
                        h.selector.respond(nid, api_versions_response())
                        h.poll()
                else:
                    h.time.sleep(1)
                    h.poll()
        for h in (compiled, reference):
            h.poll()
        assert [_summary(r) for r in compiled.callbacks] == [_summary(r) for r in reference.callbacks]
        assert compiled.client.in_flight_request_count() == reference.client.in_flight_request_count()
    finally:
        _native.use_native(previous)
