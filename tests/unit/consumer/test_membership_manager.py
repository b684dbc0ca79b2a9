"""The KIP-848 member state machine (ConsumerMembershipManager), sans-IO with MockTime: which heartbeat to
send when, what to reconcile, fencing, leaving. The rules are Java's ConsumerMembershipManager /
ConsumerHeartbeatRequestManager behaviour and KIP-848's protocol description."""

from __future__ import annotations

import uuid

import pytest

from pykafka_client.consumer.membership_manager import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerMembershipManager,
    MemberState,
)
from pykafka_client.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedMemberEpochError,
    GroupAuthorizationFailedError,
    NotCoordinatorError,
    UnknownMemberIdError,
)
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest
from pykafka_client.protocol.messages.consumer_group_heartbeat_response import ConsumerGroupHeartbeatResponse
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
NAMES = {T1: "a", T2: "b"}
INTERVAL = 300


def response(epoch: int, assignment: dict[uuid.UUID, list[int]] | None = None, *, error: int = 0,
             member_id: str = "m1", interval: int = INTERVAL) -> ConsumerGroupHeartbeatResponse:  # fmt: skip
    asg = None
    if assignment is not None:
        asg = ConsumerGroupHeartbeatResponse.Assignment(
            topic_partitions=[ConsumerGroupHeartbeatResponse.TopicPartitions(topic_id=t, partitions=ps)
                              for t, ps in assignment.items()])  # fmt: skip
    return ConsumerGroupHeartbeatResponse(error_code=error, member_id=member_id, member_epoch=epoch,
                                          heartbeat_interval_ms=interval, assignment=asg)  # fmt: skip


def owned(req: ConsumerGroupHeartbeatRequest) -> dict[uuid.UUID, list[int]] | None:
    if req.topic_partitions is None:
        return None
    return {tp.topic_id: tp.partitions for tp in req.topic_partitions}


def tps(topic: str, *parts: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in parts}


class Member:
    def __init__(self, instance_id: str | None = None) -> None:
        self.time = MockTime()
        self.m = ConsumerMembershipManager("g", instance_id, rebalance_timeout_ms=5000, server_assignor="uniform",
                                           retry_backoff_ms=100)  # fmt: skip

    def state(self) -> MemberState:
        return self.m.state

    def now(self) -> int:
        return self.time.milliseconds()

    def send(self) -> ConsumerGroupHeartbeatRequest:
        req = self.m.heartbeat_request(self.now())
        assert req is not None, f"no heartbeat due in {self.m.state}"
        return req

    def reconcile(self) -> tuple[set[TopicPartition], set[TopicPartition]]:
        rec = self.m.next_reconciliation(NAMES.get)
        assert rec is not None
        self.m.on_reconciliation_done(rec)
        return set(rec.revoked), set(rec.added)

    def joined_with(self, assignment: dict[uuid.UUID, list[int]], epoch: int = 1) -> None:
        self.m.on_subscription_updated(["a", "b"])
        self.send()
        assert self.m.on_heartbeat_response(response(epoch, assignment), self.now()) is None
        self.reconcile()
        self.send()  # acknowledgement
        self.m.on_heartbeat_response(response(epoch), self.now())


def test_join_sends_every_field_with_epoch_0() -> None:
    """KIP-848: the first heartbeat (epoch 0) carries the rebalance timeout, the subscription, the server
    assignor and an empty owned list; Java's HeartbeatState sends all fields when joining."""
    mb = Member()
    assert mb.state() is MemberState.UNSUBSCRIBED
    assert mb.m.heartbeat_request(mb.now()) is None  # nothing to send before subscribing
    mb.m.on_subscription_updated(["b", "a"])
    assert mb.state() is MemberState.JOINING
    req = mb.send()
    assert req.member_epoch == 0
    assert req.subscribed_topic_names == ["a", "b"]
    assert req.rebalance_timeout_ms == 5000
    assert req.server_assignor == "uniform"
    assert req.topic_partitions == []
    assert mb.m.heartbeat_request(mb.now()) is None  # never two in flight


def test_reconcile_assigns_then_acknowledges_with_owned_partitions_incrementally() -> None:
    """Java: after reconciling, the member is ACKNOWLEDGING and heartbeats at once with its owned partitions;
    later heartbeats carry only the fields that changed (subscription and owned partitions are omitted
    when unchanged)."""
    mb = Member()
    mb.m.on_subscription_updated(["a", "b"])
    mb.send()
    mb.m.on_heartbeat_response(response(1, {T1: [0, 1], T2: [0]}), mb.now())
    assert mb.state() is MemberState.RECONCILING
    revoked, added = mb.reconcile()
    assert revoked == set() and added == tps("a", 0, 1) | tps("b", 0)
    assert mb.state() is MemberState.ACKNOWLEDGING
    assert mb.m.time_to_next_heartbeat(mb.now()) == 0
    ack = mb.send()
    assert ack.member_epoch == 1 and ack.member_id == "m1"
    assert owned(ack) == {T1: [0, 1], T2: [0]}
    assert ack.subscribed_topic_names is None and ack.rebalance_timeout_ms == -1 and ack.server_assignor is None
    assert mb.state() is MemberState.STABLE
    mb.m.on_heartbeat_response(response(1), mb.now())
    mb.time.sleep(INTERVAL)
    plain = mb.send()
    assert owned(plain) is None and plain.subscribed_topic_names is None
    mb.m.on_heartbeat_response(response(1), mb.now())
    mb.m.on_subscription_updated(["a"])  # a changed subscription goes out at once, alone
    changed = mb.send()
    assert changed.subscribed_topic_names == ["a"] and owned(changed) is None


def test_heartbeat_interval_comes_from_the_response() -> None:
    """KIP-848: the coordinator sets the heartbeat interval (group.consumer.heartbeat.interval.ms)."""
    mb = Member()
    mb.joined_with({T1: [0]})
    mb.m.on_heartbeat_response(response(1, interval=750), mb.now())
    assert mb.m.time_to_next_heartbeat(mb.now()) == 750
    mb.time.sleep(749)
    assert mb.m.heartbeat_request(mb.now()) is None
    mb.time.sleep(1)
    assert mb.m.heartbeat_request(mb.now()) is not None


def test_new_target_revokes_removed_and_adds_new_partitions_only() -> None:
    """Revoke first, then assign: the reconciliation names only the partitions that leave and those that
    arrive (Java: ConsumerMembershipManager.reconcile)."""
    mb = Member()
    mb.joined_with({T1: [0, 1, 2]})
    mb.m.on_heartbeat_response(response(2, {T1: [0], T2: [1]}), mb.now())
    assert mb.state() is MemberState.RECONCILING
    revoked, added = mb.reconcile()
    assert revoked == tps("a", 1, 2) and added == tps("b", 1)
    ack = mb.send()
    assert owned(ack) == {T1: [0], T2: [1]} and ack.member_epoch == 2


def test_unknown_topic_id_waits_for_metadata() -> None:
    """Java: a target naming a topic id the metadata does not know stays pending until the metadata has it."""
    mb = Member()
    mb.m.on_subscription_updated(["a", "c"])
    mb.send()
    t3 = uuid.UUID(int=3)
    mb.m.on_heartbeat_response(response(1, {T1: [0], t3: [0]}), mb.now())
    assert mb.m.next_reconciliation(NAMES.get) is None
    assert mb.m.waiting_for_metadata and mb.state() is MemberState.RECONCILING
    rec = mb.m.next_reconciliation({**NAMES, t3: "c"}.get)
    assert rec is not None and set(rec.added) == tps("a", 0) | tps("c", 0)
    assert not mb.m.waiting_for_metadata


@pytest.mark.parametrize("error", [FencedMemberEpochError, UnknownMemberIdError])
def test_fenced_member_loses_partitions_and_rejoins_with_epoch_0(error: type[Exception]) -> None:
    """KIP-848 / Java transitionToFenced: FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID -> FENCED (the caller runs
    on_partitions_lost), then JOINING with epoch 0, the same member id and every field again."""
    mb = Member()
    mb.joined_with({T1: [0, 1]})
    mb.time.sleep(INTERVAL)
    mb.send()
    err = mb.m.on_heartbeat_response(response(1, error=error.code), mb.now())  # type: ignore[attr-defined]
    assert isinstance(err, error)
    assert mb.state() is MemberState.FENCED
    assert mb.m.heartbeat_request(mb.now()) is None  # nothing is sent until the partitions are given up
    mb.m.on_fenced_done()
    assert mb.state() is MemberState.JOINING and mb.m.current_assignment == frozenset()
    rejoin = mb.send()
    assert rejoin.member_epoch == 0 and rejoin.member_id == "m1"
    assert rejoin.subscribed_topic_names == ["a", "b"] and rejoin.topic_partitions == []


def test_fatal_error_stops_heartbeats() -> None:
    """Java: a non-retriable heartbeat error (GROUP_AUTHORIZATION_FAILED, ...) is fatal for the member."""
    mb = Member()
    mb.m.on_subscription_updated(["a"])
    mb.send()
    mb.m.on_heartbeat_response(response(0, error=GroupAuthorizationFailedError.code), mb.now())
    assert mb.state() is MemberState.FATAL and isinstance(mb.m.fatal_error, GroupAuthorizationFailedError)
    assert mb.m.heartbeat_request(mb.now() + 10_000) is None


def test_failed_request_retries_after_backoff_with_every_field() -> None:
    """Java HeartbeatState.reset: after an error the next heartbeat carries every field."""
    mb = Member()
    mb.joined_with({T1: [0]})
    mb.time.sleep(INTERVAL)
    mb.send()
    mb.m.on_heartbeat_failure(mb.now())
    assert mb.m.heartbeat_request(mb.now() + 99) is None
    mb.time.sleep(100)
    again = mb.send()
    assert again.subscribed_topic_names == ["a", "b"] and owned(again) == {T1: [0]} and again.member_epoch == 1


def test_failed_heartbeats_back_off_exponentially_until_one_succeeds() -> None:
    """Java's consumer heartbeat manager (its request state's ExponentialBackoff): a failed heartbeat waits
    retry.backoff.ms, each further failure in a row twice as long (jitter +-20%) up to retry.backoff.max.ms,
    whether the request got no answer or a retriable error; a successful heartbeat starts the count again."""
    mb = Member()
    mb.m = ConsumerMembershipManager("g", rebalance_timeout_ms=5000, retry_backoff_ms=100, retry_backoff_max_ms=1000)
    mb.joined_with({T1: [0]})
    mb.time.sleep(INTERVAL)
    for i, (low, high) in enumerate([(80, 120), (160, 240), (320, 480), (640, 960), (800, 1000), (800, 1000)]):
        mb.send()
        if i % 2:
            mb.m.on_heartbeat_failure(mb.now())  # no answer
        else:
            err = mb.m.on_heartbeat_response(response(0, error=CoordinatorLoadInProgressError.code), mb.now())
            assert isinstance(err, CoordinatorLoadInProgressError) and mb.state() is MemberState.STABLE
        wait = mb.m.time_to_next_heartbeat(mb.now())
        assert low <= wait <= high
        mb.time.sleep(wait)
    mb.send()
    assert mb.m.on_heartbeat_response(response(1), mb.now()) is None
    mb.time.sleep(INTERVAL)
    mb.send()
    mb.m.on_heartbeat_failure(mb.now())
    assert 80 <= mb.m.time_to_next_heartbeat(mb.now()) <= 120


@pytest.mark.parametrize("error", [NotCoordinatorError, CoordinatorNotAvailableError])
def test_a_coordinator_that_moved_is_heartbeated_at_once_once_found(error: type[BrokerResponseError]) -> None:
    """Java: NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE reset the heartbeat's backoff, so the next heartbeat
    goes as soon as the coordinator is found again (the coordinator lookup has its own backoff)."""
    mb = Member()
    mb.joined_with({T1: [0]})
    mb.time.sleep(INTERVAL)
    mb.send()
    mb.m.on_heartbeat_failure(mb.now())  # a failure first: the reset also forgets it
    mb.time.sleep(100)
    mb.send()
    err = mb.m.on_heartbeat_response(response(0, error=error.code), mb.now())
    assert isinstance(err, error)
    assert mb.m.time_to_next_heartbeat(mb.now()) == 0
    again = mb.send()
    assert again.member_epoch == 1 and owned(again) == {T1: [0]}  # every field again
    mb.m.on_heartbeat_failure(mb.now())
    assert 80 <= mb.m.time_to_next_heartbeat(mb.now()) <= 120  # the count started again


def test_leave_with_epoch_minus_1() -> None:
    """KIP-848: a dynamic member leaves (unsubscribe, close) with epoch -1 after revoking its partitions."""
    mb = Member()
    mb.joined_with({T1: [0]})
    mb.m.leave_group()
    assert mb.state() is MemberState.PREPARE_LEAVING
    assert mb.m.heartbeat_request(mb.now()) is None  # revocation first
    mb.m.on_leave_prepared()
    assert mb.state() is MemberState.LEAVING
    leave = mb.send()
    assert leave.member_epoch == LEAVE_GROUP_MEMBER_EPOCH and leave.member_id == "m1"
    assert mb.state() is MemberState.UNSUBSCRIBED
    mb.m.on_subscription_updated(["a"])  # subscribing again joins again with epoch 0
    assert mb.send().member_epoch == 0


def test_static_member_leaves_with_epoch_minus_2() -> None:
    """KIP-848: a static member (group.instance.id) leaves with epoch -2 so the coordinator keeps its
    assignment for the next incarnation until the session times out."""
    mb = Member("instance-1")
    mb.joined_with({T1: [0]})
    mb.m.leave_group()
    mb.m.on_leave_prepared()
    leave = mb.send()
    assert leave.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and leave.instance_id == "instance-1"


def test_regex_subscription_is_sent_instead_of_names() -> None:
    """KIP-848: SubscribedTopicRegex is resolved by the coordinator."""
    mb = Member()
    mb.m.on_subscription_updated([], regex="in-.*")
    req = mb.send()
    assert req.subscribed_topic_regex == "in-.*" and req.subscribed_topic_names is None


def test_response_after_leaving_is_ignored() -> None:
    """Java: a response that arrives for a membership already given up changes nothing."""
    mb = Member()
    mb.joined_with({T1: [0]})
    mb.m.leave_group()
    mb.m.on_leave_prepared()
    mb.send()
    assert mb.m.on_heartbeat_response(response(3, {T1: [0, 1]}), mb.now()) is None
    assert mb.state() is MemberState.UNSUBSCRIBED and mb.m.target_assignment is None


def test_target_arriving_during_reconciliation_is_reconciled_next() -> None:
    """Java ConsumerMembershipManager: a new target received while a reconciliation runs is not lost; the
    member reports what it owns and reconciles towards the newer target afterwards."""
    mb = Member()
    mb.m.on_subscription_updated(["a", "b"])
    mb.send()
    mb.m.on_heartbeat_response(response(1, {T1: [0, 1]}), mb.now())
    first = mb.m.next_reconciliation(NAMES.get)
    assert first is not None
    mb.time.sleep(INTERVAL)
    mb.m.on_heartbeat_response(response(2, {T1: [1], T2: [0]}), mb.now())  # arrives while the listener runs
    mb.m.on_reconciliation_done(first)
    assert mb.state() is MemberState.RECONCILING and mb.m.current_assignment == frozenset(tps("a", 0, 1))
    second = mb.m.next_reconciliation(NAMES.get)
    assert second is not None
    assert set(second.revoked) == tps("a", 0) and set(second.added) == tps("b", 0)
    mb.m.on_reconciliation_done(second)
    assert mb.state() is MemberState.ACKNOWLEDGING
    assert owned(mb.send()) == {T1: [1], T2: [0]}


def test_a_join_answered_with_a_retriable_error_waits_for_the_backoff() -> None:
    """Java: the heartbeat request state's backoff holds every send, the join's too: a coordinator still
    loading (COORDINATOR_LOAD_IN_PROGRESS) is asked again after retry.backoff.ms, not at once."""
    mb = Member()
    mb.m.on_subscription_updated(["a"])
    mb.send()
    err = mb.m.on_heartbeat_response(response(0, error=CoordinatorLoadInProgressError.code), mb.now())
    assert isinstance(err, CoordinatorLoadInProgressError) and mb.state() is MemberState.JOINING
    assert mb.m.heartbeat_request(mb.now()) is None
    assert mb.m.time_to_next_heartbeat(mb.now()) == 100
    mb.time.sleep(100)
    assert mb.send().member_epoch == 0
