"""Every request our clients build encodes at every version the client may negotiate for it.

The requests are not written by hand: the producer, the consumer (group join/sync/heartbeat/commit/
offset fetch/leave, list offsets, fetch, metadata), the admin client and NetworkClient itself (ApiVersions,
Metadata) are driven through their real code paths against the test doubles, and every ``ClientRequest``
they create is captured. Each captured body is then encoded:

* at every version of its allowed range (the API's client-supported range narrowed by the request's
  ``oldest_allowed_version`` / ``latest_allowed_version``, exactly as NetworkClient computes it) when its
  builder does not know the version (producer, consumer, NetworkClient);
* at the version it was built for when the builder is version-dependent (the admin client's
  ``build(version)`` builders), with the admin driven once against a broker capped at each version.

A field the client sets that does not exist at a version it may negotiate fails here. Where a builder
cannot encode at some version on purpose, that must be an explicit decision in the builder (narrow the
allowed range, or build per version), not a surprise on the send path.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from pykafka_client import AdminClient, ConsumerRecord, KafkaConsumer, TopicPartition
from pykafka_client.admin import (
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    IsolationLevel,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from pykafka_client.consumer.assignors import Assignment, Subscription
from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.consumer_protocol import serialize_assignment, serialize_subscription
from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.errors import GroupIdNotFoundError
from pykafka_client.network import network_client
from pykafka_client.network.client_request import ClientRequest
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.request_encoding import allowed_version_range, encode_request_frame
from pykafka_client.producer.producer_metadata import ProducerMetadata
from pykafka_client.protocol.api_keys import CLIENT_SUPPORTED_VERSIONS, ApiKey
from pykafka_client.protocol.messages import (
    ConsumerGroupDescribeResponse,
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteGroupsResponse,
    DeleteRecordsResponse,
    DeleteTopicsResponse,
    DescribeClusterResponse,
    DescribeConfigsResponse,
    DescribeGroupsResponse,
    DescribeLogDirsResponse,
    FetchResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    IncrementalAlterConfigsResponse,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsResponse,
    ListOffsetsResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from pykafka_client.structs import Node, OffsetAndMetadata
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient
from tests.doubles.mock_selector import MockSelector, SentRequest
from tests.doubles.responses import api_versions_response, metadata_response, nodes
from tests.unit.consumer.helpers import batch
from tests.unit.producer.sender_harness import Harness as SenderHarness
from tests.unit.producer.sender_harness import init_pid_response, produce_response

TOPIC = "t"
TP0 = TopicPartition(TOPIC, 0)
MEMBER = "member-1"


@dataclass(frozen=True)
class Captured:
    """One request a client built: its body and the versions the client may send it at."""

    scenario: str
    body: Any
    versions: tuple[int, ...]

    @property
    def api_name(self) -> str:
        return ApiKey(int(self.body.API_KEY)).name


@contextmanager
def capture(scenario: str, out: list[Captured], *, version_dependent: bool = False) -> Iterator[None]:
    """Record every ClientRequest created inside the block (by NetworkClient or MockClient)."""
    original = ClientRequest.__init__
    # (NetworkClient builds its ClientRequests without __init__: network_client._new_client_request)
    original_new = network_client._new_client_request

    def record(self: ClientRequest) -> None:
        lo, hi = allowed_version_range(self)
        versions = ((hi,) if lo <= hi else ()) if version_dependent else tuple(range(lo, hi + 1))
        out.append(Captured(scenario, self.body, versions))

    def recording_init(self: ClientRequest, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        record(self)

    def recording_new(*args: Any) -> ClientRequest:
        request = original_new(*args)
        record(request)
        return request

    ClientRequest.__init__ = recording_init  # type: ignore[method-assign]
    network_client._new_client_request = recording_new
    try:
        yield
    finally:
        ClientRequest.__init__ = original  # type: ignore[method-assign]
        network_client._new_client_request = original_new


def encode_failures(captured: list[Captured]) -> list[str]:
    failures = []
    for c in captured:
        for v in c.versions:
            try:
                encode_request_frame(c.body, v, 1, "encode-test")
            except Exception as e:
                failures.append(f"{c.scenario}: {c.api_name} v{v}: {type(e).__name__}: {e}")
    return failures


# --- NetworkClient: ApiVersions, and the Metadata requests of every Metadata flavour ------------------


def _metadata_flavours() -> list[Metadata]:
    plain = Metadata(100, 1000, 300_000)
    no_auto_create = Metadata(100, 1000, 300_000, allow_auto_topic_creation=False)
    producer = ProducerMetadata(100, 1000)
    producer.add(TOPIC, 0)
    subscriptions = SubscriptionState()
    subscriptions.subscribe([TOPIC])
    consumer = ConsumerMetadata(subscriptions, allow_auto_topic_creation=False)
    pattern_subscriptions = SubscriptionState()
    pattern_subscriptions.subscribe_pattern(re.compile("t.*"))
    pattern = ConsumerMetadata(pattern_subscriptions)
    return [plain, no_auto_create, producer, consumer, pattern]


def drive_network_client() -> None:
    for metadata in _metadata_flavours():
        time = MockTime()
        selector = MockSelector(time)
        brokers = nodes(1)

        def answer(sel: MockSelector, brokers: list[Node] = brokers) -> None:
            for req in sel.unanswered():
                if req.api_key == ApiKey.API_VERSIONS:
                    sel.respond(req.destination, api_versions_response())
                elif req.api_key == ApiKey.METADATA:
                    sel.respond(req.destination, metadata_response(brokers, {TOPIC: 1}))

        selector.on_poll = answer
        metadata.bootstrap([("localhost", 9092)])
        client = NetworkClient(selector, metadata, time=time)
        for _ in range(10):
            client.poll(100, time.hi_res_clock_ms())
        assert metadata.update_version() > 0, "the scenario never completed a metadata update"


# --- producer: Sender (Produce, InitProducerId) ------------------------------------------------------


def drive_producer() -> None:
    for acks in (-1, 0, 1):
        h = SenderHarness(idempotent=acks == -1, with_producer_id=False, acks=acks)
        if acks == -1:
            h.client.prepare_response(init_pid_response())
        h.append(TP0, b"v")
        h.client.prepare_response(produce_response({TP0: (0, 0)}))
        for _ in range(4):
            h.run_once()


def drive_transactional_producer() -> None:
    """init_transactions, a transaction with records and consumer offsets (with and without KIP-447 group
    metadata) committed, one aborted after a failed send (EndTxn then the epoch-bumping InitProducerId)."""
    from tests.unit.producer import txn_harness as tx
    from tests.unit.producer.test_transactions import Group

    h = tx.TxnHarness()
    h.init_transactions()
    tm = h.txn
    for group in (Group(), Group(generation_id=-1, member_id="")):
        tm.begin_transaction()
        h.send_and_add()
        h.produce_ok()
        h.run_until(lambda: not h.accumulator.has_incomplete())
        offsets = tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(3, "m", leader_epoch=2)}, group)
        h.client.prepare_response(tx.add_offsets_response(), tx.is_add_offsets)
        if tm.group_coordinator is None:
            h.client.prepare_response(tx.find_coordinator_response(h.node1), tx.is_find_coordinator(0))
        h.client.prepare_response(tx.txn_offset_commit_response({TP0: 0}), tx.is_txn_offset_commit)
        h.run_until(offsets.is_completed)
        h.client.prepare_response(tx.end_txn_response(), tx.is_end_txn(True))
        commit = tm.begin_commit()
        h.run_until(commit.is_completed)
        commit.await_(0)
    tm.begin_transaction()
    h.send_and_add()
    h.client.prepare_response(produce_response({TP0: (87, -1)}), tx.is_produce)
    h.run_until(tm.has_abortable_error)
    h.client.prepare_response(tx.end_txn_response(), tx.is_end_txn(False))
    h.client.prepare_response(init_pid_response(epoch=1), tx.is_init_pid)
    abort = tm.begin_abort()
    h.run_until(abort.is_completed)
    abort.await_(0)


# --- consumer: a group member on the real ConsumerNetworkClient over MockClient ------------------------


class AutoClient(MockClient):
    """A MockClient whose broker answers every request by its API key."""

    def __init__(self, time: MockTime, metadata: Metadata, answer: Callable[[Any], Any]) -> None:
        super().__init__(time, metadata)
        self._answer_for = answer

    def send(self, request: ClientRequest, now_ms: int) -> None:
        body = self._answer_for(request.body)
        if body is not None:
            self.prepare_response(body)
        super().send(request, now_ms)


def consumer_answer(member_id: str) -> Callable[[Any], Any]:
    subscription = serialize_subscription(Subscription([TOPIC]))

    def answer(body: Any) -> Any:
        key = ApiKey(int(body.API_KEY))
        if key is ApiKey.FIND_COORDINATOR:
            return FindCoordinatorResponse(
                node_id=0,
                host="localhost",
                port=9092,
                coordinators=[FindCoordinatorResponse.Coordinator(key="g", node_id=0, host="localhost", port=9092)],
            )
        if key is ApiKey.JOIN_GROUP:
            return JoinGroupResponse(
                generation_id=1,
                protocol_type="consumer",
                protocol_name="range",
                leader=member_id,
                member_id=member_id,
                members=[JoinGroupResponse.JoinGroupResponseMember(member_id=member_id, metadata=subscription)],
            )
        if key is ApiKey.SYNC_GROUP:
            return SyncGroupResponse(
                protocol_type="consumer", protocol_name="range", assignment=serialize_assignment(Assignment([TP0]))
            )
        if key is ApiKey.HEARTBEAT:
            return HeartbeatResponse()
        if key is ApiKey.OFFSET_FETCH:
            return OffsetFetchResponse(
                groups=[OffsetFetchResponse.OffsetFetchResponseGroup(group_id="g")]
            )
        if key is ApiKey.LIST_OFFSETS:
            return ListOffsetsResponse(
                topics=[
                    ListOffsetsResponse.ListOffsetsTopicResponse(
                        name=TOPIC,
                        partitions=[ListOffsetsResponse.ListOffsetsPartitionResponse(partition_index=0, offset=0)],
                    )
                ]
            )
        if key is ApiKey.FETCH:
            return FetchResponse(
                responses=[
                    FetchResponse.FetchableTopicResponse(
                        topic=TOPIC,
                        topic_id=uuid.uuid5(uuid.NAMESPACE_DNS, TOPIC),
                        partitions=[
                            FetchResponse.PartitionData(partition_index=0, high_watermark=2, records=batch(0, [b"a", b"b"]))
                        ],
                    )
                ]
            )
        if key is ApiKey.OFFSET_COMMIT:
            return OffsetCommitResponse(
                topics=[
                    OffsetCommitResponse.OffsetCommitResponseTopic(
                        name=TOPIC, partitions=[OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=0)]
                    )
                ]
            )
        if key is ApiKey.LEAVE_GROUP:
            return LeaveGroupResponse(
                members=[LeaveGroupResponse.MemberResponse(member_id=member_id)]
            )
        if key is ApiKey.METADATA:
            return metadata_response(nodes(1), {TOPIC: 1})
        return None

    return answer


def drive_consumer(extra_config: dict[str, Any]) -> None:
    time = MockTime(auto_tick_ms=1)
    metadata = Metadata(100, 100, 300_000)
    metadata.bootstrap([("localhost", 9092)])
    metadata.update(0, metadata_response(nodes(1), {TOPIC: 1}), False, time.hi_res_clock_ms())
    client = AutoClient(time, metadata, consumer_answer(MEMBER))
    cnc = ConsumerNetworkClient(client, metadata, time, 100, 1000)
    config = {
        "group.id": "g",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "heartbeat.interval.ms": 10,
        **extra_config,
    }
    consumer: KafkaConsumer[Any, Any] = KafkaConsumer(config, time=time, client=cnc, metadata=metadata)
    try:
        consumer.subscribe([TOPIC])
        records: list[ConsumerRecord[Any, Any]] = []
        for _ in range(20):
            records.extend(consumer.poll(0.05))
            if records:
                break
        assert records, "the consumer never fetched: the scenario did not reach Fetch"
        consumer.commit_sync()
        consumer.committed({TP0})
        consumer.partitions_for(TOPIC)
        consumer.list_topics()
        time.sleep(50)  # a heartbeat is due
        consumer.poll(0.05)
        consumer.unsubscribe()
    finally:
        consumer.close(timeout=1)


# --- admin: version-dependent builders, driven at every broker version cap ------------------------------


def _admin_responders() -> dict[int, Callable[[SentRequest], Any]]:
    brokers = nodes(2, host="127.0.0.1")
    return {
        ApiKey.METADATA: lambda r: metadata_response(brokers, {TOPIC: 2}),
        ApiKey.DESCRIBE_CLUSTER: lambda r: DescribeClusterResponse(
            cluster_id="c",
            controller_id=0,
            brokers=[DescribeClusterResponse.DescribeClusterBroker(broker_id=b.id, host=b.host, port=b.port) for b in brokers],
        ),
        ApiKey.CREATE_TOPICS: lambda r: CreateTopicsResponse(
            topics=[CreateTopicsResponse.CreatableTopicResult(name=t.name) for t in r.body.topics]
        ),
        ApiKey.DELETE_TOPICS: lambda r: DeleteTopicsResponse(
            responses=[DeleteTopicsResponse.DeletableTopicResult(name=n) for n in (r.body.topic_names or [TOPIC])]
        ),
        ApiKey.CREATE_PARTITIONS: lambda r: CreatePartitionsResponse(
            results=[CreatePartitionsResponse.CreatePartitionsTopicResult(name=t.name) for t in r.body.topics]
        ),
        ApiKey.DESCRIBE_CONFIGS: lambda r: DescribeConfigsResponse(
            results=[
                DescribeConfigsResponse.DescribeConfigsResult(resource_type=x.resource_type, resource_name=x.resource_name)
                for x in r.body.resources
            ]
        ),
        ApiKey.LIST_OFFSETS: lambda r: ListOffsetsResponse(
            topics=[
                ListOffsetsResponse.ListOffsetsTopicResponse(
                    name=t.name,
                    partitions=[ListOffsetsResponse.ListOffsetsPartitionResponse(partition_index=p.partition_index) for p in t.partitions],
                )
                for t in r.body.topics
            ]
        ),
        # the consumer-group, delete-records and incremental-alter-configs calls (issue 14)
        ApiKey.FIND_COORDINATOR: lambda r: FindCoordinatorResponse(
            coordinators=[FindCoordinatorResponse.Coordinator(key=k, node_id=0, host="127.0.0.1", port=brokers[0].port)
                          for k in r.body.coordinator_keys],
        ) if r.body.coordinator_keys else FindCoordinatorResponse(node_id=0, host="127.0.0.1", port=brokers[0].port),
        ApiKey.LIST_GROUPS: lambda r: ListGroupsResponse(),
        ApiKey.CONSUMER_GROUP_DESCRIBE: lambda r: ConsumerGroupDescribeResponse(groups=[
            ConsumerGroupDescribeResponse.DescribedGroup(group_id=g, error_code=GroupIdNotFoundError.code)
            for g in r.body.group_ids]),
        ApiKey.DESCRIBE_GROUPS: lambda r: DescribeGroupsResponse(
            groups=[DescribeGroupsResponse.DescribedGroup(group_id=g, group_state="Dead") for g in r.body.groups]
        ),
        ApiKey.DELETE_GROUPS: lambda r: DeleteGroupsResponse(
            results=[DeleteGroupsResponse.DeletableGroupResult(group_id=g) for g in r.body.groups_names]
        ),
        ApiKey.OFFSET_FETCH: lambda r: OffsetFetchResponse(),
        ApiKey.OFFSET_COMMIT: lambda r: OffsetCommitResponse(),
        ApiKey.DELETE_RECORDS: lambda r: DeleteRecordsResponse(),
        ApiKey.INCREMENTAL_ALTER_CONFIGS: lambda r: IncrementalAlterConfigsResponse(),
        ApiKey.DESCRIBE_LOG_DIRS: lambda r: DescribeLogDirsResponse(),
    }


def _capped_api_versions(cap: int) -> Any:
    overrides: dict[int, tuple[int, int] | None] = {
        k: (lo, max(lo, min(hi, cap))) for k, (lo, hi) in CLIENT_SUPPORTED_VERSIONS.items()
    }
    return api_versions_response(overrides)


def drive_admin(cap: int) -> None:
    time = MockTime()
    selector = MockSelector(time)
    responders = _admin_responders()
    versions = _capped_api_versions(cap)

    def answer(sel: MockSelector) -> None:
        for req in sel.unanswered():
            if req.api_key == ApiKey.API_VERSIONS:
                sel.respond(req.destination, versions)
            elif req.api_key in responders:
                sel.respond(req.destination, responders[req.api_key](req), api_key=req.api_key)

    selector.on_poll = answer
    admin = AdminClient({"bootstrap.servers": "127.0.0.1:9092"}, time=time, selector=selector)
    calls: list[Callable[[], Any]] = [
        lambda: admin.describe_cluster(timeout=5),
        lambda: admin.list_topics(timeout=5),
        lambda: admin.describe_topics([TOPIC], timeout=5),
        lambda: admin.create_topics([NewTopic("n", 3, 1, configs={"cleanup.policy": "compact"})], timeout=5),
        lambda: admin.create_topics([NewTopic("n2", 3, 1, replica_assignments={0: [0, 1]})], validate_only=True, timeout=5),
        lambda: admin.create_partitions({TOPIC: NewPartitions(4)}, timeout=5),
        lambda: admin.delete_topics([TOPIC], timeout=5),
        lambda: admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)], timeout=5),
        lambda: admin.list_offsets({TP0: OffsetSpec.latest()}, timeout=5),
        lambda: admin.list_offsets({TP0: OffsetSpec.earliest()}, isolation_level=IsolationLevel.READ_COMMITTED, timeout=5),
        lambda: admin.list_offsets({TP0: OffsetSpec.for_timestamp(1000)}, timeout=5),
        lambda: admin.list_consumer_groups(timeout=5),
        lambda: admin.describe_consumer_groups(["g"], timeout=5),
        lambda: admin.delete_consumer_groups(["g"], timeout=5),
        lambda: admin.list_consumer_group_offsets("g", timeout=5),
        lambda: admin.list_consumer_group_offsets("g", [TP0], timeout=5),
        lambda: admin.alter_consumer_group_offsets("g", {TP0: 5}, timeout=5),
        lambda: admin.delete_records({TP0: 5}, timeout=5),
        lambda: admin.incremental_alter_configs(
            {ConfigResource(ConfigResourceType.TOPIC, TOPIC): [AlterConfigOp("retention.ms", "1")]}, timeout=5
        ),
        lambda: admin.describe_log_dirs([0], timeout=5),
    ]
    try:
        for call in calls:
            try:
                call()
            except Exception:
                continue
    finally:
        admin.close()


ADMIN_CAPS = range(0, max(hi for _, hi in CLIENT_SUPPORTED_VERSIONS.values()) + 1)


def drive_admin_at_every_cap() -> None:
    for cap in ADMIN_CAPS:
        drive_admin(cap)


# --- the tests ---------------------------------------------------------------------------------------

STATIC = {"group.instance.id": "instance-1"}
READ_COMMITTED = {"isolation.level": "read_committed", "client.rack": "rack-a"}

#: scenario -> (how to drive it, whether its builders are version-dependent, the APIs it must reach)
SCENARIOS: dict[str, tuple[Callable[[], None], bool, set[str]]] = {
    "network_client": (drive_network_client, False, {"API_VERSIONS", "METADATA"}),
    "producer": (drive_producer, False, {"PRODUCE", "INIT_PRODUCER_ID"}),
    "transactional_producer": (drive_transactional_producer, False, {
        "FIND_COORDINATOR", "INIT_PRODUCER_ID", "ADD_PARTITIONS_TO_TXN", "PRODUCE", "ADD_OFFSETS_TO_TXN",
        "TXN_OFFSET_COMMIT", "END_TXN",
    }),
    "admin": (
        drive_admin_at_every_cap,
        True,
        {
            "API_VERSIONS",
            "METADATA",
            "DESCRIBE_CLUSTER",
            "CREATE_TOPICS",
            "DELETE_TOPICS",
            "CREATE_PARTITIONS",
            "DESCRIBE_CONFIGS",
            "LIST_OFFSETS",
            "FIND_COORDINATOR",
            "LIST_GROUPS",
            "CONSUMER_GROUP_DESCRIBE",
            "DESCRIBE_GROUPS",
            "DELETE_GROUPS",
            "OFFSET_FETCH",
            "OFFSET_COMMIT",
            "DELETE_RECORDS",
            "INCREMENTAL_ALTER_CONFIGS",
            "DESCRIBE_LOG_DIRS",
        },
    ),
    "consumer": (lambda: drive_consumer({}), False, {
        "FIND_COORDINATOR", "JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT", "OFFSET_FETCH", "OFFSET_COMMIT",
        "LIST_OFFSETS", "FETCH", "LEAVE_GROUP", "METADATA",
    }),
    "consumer_read_committed": (lambda: drive_consumer(READ_COMMITTED), False, {"LIST_OFFSETS", "FETCH"}),
    "consumer_static_member": (lambda: drive_consumer(STATIC), False, {
        "JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT", "OFFSET_COMMIT",
    }),
}




_CACHE: dict[str, list[Captured]] = {}


def captured_for(scenario: str) -> list[Captured]:
    if scenario not in _CACHE:
        drive, version_dependent, _ = SCENARIOS[scenario]
        out: list[Captured] = []
        with capture(scenario, out, version_dependent=version_dependent):
            drive()
        _CACHE[scenario] = out
    return _CACHE[scenario]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_reaches_every_request_it_is_meant_to_build(scenario: str) -> None:
    """Guards the guard: a scenario that stops reaching an API would make its encode test vacuous."""
    assert SCENARIOS[scenario][2] <= {c.api_name for c in captured_for(scenario)}


def _cases() -> list[Any]:
    cases = []
    for scenario, (_, _, apis) in sorted(SCENARIOS.items()):
        for api in sorted(apis):
            cases.append(pytest.param(scenario, api, id=f"{scenario}-{api}"))
    return cases


@pytest.mark.parametrize(("scenario", "api"), _cases())
def test_every_built_request_encodes_at_every_version_the_client_may_send(scenario: str, api: str) -> None:
    captured = [c for c in captured_for(scenario) if c.api_name == api]
    assert captured, f"{scenario} built no {api} request"
    assert encode_failures(captured) == []


def test_the_encode_check_catches_a_field_its_version_lacks() -> None:
    """The check itself can fail: LeaveGroup with member_id and members cannot encode at any version."""
    body = LeaveGroupRequest(
        group_id="g", member_id="m", members=[LeaveGroupRequest.MemberIdentity(member_id="m")]
    )
    failures = encode_failures([Captured("self-test", body, tuple(range(0, 6)))])
    assert len(failures) == 6
    assert "non-default Members at version 0" in failures[0]
