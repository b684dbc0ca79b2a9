"""A real MiniBroker driven with raw frames: KIP-511, header rules, bad input of every kind, long polling,
pipelining, metrics. After each bad input the broker keeps serving everyone and stored data is intact."""

from __future__ import annotations

import struct
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.protocol import headers
from pykafka_client.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    FetchRequest,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.protocol.types import Message
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUIRED_ACKS = 21
UNSUPPORTED_VERSION = 35
INVALID_REPLICATION_FACTOR = 38


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker(num_network_threads=2, num_io_threads=2, metrics_port=0, message_max_bytes=10000,
                    socket_request_max_bytes=200_000) as b:
        yield b


def batch(n: int = 3, value: bytes = b"v", ts: int = 1_700_000_000_000) -> bytes:
    b = MemoryRecordsBuilder(write_limit=10_000_000)
    for i in range(n):
        b.append(ts + i, f"k{i}".encode(), value + str(i).encode(), [])
    return b.build()


def produce(conn: Conn, topic: str, partition: int, records: bytes | None, acks: int = -1, version: int = 9) -> Any:
    req = ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    return conn.call(req, version)


def fetch(conn: Conn, topic: str, partition: int, offset: int, max_wait: int = 0, version: int = 12) -> Any:
    req = FetchRequest(max_wait_ms=max_wait, min_bytes=1, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
        topic=topic, partitions=[FetchRequest.FetchPartition(partition=partition, fetch_offset=offset,
                                                             partition_max_bytes=1 << 20)])])
    return conn.call(req, version)


def create_topic(conn: Conn, name: str, partitions: int = 1, rf: int = 1) -> Any:
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf)], timeout_ms=5000)
    resp = conn.call(req, 7)
    assert isinstance(resp, CreateTopicsResponse)
    return resp.topics[0]


def part_error(resp: Any) -> int:
    return int(resp.responses[0].partition_responses[0].error_code)


@pytest.fixture(scope="module")
def seeded(broker: MiniBroker) -> str:
    """A topic holding 3 records at offsets 0-2, checked intact by the tests that send bad data."""
    c = Conn(broker)
    assert create_topic(c, "seeded", 2).error_code == NONE
    resp = produce(c, "seeded", 0, batch(3))
    assert part_error(resp) == NONE
    c.close()
    return "seeded"


def assert_intact(broker: MiniBroker, topic: str) -> None:
    c = Conn(broker)
    resp = fetch(c, topic, 0, 0)
    p = resp.responses[0].partitions[0]
    assert p.error_code == NONE and p.high_watermark == 3
    recs = list(MemoryRecords(bytes(p.records), check_crcs=True).records())
    assert [(r.offset, r.key, r.value) for r in recs] == [(i, f"k{i}".encode(), b"v" + str(i).encode())
                                                           for i in range(3)]
    c.close()


# --- ApiVersions / headers -----------------------------------------------------------------------

def test_api_versions_v3_response_header_is_v0(broker: MiniBroker) -> None:
    c = Conn(broker)
    corr = c.send(ApiVersionsRequest(client_software_name="test", client_software_version="1.0"), 3)
    frame = c.recv_frame()
    assert struct.unpack_from(">i", frame)[0] == corr
    resp = ApiVersionsResponse.decode(frame[4:], 3)  # no tagged-field byte after the correlation id
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert resp.error_code == NONE
    assert keys[0] == (3, 11) and keys[1] == (4, 16) and keys[18] == (0, 4) and keys[3] == (0, 12)
    assert broker.apis is not None
    assert sorted((k, lo, hi) for k, (lo, hi) in keys.items()) == broker.apis.supported_versions()
    c.close()


def test_kip511_unsupported_api_versions_version_answered_in_v0(broker: MiniBroker) -> None:
    c = Conn(broker)
    # ApiVersions v99 with a flexible v2 header and a body we cannot know
    c.send_raw(struct.pack(">hhih", 18, 99, 77, 4) + b"test" + b"\x00" + b"\x07future\x00")
    frame = c.recv_frame()
    assert struct.unpack_from(">i", frame)[0] == 77
    resp = ApiVersionsResponse.decode(frame[4:], 0)
    assert resp.error_code == UNSUPPORTED_VERSION
    assert any(k.api_key == 18 and k.max_version == 4 for k in resp.api_keys)
    # the connection stays usable: the client retries at a version we support
    assert c.call(ApiVersionsRequest(), 0).error_code == NONE
    c.close()


@pytest.mark.parametrize("payload", [
    struct.pack(">hhi", 11, 5, 1) + b"\x00\x00",        # JoinGroup: known key, not enabled
    struct.pack(">hhi", 9999, 0, 1) + b"\x00\x00",      # unknown key
    struct.pack(">hhi", 0, 2, 1) + b"\x00\x00",         # Produce v2: below our range (old message formats)
    struct.pack(">hhi", 3, 13, 1) + b"\x00\x00",        # Metadata v13: above our range
    b"\x00\x03",                                        # shorter than a header
    struct.pack(">hhi", 3, 1, 1) + b"\x7f\xff",         # client id length lies
    struct.pack(">hhih", 0, 9, 1, -1) + b"\xff" * 40,   # garbage body
])
def test_bad_requests_close_only_that_connection(broker: MiniBroker, seeded: str, payload: bytes) -> None:
    good = Conn(broker)
    bad = Conn(broker)
    bad.send_raw(payload)
    assert bad.closed_by_broker()
    assert isinstance(good.call(MetadataRequest(topics=None), 12), MetadataResponse)
    good.close()
    assert_intact(broker, seeded)


def test_oversized_and_negative_frames_close_the_connection(broker: MiniBroker, seeded: str) -> None:
    for size in (200_001, -1, 2**31 - 1):
        c = Conn(broker)
        c.sock.sendall(struct.pack(">i", size) + b"\x00" * 64)
        assert c.closed_by_broker()
    assert_intact(broker, seeded)


def test_pipelined_requests_are_answered_in_order(broker: MiniBroker) -> None:
    c = Conn(broker)
    sent = []
    for i in range(50):
        body: Message = ApiVersionsRequest() if i % 2 else MetadataRequest(topics=[])
        version = 0 if i % 2 else 12
        sent.append((c.send(body, version), body.API_KEY, version))
    for corr, key, version in sent:  # decoding checks the correlation id and the body of each, in order
        resp = headers.decode_response(c.recv_frame(), key, version, corr)  # type: ignore[arg-type]
        assert isinstance(resp, ApiVersionsResponse if key == 18 else MetadataResponse)
    c.close()


# --- produce errors --------------------------------------------------------------------------------

def corrupt(data: bytes, what: str) -> bytes:
    b = bytearray(data)
    if what == "crc":
        b[-1] ^= 0xFF  # a record byte: inside the CRC range
    elif what == "magic":
        b[16] = 1
    elif what == "length_too_long":
        struct.pack_into(">i", b, 8, len(b) + 100)
    elif what == "length_too_short":
        struct.pack_into(">i", b, 8, 20)
    elif what == "truncated":
        return bytes(b[:30])
    elif what == "count":
        struct.pack_into(">i", b, 57, 1000)  # records count (CRC then fails too)
    return bytes(b)


@pytest.mark.parametrize("what", ["crc", "magic", "length_too_long", "length_too_short", "truncated", "count"])
def test_corrupt_batches_are_rejected(broker: MiniBroker, seeded: str, what: str) -> None:
    c = Conn(broker)
    resp = produce(c, seeded, 0, corrupt(batch(3), what))
    assert part_error(resp) in (CORRUPT_MESSAGE, 87)  # 87 = INVALID_RECORD
    c.close()
    assert_intact(broker, seeded)


def test_produce_errors(broker: MiniBroker, seeded: str) -> None:
    c = Conn(broker)
    assert part_error(produce(c, "no-such-topic-x", 0, batch(), version=9)) in (UNKNOWN_TOPIC_OR_PARTITION,)
    assert part_error(produce(c, seeded, 7, batch())) == UNKNOWN_TOPIC_OR_PARTITION
    assert part_error(produce(c, seeded, -1, batch())) == UNKNOWN_TOPIC_OR_PARTITION
    assert part_error(produce(c, "bad/name", 0, batch())) == INVALID_TOPIC_EXCEPTION
    assert part_error(produce(c, seeded, 0, batch(), acks=2)) == INVALID_REQUIRED_ACKS
    assert part_error(produce(c, seeded, 0, batch(1, b"x" * 20_000))) == MESSAGE_TOO_LARGE
    assert part_error(produce(c, seeded, 0, None)) == CORRUPT_MESSAGE
    c.close()
    assert_intact(broker, seeded)


def test_acks0_error_closes_connection_success_does_not(broker: MiniBroker, seeded: str) -> None:
    c = Conn(broker)
    req = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=seeded, partition_data=[ProduceRequest.PartitionProduceData(index=1, records=batch(2))])])
    c.send(req, 9)  # no response for acks=0; the connection is unmuted
    assert c.call(ApiVersionsRequest(), 0).error_code == NONE
    bad = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=seeded, partition_data=[ProduceRequest.PartitionProduceData(index=99, records=batch(2))])])
    c.send(bad, 9)
    assert c.closed_by_broker()
    assert_intact(broker, seeded)


# --- fetch / offsets ----------------------------------------------------------------------------------

def test_fetch_errors_and_watermarks(broker: MiniBroker, seeded: str) -> None:
    c = Conn(broker)
    p = fetch(c, seeded, 0, -5).responses[0].partitions[0]
    assert p.error_code == OFFSET_OUT_OF_RANGE and p.high_watermark == -1
    p = fetch(c, seeded, 0, 4).responses[0].partitions[0]
    assert p.error_code == OFFSET_OUT_OF_RANGE
    p = fetch(c, seeded, 0, 3).responses[0].partitions[0]
    assert p.error_code == NONE and p.high_watermark == 3 and p.last_stable_offset == 3 and bytes(p.records) == b""
    p = fetch(c, seeded, 9, 0).responses[0].partitions[0]
    assert p.error_code == UNKNOWN_TOPIC_OR_PARTITION
    # v13+: topics by id
    md = c.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=seeded)]), 12)
    topic_id = md.topics[0].topic_id
    req = FetchRequest(max_wait_ms=0, min_bytes=1, topics=[FetchRequest.FetchTopic(topic_id=topic_id, partitions=[
        FetchRequest.FetchPartition(partition=0, fetch_offset=1, partition_max_bytes=1 << 20)])])
    resp = c.call(req, 16)
    assert resp.responses[0].topic_id == topic_id
    recs = list(MemoryRecords(bytes(resp.responses[0].partitions[0].records)).records())
    assert [r.offset for r in recs if r.offset >= 1] == [1, 2]
    c.close()


def test_long_poll_fetch_is_woken_by_produce(broker: MiniBroker) -> None:
    c = Conn(broker)
    assert create_topic(c, "longpoll").error_code == NONE
    result: list[Any] = []
    t0 = time.monotonic()
    th = threading.Thread(target=lambda: result.append(fetch(c, "longpoll", 0, 0, max_wait=20_000)))
    th.start()
    time.sleep(0.3)
    assert th.is_alive()  # parked in the fetch purgatory
    p = Conn(broker)
    assert part_error(produce(p, "longpoll", 0, batch(2))) == NONE
    th.join(10)
    assert not th.is_alive() and time.monotonic() - t0 < 10
    part = result[0].responses[0].partitions[0]
    assert part.high_watermark == 2 and len(list(MemoryRecords(bytes(part.records)).records())) == 2
    # an expired long poll answers empty
    t0 = time.monotonic()
    part = fetch(p, "longpoll", 0, 2, max_wait=300).responses[0].partitions[0]
    assert part.error_code == NONE and bytes(part.records) == b"" and time.monotonic() - t0 >= 0.25
    c.close()
    p.close()


def test_list_offsets_and_delete_records(broker: MiniBroker) -> None:
    c = Conn(broker)
    assert create_topic(c, "offsets").error_code == NONE
    assert part_error(produce(c, "offsets", 0, batch(100, ts=1000))) == NONE

    def list_offset(ts: int, version: int = 9) -> Any:
        req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="offsets", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=ts)])])
        resp = c.call(req, version)
        assert isinstance(resp, ListOffsetsResponse)
        return resp.topics[0].partitions[0]

    assert list_offset(-1).offset == 100
    assert list_offset(-2).offset == 0
    assert list_offset(-3).offset == 99 and list_offset(-3).timestamp == 1099
    assert list_offset(1050).offset == 50
    assert list_offset(5000).offset == -1
    assert list_offset(-1, version=1).offset == 100
    req = DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(name="offsets", partitions=[
        DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=40)])], timeout_ms=5000)
    resp = c.call(req, 2)
    assert isinstance(resp, DeleteRecordsResponse)
    assert resp.topics[0].partitions[0].low_watermark == 40
    assert list_offset(-2).offset == 40
    p = fetch(c, "offsets", 0, 10).responses[0].partitions[0]
    assert p.error_code == OFFSET_OUT_OF_RANGE
    req = DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(name="offsets", partitions=[
        DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=500)])], timeout_ms=5000)
    assert c.call(req, 2).topics[0].partitions[0].error_code == OFFSET_OUT_OF_RANGE
    c.close()


def test_metadata_auto_create_and_invalid_names(broker: MiniBroker) -> None:
    c = Conn(broker)
    md = c.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="auto-made"),
                                        MetadataRequest.MetadataRequestTopic(name="bad name")],
                                allow_auto_topic_creation=True), 12)
    by_name = {t.name: t for t in md.topics}
    assert by_name["auto-made"].error_code == NONE and len(by_name["auto-made"].partitions) == 1
    assert by_name["bad name"].error_code == INVALID_TOPIC_EXCEPTION
    assert md.controller_id == 0 and md.cluster_id and md.brokers[0].port == broker.port
    md = c.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="not-auto")],
                                allow_auto_topic_creation=False), 12)
    assert md.topics[0].error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert create_topic(c, "rf3", rf=3).error_code == INVALID_REPLICATION_FACTOR
    c.close()


def test_metrics_endpoint(broker: MiniBroker) -> None:
    c = Conn(broker)
    c.call(ApiVersionsRequest(), 0)
    c.close()
    assert broker.metrics_url is not None
    text = urllib.request.urlopen(broker.metrics_url, timeout=5).read().decode()
    assert 'kafka_network_RequestMetrics_Requests_total{request="ApiVersions"}' in text
    for name in ("TotalTimeMs", "RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs",
                 "ResponseSendTimeMs"):
        assert f'kafka_network_RequestMetrics_{name}_count{{request="ApiVersions"}}' in text
    for gauge in ("kafka_network_RequestChannel_RequestQueueSize",
                  "kafka_network_SocketServer_NetworkProcessorAvgIdlePercent",
                  "kafka_server_KafkaRequestHandlerPool_RequestHandlerAvgIdlePercent",
                  'kafka_server_DelayedOperationPurgatory_PurgatorySize{delayedOperation="Fetch"}'):
        assert gauge in text


def test_delete_and_recreate_topic_starts_empty(broker: MiniBroker) -> None:
    from pykafka_client.protocol.messages import DeleteTopicsRequest

    c = Conn(broker)
    assert create_topic(c, "recreated", 2).error_code == NONE
    assert part_error(produce(c, "recreated", 1, batch(5))) == NONE
    resp = c.call(DeleteTopicsRequest(topic_names=["recreated", "never-existed"], timeout_ms=5000), 5)
    assert [(r.name, r.error_code) for r in resp.responses] == [("recreated", NONE),
                                                                 ("never-existed", UNKNOWN_TOPIC_OR_PARTITION)]
    assert fetch(c, "recreated", 1, 0).responses[0].partitions[0].error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert create_topic(c, "recreated", 2).error_code == NONE
    p = fetch(c, "recreated", 1, 0).responses[0].partitions[0]
    assert p.error_code == NONE and p.high_watermark == 0
    assert produce(c, "recreated", 1, batch(1)).responses[0].partition_responses[0].base_offset == 0
    c.close()


def test_create_topics_config_validation_and_describe(broker: MiniBroker) -> None:
    from pykafka_client.protocol.messages import DescribeConfigsRequest

    c = Conn(broker)
    bad = CreateTopicsRequest(topics=[
        CreateTopicsRequest.CreatableTopic(name="cfg-bad", num_partitions=1, replication_factor=1, configs=[
            CreateTopicsRequest.CreatableTopicConfig(name="no.such.config", value="1")]),
        CreateTopicsRequest.CreatableTopic(name="cfg-bad2", num_partitions=1, replication_factor=1, configs=[
            CreateTopicsRequest.CreatableTopicConfig(name="segment.bytes", value="ten")]),
        CreateTopicsRequest.CreatableTopic(name="cfg-ok", num_partitions=-1, replication_factor=-1, configs=[
            CreateTopicsRequest.CreatableTopicConfig(name="cleanup.policy", value="compact")]),
    ], timeout_ms=5000)
    resp = c.call(bad, 7)
    codes = {t.name: t.error_code for t in resp.topics}
    assert codes == {"cfg-bad": 40, "cfg-bad2": 40, "cfg-ok": NONE}  # INVALID_CONFIG
    ok = next(t for t in resp.topics if t.name == "cfg-ok")
    assert ok.num_partitions == 1 and ok.replication_factor == 1
    assert {e.name: (e.value, e.config_source) for e in ok.configs}["cleanup.policy"] == ("compact", 1)
    req = DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name="cfg-ok",
                                                       configuration_keys=["cleanup.policy", "retention.ms"]),
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name="0", configuration_keys=None),
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name="nope", configuration_keys=None),
    ], include_synonyms=True)
    resp = c.call(req, 4)
    topic, brokers, missing = resp.results
    entries = {e.name: e for e in topic.configs}
    assert set(entries) == {"cleanup.policy", "retention.ms"}
    assert (entries["cleanup.policy"].value, entries["cleanup.policy"].config_source) == ("compact", 1)
    assert (entries["retention.ms"].value, entries["retention.ms"].config_source) == ("604800000", 5)
    assert [s.source for s in entries["cleanup.policy"].synonyms] == [1, 5]
    broker_entries = {e.name: e for e in brokers.configs}
    assert broker_entries["message.max.bytes"].value == "10000"
    assert broker_entries["message.max.bytes"].config_source == 4  # STATIC_BROKER_CONFIG
    assert broker_entries["num.partitions"].config_source == 5
    assert missing.error_code == UNKNOWN_TOPIC_OR_PARTITION
    c.close()


def test_offset_for_leader_epoch(broker: MiniBroker, seeded: str) -> None:
    from pykafka_client.protocol.messages import OffsetForLeaderEpochRequest

    c = Conn(broker)

    def ask(partition: int, epoch: int, current: int = -1) -> tuple[int, int, int]:
        req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
            topic=seeded, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                partition=partition, current_leader_epoch=current, leader_epoch=epoch)])])
        p = c.call(req, 4).topics[0].partitions[0]
        return int(p.error_code), int(p.leader_epoch), int(p.end_offset)

    assert ask(0, 0) == (NONE, 0, 3)
    assert ask(0, 5) == (NONE, -1, -1)
    assert ask(0, 0, current=0) == (NONE, 0, 3)
    assert ask(0, 0, current=1)[0] == 75  # UNKNOWN_LEADER_EPOCH
    assert ask(9, 0)[0] == UNKNOWN_TOPIC_OR_PARTITION
    c.close()


def test_compacted_topic_refuses_keyless_records_with_record_errors(broker: MiniBroker) -> None:
    c = Conn(broker)
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="compacted", num_partitions=1, replication_factor=1,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name="cleanup.policy", value="compact")])], timeout_ms=5000)
    assert c.call(req, 7).topics[0].error_code == NONE
    b = MemoryRecordsBuilder()
    b.append(1, b"k0", b"v", [])
    b.append(2, None, b"v", [])
    b.append(3, b"k2", b"v", [])
    resp = produce(c, "compacted", 0, b.build())
    part = resp.responses[0].partition_responses[0]
    assert part.error_code == 87  # INVALID_RECORD
    assert [e.batch_index for e in part.record_errors] == [1]
    assert "without key" in (part.error_message or "")
    assert part_error(produce(c, "compacted", 0, batch(2))) == NONE
    c.close()


def test_incremental_fetch_sessions(broker: MiniBroker) -> None:
    c = Conn(broker)
    assert create_topic(c, "sessions", 2).error_code == NONE

    def session_fetch(session_id: int, epoch: int, parts: list[tuple[int, int]],
                      forgotten: list[int] | None = None) -> Any:
        req = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, session_id=session_id, session_epoch=epoch,
                           topics=[FetchRequest.FetchTopic(topic="sessions", partitions=[
                               FetchRequest.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                               for p, o in parts])] if parts else [],
                           forgotten_topics_data=[FetchRequest.ForgottenTopic(topic="sessions", partitions=forgotten)]
                           if forgotten else [])
        return c.call(req, 12)

    def reported(resp: Any) -> list[tuple[int, int, int]]:
        return [(p.partition_index, p.high_watermark, len(list(MemoryRecords(bytes(p.records)).records())))
                for t in resp.responses for p in t.partitions]

    full = session_fetch(0, 0, [(0, 0), (1, 0)])
    sid = full.session_id
    assert full.error_code == NONE and sid != 0
    assert sorted(reported(full)) == [(0, 0, 0), (1, 0, 0)]
    assert reported(session_fetch(sid, 1, [])) == []  # nothing new
    assert part_error(produce(c, "sessions", 1, batch(2))) == NONE
    assert reported(session_fetch(sid, 2, [])) == [(1, 2, 2)]  # only the partition with news
    assert reported(session_fetch(sid, 3, [(1, 2)])) == []  # moved position, nothing new
    session_fetch(sid, 4, [], forgotten=[1])
    assert part_error(produce(c, "sessions", 1, batch(1))) == NONE
    assert reported(session_fetch(sid, 5, [])) == []  # partition 1 left the session
    assert session_fetch(sid, 5, []).error_code == 71  # INVALID_FETCH_SESSION_EPOCH (expected 6)
    assert session_fetch(sid + 1, 1, []).error_code == 70  # FETCH_SESSION_ID_NOT_FOUND
    closed = session_fetch(sid, -1, [(0, 0)])  # FINAL_EPOCH: close the session, answer sessionless
    assert closed.session_id == 0 and reported(closed) == [(0, 0, 0)]
    assert session_fetch(sid, 6, []).error_code == 70
    c.close()


def test_fetch_sessions_can_be_disabled() -> None:
    with MiniBroker(max_incremental_fetch_session_cache_slots=0) as b:
        c = Conn(b)
        assert create_topic(c, "nosess").error_code == NONE
        req = FetchRequest(max_wait_ms=0, min_bytes=1, session_id=0, session_epoch=0, topics=[FetchRequest.FetchTopic(
            topic="nosess", partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                                   partition_max_bytes=1000)])])
        resp = c.call(req, 12)
        assert resp.session_id == 0 and resp.responses[0].partitions[0].error_code == NONE
        c.close()


def test_logs_without_a_registry_are_adopted_and_stray_logs_removed(tmp_path: Any) -> None:
    import os

    data = str(tmp_path / "d")
    with MiniBroker(data_dir=data) as b:
        c = Conn(b)
        assert create_topic(c, "keepme", 2).error_code == NONE
        assert part_error(produce(c, "keepme", 1, batch(3))) == NONE
        c.close()
    os.remove(os.path.join(data, "__cluster_metadata.json"))
    with MiniBroker(data_dir=data) as b:
        c = Conn(b)
        p = fetch(c, "keepme", 1, 0).responses[0].partitions[0]
        assert p.error_code == NONE and p.high_watermark == 3  # adopted with its data
        c.close()
    os.makedirs(os.path.join(data, "ghost-0"))
    with MiniBroker(data_dir=data) as b:
        assert not os.path.exists(os.path.join(data, "ghost-0"))  # registry exists: stray log removed
        assert b.metadata_cache is not None and b.metadata_cache.get_topic("ghost") is None
