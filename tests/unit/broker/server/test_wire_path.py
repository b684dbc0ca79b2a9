"""The broker's per-request path around a handler (#27, h/brkwire): a direct encoder's frame sent without the general
path's calls gives the same SendResponse; a parse plan calls a reader's compiled reader first and the reader where
it declines; the request metrics go through the kernel's observer and the reference where it declines."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mini_broker.metrics import REQUEST_TIME_METRICS, BrokerMetrics, Counter, Histogram, RequestInstruments
from mini_broker.network.request_channel import Request, RequestChannel, RequestContext, Response, SendResponse
from mini_broker.server import kafka_apis
from mini_broker.server.apis import api_versions
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis, NativeReader
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ApiVersionsRequest, ProduceResponse
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.types import Message
from pykafka_client.utils.time import MockTime
from tests.doubles.frames import sent_bytes


class Sink:
    def __init__(self) -> None:
        self.responses: list[Response] = []

    def enqueue_response(self, response: Response) -> None:
        self.responses.append(response)


def make(specs: list[ApiSpec] | None = None) -> tuple[KafkaApis, Sink, BrokerMetrics]:
    time = MockTime()
    metrics = BrokerMetrics(time)
    channel = RequestChannel(10)
    sink = Sink()
    channel.add_processor(0, sink)
    return KafkaApis(channel, specs or [api_versions.API], None, metrics, time), sink, metrics


def request(api_local_complete_time_ns: int = -1) -> Request:
    ctx = RequestContext(int(ApiKey.PRODUCE), 9, 7, None, "c", "127.0.0.1:1", "PLAINTEXT")
    return Request(0, ctx, None, 10, 1, 2, api_local_complete_time_ns)


def sent_fields(response: Response) -> tuple[Any, ...]:
    assert isinstance(response, SendResponse)
    r = response.request
    return (sent_bytes(response.buffers), response.size, response.body, response.on_complete,
            response.destination, response.written, response.extra, r.api_local_complete_time_ns,
            r.api_remote_complete_time_ns, r.response_complete_time_ns)


@pytest.mark.parametrize("completed_locally", [False, True], ids=["local", "remote"])
def test_a_direct_encoders_frame_is_sent_as_the_general_path_sends_it(completed_locally: bool) -> None:
    """One bytes piece (the fast path) and the same frame as a bytearray piece (the general path): the same
    SendResponse, the same completion times; the sent list is not the caller's."""
    apis, sink, _ = make()
    body = ProduceResponse()
    frame = b"\x00\x00\x00\x04\x00\x00\x00\x07"

    def done() -> None: ...

    local = 5 if completed_locally else -1
    encoded: list[Any] = [frame]
    apis.send_response(request(local), body, done, encoded=encoded)
    apis.send_response(request(local), body, done, encoded=[bytearray(frame)])
    fast, general = sink.responses
    assert sent_fields(fast) == sent_fields(general)
    assert isinstance(fast, SendResponse) and fast.buffers is not encoded and fast.buffers == [frame]


def test_a_direct_encoders_frame_takes_the_general_path_when_a_quota_is_active(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a client quota active the request is recorded against it (and may be throttled) as before."""
    apis, sink, _ = make()
    recorded: list[int] = []

    class ActiveQuotas:
        def any_active(self) -> bool:
            return True

    apis.quotas = ActiveQuotas()  # type: ignore[assignment]
    def record_quotas(request: Request, size: int) -> int:
        recorded.append(size)
        return 0

    monkeypatch.setattr(apis, "_record_quotas", record_quotas)
    apis.send_response(request(), ProduceResponse(), encoded=[b"\x00\x00\x00\x04\x00\x00\x00\x07"])
    assert recorded == [8] and len(sink.responses) == 1


def _frame(version: int) -> memoryview:
    body = ApiVersionsRequest(client_software_name="x", client_software_version="1")
    data = b"".join(bytes(p) for p in headers.encode_request(body, version, 1, "cid"))  # type: ignore[arg-type]
    return memoryview(bytearray(data))[4:]


@pytest.mark.skipif(_native.kernel is None, reason="the compiled record kernel is off: no compiled reader is called")
@pytest.mark.parametrize("declines", [False, True])
def test_a_parse_plan_calls_the_compiled_reader_first_and_the_reader_where_it_declines(declines: bool) -> None:
    calls: list[str] = []
    parsed = ("from-native", ApiVersionsRequest(client_software_name="n", client_software_version="1"))
    argument = object()

    def reader(payload: memoryview, version: int) -> tuple[str | None, Message] | None:
        calls.append("reader")
        return None  # the generated reader's turn

    def native(payload: memoryview, version: int, arg: object) -> tuple[str | None, Message] | None:
        assert arg is argument and version == 3
        calls.append("native")
        return None if declines else parsed

    def native_of() -> NativeReader | None:
        calls.append("plan")
        return native, argument

    kafka_apis.native_reader(reader, native_of)
    apis, _, _ = make([ApiSpec(ApiKey.API_VERSIONS, 0, 3, api_versions.handle, read_request=reader)])
    first = apis.parse_request(0, "c", "a", "L", _frame(3), 0)
    second = apis.parse_request(0, "c", "a", "L", _frame(3), 0)
    per_request = ["native", "reader"] if declines else ["native"]
    assert calls == ["plan", *per_request, *per_request]  # the compiled reader is looked up once, with the plan
    for r in (first, second):
        if declines:  # the generated reader's request
            assert r.context.client_id == "cid" and r.body == ApiVersionsRequest(client_software_name="x",
                                                                                  client_software_version="1")
        else:
            assert r.context.client_id == "from-native" and r.body is parsed[1]


def test_without_a_compiled_reader_the_plan_calls_the_reader() -> None:
    calls: list[str] = []

    def reader(payload: memoryview, version: int) -> tuple[str | None, Message] | None:
        calls.append("reader")
        return None

    kafka_apis.native_reader(reader, lambda: None)
    apis, _, _ = make([ApiSpec(ApiKey.API_VERSIONS, 0, 3, api_versions.handle, read_request=reader)])
    apis.parse_request(0, "c", "a", "L", _frame(3), 0)
    assert calls == ["reader"]


def _instruments() -> RequestInstruments:
    lock = threading.Lock()
    return RequestInstruments(lock, Counter(lock), tuple(Histogram(lock) for _ in REQUEST_TIME_METRICS))


def _state(instruments: RequestInstruments) -> list[object]:
    return [instruments._requests.value, *[(h.count, h.sum, h.min, h.max) for h in instruments._times]]


def test_the_observer_records_as_record_ns_and_is_none_without_the_kernel() -> None:
    previous = _native.use_native(False)
    try:
        assert _instruments().observer() is None
    finally:
        _native.use_native(previous)
    if _native.loaded_kernel() is None:
        return
    a, b = _instruments(), _instruments()
    observe = a.observer()
    assert observe is not None
    times = (10_000_000, 1_000_000, 2_000_000, 3_000_000, -1, 4_000_000, 5_000_000, 9_000_000)
    assert observe(*times)
    b.record_ns(*times)
    assert _state(a) == _state(b) and a._requests.value == 1


def test_response_metrics_the_observer_declines_are_recorded_by_the_reference() -> None:
    """A time the kernel does not take (past int64): nothing half-recorded, the reference records it whole."""
    on, _, metrics_on = make()
    previous = _native.use_native(False)
    try:
        off, _, metrics_off = make()
        r = request()
        r.response_dequeue_time_ns = 2**63
        off.complete_response_metrics(SendResponse(r, [b"x"], 1), 2**63 + 5)
    finally:
        _native.use_native(previous)
    r = request()
    r.response_dequeue_time_ns = 2**63
    on.complete_response_metrics(SendResponse(r, [b"x"], 1), 2**63 + 5)
    assert metrics_on.snapshot() == metrics_off.snapshot()
