"""KafkaApis parsing and dispatch without sockets: enabled ranges, KIP-511, fit_to_version, metrics."""

from __future__ import annotations

import copy
import struct
from collections.abc import Callable

import pytest

from mini_broker.metrics import BrokerMetrics, RequestInstruments
from mini_broker.network.request_channel import (
    CloseConnectionResponse,
    NoOpResponse,
    Request,
    RequestChannel,
    RequestContext,
    Response,
    SendResponse,
)
from mini_broker.server.apis import api_versions
from mini_broker.server.kafka_apis import (
    _COMPLETE_AT,
    UNSUPPORTED_API_VERSIONS,
    ApiSpec,
    KafkaApis,
    _fit_plan,
    fit_to_version,
)
from pykafka_client.errors import MessageDecodeError, UnknownApiKeyError, UnsupportedVersionError
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchResponse,
    MetadataResponse,
    ProduceResponse,
)
from pykafka_client.protocol.types import Message
from pykafka_client.utils.time import MockTime


class Sink:
    def __init__(self) -> None:
        self.responses: list[Response] = []

    def enqueue_response(self, response: Response) -> None:
        self.responses.append(response)


def make() -> tuple[KafkaApis, Sink, BrokerMetrics]:
    time = MockTime()
    metrics = BrokerMetrics(time)
    ch = RequestChannel(10)
    sink = Sink()
    ch.add_processor(0, sink)
    return KafkaApis(ch, [api_versions.API], None, metrics, time), sink, metrics


def frame_payload(body: ApiVersionsRequest, version: int, corr: int) -> memoryview:
    data = b"".join(bytes(p) for p in headers.encode_request(body, version, corr, "cid"))  # type: ignore[arg-type]
    return memoryview(data)[4:]


def parse(apis: KafkaApis, payload: bytes | memoryview) -> Request:
    return apis.parse_request(0, "c", "127.0.0.1:1", "PLAINTEXT", memoryview(payload), 0)


def test_api_versions_round_trip_and_header_v0() -> None:
    apis, sink, metrics = make()
    req = parse(apis, frame_payload(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3, 9))
    assert req.context.client_id == "cid"
    apis.handle(req)
    (resp,) = sink.responses
    assert isinstance(resp, SendResponse)
    frame = b"".join(bytes(p) for p in resp.buffers)  # type: ignore[call-overload]
    assert struct.unpack_from(">ii", frame) == (len(frame) - 4, 9)
    body = ApiVersionsResponse.decode(frame[8:], 3)
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 4)]
    apis.complete_response_metrics(resp, 5_000_000)
    assert metrics.snapshot()['kafka_network_RequestMetrics_Requests_total{request="ApiVersions"}'] == 1


def test_kip511_fallback_bytes() -> None:
    apis, sink, _ = make()
    req = parse(apis, struct.pack(">hhih", 18, 7, 42, 1) + b"x" + b"\x00\x00")
    assert req.body is UNSUPPORTED_API_VERSIONS
    apis.handle(req)
    frame = b"".join(bytes(p) for p in sink.responses[0].buffers)  # type: ignore[attr-defined]
    # size, correlation id, error 35, compact? no: v0 array of 1 entry (18, 0, 4)
    assert frame == struct.pack(">iihihhh", 16, 42, 35, 1, 18, 0, 4)


def test_disabled_keys_and_versions_raise() -> None:
    apis, _, _ = make()
    with pytest.raises(UnknownApiKeyError):
        parse(apis, struct.pack(">hhih", 3, 1, 1, -1))
    with pytest.raises(UnsupportedVersionError):
        parse(apis, struct.pack(">hhih", 18, -1, 1, -1))
    with pytest.raises(MessageDecodeError):
        parse(apis, b"\x00\x12\x00")


def test_handler_exception_closes_the_connection() -> None:
    time = MockTime()
    ch = RequestChannel(10)
    sink = Sink()
    ch.add_processor(0, sink)

    def boom(apis: KafkaApis, request: Request) -> object:
        raise RuntimeError("bug")

    apis = KafkaApis(ch, [ApiSpec(ApiKey.API_VERSIONS, 0, 4, boom)], None, BrokerMetrics(time), time)
    apis.handle(parse(apis, frame_payload(ApiVersionsRequest(), 0, 1)))
    assert isinstance(sink.responses[0], CloseConnectionResponse)


def test_fit_to_version_resets_fields_absent_in_the_version() -> None:
    part = MetadataResponse.MetadataResponsePartition(leader_epoch=5, offline_replicas=[1])
    topic = MetadataResponse.MetadataResponseTopic(name="t", partitions=[part], topic_authorized_operations=3)
    resp = MetadataResponse(cluster_id="c", controller_id=1, topics=[topic], throttle_time_ms=4)
    fit_to_version(resp, 0)
    assert resp.cluster_id is None and resp.controller_id == -1 and resp.throttle_time_ms == 0
    assert part.leader_epoch == -1 and part.offline_replicas == []
    resp.encode(0)  # would raise if a non-default absent field were left


def _full_produce_response() -> ProduceResponse:
    part = ProduceResponse.PartitionProduceResponse(
        index=1, error_code=6, base_offset=7, log_append_time_ms=8, log_start_offset=9,
        record_errors=[ProduceResponse.BatchIndexAndErrorMessage(batch_index=0, batch_index_error_message="bad")],
        error_message="no", current_leader=ProduceResponse.LeaderIdAndEpoch(leader_id=2, leader_epoch=3))
    return ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=[part])],
                           throttle_time_ms=5, node_endpoints=[ProduceResponse.NodeEndpoint(
                               node_id=2, host="h", port=9092, rack="r")])


def _walk_fit(msg: Message, version: int) -> None:
    """fit_to_version's whole-tree walk, every struct visited (the reference for its shortcut)."""
    absent, structs = _fit_plan(type(msg), version)
    for name, default in absent:
        setattr(msg, name, default())
    for name in structs:
        value = getattr(msg, name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Message):
                _walk_fit(item, version)


@pytest.mark.parametrize("cls", [ProduceResponse, MetadataResponse, FetchResponse, ApiVersionsResponse])
def test_fit_to_version_skips_the_walk_only_where_it_would_reset_nothing(cls: type[Message]) -> None:
    lo, hi = cls.VALID_VERSIONS
    for version in range(lo, hi + 1):
        shortcut = _full_produce_response() if cls is ProduceResponse else cls()
        reference = copy.deepcopy(shortcut)
        fit_to_version(shortcut, version)
        _walk_fit(reference, version)
        assert shortcut == reference, version
        assert shortcut.encode(version) == reference.encode(version)
    if cls is ProduceResponse:
        assert _COMPLETE_AT[(ProduceResponse, 11)]  # the version our producer sends: no walk
        assert not _COMPLETE_AT[(ProduceResponse, 9)]  # v9 lacks current_leader and node_endpoints


def test_spec_ranges_are_checked() -> None:
    with pytest.raises(ValueError):
        KafkaApis(RequestChannel(1), [ApiSpec(ApiKey.API_VERSIONS, 0, 99, api_versions.handle)])


def test_unencodable_response_closes_the_connection() -> None:
    time = MockTime()
    ch = RequestChannel(10)
    sink = Sink()
    ch.add_processor(0, sink)

    def wrong_body(apis: KafkaApis, request: Request) -> object:
        return MetadataResponse()  # not the ApiVersions response type

    apis = KafkaApis(ch, [ApiSpec(ApiKey.API_VERSIONS, 0, 4, wrong_body)], None, BrokerMetrics(time), time)
    apis.handle(parse(apis, frame_payload(ApiVersionsRequest(), 0, 1)))
    assert [type(r) for r in sink.responses] == [CloseConnectionResponse]


class HoldingGate:
    """A response gate holding ApiVersions answers until the test releases them."""

    api_keys = frozenset({int(ApiKey.API_VERSIONS)})

    def __init__(self) -> None:
        self.held: list[tuple[Message, Callable[[], None]]] = []

    def hold(self, request: Request, body: Message, release: Callable[[], None]) -> None:
        self.held.append((body, release))


def test_a_response_gate_holds_answers_until_it_releases_them() -> None:
    apis, sink, _ = make()
    gate = HoldingGate()
    apis.response_gate = gate
    request = ApiVersionsRequest(client_software_name="x", client_software_version="1")
    apis.handle(parse(apis, frame_payload(request, 3, 1)))
    assert sink.responses == [] and len(gate.held) == 1  # held until the gate says the ISR has the appends
    gate.held.pop()[1]()
    frame = b"".join(bytes(p) for p in sink.responses[-1].buffers)  # type: ignore[attr-defined]
    assert ApiVersionsResponse.decode(frame[8:], 3).error_code == 0

    apis.handle(parse(apis, frame_payload(request, 3, 2)))
    body, release = gate.held.pop()
    assert isinstance(body, ApiVersionsResponse)
    body.error_code = 16  # the gate failed: it set the answer's error first
    release()
    frame = b"".join(bytes(p) for p in sink.responses[-1].buffers)  # type: ignore[attr-defined]
    assert ApiVersionsResponse.decode(frame[8:], 3).error_code == 16


@pytest.mark.parametrize("send", [True, False], ids=["send", "no_op"])
def test_response_metrics_time_each_stage_and_treat_unset_or_reversed_times_as_zero(send: bool) -> None:
    apis, _, metrics = make()
    ctx = RequestContext(int(ApiKey.PRODUCE), 9, 1, None, "c", "127.0.0.1:1", "PLAINTEXT")
    request = Request(0, ctx, None, 10, start_time_ns=1_000_000, request_dequeue_time_ns=3_000_000,
                      api_local_complete_time_ns=2_000_000,  # before the dequeue: reversed, 0.0
                      response_complete_time_ns=4_000_000, response_dequeue_time_ns=4_500_000)
    response = SendResponse(request, [b"x"], 1) if send else NoOpResponse(request)
    apis.complete_response_metrics(response, 10_000_000)
    snap = metrics.snapshot()

    def ms(metric: str) -> float:
        return snap[f'kafka_network_RequestMetrics_{metric}_sum{{request="Produce"}}']

    assert ms("TotalTimeMs") == 9.0 and ms("RequestQueueTimeMs") == 2.0 and ms("LocalTimeMs") == 0.0
    assert ms("RemoteTimeMs") == 0.0  # no remote completion: the local end, so none
    assert ms("ResponseQueueTimeMs") == 0.5
    assert ms("ResponseSendTimeMs") == (5.5 if send else 0.0)  # a no-op response writes nothing


def test_response_metrics_of_a_request_never_dequeued_nor_its_response_time_only_the_stages_with_both_ends() -> None:
    apis, _, metrics = make()
    ctx = RequestContext(int(ApiKey.PRODUCE), 9, 1, None, "c", "127.0.0.1:1", "PLAINTEXT")
    # closed before a handler took it: no dequeue, no local or remote completion, no response dequeue
    request = Request(0, ctx, None, 10, start_time_ns=1_000_000, response_complete_time_ns=4_000_000)
    apis.complete_response_metrics(NoOpResponse(request), 7_000_000)
    snap = metrics.snapshot()
    sums = {m: snap[f'kafka_network_RequestMetrics_{m}_sum{{request="Produce"}}']
            for m in ("TotalTimeMs", "RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs",
                      "ResponseSendTimeMs")}
    assert sums == {"TotalTimeMs": 6.0, "RequestQueueTimeMs": 0.0, "LocalTimeMs": 0.0, "RemoteTimeMs": 0.0,
                    "ResponseQueueTimeMs": 0.0, "ResponseSendTimeMs": 0.0}
    assert snap['kafka_network_RequestMetrics_Requests_total{request="Produce"}'] == 1


def test_each_key_and_version_is_checked_once_and_its_header_version_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    apis, _, _ = make()
    asked: list[tuple[int, int]] = []
    real = headers.request_header_version

    def counted(key: int, version: int) -> int:
        asked.append((key, version))
        return real(key, version)

    body = ApiVersionsRequest(client_software_name="x", client_software_version="1")
    frames = {version: frame_payload(body, version, 1) for version in (0, 3)}
    monkeypatch.setattr(headers, "request_header_version", counted)
    for version in (3, 0, 3, 0, 3):
        req = parse(apis, frames[version])
        assert req.context.header_version == real(18, version) and req.context.client_id == "cid"
    assert asked == [(18, 3), (18, 0)]
    # the pairs that fail are never kept: each request of them raises (or falls back) again
    for _ in range(2):
        with pytest.raises(UnsupportedVersionError):
            parse(apis, struct.pack(">hhih", 18, -1, 1, -1))
        with pytest.raises(UnknownApiKeyError):
            parse(apis, struct.pack(">hhih", -1, 3, 1, -1))  # (a negative key next to a kept pair's bits)
        assert parse(apis, struct.pack(">hhih", 18, 7, 42, 1) + b"x" + b"\x00\x00").body is UNSUPPORTED_API_VERSIONS
    # a version whose low 16 bits match a kept pair's, of another key: not that pair
    with pytest.raises(UnknownApiKeyError):
        parse(apis, struct.pack(">hhih", 17, 3, 1, -1))


def test_response_metrics_go_to_the_apis_current_metrics_whose_instruments_it_looks_up_once_per_api(
        monkeypatch: pytest.MonkeyPatch) -> None:
    apis, _, metrics = make()
    looked_up: list[str] = []
    real = BrokerMetrics.request_instruments

    def counted(self: BrokerMetrics, name: str) -> RequestInstruments:
        looked_up.append(name)
        return real(self, name)

    monkeypatch.setattr(BrokerMetrics, "request_instruments", counted)
    ctx = RequestContext(int(ApiKey.PRODUCE), 9, 1, None, "c", "127.0.0.1:1", "PLAINTEXT")
    for _ in range(3):
        apis.complete_response_metrics(NoOpResponse(Request(0, ctx, None, 10, 0)), 1_000_000)
    assert looked_up == ["Produce"]
    assert metrics.snapshot()['kafka_network_RequestMetrics_Requests_total{request="Produce"}'] == 3
    other = BrokerMetrics(MockTime())
    apis.metrics = other  # replaced: the next request counts there
    apis.complete_response_metrics(NoOpResponse(Request(0, ctx, None, 10, 0)), 1_000_000)
    assert other.snapshot()['kafka_network_RequestMetrics_Requests_total{request="Produce"}'] == 1
    assert metrics.snapshot()['kafka_network_RequestMetrics_Requests_total{request="Produce"}'] == 3
