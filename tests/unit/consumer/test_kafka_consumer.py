"""KafkaConsumer on a scripted client (no sockets, MockTime): wiring of subscribe/poll/commit/seek and
the public error contract."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

from pykafka_client import KafkaConsumer, OffsetAndMetadata, TopicPartition
from pykafka_client.consumer.assignors import Assignment
from pykafka_client.consumer.consumer_protocol import serialize_assignment
from pykafka_client.errors import (
    ConcurrentModificationError,
    ConfigurationError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidGroupIdError,
    KafkaTimeoutError,
    WakeupException,
)
from pykafka_client.protocol.messages.fetch_request import FetchRequest
from pykafka_client.protocol.messages.fetch_response import FetchResponse
from pykafka_client.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from pykafka_client.protocol.messages.find_coordinator_response import FindCoordinatorResponse
from pykafka_client.protocol.messages.heartbeat_request import HeartbeatRequest
from pykafka_client.protocol.messages.join_group_request import JoinGroupRequest
from pykafka_client.protocol.messages.join_group_response import JoinGroupResponse
from pykafka_client.protocol.messages.leave_group_request import LeaveGroupRequest
from pykafka_client.protocol.messages.leave_group_response import LeaveGroupResponse
from pykafka_client.protocol.messages.list_offsets_request import ListOffsetsRequest
from pykafka_client.protocol.messages.list_offsets_response import ListOffsetsResponse
from pykafka_client.protocol.messages.offset_commit_request import OffsetCommitRequest
from pykafka_client.protocol.messages.offset_commit_response import OffsetCommitResponse
from pykafka_client.protocol.messages.offset_fetch_request import OffsetFetchRequest
from pykafka_client.protocol.messages.offset_fetch_response import OffsetFetchResponse
from pykafka_client.protocol.messages.sync_group_request import SyncGroupRequest
from pykafka_client.protocol.messages.sync_group_response import SyncGroupResponse
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient, Script
from tests.unit.consumer.helpers import ConsumerEnv, batch, metadata_with

pytestmark = pytest.mark.timeout(60)

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def make(**cfg: Any) -> tuple[KafkaConsumer[Any, Any], MockClient, Script]:
    env = ConsumerEnv(MockTime(), metadata_with({"t": 2}))
    script = Script(env.client)
    config = {"auto.offset.reset": "earliest", **cfg}
    c: KafkaConsumer[Any, Any] = KafkaConsumer(config, time=env.time, client=env.cnc, metadata=env.metadata)
    return c, env.client, script


def fetch_answer(body: FetchRequest) -> FetchResponse:
    topics = []
    for t in body.topics:
        parts = [
            FetchResponse.PartitionData(
                partition_index=p.partition,
                high_watermark=3,
                records=batch(p.fetch_offset, [b"a", b"b", b"c"][p.fetch_offset :]),
            )
            for p in t.partitions
            if p.fetch_offset < 3
        ]
        topics.append(FetchResponse.FetchableTopicResponse(topic=t.topic, partitions=parts))
    return FetchResponse(responses=topics)


def list_offsets_answer(body: ListOffsetsRequest) -> ListOffsetsResponse:
    return ListOffsetsResponse(
        topics=[
            ListOffsetsResponse.ListOffsetsTopicResponse(
                name=t.name,
                partitions=[
                    ListOffsetsResponse.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index, offset=0 if p.timestamp == -2 else 3
                    )
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ]
    )


def test_assign_poll_returns_records_grouped_by_partition() -> None:
    c, _, script = make(**{"value.deserializer": "str"})
    for _ in range(5):
        script.add(ListOffsetsRequest, list_offsets_answer).add(FetchRequest, fetch_answer)
    c.assign([TP0, TP1])
    got: list[Any] = []
    for _ in range(10):
        got.extend(c.poll(0.1))
        if len(got) == 6:
            break
    assert sorted((r.partition, r.offset, r.value) for r in got) == [
        (p, o, v) for p in (0, 1) for o, v in enumerate(["a", "b", "c"])
    ]
    assert c.position(TP0) == 3
    assert c.assignment() == {TP0, TP1}
    script.add(FetchRequest, fetch_answer)
    c.seek(TP1, 1)
    recs = c.poll(0.5)
    assert [r.offset for r in recs] == [1, 2]
    assert recs.next_offsets() == {TP1: OffsetAndMetadata(3, "", 0)}  # with the leader epoch of the last record


def test_subscribe_join_fetch_commit_on_scripted_group() -> None:
    c, _, script = make(**{"group.id": "g", "enable.auto.commit": False})
    script.add(FindCoordinatorRequest, FindCoordinatorResponse(node_id=0, host="h", port=1))
    script.add(
        JoinGroupRequest,
        JoinGroupResponse(generation_id=1, protocol_type="consumer", protocol_name="range", leader="x", member_id="me"),
    )
    script.add(
        SyncGroupRequest,
        SyncGroupResponse(protocol_type="consumer", assignment=serialize_assignment(Assignment([TP0]))),
    )
    script.add(
        OffsetFetchRequest,
        OffsetFetchResponse(
            topics=[
                OffsetFetchResponse.OffsetFetchResponseTopic(
                    name="t",
                    partitions=[
                        OffsetFetchResponse.OffsetFetchResponsePartition(partition_index=0, committed_offset=1)
                    ],
                )
            ]
        ),
    )
    for _ in range(3):
        script.add(FetchRequest, fetch_answer)
    # no background thread in a unit test: the scripted client is single-threaded, MockTime drives time
    assert c.coordinator is not None
    c.coordinator.start_heartbeat_thread_if_needed = lambda: None  # type: ignore[method-assign]
    c.subscribe(["t"])
    got: list[Any] = []
    for _ in range(10):
        got.extend(c.poll(0.1))
        if len(got) == 2:
            break
    assert [r.offset for r in got] == [1, 2]  # resumed from the committed offset
    script.add(
        OffsetCommitRequest,
        OffsetCommitResponse(
            topics=[
                OffsetCommitResponse.OffsetCommitResponseTopic(
                    name="t", partitions=[OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=0)]
                )
            ]
        ),
    )
    c.commit_sync()
    req = script.requests(OffsetCommitRequest)[0]
    assert (req.member_id, req.generation_id_or_member_epoch, req.topics[0].partitions[0].committed_offset) == (
        "me",
        1,
        3,
    )
    with pytest.raises(IllegalStateError, match="not assigned"):
        c.commit_sync({TP1: 5})
    meta = c.group_metadata()
    assert (meta.group_id, meta.generation_id, meta.member_id) == ("g", 1, "me")
    script.add(LeaveGroupRequest, LeaveGroupResponse())
    script.add(HeartbeatRequest, None)
    c.close(1.0)
    assert script.requests(LeaveGroupRequest)[0].members[0].member_id == "me"


def test_poll_without_subscription_and_after_close() -> None:
    c, _, _ = make()
    with pytest.raises(IllegalStateError, match="not subscribed"):
        c.poll(0)
    c.close()
    with pytest.raises(IllegalStateError, match="closed"):
        c.poll(0)
    with pytest.raises(IllegalStateError, match="closed"):
        c.assign([TP0])


def test_bad_arguments() -> None:
    c, _, _ = make(**{"group.id": "g"})
    with pytest.raises(IllegalArgumentError):
        c.poll(-1)
    with pytest.raises(IllegalArgumentError, match="pattern"):
        c.subscribe(pattern="(unclosed")
    with pytest.raises(IllegalArgumentError):
        c.subscribe(["ok", ""])
    with pytest.raises(TypeError, match="list of topic names"):
        c.subscribe("a-string-is-not-a-collection")
    c.assign([TP0])
    with pytest.raises(IllegalArgumentError):
        c.seek(TP0, -5)
    with pytest.raises(IllegalStateError):
        c.seek(TP1, 0)
    with pytest.raises(IllegalStateError):
        c.pause([TP1])
    with pytest.raises(IllegalStateError, match="mutually exclusive"):
        c.subscribe(["t"])
    with pytest.raises(IllegalArgumentError):
        c.offsets_for_times({TP0: -1})
    with pytest.raises(IllegalArgumentError):
        c.commit_sync({TP0: -3})
    with pytest.raises(ConfigurationError, match=r"no\.such\.key"):
        env = ConsumerEnv(MockTime(), metadata_with({}))
        KafkaConsumer({"no.such.key": 1}, client=env.cnc, metadata=env.metadata)


def test_group_apis_need_group_id() -> None:
    c, _, _ = make()
    for call in (
        lambda: c.subscribe(["t"]),
        c.commit_sync,
        c.commit_async,
        lambda: c.committed([TP0]),
        c.group_metadata,
    ):
        with pytest.raises(InvalidGroupIdError):
            call()
    with pytest.raises(IllegalStateError):
        c.enforce_rebalance()


def test_subscribe_pattern_and_unsubscribe() -> None:
    c, _, _ = make(**{"group.id": "g"})
    c.subscribe(re.compile("t.*"))
    assert c.coordinator is not None
    c.coordinator.maybe_update_pattern_subscription()
    assert c.subscription() == {"t"}
    c.unsubscribe()
    assert c.subscription() == set()
    c.assign([TP0])  # allowed after unsubscribe


def test_wakeup_makes_poll_raise_once() -> None:
    c, _, script = make()
    script.add(ListOffsetsRequest, list_offsets_answer)
    c.assign([TP0])
    c.wakeup()
    with pytest.raises(WakeupException):
        c.poll(1.0)
    c.poll(0)  # only once


def test_concurrent_use_raises_concurrent_modification() -> None:
    entered, release = threading.Event(), threading.Event()

    def blocking_deserializer(data: bytes | None) -> Any:
        entered.set()
        release.wait(10)
        return data

    c, _, script = make(**{"value.deserializer": blocking_deserializer})
    script.add(ListOffsetsRequest, list_offsets_answer).add(FetchRequest, fetch_answer)
    c.assign([TP0])
    woken: list[BaseException] = []

    def run() -> None:
        try:
            for _ in range(5):
                c.poll(0.1)
        except WakeupException as e:
            woken.append(e)

    t = threading.Thread(target=run)
    t.start()
    assert entered.wait(10)
    try:
        with pytest.raises(ConcurrentModificationError):
            c.assignment()
        c.wakeup()  # the one call that is allowed from another thread
    finally:
        release.set()
        t.join(10)
    assert len(woken) == 1  # the polling thread was woken by the other thread's wakeup()


def test_position_times_out_without_answer() -> None:
    c, _, _ = make()
    c.assign([TP0])
    with pytest.raises(KafkaTimeoutError):
        c.position(TP0, timeout=0.5)


def test_commit_sync_offsets_accept_ints_and_metadata() -> None:
    c, _, script = make(**{"group.id": "g"})
    c.assign([TP0, TP1])
    script.add(FindCoordinatorRequest, FindCoordinatorResponse(node_id=0, host="h", port=1))
    script.add(
        OffsetCommitRequest,
        OffsetCommitResponse(
            topics=[
                OffsetCommitResponse.OffsetCommitResponseTopic(
                    name="t",
                    partitions=[OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=i) for i in (0, 1)],
                )
            ]
        ),
    )
    c.commit_sync({TP0: 4, TP1: OffsetAndMetadata(7, "m")}, timeout=1)
    parts = {
        p.partition_index: (p.committed_offset, p.committed_metadata)
        for p in script.requests(OffsetCommitRequest)[0].topics[0].partitions
    }
    assert parts == {0: (4, ""), 1: (7, "m")}
