"""KafkaShareConsumer on the real ConsumerNetworkClient over the project's MockClient, with MockTime: the
requests it sends (FindCoordinator, ShareGroupHeartbeat, ShareFetch carrying the previous poll's
acknowledgements, the closing ShareAcknowledge and leave heartbeat) and the records it returns."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pykafka_client import AcknowledgeType, KafkaShareConsumer, TopicPartition
from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.errors import IllegalStateError, InvalidRecordStateError
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.protocol.messages import (
    FindCoordinatorResponse,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient
from tests.doubles.responses import metadata_response, nodes
from tests.unit.consumer.helpers import assert_wakeup_interrupts_blocked_poll, batch, control_batch

pytestmark = pytest.mark.timeout(60)


class Env:
    def __init__(self, **conf: Any) -> None:
        self.time = MockTime(auto_tick_ms=1)
        self.metadata = ConsumerMetadata(SubscriptionState(), 100, 100, 300_000)
        self.metadata.bootstrap([("localhost", 9092)])
        self.metadata.update(0, metadata_response(nodes(1), {"t": 1}), False, self.time.hi_res_clock_ms())
        self.client = MockClient(self.time, self.metadata)
        self.bodies: list[Any] = []
        send = self.client.send

        def recording_send(request: Any, now_ms: int) -> None:
            self.bodies.append(request.body)
            send(request, now_ms)

        self.client.send = recording_send  # type: ignore[method-assign]
        cnc = ConsumerNetworkClient(self.client, self.metadata, self.time, 100, 1000)
        topic_id = self.metadata.fetch().topic_id("t")
        assert topic_id is not None
        self.topic_id: Any = topic_id
        self.consumer: KafkaShareConsumer[Any, Any] = KafkaShareConsumer(
            {"group.id": "g", **conf}, time=self.time, client=cnc, metadata=self.metadata)
        # deterministic: no background thread; a test drives its steps with ``consumer.heartbeats.heartbeat_step``
        self.consumer.heartbeats.start_thread_if_needed = lambda: None  # type: ignore[method-assign]
        self.client.prepare_response(FindCoordinatorResponse(node_id=0, host="localhost", port=9092))
        self.client.prepare_response(ShareGroupHeartbeatResponse(
            member_epoch=1, heartbeat_interval_ms=60_000, assignment=ShareGroupHeartbeatResponse.Assignment(
                topic_partitions=[ShareGroupHeartbeatResponse.TopicPartitions(topic_id=topic_id, partitions=[0])])))

    def fetched(self, records: bytes, acquired: list[tuple[int, int, int]]) -> ShareFetchResponse:
        return ShareFetchResponse(responses=[ShareFetchResponse.ShareFetchableTopicResponse(
            topic_id=self.topic_id, partitions=[ShareFetchResponse.PartitionData(
                partition_index=0, records=records, acquired_records=[
                    ShareFetchResponse.AcquiredRecords(first_offset=f, last_offset=last, delivery_count=n)
                    for f, last, n in acquired])])])

    def sent(self, kind: type) -> list[Any]:
        return [b for b in self.bodies if isinstance(b, kind)]


def _acks(body: ShareFetchRequest | ShareAcknowledgeRequest) -> list[tuple[int, int, list[int]]]:
    return [(b.first_offset, b.last_offset, b.acknowledge_types)
            for t in body.topics for p in t.partitions for b in p.acknowledgement_batches]


def _poll_some(c: KafkaShareConsumer[Any, Any]) -> list[Any]:
    for _ in range(20):
        got = c.poll(0.05)
        if got:
            return got
    return []


def test_implicit_mode_accepts_the_previous_poll_with_the_next_share_fetch() -> None:
    e = Env()
    records = batch(0, [b"a", b"b"]) + control_batch(2, producer_id=7, commit=True)
    e.client.prepare_response(e.fetched(records, [(0, 2, 3)]))
    next_fetch: list[Any] = []

    def carries_acks(body: Any) -> bool:
        if isinstance(body, ShareFetchRequest) and body.share_session_epoch == 1:
            next_fetch.append(body)
            return True
        return False

    e.client.prepare_response(e.fetched(b"", []), matcher=carries_acks)
    c = e.consumer
    c.subscribe(["t"])
    got = _poll_some(c)
    assert [(r.offset, r.value, r.delivery_count) for r in got] == [(0, b"a", 3), (1, b"b", 3)]
    join = e.sent(ShareGroupHeartbeatRequest)[0]
    assert (join.group_id, join.member_epoch, join.subscribed_topic_names) == ("g", 0, ["t"])
    first = e.sent(ShareFetchRequest)[0]
    assert (first.share_session_epoch, first.member_id, _acks(first)) == (0, join.member_id, [])
    c.poll(0.05)
    # the delivered records accepted, the marker's offset a gap
    assert [_acks(b) for b in next_fetch] == [[(0, 1, [1]), (2, 2, [0])]]
    with pytest.raises(IllegalStateError, match="explicit"):
        c.acknowledge(got[0], AcknowledgeType.ACCEPT)


def test_explicit_close_releases_what_is_unacknowledged_closes_the_session_and_leaves() -> None:
    e = Env(**{"share.acknowledgement.mode": "explicit"})
    e.client.prepare_response(e.fetched(batch(5, [b"x", b"y", b"z"]), [(5, 7, 1)]))
    c = e.consumer
    c.subscribe(["t"])
    got = _poll_some(c)
    assert [r.offset for r in got] == [5, 6, 7]
    c.acknowledge(got[0], AcknowledgeType.REJECT)
    with pytest.raises(IllegalStateError, match="2 records of the previous poll are unacknowledged"):
        c.poll(0)
    e.client.prepare_response(ShareAcknowledgeResponse())
    e.client.prepare_response(ShareGroupHeartbeatResponse(member_epoch=-1))
    c.close(5)
    (closing,) = e.sent(ShareAcknowledgeRequest)
    assert closing.share_session_epoch == -1
    assert _acks(closing) == [(5, 5, [3]), (6, 7, [2])]
    leave = e.sent(ShareGroupHeartbeatRequest)[-1]
    assert leave.member_epoch == -1


def test_commit_async_reports_each_partitions_outcome_to_the_callback() -> None:
    e = Env(**{"share.acknowledgement.mode": "explicit"})
    e.client.prepare_response(e.fetched(batch(0, [b"a", b"b"]), [(0, 1, 1)]))
    c = e.consumer
    outcomes: list[tuple[dict[Any, set[int]], Any]] = []
    c.set_acknowledgement_commit_callback(lambda offsets, error: outcomes.append((offsets, error)))
    c.subscribe(["t"])
    got = _poll_some(c)
    c.acknowledge(got[0], AcknowledgeType.ACCEPT)
    c.acknowledge(got[1], AcknowledgeType.RELEASE)
    e.client.prepare_response(ShareAcknowledgeResponse(responses=[
        ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse(topic_id=e.topic_id, partitions=[
            ShareAcknowledgeResponse.PartitionData(partition_index=0, error_code=InvalidRecordStateError.code)])]))
    c.commit_async()
    (sent,) = e.sent(ShareAcknowledgeRequest)
    assert (sent.share_session_epoch, _acks(sent)) == (1, [(0, 0, [1]), (1, 1, [2])])
    c.poll(0.05)  # the callback has run by now (the mock answers at once: during commit_async)
    assert [(offsets, type(error)) for offsets, error in outcomes] == [
        ({TopicPartition("t", 0): {0, 1}}, InvalidRecordStateError)]


def test_wakeup_from_another_thread_interrupts_a_blocked_poll() -> None:
    e = Env()
    c = e.consumer
    c.subscribe(["t"])
    for _ in range(5):  # join and get a fetch in flight (it is never answered)
        c.poll(0)
    assert e.sent(ShareFetchRequest)
    assert_wakeup_interrupts_blocked_poll(e.client, c)


def test_the_heartbeat_thread_keeps_the_membership_while_the_application_does_not_poll() -> None:
    e = Env()
    c = e.consumer
    c.subscribe(["t"])
    for _ in range(5):  # join (heartbeat interval 60 s)
        c.poll(0)
    joined = len(e.sent(ShareGroupHeartbeatRequest))
    assert c.heartbeats.heartbeat_step(e.time.hi_res_clock_ms()) >= 1
    assert len(e.sent(ShareGroupHeartbeatRequest)) == joined  # not due yet
    member_id = e.sent(ShareGroupHeartbeatRequest)[0].member_id
    e.client.prepare_response(ShareGroupHeartbeatResponse(member_id=member_id, member_epoch=1,
                                                          heartbeat_interval_ms=60_000))
    for _ in range(3):  # three intervals without a poll: a step heartbeats each time, its answer read by the thread
        e.time.sleep(60_000)
        assert c.heartbeats.heartbeat_step(e.time.hi_res_clock_ms()) >= 1
        c.heartbeats.client.poll_no_wakeup()
        e.client.prepare_response(ShareGroupHeartbeatResponse(member_id=member_id, member_epoch=1,
                                                              heartbeat_interval_ms=60_000))
    beats = e.sent(ShareGroupHeartbeatRequest)[joined:]
    assert [(b.member_id, b.member_epoch) for b in beats] == [(member_id, 1)] * 3
    assert c.heartbeats.state.value == "STABLE"


def test_close_stops_the_heartbeat_thread() -> None:
    e = Env()
    c = e.consumer
    del c.heartbeats.start_thread_if_needed  # the real one: a thread
    c.subscribe(["t"])
    c.poll(0)
    assert any(t.name == "kafka-coordinator-heartbeat-thread | g" for t in threading.enumerate())
    c.close(0)
    assert c.heartbeats.closed
    assert not any(t.name == "kafka-coordinator-heartbeat-thread | g" for t in threading.enumerate())


def test_unsubscribe_leaves_the_group_and_poll_then_needs_a_subscription() -> None:
    e = Env()
    c = e.consumer
    c.subscribe(["t"])
    for _ in range(5):  # join
        c.poll(0)
    e.client.prepare_response(ShareGroupHeartbeatResponse(member_epoch=-1))
    c.unsubscribe()
    assert e.sent(ShareGroupHeartbeatRequest)[-1].member_epoch == -1
    assert c.subscription() == set()
    with pytest.raises(IllegalStateError, match="not subscribed"):
        c.poll(0)
