"""Every API's authorization answer on the wire, compared with Kafka's (KafkaApis / ControllerApis, and the
operations table of the Kafka docs, "Authorization and ACLs"): the operation it checks and the error code it
answers, TOPIC_AUTHORIZATION_FAILED (29), GROUP_AUTHORIZATION_FAILED (30), CLUSTER_AUTHORIZATION_FAILED (31),
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), OPERATION_NOT_ATTEMPTED (55).

The broker is prepared by a start with ``super.users=User:ANONYMOUS`` (topics ``t`` and ``seen``, a committed
offset of group ``g``, an open transaction of ``tx-open``, and a few ACLs), then restarted on the same data
directory without super users: the client (User:ANONYMOUS on PLAINTEXT) has only those ACLs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.security.authorizer import STANDARD_AUTHORIZER
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer
from pykafka_client.admin import NewTopic
from pykafka_client.protocol.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from pykafka_client.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AlterClientQuotasRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    ListTransactionsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH, TXN_AUTH, NOT_ATTEMPTED = 29, 30, 31, 53, 55
ANON = "User:ANONYMOUS"
Op, RT = AclOperation, ResourceType


def grant(rtype: ResourceType, name: str, op: AclOperation, pattern: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(ANON, "*", op, AclPermissionType.ALLOW))


#: what the client may do after the restart
GRANTED = [
    grant(RT.TOPIC, "seen", Op.DESCRIBE),             # visible, nothing more
    grant(RT.GROUP, "g-read", Op.READ),               # a group it may use, with no topic it may read
    grant(RT.TRANSACTIONAL_ID, "tx-write", Op.WRITE),  # a transactional id it may use (WRITE implies DESCRIBE)
    grant(RT.TOPIC, "made-", Op.CREATE, PatternType.PREFIXED),  # topics it may create (but not describe)
    grant(RT.TOPIC, "ghost-", Op.DESCRIBE, PatternType.PREFIXED),  # describable names, no such topics
]


#: topic name -> id, read while the client was a super user
TOPIC_IDS: dict[str, uuid.UUID] = {}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniBroker]:
    data = str(tmp_path_factory.mktemp("acl-wire") / "data")
    config: dict[str, object] = {"authorizer.class.name": STANDARD_AUTHORIZER, "group.initial.rebalance.delay.ms": 0}
    with MiniBroker({**config, "super.users": ANON}, data_dir=data) as first:
        bootstrap = first.bootstrap_servers
        with AdminClient(bootstrap_servers=bootstrap) as admin:
            admin.create_topics([NewTopic("t", 1, 1), NewTopic("seen", 1, 1)], timeout=10)
            TOPIC_IDS.update({n: d.topic_id for n, d in admin.describe_topics(["t", "seen"], timeout=10).items()
                              if d.topic_id is not None})
            admin.create_acls(GRANTED, timeout=10)
        with KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": "tx-open"}) as producer:
            producer.init_transactions(15)
            producer.begin_transaction()
            producer.send("t", b"open", partition=0).result(15)
            producer.flush(15)
            with KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": "g"}) as consumer:
                consumer.assign([("t", 0)])  # type: ignore[list-item]
                consumer.commit_sync({("t", 0): 0})  # type: ignore[dict-item]
            producer.abort_transaction(15)
    with MiniBroker(config, data_dir=data) as b:
        yield b


@pytest.fixture
def conn(broker: MiniBroker) -> Iterator[Conn]:
    with Conn(broker) as c:
        yield c


def _records() -> bytes:
    builder = MemoryRecordsBuilder()
    builder.append(0, None, b"v")
    return bytes(builder.build())


def test_metadata_hides_what_the_principal_may_not_describe(conn: Conn) -> None:
    everything = conn.call(MetadataRequest(topics=None, include_topic_authorized_operations=True), 10)
    assert [(t.name, t.topic_authorized_operations) for t in everything.topics] == [("seen", 1 << Op.DESCRIBE)]
    named = conn.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in
                                              ("t", "no-such", "seen")], allow_auto_topic_creation=True), 10)
    # an existing and a missing topic answer alike: existence is not revealed; no CREATE: no auto-creation
    assert [(t.name, t.error_code, len(t.partitions)) for t in named.topics] == [
        ("t", TOPIC_AUTH, 0), ("no-such", TOPIC_AUTH, 0), ("seen", 0, 1)]
    # v8-10: the cluster's authorized operations need DESCRIBE on the cluster, else 0
    cluster = conn.call(MetadataRequest(topics=[], include_cluster_authorized_operations=True), 10)
    assert cluster.cluster_authorized_operations == 0


def test_topic_apis(conn: Conn) -> None:
    lo = conn.call(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name="t", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7)
    assert lo.topics[0].partitions[0].error_code == TOPIC_AUTH
    ofle = conn.call(OffsetForLeaderEpochRequest(topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
        topic="t", partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, leader_epoch=0)])]), 4)
    assert ofle.topics[0].partitions[0].error_code == TOPIC_AUTH
    ct = conn.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="new", num_partitions=1, replication_factor=1)], timeout_ms=5000), 7)
    assert ct.topics[0].error_code == TOPIC_AUTH
    made = conn.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="made-1", num_partitions=1, replication_factor=1)], timeout_ms=5000), 7).topics[0]
    # created (CREATE on the prefix), but its configs are not shown without DESCRIBE_CONFIGS
    assert (made.error_code, made.topic_config_error_code, made.configs) == (0, TOPIC_AUTH, [])
    dt = conn.call(DeleteTopicsRequest(topic_names=["t", "seen", "no-such", "ghost-1"], timeout_ms=5000), 5)
    # DESCRIBE and DELETE are checked before existence (ControllerApis.deleteTopics)
    assert [(r.name, r.error_code) for r in dt.responses] == [("t", TOPIC_AUTH), ("seen", TOPIC_AUTH),
                                                                ("no-such", TOPIC_AUTH), ("ghost-1", TOPIC_AUTH)]
    # by id (v6): a topic the principal may not describe answers without its name or id; one it may describe but
    # not delete keeps them
    by_id = conn.call(DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(topic_id=TOPIC_IDS[n])
                                                  for n in ("t", "seen")], timeout_ms=5000), 6)
    assert [(r.name, r.topic_id, r.error_code) for r in by_id.responses] == [
        (None, uuid.UUID(int=0), TOPIC_AUTH), ("seen", TOPIC_IDS["seen"], TOPIC_AUTH)]
    cp = conn.call(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name="t", count=3, assignments=None)], timeout_ms=5000), 3)
    assert cp.results[0].error_code == TOPIC_AUTH
    dr = conn.call(DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=0)])],
        timeout_ms=5000), 2)
    assert dr.topics[0].partitions[0].error_code == TOPIC_AUTH
    dp = conn.call(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name="seen", partition_indexes=[0])]), 0)  # READ is needed; DESCRIBE is not enough
    assert dp.topics[0].partitions[0].error_code == TOPIC_AUTH


def test_produce_and_fetch(conn: Conn) -> None:
    produce = conn.call(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name="seen", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=_records())])]), 9)
    assert produce.responses[0].partition_responses[0].error_code == TOPIC_AUTH
    txn = conn.call(ProduceRequest(transactional_id="tx-other", acks=1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[ProduceRequest.PartitionProduceData(
            index=0, records=_records())])]), 9)
    assert txn.responses[0].partition_responses[0].error_code == TXN_AUTH

    def fetch(replica_id: int) -> int:
        r = conn.call(FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=0, topics=[
            FetchRequest.FetchTopic(topic="t", partitions=[FetchRequest.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1024)])]), 12)
        return int(r.responses[0].partitions[0].error_code)

    assert fetch(-1) == TOPIC_AUTH  # a consumer: READ on the topic
    assert fetch(1) == TOPIC_AUTH   # a follower: CLUSTER_ACTION on the cluster


def test_group_apis(conn: Conn) -> None:
    fc = conn.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["g", "g-read"]), 4)
    assert [(c.key, c.error_code) for c in fc.coordinators] == [("g", GROUP_AUTH), ("g-read", 0)]
    join = conn.call(JoinGroupRequest(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                      member_id="", protocol_type="consumer", protocols=[]), 9)
    assert join.error_code == GROUP_AUTH
    of = conn.call(OffsetFetchRequest(group_id="g", topics=None), 7)
    assert of.error_code == GROUP_AUTH and of.topics == []
    commit = conn.call(OffsetCommitRequest(group_id="g-read", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 8)
    assert commit.topics[0].partitions[0].error_code == TOPIC_AUTH  # READ on the group, not on the topic
    commit = conn.call(OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 8)
    assert commit.topics[0].partitions[0].error_code == GROUP_AUTH
    described = conn.call(DescribeGroupsRequest(groups=["g"]), 5)
    assert described.groups[0].error_code == GROUP_AUTH
    # ListGroups without DESCRIBE on the cluster: only groups the principal may DESCRIBE (none of them: g exists)
    assert conn.call(ListGroupsRequest(), 4).groups == []
    deleted = conn.call(DeleteGroupsRequest(groups_names=["g"]), 2)
    assert deleted.results[0].error_code == GROUP_AUTH
    od = conn.call(OffsetDeleteRequest(group_id="g", topics=[]), 0)
    assert od.error_code == GROUP_AUTH


def test_transaction_apis(conn: Conn) -> None:
    fc = conn.call(FindCoordinatorRequest(key_type=1, coordinator_keys=["tx-open", "tx-write"]), 4)
    assert [(c.key, c.error_code) for c in fc.coordinators] == [("tx-open", TXN_AUTH), ("tx-write", 0)]
    assert conn.call(InitProducerIdRequest(transactional_id="tx-open", transaction_timeout_ms=60000), 4
                     ).error_code == TXN_AUTH
    # idempotent: IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679); neither is granted
    assert conn.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4
                     ).error_code == CLUSTER_AUTH
    topics = [AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=[0])]
    denied = conn.call(AddPartitionsToTxnRequest(v3_and_below_transactional_id="tx-open", v3_and_below_producer_id=1,
                                                 v3_and_below_topics=topics), 3)
    assert denied.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == TXN_AUTH
    both = [AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=[0]),
            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="seen", partitions=[0])]
    partial = conn.call(AddPartitionsToTxnRequest(v3_and_below_transactional_id="tx-write",
                                                  v3_and_below_producer_id=1, v3_and_below_topics=both), 3)
    # WRITE on neither topic: both TOPIC_AUTHORIZATION_FAILED (OPERATION_NOT_ATTEMPTED is for the allowed ones)
    assert {r.name: r.results_by_partition[0].partition_error_code
            for r in partial.results_by_topic_v3_and_below} == {"t": TOPIC_AUTH, "seen": TOPIC_AUTH}
    # v4+ come from brokers: CLUSTER_ACTION
    v4 = conn.call(AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
        transactional_id="tx-write", producer_id=1, verify_only=True, topics=topics)]), 4)
    assert v4.error_code == CLUSTER_AUTH
    assert conn.call(AddOffsetsToTxnRequest(transactional_id="tx-open", group_id="g-read"), 3).error_code == TXN_AUTH
    assert conn.call(AddOffsetsToTxnRequest(transactional_id="tx-write", group_id="g"), 3).error_code == GROUP_AUTH
    assert conn.call(EndTxnRequest(transactional_id="tx-open", committed=False), 3).error_code == TXN_AUTH
    toc = conn.call(TxnOffsetCommitRequest(transactional_id="tx-open", group_id="g-read", topics=[
        TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="t", partitions=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=0)])]), 3)
    assert toc.topics[0].partitions[0].error_code == TXN_AUTH
    markers = conn.call(WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=1, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name="t", partition_indexes=[0])])]), 1)
    assert markers.markers[0].topics[0].partitions[0].error_code == CLUSTER_AUTH
    dt = conn.call(DescribeTransactionsRequest(transactional_ids=["tx-open"]), 0)
    assert dt.transaction_states[0].error_code == TXN_AUTH
    assert conn.call(ListTransactionsRequest(), 1).transaction_states == []  # tx-open is not DESCRIBE-able


def test_config_quota_cluster_and_acl_apis(conn: Conn) -> None:
    dc = conn.call(DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name="seen", configuration_keys=None),
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name="", configuration_keys=None)]), 4)
    assert [r.error_code for r in dc.results] == [TOPIC_AUTH, CLUSTER_AUTH]
    iac = conn.call(IncrementalAlterConfigsRequest(resources=[
        IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=2, resource_name="seen", configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name="retention.ms", config_operation=0, value="1000")])]), 1)
    assert iac.responses[0].error_code == TOPIC_AUTH
    assert conn.call(DescribeClientQuotasRequest(components=[]), 1).error_code == CLUSTER_AUTH
    acq = conn.call(AlterClientQuotasRequest(entries=[AlterClientQuotasRequest.EntryData(
        entity=[AlterClientQuotasRequest.EntityData(entity_type="user", entity_name="x")],
        ops=[AlterClientQuotasRequest.OpData(key="producer_byte_rate", value=1.0)])]), 1)
    assert acq.entries[0].error_code == CLUSTER_AUTH
    dld = conn.call(DescribeLogDirsRequest(topics=None), 4)
    assert dld.error_code == CLUSTER_AUTH and dld.results == []
    # DescribeCluster needs no permission (as in Kafka); its authorized operations need DESCRIBE on the cluster
    cluster = conn.call(DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
    assert cluster.error_code == 0 and cluster.cluster_authorized_operations == 0
    assert conn.call(DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                         principal_filter=None, host_filter=None, operation=1, permission_type=1),
                     3).error_code == CLUSTER_AUTH
    created = conn.call(CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
        resource_type=4, resource_name=CLUSTER_NAME, resource_pattern_type=3, principal=ANON, host="*",
        operation=int(Op.ALL), permission_type=3)]), 3)
    assert created.results[0].error_code == CLUSTER_AUTH  # no one grants themselves the cluster
