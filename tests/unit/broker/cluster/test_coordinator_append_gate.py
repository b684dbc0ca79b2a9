"""The coordinators' response gate on a cluster broker: an answer whose internal append did not reach the ISR
(NOT_ENOUGH_REPLICAS, leadership lost, ``offsets.commit.timeout.ms`` passed) is sent with Kafka's coordinator
error for it, per partition / per group where the answer has no top-level error code, never turned into a
closed connection. MockTime, inline timers, a fake replication (the ISR check's answer set by the test)."""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Iterator
from typing import Any, cast

import pytest

from mini_broker.cluster.coordinator_errors import group_append_error, offsets_append_error, txn_append_error
from mini_broker.cluster.coordinator_partitions import CoordinatorAppendGate
from mini_broker.coordinator.partitioning import partition_for
from mini_broker.network.request_channel import Request, RequestContext
from mini_broker.purgatory import DelayedOperationPurgatory, TopicPartitionOperationKey
from mini_broker.share.share_coordinator import SHARE_GROUP_STATE_TOPIC_NAME, share_key
from mini_broker.timer import SystemTimer
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    InvalidCommitOffsetSizeError,
    KafkaStorageError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    RequestTimedOutError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    AddPartitionsToTxnResponse,
    DeleteGroupsResponse,
    OffsetCommitResponse,
    SyncGroupResponse,
    TxnOffsetCommitResponse,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
    WriteTxnMarkersResponse,
)
from pykafka_client.protocol.types import Message
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime

OFFSETS0 = TopicPartition("__consumer_offsets", 0)
TXN0 = TopicPartition("__transaction_state", 0)
TIMEOUT_MS = 5000
COORDINATOR_NOT_AVAILABLE = CoordinatorNotAvailableError.code
NOT_COORDINATOR = NotCoordinatorError.code


class FakeLog:
    def __init__(self, high_watermark: int, log_end_offset: int) -> None:
        self.high_watermark, self.log_end_offset = high_watermark, log_end_offset


class FakeLogManager:
    def __init__(self) -> None:
        self.logs: dict[tuple[str, int], FakeLog] = {}

    def get_log(self, topic: str, partition: int) -> FakeLog | None:
        return self.logs.get((topic, partition))


class FakeReplicaManager:
    def __init__(self, time: MockTime) -> None:
        self.log_manager = FakeLogManager()
        timer = SystemTimer("Produce", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
        self.produce_purgatory: DelayedOperationPurgatory[Any] = DelayedOperationPurgatory(
            "Produce", timer, reaper_enabled=False, time=time)
        #: the ISR check's answer per partition: (high watermark reached, error)
        self.isr: dict[Hashable, tuple[bool, int]] = {}

    def check_enough_replicas(self, tp: Hashable, required_offset: int) -> tuple[bool, int]:
        return self.isr.get(tp, (False, 0))


class FakeTopic:
    def __init__(self, num_partitions: int) -> None:
        self.num_partitions = num_partitions


class FakeMetadataCache:
    def __init__(self) -> None:
        self.topics: dict[str, FakeTopic] = {}

    def get_topic(self, name: str) -> FakeTopic | None:
        return self.topics.get(name)


class FakeCluster:
    def __init__(self, time: MockTime) -> None:
        self.rm = FakeReplicaManager(time)
        self.cache = FakeMetadataCache()
        self.unreplicated: dict[TopicPartition, int] = {}

    def unreplicated_internal_offsets(self, topics: frozenset[str]) -> dict[TopicPartition, int]:
        return dict(self.unreplicated)


@pytest.fixture
def time() -> MockTime:
    return MockTime()


@pytest.fixture
def cluster(time: MockTime) -> Iterator[FakeCluster]:
    c = FakeCluster(time)
    yield c
    c.rm.produce_purgatory.shutdown()


def _gate(cluster: FakeCluster, time: MockTime | None = None) -> CoordinatorAppendGate:
    return CoordinatorAppendGate(cast(Any, cluster), TIMEOUT_MS, time if time is not None else MockTime())


def _request(api_key: ApiKey, version: int = 0, received_ns: int = 0, request: Message | None = None) -> Request:
    return Request(0, RequestContext(int(api_key), version, 1, "c", "conn", "127.0.0.1", "PLAINTEXT"), request, 0,
                   received_ns)


def _hold(gate: CoordinatorAppendGate, api_key: ApiKey, body: Message, received_ns: int = 0,
          request: Message | None = None) -> list[Message]:
    sent: list[Message] = []
    gate.hold(_request(api_key, received_ns=received_ns, request=request), body, lambda: sent.append(body))
    return sent


def _offset_commit_answer() -> OffsetCommitResponse:
    P = OffsetCommitResponse.OffsetCommitResponsePartition
    return OffsetCommitResponse(topics=[OffsetCommitResponse.OffsetCommitResponseTopic(
        "t", [P(0, 0), P(1, OffsetMetadataTooLargeError.code)])])


def _partition_errors(body: OffsetCommitResponse | TxnOffsetCommitResponse) -> list[int]:
    return [p.error_code for t in body.topics for p in t.partitions]


def _fail(cluster: FakeCluster, tp: TopicPartition, error: int) -> None:
    cluster.rm.isr[tp] = (False, error)
    cluster.rm.produce_purgatory.check_and_complete(TopicPartitionOperationKey(tp.topic, tp.partition))


def test_an_offset_commit_whose_isr_wait_fails_answers_each_partition_coordinator_not_available(
        cluster: FakeCluster) -> None:
    gate = _gate(cluster)
    cluster.unreplicated = {OFFSETS0: 10}
    body = _offset_commit_answer()
    sent = _hold(gate, ApiKey.OFFSET_COMMIT, body)
    assert sent == []  # held until the ISR has the commit
    _fail(cluster, OFFSETS0, NotEnoughReplicasError.code)
    # answered (not a closed connection): the committed partition gets the coordinator's retriable error, the
    # partition refused before the append keeps its own
    assert sent == [body]
    assert _partition_errors(body) == [COORDINATOR_NOT_AVAILABLE, OffsetMetadataTooLargeError.code]


def test_an_offset_commit_not_replicated_within_offsets_commit_timeout_is_answered_with_an_error(
        cluster: FakeCluster, time: MockTime) -> None:
    gate = _gate(cluster)
    cluster.unreplicated = {OFFSETS0: 10}
    body = _offset_commit_answer()
    sent = _hold(gate, ApiKey.OFFSET_COMMIT, body)
    time.sleep(TIMEOUT_MS - 500)
    cluster.rm.produce_purgatory.timeout_timer.advance_clock(0)
    assert sent == []
    time.sleep(1000)
    cluster.rm.produce_purgatory.timeout_timer.advance_clock(0)
    assert sent == [body] and _partition_errors(body)[0] == COORDINATOR_NOT_AVAILABLE  # REQUEST_TIMED_OUT mapped


def test_a_replicated_offset_commit_is_answered_as_it_is(cluster: FakeCluster) -> None:
    gate = _gate(cluster)
    cluster.unreplicated = {OFFSETS0: 10}
    body = _offset_commit_answer()
    sent = _hold(gate, ApiKey.OFFSET_COMMIT, body)
    cluster.rm.isr[OFFSETS0] = (True, 0)
    cluster.rm.produce_purgatory.check_and_complete(TopicPartitionOperationKey(OFFSETS0.topic, 0))
    assert sent == [body] and _partition_errors(body) == [0, OffsetMetadataTooLargeError.code]


def test_delete_groups_after_leadership_loss_answers_each_group_not_coordinator(cluster: FakeCluster) -> None:
    gate = _gate(cluster)
    cluster.unreplicated = {OFFSETS0: 3}
    R = DeleteGroupsResponse.DeletableGroupResult
    body = DeleteGroupsResponse(results=[R("g1", 0), R("g2", 0)])
    sent = _hold(gate, ApiKey.DELETE_GROUPS, body)
    _fail(cluster, OFFSETS0, NotLeaderOrFollowerError.code)
    assert sent == [body] and [r.error_code for r in body.results] == [NOT_COORDINATOR, NOT_COORDINATOR]


def test_a_sync_group_append_timing_out_answers_rebalance_in_progress(cluster: FakeCluster, time: MockTime) -> None:
    gate = _gate(cluster)
    cluster.unreplicated = {OFFSETS0: 3}
    body = SyncGroupResponse(assignment=b"x")
    sent = _hold(gate, ApiKey.SYNC_GROUP, body)
    time.sleep(TIMEOUT_MS + 1000)
    cluster.rm.produce_purgatory.timeout_timer.advance_clock(0)
    assert sent == [body] and body.error_code == RebalanceInProgressError.code  # Kafka storeGroup's mapping


def test_add_partitions_v3_carries_the_error_per_partition(cluster: FakeCluster) -> None:
    """AddPartitionsToTxn before v4 has no top-level error code on the wire: each partition carries it."""
    gate = _gate(cluster)
    cluster.unreplicated = {TXN0: 3}
    T = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
    P = AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult
    body = AddPartitionsToTxnResponse(results_by_topic_v3_and_below=[T("t", [P(0, 0), P(1, 0)])])
    sent = _hold(gate, ApiKey.ADD_PARTITIONS_TO_TXN, body)
    _fail(cluster, TXN0, NotEnoughReplicasAfterAppendError.code)
    assert sent == [body]
    assert [p.partition_error_code for t in body.results_by_topic_v3_and_below for p in t.results_by_partition] == \
        [COORDINATOR_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE]


def test_an_answer_is_not_failed_by_another_internal_topics_partition(cluster: FakeCluster) -> None:
    """A TxnOffsetCommit reports on __consumer_offsets: a failed wait of __transaction_state (also led here)
    does not make its replicated commit fail."""
    gate = _gate(cluster)
    cluster.unreplicated = {OFFSETS0: 3, TXN0: 7}
    P = TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition
    body = TxnOffsetCommitResponse(topics=[TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic("t", [P(0, 0)])])
    sent = _hold(gate, ApiKey.TXN_OFFSET_COMMIT, body)
    cluster.rm.isr[OFFSETS0] = (True, 0)
    _fail(cluster, TXN0, NotEnoughReplicasError.code)
    assert sent == [body] and _partition_errors(body) == [0]


def test_write_txn_markers_carry_the_produce_error_of_the_failed_offsets_partition(cluster: FakeCluster) -> None:
    gate = _gate(cluster)
    cluster.unreplicated = {OFFSETS0: 3}
    P = WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult
    T = WriteTxnMarkersResponse.WritableTxnMarkerTopicResult
    body = WriteTxnMarkersResponse(markers=[WriteTxnMarkersResponse.WritableTxnMarkerResult(
        7, [T("__consumer_offsets", [P(0, 0)]), T("data", [P(0, 0)])])])
    sent = _hold(gate, ApiKey.WRITE_TXN_MARKERS, body)
    _fail(cluster, OFFSETS0, NotEnoughReplicasError.code)
    assert sent == [body]
    # per partition, as Kafka's append result (the coordinator retries the marker); the data partition's stays
    assert [[p.error_code for p in t.partitions] for t in body.markers[0].topics] == \
        [[NotEnoughReplicasError.code], [0]]


@pytest.mark.parametrize("append_error, offsets, group, txn", [
    (UnknownTopicOrPartitionError.code, COORDINATOR_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE,
     COORDINATOR_NOT_AVAILABLE),
    (NotEnoughReplicasError.code, COORDINATOR_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE),
    (NotEnoughReplicasAfterAppendError.code, COORDINATOR_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE,
     COORDINATOR_NOT_AVAILABLE),
    (RequestTimedOutError.code, COORDINATOR_NOT_AVAILABLE, RebalanceInProgressError.code, COORDINATOR_NOT_AVAILABLE),
    (NotLeaderOrFollowerError.code, NOT_COORDINATOR, NOT_COORDINATOR, NOT_COORDINATOR),
    (KafkaStorageError.code, NOT_COORDINATOR, NOT_COORDINATOR, NOT_COORDINATOR),
    (RecordTooLargeError.code, InvalidCommitOffsetSizeError.code, UnknownServerError.code, UnknownServerError.code),
    (RecordBatchTooLargeError.code, InvalidCommitOffsetSizeError.code, UnknownServerError.code,
     UnknownServerError.code),
    (UnknownServerError.code, UnknownServerError.code, UnknownServerError.code, UnknownServerError.code),
])
def test_kafkas_mappings_of_a_failed_coordinator_append(append_error: int, offsets: int, group: int, txn: int) -> None:
    assert (offsets_append_error(append_error), group_append_error(append_error), txn_append_error(append_error)) == \
        (offsets, group, txn)


def _resign(gate: CoordinatorAppendGate, cluster: FakeCluster, high_watermark: int, log_end_offset: int) -> None:
    """This broker led __consumer_offsets-0 and stops leading it, its log as given."""
    cluster.rm.log_manager.logs[("__consumer_offsets", 0)] = FakeLog(high_watermark, log_end_offset)
    gate.on_leadership_change(OFFSETS0, 1, cast(Any, object()))
    gate.on_leadership_change(OFFSETS0, 2, None)
    cluster.unreplicated = {}  # the gate waits only on the partitions this broker still leads


def test_an_answer_to_a_request_received_before_an_unsafe_resignation_fails_not_coordinator(
        cluster: FakeCluster, time: MockTime) -> None:
    """Appended just before the resignation, answered just after: its records may be truncated by the new
    leader, so the answer must not say "committed"."""
    gate = _gate(cluster, time)
    received = time.nanoseconds()
    time.sleep(1)
    _resign(gate, cluster, high_watermark=5, log_end_offset=8)
    body = _offset_commit_answer()
    sent = _hold(gate, ApiKey.OFFSET_COMMIT, body, received_ns=received)
    assert sent == [body] and _partition_errors(body) == [NOT_COORDINATOR, OffsetMetadataTooLargeError.code]


def test_a_resignation_with_everything_replicated_or_before_the_request_fails_nothing(
        cluster: FakeCluster, time: MockTime) -> None:
    gate = _gate(cluster, time)
    received = time.nanoseconds()
    time.sleep(1)
    _resign(gate, cluster, high_watermark=8, log_end_offset=8)  # the ISR had every record
    body = _offset_commit_answer()
    assert _hold(gate, ApiKey.OFFSET_COMMIT, body, received_ns=received) == [body]
    assert _partition_errors(body)[0] == 0

    gate = _gate(cluster, time)
    _resign(gate, cluster, high_watermark=5, log_end_offset=8)
    time.sleep(1)
    later = _offset_commit_answer()  # received after the resignation: the coordinator answered it itself
    assert _hold(gate, ApiKey.OFFSET_COMMIT, later, received_ns=time.nanoseconds()) == [later]
    assert _partition_errors(later)[0] == 0


def test_a_followers_leadership_change_is_not_a_resignation(cluster: FakeCluster, time: MockTime) -> None:
    gate = _gate(cluster, time)
    received = time.nanoseconds()
    cluster.rm.log_manager.logs[("__consumer_offsets", 0)] = FakeLog(5, 8)  # a follower's high watermark lags
    gate.on_leadership_change(OFFSETS0, 2, None)
    body = _offset_commit_answer()
    assert _hold(gate, ApiKey.OFFSET_COMMIT, body, received_ns=received) == [body]
    assert _partition_errors(body)[0] == 0


def _share_state_write(group: str, topic_id: uuid.UUID, partition: int) -> WriteShareGroupStateRequest:
    W = WriteShareGroupStateRequest
    return W(group_id=group, topics=[W.WriteStateData(topic_id=topic_id, partitions=[W.PartitionData(
        partition=partition, state_epoch=0, leader_epoch=0, start_offset=0, state_batches=[])])])


def _share_state_answer(topic_id: uuid.UUID, partition: int) -> WriteShareGroupStateResponse:
    W = WriteShareGroupStateResponse
    return W(results=[W.WriteStateResult(topic_id=topic_id, partitions=[W.PartitionResult(partition=partition)])])


def test_a_share_state_write_waits_only_for_its_own_share_group_state_partition(
        cluster: FakeCluster, time: MockTime) -> None:
    """Kafka: a write waits for the ISR of the partition it appended to. A share coordinator that also leads a
    partition still catching up (another coordinator's, after a failover) answers a share state write as soon as
    the write's own ``__share_group_state`` partition has it, not after ``offsets.commit.timeout.ms``."""
    cluster.cache.topics[SHARE_GROUP_STATE_TOPIC_NAME] = FakeTopic(10)
    topic_id = uuid.uuid4()
    own = TopicPartition(SHARE_GROUP_STATE_TOPIC_NAME, partition_for(share_key(("g", topic_id, 0)), 10))
    other = TopicPartition(SHARE_GROUP_STATE_TOPIC_NAME, (own.partition + 1) % 10)
    gate = _gate(cluster, time)
    cluster.unreplicated = {OFFSETS0: 4, TXN0: 9, other: 3, own: 5}  # only ``own`` reaches its ISR
    body = _share_state_answer(topic_id, 0)
    sent = _hold(gate, ApiKey.WRITE_SHARE_GROUP_STATE, body, request=_share_state_write("g", topic_id, 0))
    assert sent == []  # held until its partition's ISR has it
    cluster.rm.isr[own] = (True, 0)
    cluster.rm.produce_purgatory.check_and_complete(TopicPartitionOperationKey(own.topic, own.partition))
    assert sent == [body]
    assert [p.error_code for r in body.results for p in r.partitions] == [0]


def test_a_share_state_write_fails_with_its_own_partitions_error_only(cluster: FakeCluster) -> None:
    cluster.cache.topics[SHARE_GROUP_STATE_TOPIC_NAME] = FakeTopic(10)
    topic_id = uuid.uuid4()
    own = TopicPartition(SHARE_GROUP_STATE_TOPIC_NAME, partition_for(share_key(("g", topic_id, 0)), 10))
    other = TopicPartition(SHARE_GROUP_STATE_TOPIC_NAME, (own.partition + 1) % 10)
    gate = _gate(cluster)
    cluster.unreplicated = {other: 4, own: 5}
    body = _share_state_answer(topic_id, 0)
    sent = _hold(gate, ApiKey.WRITE_SHARE_GROUP_STATE, body, request=_share_state_write("g", topic_id, 0))
    _fail(cluster, other, NotEnoughReplicasError.code)  # another share state partition: not this write's
    cluster.rm.isr[own] = (True, 0)
    cluster.rm.produce_purgatory.check_and_complete(TopicPartitionOperationKey(own.topic, own.partition))
    assert sent == [body]
    assert [p.error_code for r in body.results for p in r.partitions] == [0]

    failed = _share_state_answer(topic_id, 0)
    cluster.rm.isr[own] = (False, 0)
    sent = _hold(gate, ApiKey.WRITE_SHARE_GROUP_STATE, failed, request=_share_state_write("g", topic_id, 0))
    _fail(cluster, own, NotLeaderOrFollowerError.code)  # its own partition's leadership moved: look again
    assert sent == [failed]
    assert [p.error_code for r in failed.results for p in r.partitions] == [NOT_COORDINATOR]
