"""The consumer on the real ConsumerNetworkClient over the project's MockClient (tests/doubles): the same
scripted flows as Java's KafkaConsumerTest / AbstractCoordinatorTest use, with MockTime."""

from __future__ import annotations

from typing import Any

import pytest

from pykafka_client import KafkaConsumer, TopicPartition
from pykafka_client.consumer.abstract_coordinator import GroupRebalanceConfig
from pykafka_client.consumer.assignors import Assignment, get_assignor_instances
from pykafka_client.consumer.consumer_coordinator import ConsumerCoordinator
from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.consumer_protocol import serialize_assignment
from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.protocol.messages.fetch_request import FetchRequest
from pykafka_client.protocol.messages.fetch_response import FetchResponse
from pykafka_client.protocol.messages.find_coordinator_response import FindCoordinatorResponse
from pykafka_client.protocol.messages.join_group_request import JoinGroupRequest
from pykafka_client.protocol.messages.join_group_response import JoinGroupResponse
from pykafka_client.protocol.messages.list_offsets_response import ListOffsetsResponse
from pykafka_client.protocol.messages.sync_group_response import SyncGroupResponse
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient
from tests.doubles.responses import metadata_response, nodes
from tests.unit.consumer.helpers import assert_wakeup_interrupts_blocked_poll, batch

pytestmark = pytest.mark.timeout(60)

TP0 = TopicPartition("t", 0)


class Env:
    def __init__(self) -> None:
        self.time = MockTime(auto_tick_ms=1)
        self.metadata = ConsumerMetadata(SubscriptionState(), 100, 100, 300_000)
        self.metadata.bootstrap([("localhost", 9092)])
        self.metadata.update(0, metadata_response(nodes(1), {"t": 1}), False, self.time.hi_res_clock_ms())
        self.client = MockClient(self.time, self.metadata)
        self.cnc = ConsumerNetworkClient(self.client, self.metadata, self.time, 100, 1000)


def list_offsets(offset: int) -> ListOffsetsResponse:
    return ListOffsetsResponse(
        topics=[
            ListOffsetsResponse.ListOffsetsTopicResponse(
                name="t",
                partitions=[ListOffsetsResponse.ListOffsetsPartitionResponse(partition_index=0, offset=offset)],
            )
        ]
    )


def fetch(values: list[bytes], base: int = 0, topic_id: Any = None) -> FetchResponse:
    """At v13+ (what MockClient negotiates when the metadata has topic ids) topics are named by id."""
    extra = {} if topic_id is None else {"topic_id": topic_id}
    return FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="t",
                **extra,
                partitions=[
                    FetchResponse.PartitionData(
                        partition_index=0, high_watermark=base + len(values), records=batch(base, values)
                    )
                ],
            )
        ]
    )


def test_assign_poll_through_real_consumer_network_client() -> None:
    e = Env()
    c: KafkaConsumer[Any, Any] = KafkaConsumer(
        {"auto.offset.reset": "earliest"}, time=e.time, client=e.cnc, metadata=e.metadata
    )
    e.client.prepare_response(list_offsets(5))

    def is_fetch_from_5(body: Any) -> bool:
        return isinstance(body, FetchRequest) and body.topics[0].partitions[0].fetch_offset == 5

    tid = e.metadata.fetch().topic_id("t")
    e.client.prepare_response(fetch([b"a", b"b"], base=5, topic_id=tid), matcher=is_fetch_from_5)
    c.assign([TP0])
    got: list[Any] = []
    for _ in range(5):
        got.extend(c.poll(0.2))
        if got:
            break
    assert [(r.offset, r.value) for r in got] == [(5, b"a"), (6, b"b")]
    assert c.position(TP0) == 7


def test_wakeup_from_another_thread_interrupts_blocked_poll() -> None:
    e = Env()
    c: KafkaConsumer[Any, Any] = KafkaConsumer(
        {"auto.offset.reset": "earliest"}, time=e.time, client=e.cnc, metadata=e.metadata
    )
    e.client.prepare_response(list_offsets(0))
    c.assign([TP0])
    for _ in range(3):  # reset the position and get a fetch in flight (it is never answered)
        c.poll(0)
    assert any(isinstance(r.body, FetchRequest) for r in e.client.requests)
    assert_wakeup_interrupts_blocked_poll(e.client, c)


def test_s54_member_id_required_through_real_consumer_network_client() -> None:
    e = Env()
    subs = SubscriptionState()
    subs.subscribe(["t"])
    coord = ConsumerCoordinator(
        GroupRebalanceConfig("g", rebalance_timeout_ms=10000, request_timeout_ms=1000),
        e.cnc,
        e.time,
        subs,
        e.metadata,
        get_assignor_instances(["range"]),
        auto_commit_enabled=False,
    )
    e.client.prepare_response(FindCoordinatorResponse(node_id=0, host="localhost", port=9092))
    e.client.prepare_response(JoinGroupResponse(error_code=79, member_id="given"))
    e.client.prepare_response(
        JoinGroupResponse(
            generation_id=1, protocol_type="consumer", protocol_name="range", leader="x", member_id="given"
        ),
        matcher=lambda body: isinstance(body, JoinGroupRequest) and body.member_id == "given",
    )
    e.client.prepare_response(
        SyncGroupResponse(protocol_type="consumer", assignment=serialize_assignment(Assignment([TP0])))
    )
    assert coord.join_group_if_needed(e.time.timer(5000))
    assert subs.assigned_partitions() == {TP0}
    joins = [r for r in e.client.sent if isinstance(r.body, JoinGroupRequest)]
    assert [getattr(j.body, "member_id", None) for j in joins] == ["", "given"]
    # s56 on the wire: the JoinGroup's own timeout
    assert all(j.request_timeout_ms == 15000 for j in joins)
