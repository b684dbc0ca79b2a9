"""The network client decodes the response to the producer's ``DrainedProduceRequest`` with the kernel's
``decode_produce_results`` (a ``DecodedProduceResponse`` holding the per-partition results) when every partition
succeeded; any other produce request, any other answer and any bad frame go through the decoders as before (equal
bodies; a frame that cannot be parsed closes the connection with the same error)."""

from __future__ import annotations

import pytest

from pykafka_client.network.client_response import ClientResponse
from pykafka_client.producer.sender import DecodedProduceResponse, DrainedProduceRequest
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ProduceRequest, ProduceResponse
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
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
    if expected is DecodedProduceResponse:
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
