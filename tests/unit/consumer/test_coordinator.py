"""Group coordinator client: contract statements 52-56 (test_s52_... to test_s56_...) and the
consumer coordinator's rebalance, commit and heartbeat behaviour, on a scripted client and MockTime."""

from __future__ import annotations

import itertools
from collections.abc import Collection
from typing import Any

import pytest

from pykafka_client.consumer.abstract_coordinator import GroupMembershipOperation, GroupRebalanceConfig, MemberState
from pykafka_client.consumer.assignors import (
    Assignment,
    CooperativeStickyAssignor,
    RangeAssignor,
    Subscription,
    get_assignor_instances,
)
from pykafka_client.consumer.consumer_coordinator import ConsumerCoordinator
from pykafka_client.consumer.consumer_protocol import (
    deserialize_subscription,
    serialize_assignment,
    serialize_subscription,
)
from pykafka_client.consumer.leave_group import LeaveGroupRequestBuilder
from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.errors import (
    CommitFailedError,
    DisconnectError,
    NoAvailableBrokersError,
    RebalanceInProgressClientError,
    UnsupportedVersionError,
)
from pykafka_client.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from pykafka_client.protocol.messages.find_coordinator_response import FindCoordinatorResponse
from pykafka_client.protocol.messages.heartbeat_request import HeartbeatRequest
from pykafka_client.protocol.messages.heartbeat_response import HeartbeatResponse
from pykafka_client.protocol.messages.join_group_request import JoinGroupRequest
from pykafka_client.protocol.messages.join_group_response import JoinGroupResponse
from pykafka_client.protocol.messages.leave_group_request import LeaveGroupRequest
from pykafka_client.protocol.messages.leave_group_response import LeaveGroupResponse
from pykafka_client.protocol.messages.offset_commit_request import OffsetCommitRequest
from pykafka_client.protocol.messages.offset_commit_response import OffsetCommitResponse
from pykafka_client.protocol.messages.offset_fetch_request import OffsetFetchRequest
from pykafka_client.protocol.messages.offset_fetch_response import OffsetFetchResponse
from pykafka_client.protocol.messages.sync_group_request import SyncGroupRequest
from pykafka_client.protocol.messages.sync_group_response import SyncGroupResponse
from pykafka_client.structs import Node, OffsetAndMetadata, TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import Script
from tests.unit.consumer.helpers import ConsumerEnv, metadata_with

pytestmark = pytest.mark.timeout(60)

GROUP = "group-id"
T0, T1, T2, T3 = (TopicPartition("t", i) for i in range(4))


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        self.calls.append(("revoked", list(revoked)))

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        self.calls.append(("assigned", list(assigned)))

    def on_partitions_lost(self, lost: Collection[TopicPartition]) -> None:
        self.calls.append(("lost", list(lost)))


def make(
    assignors: list[Any] | None = None,
    *,
    rebalance_timeout_ms: int = 60000,
    request_timeout_ms: int = 30000,
    auto_commit: bool = False,
    instance_id: str | None = None,
) -> tuple[ConsumerCoordinator, ConsumerEnv, Script, SubscriptionState, MockTime]:
    time = MockTime()
    env = ConsumerEnv(time, metadata_with({"t": 4}))
    subs = SubscriptionState()
    cfg = GroupRebalanceConfig(
        GROUP,
        instance_id,
        session_timeout_ms=10000,
        rebalance_timeout_ms=rebalance_timeout_ms,
        heartbeat_interval_ms=3000,
        retry_backoff_ms=100,
        retry_backoff_max_ms=1000,
        request_timeout_ms=request_timeout_ms,
    )
    coord = ConsumerCoordinator(
        cfg,
        env.cnc,
        time,
        subs,
        env.metadata,
        get_assignor_instances(assignors or ["range"]),
        auto_commit_enabled=auto_commit,
    )
    return coord, env, Script(env.client), subs, time


def find_ok(node_id: int = 0) -> FindCoordinatorResponse:
    return FindCoordinatorResponse(error_code=0, node_id=node_id, host="localhost", port=9092)


def join_ok(
    member: str = "m-1",
    generation: int = 1,
    leader: str = "other",
    protocol: str = "range",
    members: list[Any] | None = None,
) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=0,
        generation_id=generation,
        protocol_type="consumer",
        protocol_name=protocol,
        leader=leader,
        member_id=member,
        members=members or [],
    )


def sync_ok(partitions: list[TopicPartition]) -> SyncGroupResponse:
    return SyncGroupResponse(
        error_code=0, protocol_type="consumer", assignment=serialize_assignment(Assignment(partitions))
    )


def stable(
    coord: ConsumerCoordinator,
    script: Script,
    subs: SubscriptionState,
    partitions: list[TopicPartition],
    time: MockTime,
    protocol: str = "range",
    generation: int = 1,
) -> None:
    script.add(FindCoordinatorRequest, find_ok()).add(
        JoinGroupRequest, join_ok(protocol=protocol, generation=generation)
    ).add(SyncGroupRequest, sync_ok(partitions))
    assert coord.join_group_if_needed(time.timer(1000))
    assert coord.state is MemberState.STABLE


# -- contract 52-56 ----------------------------------------------------------------------------


def test_s52_lookup_coordinator_is_deduplicated_and_fails_fast_without_brokers() -> None:
    coord, client, _, _, _ = make()
    f1 = coord.lookup_coordinator()
    f2 = coord.lookup_coordinator()
    assert f1 is f2 and not f1.is_done()
    assert len(client.sent) == 1
    client.respond(find_ok())
    assert f1.succeeded() and coord.coordinator is not None
    # no brokers known: the lookup fails at once and nothing is sent
    coord2, client2, _, _, _ = make()
    client2.cnc.least_loaded_node = lambda: None  # type: ignore[method-assign]
    f = coord2.lookup_coordinator()
    assert f.failed() and isinstance(f.exception(), NoAvailableBrokersError)
    assert client2.sent == []


def test_s53_coordinator_discovery_backs_off_exponentially() -> None:
    coord, _client, script, _, time = make()
    sends: list[int] = []

    def not_available(body: Any) -> FindCoordinatorResponse:
        sends.append(time.hi_res_clock_ms())
        return FindCoordinatorResponse(error_code=15)  # COORDINATOR_NOT_AVAILABLE

    for _ in range(20):
        script.add(FindCoordinatorRequest, not_available)
    assert not coord.ensure_coordinator_ready(time.timer(4000))
    gaps = [b - a for a, b in itertools.pairwise(sends)]
    expected = [100, 200, 400, 800, 1000]
    assert len(gaps) >= len(expected)
    for gap, exp in zip(gaps, expected, strict=False):
        assert exp * 0.8 <= gap <= exp * 1.2 + 1


def test_s54_member_id_required_stores_member_id_and_rejoins() -> None:
    coord, _, script, subs, time = make()
    subs.subscribe(["t"])
    script.add(FindCoordinatorRequest, find_ok())
    script.add(JoinGroupRequest, JoinGroupResponse(error_code=79, member_id="m-assigned"))  # MEMBER_ID_REQUIRED
    script.add(JoinGroupRequest, join_ok(member="m-assigned"))
    script.add(SyncGroupRequest, sync_ok([T0]))
    assert coord.join_group_if_needed(time.timer(1000))
    joins = script.requests(JoinGroupRequest)
    assert [j.member_id for j in joins] == ["", "m-assigned"]
    assert coord.generation.member_id == "m-assigned"
    assert subs.assigned_partitions() == {T0}


@pytest.mark.parametrize("during", [JoinGroupRequest, SyncGroupRequest])
def test_s55_disconnect_during_join_or_sync_keeps_member_id(during: type) -> None:
    coord, _, script, subs, time = make()
    subs.subscribe(["t"])
    script.add(FindCoordinatorRequest, find_ok())
    script.add(JoinGroupRequest, JoinGroupResponse(error_code=79, member_id="m-7"))
    if during is JoinGroupRequest:
        script.add(JoinGroupRequest, DisconnectError("connection lost"))
    else:
        script.add(JoinGroupRequest, join_ok(member="m-7"))
        script.add(SyncGroupRequest, DisconnectError("connection lost"))
    script.add(FindCoordinatorRequest, find_ok())
    script.add(JoinGroupRequest, join_ok(member="m-7", generation=2))
    script.add(SyncGroupRequest, sync_ok([T1]))
    assert coord.join_group_if_needed(time.timer(5000))
    assert [j.member_id for j in script.requests(JoinGroupRequest)][1:] == ["m-7", "m-7"]
    assert len(script.requests(FindCoordinatorRequest)) == 2  # the disconnect made the coordinator unknown
    assert coord.generation.generation_id == 2


@pytest.mark.parametrize(("rebalance", "request_timeout", "expected"), [(60000, 30000, 65000), (10000, 30000, 30000)])
def test_s56_join_group_timeout_is_lower_bounded(rebalance: int, request_timeout: int, expected: int) -> None:
    coord, client, script, subs, time = make(rebalance_timeout_ms=rebalance, request_timeout_ms=request_timeout)
    subs.subscribe(["t"])
    script.add(FindCoordinatorRequest, find_ok())
    coord.join_group_if_needed(time.timer(0))
    coord.ensure_coordinator_ready(time.timer(100))
    coord.join_group_if_needed(time.timer(0))
    joins = [s for s in client.sent if isinstance(s.body, JoinGroupRequest)]
    assert joins and joins[0].request_timeout_ms == expected
    assert coord.join_group_request_timeout_ms() == expected


# -- rebalances ------------------------------------------------------------------------------


def test_eager_rebalance_revokes_all_then_assigns() -> None:
    coord, _, script, subs, time = make()
    rec = Recorder()
    subs.subscribe(["t"], rec)
    stable(coord, script, subs, [T0, T1], time)
    assert rec.calls == [("assigned", [T0, T1])]
    join = script.requests(JoinGroupRequest)[0]
    assert join.protocol_type == "consumer" and [p.name for p in join.protocols] == ["range"]
    coord.request_rejoin("test")
    script.add(JoinGroupRequest, join_ok(generation=2)).add(SyncGroupRequest, sync_ok([T1, T2]))
    assert coord.join_group_if_needed(time.timer(1000))
    assert rec.calls[1:] == [("revoked", [T0, T1]), ("assigned", [T1, T2])]
    sub = deserialize_subscription(script.requests(JoinGroupRequest)[1].protocols[0].metadata)
    assert sub.owned_partitions == []  # eager: everything was revoked before joining


def test_leader_performs_assignment_for_all_members() -> None:
    coord, _, script, subs, time = make()
    subs.subscribe(["t"])
    members = [
        JoinGroupResponse.JoinGroupResponseMember(member_id="a", metadata=serialize_subscription(Subscription(["t"]))),
        JoinGroupResponse.JoinGroupResponseMember(member_id="b", metadata=serialize_subscription(Subscription(["t"]))),
    ]
    script.add(FindCoordinatorRequest, find_ok())
    script.add(JoinGroupRequest, join_ok(member="a", leader="a", members=members))
    script.add(SyncGroupRequest, lambda body: sync_ok([a for a in body.assignments if a.member_id == "a"] and [T0, T1]))
    assert coord.join_group_if_needed(time.timer(1000))
    sync = script.requests(SyncGroupRequest)[0]
    from pykafka_client.consumer.consumer_protocol import deserialize_assignment

    got = {a.member_id: deserialize_assignment(a.assignment).partitions for a in sync.assignments}
    assert got == {"a": [T0, T1], "b": [T2, T3]}


def test_cooperative_rebalance_revokes_only_moved_partitions_and_rejoins() -> None:
    coord, _, script, subs, time = make(["cooperative-sticky"])
    rec = Recorder()
    subs.subscribe(["t"], rec)
    stable(coord, script, subs, [T0, T1, T2, T3], time, protocol="cooperative-sticky")
    coord.request_rejoin("new member")
    script.add(JoinGroupRequest, join_ok(generation=2, protocol="cooperative-sticky"))
    script.add(SyncGroupRequest, sync_ok([T0, T1]))
    script.add(JoinGroupRequest, join_ok(generation=3, protocol="cooperative-sticky"))
    script.add(SyncGroupRequest, sync_ok([T0, T1]))
    assert coord.join_group_if_needed(time.timer(1000))
    # owned partitions were sent and kept; only T2, T3 revoked; then an immediate second rebalance
    sub = deserialize_subscription(script.requests(JoinGroupRequest)[1].protocols[0].metadata)
    assert sorted(sub.owned_partitions) == [T0, T1, T2, T3] and sub.generation_id == 1
    assert rec.calls[1:] == [("revoked", [T2, T3]), ("assigned", []), ("assigned", [])]
    assert len(script.requests(JoinGroupRequest)) == 3
    assert subs.assigned_partitions() == {T0, T1}


def test_cooperative_assignor_over_two_rebalances_on_leader() -> None:
    """Leader view: a partition owned by another member is withheld until that member revoked it."""
    a = CooperativeStickyAssignor()
    subs = {
        "old": Subscription(["t"], owned_partitions=[T0, T1, T2, T3], generation_id=1),
        "new": Subscription(["t"]),
    }
    from pykafka_client.consumer.assignors import GroupSubscription

    first = a.assign({"t": 4}, GroupSubscription(subs)).assignments
    ConsumerCoordinator._validate_cooperative_assignment(subs, {m: x.partitions for m, x in first.items()})
    assert first["new"].partitions == []


def test_unknown_member_in_heartbeat_means_partitions_lost() -> None:
    coord, client, script, subs, time = make()
    rec = Recorder()
    subs.subscribe(["t"], rec)
    stable(coord, script, subs, [T0], time)
    time.sleep(3000)
    coord.heartbeat_step(time.hi_res_clock_ms())
    hb = client.pending()[0]
    assert isinstance(hb.body, HeartbeatRequest) and hb.body.member_id == "m-1"
    client.respond(HeartbeatResponse(error_code=25))  # UNKNOWN_MEMBER_ID
    assert coord.rejoin_needed and coord.generation.member_id == ""
    script.add(JoinGroupRequest, join_ok(member="m-2", generation=5)).add(SyncGroupRequest, sync_ok([T3]))
    assert coord.poll(time.timer(1000))
    assert rec.calls[1:] == [("lost", [T0]), ("assigned", [T3])]


def test_heartbeat_session_timeout_marks_coordinator_unknown() -> None:
    coord, _client, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    time.sleep(10001)
    coord.heartbeat_step(time.hi_res_clock_ms())
    assert coord.coordinator is None


def test_poll_timeout_sends_leave_group() -> None:
    coord, client, script, subs, time = make(rebalance_timeout_ms=20000)
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    for _ in range(7):  # heartbeats keep the session alive, but nobody calls poll()
        time.sleep(3000)
        coord.heartbeat_step(time.hi_res_clock_ms())
        for _ in client.pending():
            client.respond(HeartbeatResponse())
    assert any(isinstance(s.body, LeaveGroupRequest) for s in client.sent)
    assert coord.rejoin_needed and coord.state is MemberState.UNJOINED


def test_poll_timeout_leave_polls_the_client_without_the_coordinator_lock() -> None:
    coord, client, script, subs, time = make(rebalance_timeout_ms=5000)
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    lock_held_while_polling: list[bool] = []
    original = client.cnc.poll_no_wakeup

    def poll_no_wakeup() -> None:
        lock_held_while_polling.append(coord.lock._is_owned())  # type: ignore[attr-defined]
        original()

    client.cnc.poll_no_wakeup = poll_no_wakeup  # type: ignore[method-assign]
    script.add(HeartbeatRequest, HeartbeatResponse()).add(LeaveGroupRequest, LeaveGroupResponse())
    time.sleep(2500)
    coord.heartbeat_step(time.hi_res_clock_ms())
    time.sleep(2600)  # past max.poll.interval.ms with no poll()
    coord.heartbeat_step(time.hi_res_clock_ms())
    assert script.requests(LeaveGroupRequest) and coord.state is MemberState.UNJOINED
    assert lock_held_while_polling == [False]


def test_static_member_never_sends_leave_group() -> None:
    coord, client, script, subs, time = make(instance_id="instance-1")
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    assert script.requests(JoinGroupRequest)[0].group_instance_id == "instance-1"
    coord.close(time.timer(100))
    assert not any(isinstance(s.body, LeaveGroupRequest) for s in client.sent)


def test_close_leaves_group() -> None:
    coord, _client, script, subs, time = make()
    rec = Recorder()
    subs.subscribe(["t"], rec)
    stable(coord, script, subs, [T0], time)
    script.add(LeaveGroupRequest, LeaveGroupResponse())
    coord.close(time.timer(100))
    leave = script.requests(LeaveGroupRequest)[0]
    assert leave.members[0].member_id == "m-1"
    assert rec.calls[-1] == ("revoked", [T0])


@pytest.mark.parametrize("version", range(LeaveGroupRequest.VALID_VERSIONS[0], LeaveGroupRequest.VALID_VERSIONS[1] + 1))
def test_close_sends_leave_group_that_encodes_at_every_version(version: int) -> None:
    """The bug: member_id (v0-2 only) and members (v3+) were both set, so no version could be encoded."""
    coord, _client, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    written: list[LeaveGroupRequest] = []

    def encode_and_answer(body: LeaveGroupRequest) -> LeaveGroupResponse:
        written.append(LeaveGroupRequest.decode(body.encode(version), version))
        return LeaveGroupResponse()

    script.add(LeaveGroupRequest, encode_and_answer)
    coord.close(time.timer(100))
    (leave,) = written
    assert leave.group_id == GROUP
    if version < 3:
        assert (leave.member_id, leave.members) == ("m-1", [])
    else:
        assert leave.member_id == ""
        assert [(m.member_id, m.group_instance_id) for m in leave.members] == [("m-1", None)]
        assert leave.members[0].reason == ("the consumer is being closed" if version >= 5 else None)


def test_static_member_leaves_only_when_asked_explicitly() -> None:
    coord, _client, script, subs, time = make(instance_id="instance-1")
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    assert coord.maybe_leave_group("test", GroupMembershipOperation.REMAIN_IN_GROUP) is None
    stable(coord, script, subs, [T0], time)
    assert coord.maybe_leave_group("test") is None  # DEFAULT: a static member stays
    stable(coord, script, subs, [T0], time)
    script.add(LeaveGroupRequest, LeaveGroupResponse())
    future = coord.maybe_leave_group("scaling down", GroupMembershipOperation.LEAVE_GROUP)
    assert future is not None and future.succeeded()
    member = script.requests(LeaveGroupRequest)[0].members[0]
    assert (member.member_id, member.group_instance_id, member.reason) == ("m-1", "instance-1", "scaling down")
    assert coord.state is MemberState.UNJOINED


def test_static_leave_cannot_be_written_before_v3() -> None:
    builder = LeaveGroupRequestBuilder.for_member(GROUP, "m-1", "instance-1", "r")
    builder.encode(3)
    with pytest.raises(UnsupportedVersionError, match="static member"):
        builder.encode(2)


@pytest.mark.parametrize("answer", ["unsupported-version", LeaveGroupResponse(error_code=25)], ids=["unsupported", "unknown-member"])
def test_leave_group_failure_is_logged_at_warning(answer: Any, caplog: pytest.LogCaptureFixture) -> None:
    coord, client, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    if answer == "unsupported-version":  # the NetworkClient found no version both sides support
        client.client.prepare_unsupported_version_response(lambda body: isinstance(body, LeaveGroupRequest))
    else:
        script.add(LeaveGroupRequest, answer)  # 25: UNKNOWN_MEMBER_ID
    with caplog.at_level("WARNING", logger="pykafka_client.consumer"):
        coord.close(time.timer(100))
    warnings = [r for r in caplog.records if r.levelname == "WARNING" and "LeaveGroup" in r.getMessage()]
    assert len(warnings) == 1, caplog.text
    assert "m-1" in warnings[0].getMessage() and "session.timeout.ms" in warnings[0].getMessage()


def test_leave_group_without_response_before_close_timeout_is_logged_at_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    coord, _client, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    with caplog.at_level("WARNING", logger="pykafka_client.consumer"):
        coord.close(time.timer(100))  # LeaveGroup stays unanswered
    assert any("no response before the close timeout" in r.getMessage() for r in caplog.records), caplog.text


# -- commits ---------------------------------------------------------------------------------


def commit_response(err: int = 0, tps: list[TopicPartition] | None = None) -> OffsetCommitResponse:
    tps = tps or [T0]
    return OffsetCommitResponse(
        topics=[
            OffsetCommitResponse.OffsetCommitResponseTopic(
                name="t",
                partitions=[
                    OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=tp.partition, error_code=err)
                    for tp in tps
                ],
            )
        ]
    )


def test_commit_sync_sends_generation_and_offsets() -> None:
    coord, _, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time, generation=4)
    script.add(OffsetCommitRequest, commit_response())
    assert coord.commit_offsets_sync({T0: OffsetAndMetadata(42, "meta", 3)}, time.timer(1000))
    req = script.requests(OffsetCommitRequest)[0]
    assert (req.group_id, req.generation_id_or_member_epoch, req.member_id) == (GROUP, 4, "m-1")
    p = req.topics[0].partitions[0]
    assert (p.committed_offset, p.committed_metadata, p.committed_leader_epoch) == (42, "meta", 3)


def test_commit_during_rebalance_raises_rebalance_in_progress() -> None:
    coord, _, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    coord.transition_to(MemberState.PREPARING_REBALANCE)
    with pytest.raises(RebalanceInProgressClientError):
        coord.commit_offsets_sync({T0: OffsetAndMetadata(1)}, time.timer(1000))


@pytest.mark.parametrize("err", [22, 25])  # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID
def test_commit_with_stale_generation_fails_and_rejoins(err: int) -> None:
    coord, _, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    script.add(OffsetCommitRequest, commit_response(err))
    with pytest.raises(CommitFailedError):
        coord.commit_offsets_sync({T0: OffsetAndMetadata(1)}, time.timer(1000))
    assert coord.rejoin_needed and coord.generation.generation_id == -1


def test_commit_rebalance_in_progress_error_requests_rejoin() -> None:
    coord, _, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    script.add(OffsetCommitRequest, commit_response(27))
    with pytest.raises(RebalanceInProgressClientError):
        coord.commit_offsets_sync({T0: OffsetAndMetadata(1)}, time.timer(1000))
    assert coord.rejoin_needed


def test_commit_retries_retriable_errors() -> None:
    coord, _, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    script.add(OffsetCommitRequest, commit_response(14))  # COORDINATOR_LOAD_IN_PROGRESS
    script.add(OffsetCommitRequest, commit_response(0))
    assert coord.commit_offsets_sync({T0: OffsetAndMetadata(1)}, time.timer(1000))
    assert len(script.requests(OffsetCommitRequest)) == 2


def test_commit_async_callback_runs_in_application_thread_later() -> None:
    coord, client, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    results: list[Any] = []
    coord.commit_offsets_async({T0: OffsetAndMetadata(5)}, lambda offsets, exc: results.append((dict(offsets), exc)))
    client.respond(commit_response())
    assert results == []  # not from the thread that completed the response
    coord.invoke_completed_offset_commit_callbacks()
    assert results == [({T0: OffsetAndMetadata(5)}, None)]


def test_manual_assignment_commits_without_generation() -> None:
    coord, _, script, subs, time = make()
    subs.assign_from_user([T0])
    script.add(FindCoordinatorRequest, find_ok()).add(OffsetCommitRequest, commit_response())
    assert coord.commit_offsets_sync({T0: OffsetAndMetadata(9)}, time.timer(1000))
    req = script.requests(OffsetCommitRequest)[0]
    assert (req.generation_id_or_member_epoch, req.member_id) == (-1, "")


def test_auto_commit_after_interval() -> None:
    coord, _, script, subs, time = make(auto_commit=True)
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0], time)
    subs.seek(T0, 17)
    assert coord.poll(time.timer(0))
    assert script.requests(OffsetCommitRequest) == []
    time.sleep(5000)
    script.add(OffsetCommitRequest, commit_response())
    coord.poll(time.timer(0))
    req = script.requests(OffsetCommitRequest)[0]
    assert req.topics[0].partitions[0].committed_offset == 17


def test_refresh_committed_offsets_seeks() -> None:
    coord, _, script, subs, time = make()
    subs.assign_from_user([T0, T1])
    resp = OffsetFetchResponse(
        topics=[
            OffsetFetchResponse.OffsetFetchResponseTopic(
                name="t",
                partitions=[
                    OffsetFetchResponse.OffsetFetchResponsePartition(
                        partition_index=0, committed_offset=33, committed_leader_epoch=2, metadata="x"
                    ),
                    OffsetFetchResponse.OffsetFetchResponsePartition(partition_index=1, committed_offset=-1),
                ],
            )
        ]
    )
    script.add(FindCoordinatorRequest, find_ok()).add(OffsetFetchRequest, resp)
    assert coord.refresh_committed_offsets_if_needed(time.timer(1000))
    pos = subs.position(T0)
    assert pos is not None and (pos.offset, pos.offset_epoch) == (33, 2)
    assert subs.position(T1) is None  # no committed offset: left for the reset policy


def test_callbacks_run_without_coordinator_lock() -> None:
    coord, _, script, subs, time = make()
    held: list[bool] = []

    class Probe(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
            # the RLock's owner check: acquire from another thread must succeed if we do not hold it
            import threading

            ok: list[bool] = []

            def probe() -> None:
                got = coord.lock.acquire(timeout=1)
                if got:
                    coord.lock.release()
                ok.append(got)

            t = threading.Thread(target=probe)
            t.start()
            t.join()
            held.append(not ok[0])

    subs.subscribe(["t"], Probe())
    stable(coord, script, subs, [T0], time)
    assert held == [False]


def test_coordinator_node_is_a_separate_connection() -> None:
    coord, _, script, _, time = make()
    script.add(FindCoordinatorRequest, find_ok(node_id=3))
    assert coord.ensure_coordinator_ready(time.timer(100))
    assert coord.coordinator == Node(2**31 - 1 - 3, "localhost", 9092)
    assert RangeAssignor().name() == "range"


def test_committed_offset_request_is_reused_across_short_polls() -> None:
    coord, client, script, subs, time = make()
    subs.assign_from_user([T0])
    script.add(FindCoordinatorRequest, find_ok())
    assert coord.ensure_coordinator_ready(time.timer(100))
    for _ in range(3):  # no answer yet: each call times out at once
        assert coord.fetch_committed_offsets([T0], time.timer(0)) is None
    assert len([s for s in client.sent if isinstance(s.body, OffsetFetchRequest)]) == 1
    client.respond(
        OffsetFetchResponse(
            topics=[
                OffsetFetchResponse.OffsetFetchResponseTopic(
                    name="t",
                    partitions=[
                        OffsetFetchResponse.OffsetFetchResponsePartition(partition_index=0, committed_offset=8)
                    ],
                )
            ]
        )
    )
    assert coord.fetch_committed_offsets([T0], time.timer(0)) == {T0: OffsetAndMetadata(8)}


def test_rejoin_when_a_subscribed_topic_gains_partitions() -> None:
    from tests.unit.consumer.helpers import update_metadata

    coord, _, script, subs, time = make()
    subs.subscribe(["t"])
    stable(coord, script, subs, [T0, T1, T2, T3], time)
    assert coord.poll(time.timer(0)) and not coord.rejoin_needed
    update_metadata(coord.cluster_metadata, {"t": 4})  # same counts: no rejoin
    coord.poll(time.timer(0))
    assert not coord.rejoin_needed
    update_metadata(coord.cluster_metadata, {"t": 6})
    script.add(JoinGroupRequest, join_ok(generation=2)).add(SyncGroupRequest, sync_ok([T0, T1]))
    coord.poll(time.timer(1000))
    assert len(script.requests(JoinGroupRequest)) == 2


def test_a_failed_sync_moves_the_member_state_before_the_caller_sees_the_join_done() -> None:
    """The SyncGroup answer may be handled on the heartbeat thread: the application thread, waiting for the join,
    must not see it done before the member left COMPLETING_REBALANCE (it retried at once from there and failed
    with IllegalStateError COMPLETING_REBALANCE -> PREPARING_REBALANCE, seen in a cluster failover test)."""
    coord, _, script, subs, time = make()
    subs.subscribe(["t"])
    script.add(FindCoordinatorRequest, find_ok()).add(JoinGroupRequest, join_ok())
    script.add(SyncGroupRequest, SyncGroupResponse(error_code=27, protocol_type="consumer", assignment=b""))
    script.add(JoinGroupRequest, join_ok(generation=2)).add(SyncGroupRequest, sync_ok([T1]))
    seen: list[bool] = []
    original = coord.transition_to

    def transition_to(target: MemberState) -> None:
        if target is MemberState.UNJOINED and not seen:
            # the application thread runs between the join's completion and the state change
            seen.append(coord.join_group_if_needed(time.timer(0)))
        original(target)

    coord.transition_to = transition_to  # type: ignore[method-assign]
    assert coord.join_group_if_needed(time.timer(5000))
    assert seen == [False]  # the join it waits on was not done yet
    assert coord.state is MemberState.STABLE and coord.generation.generation_id == 2
