"""Requests a Processor handles on its own thread (KafkaApis.handles_inline) keep the one-in-flight rule."""

from __future__ import annotations

from mini_broker.config import KafkaConfig
from mini_broker.metrics import REQUEST_TIME_METRICS, BrokerMetrics
from mini_broker.network.connection_quotas import ConnectionQuotas
from mini_broker.network.processor import Processor, _Conn
from mini_broker.network.request_channel import Request, RequestChannel, RequestContext, Response, SendResponse
from mini_broker.server.apis.registry import ALL_APIS
from mini_broker.server.kafka_apis import INLINE_API_KEYS, KafkaApis
from pykafka_client.network.transport.selectable import NetworkReceive
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.utils.time import MockTime
from tests.unit.broker.server.test_processor import ScriptedSelector

INLINE_KEY = 1
QUEUED_KEY = 0


class InlineParser:
    """Frames are ``<api key byte><payload>``; key 1 is handled inline by answering ``payload.upper()``."""

    inline_api_keys = frozenset({INLINE_KEY})

    def __init__(self, channel: RequestChannel) -> None:
        self.channel = channel
        self.handled: list[bytes] = []

    def parse_request(self, processor_id: int, connection_id: str, client_address: str, listener_name: str,
                      payload: memoryview, start_time_ns: int) -> Request:
        data = bytes(payload)
        ctx = RequestContext(data[0], 0, 0, None, connection_id, client_address, listener_name)
        return Request(processor_id, ctx, data[1:], len(data), start_time_ns)

    def handles_inline(self, request: Request) -> bool:
        return request.context.api_key in self.inline_api_keys

    def handle(self, request: Request) -> None:
        assert isinstance(request.body, bytes)
        if request.body == b"boom":
            raise RuntimeError("handler bug")
        self.handled.append(request.body)
        answer = request.body.upper()
        self.channel.send_response(SendResponse(request, [answer], len(answer)))

    def complete_response_metrics(self, response: Response, now_ns: int) -> None: ...

    def response_metrics_parts(self) -> None:
        return None


def make() -> tuple[Processor, ScriptedSelector, RequestChannel, InlineParser]:
    config = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0"})
    channel = RequestChannel(10)
    quotas = ConnectionQuotas(10)
    sel = ScriptedSelector()
    parser = InlineParser(channel)
    proc = Processor(0, config.listeners[0], config, channel, quotas, parser, sel, MockTime())
    channel.add_processor(0, proc)
    quotas.inc("1.2.3.4")
    proc._conns["c1"] = _Conn("c1", "1.2.3.4", "1.2.3.4:5")
    sel.open_channel("c1")
    return proc, sel, channel, parser


def step(proc: Processor) -> None:
    proc._process_new_responses()
    proc._poll()
    proc._process_completed_receives()
    proc._process_completed_sends()
    proc._process_disconnected()


def rcv(data: bytes) -> NetworkReceive:
    return NetworkReceive("c1", memoryview(data))


def test_inline_request_is_answered_in_the_same_round_and_never_queued() -> None:
    proc, sel, channel, parser = make()
    sel.to_receive = [rcv(b"\x01abc")]
    step(proc)
    assert parser.handled == [b"abc"]
    assert channel.receive_request(0) is None  # no handler thread involved
    assert [s.buffers for s in sel.sent] == [[b"ABC"]]  # written in the round that read it
    assert "c1" in sel.muted  # until the send completes
    step(proc)
    assert "c1" not in sel.muted


def test_inline_and_queued_requests_keep_their_order_on_one_connection() -> None:
    proc, sel, channel, parser = make()
    sel.to_receive = [rcv(b"\x00first"), rcv(b"\x01second")]
    step(proc)
    queued = channel.receive_request(0)
    assert isinstance(queued, Request) and queued.body == b"first"
    assert parser.handled == []  # waits behind the request in flight
    channel.send_response(SendResponse(queued, [b"1"], 1))
    step(proc)
    step(proc)
    assert parser.handled == [b"second"]
    step(proc)
    assert "c1" not in sel.muted


def test_inline_handler_exception_closes_only_that_connection() -> None:
    proc, sel, _, _ = make()
    sel.to_receive = [rcv(b"\x01boom")]
    step(proc)
    step(proc)
    assert sel.closed == ["c1"]


def test_kafka_apis_inline_keys_default_and_override() -> None:
    channel = RequestChannel(10)
    apis = KafkaApis(channel, ALL_APIS)
    assert apis.inline_api_keys == INLINE_API_KEYS == {int(ApiKey.FETCH), int(ApiKey.API_VERSIONS)}
    assert KafkaApis(channel, ALL_APIS, inline_api_keys=frozenset()).inline_api_keys == frozenset()
    only_versions = [s for s in ALL_APIS if s.api_key == ApiKey.API_VERSIONS]
    assert KafkaApis(channel, only_versions).inline_api_keys == {int(ApiKey.API_VERSIONS)}  # enabled APIs only


def _produce(apis: KafkaApis, transactional_id: str | None) -> Request:
    body = ProduceRequest(transactional_id=transactional_id, acks=1, timeout_ms=1000, topic_data=[])
    frame = b"".join(bytes(c) for c in headers.encode_request(body, 9, 7, "client"))  # type: ignore[arg-type]
    return apis.parse_request(0, "c1", "127.0.0.1:1", "PLAINTEXT", memoryview(frame[4:]), 0)


def test_kafka_apis_handles_produce_inline_only_when_told_and_never_a_transactional_one() -> None:
    apis = KafkaApis(RequestChannel(10), ALL_APIS)
    plain, transactional = _produce(apis, None), _produce(apis, "txn-1")
    assert not apis.handles_inline(plain) and not apis.handles_inline(transactional)  # default: handler threads
    apis.inline_produce = True  # a single broker's setting
    assert apis.handles_inline(plain)
    assert not apis.handles_inline(transactional)  # its verification may wait on the transaction coordinator


def test_record_request_times_matches_record_request() -> None:
    a, b = BrokerMetrics(MockTime()), BrokerMetrics(MockTime())
    base = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    for scale in (1.0, 1.0, 0.5, 3.0, 2.0):  # repeated, lower (a new min), higher (a new max), in between
        times = [t * scale for t in base]
        a.record_request("Fetch", dict(zip(REQUEST_TIME_METRICS, times, strict=True)))
        b.record_request_times("Fetch", *times)
    assert b.histogram("kafka_network_RequestMetrics_TotalTimeMs", request="Fetch").min == 0.5
    assert b.histogram("kafka_network_RequestMetrics_TotalTimeMs", request="Fetch").max == 3.0
    snap_a = {k: v for k, v in a.snapshot().items() if "RequestMetrics" in k}
    snap_b = {k: v for k, v in b.snapshot().items() if "RequestMetrics" in k}
    assert snap_a == snap_b and snap_a
