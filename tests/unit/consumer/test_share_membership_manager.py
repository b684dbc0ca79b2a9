"""Share group membership (sans-IO): joining with the subscription, taking the assignment and the heartbeat
interval, rejoining when fenced, finding the coordinator again, fatal errors, leaving."""

from __future__ import annotations

import uuid

import pytest

from pykafka_client.consumer.share_membership_manager import (
    HeartbeatOutcome,
    ShareMembershipManager,
    ShareMemberState,
)
from pykafka_client.errors import (
    CoordinatorLoadInProgressError,
    FencedMemberEpochError,
    GroupAuthorizationFailedError,
    NotCoordinatorError,
)
from pykafka_client.protocol.messages import ShareGroupHeartbeatResponse

TOPIC_ID = uuid.uuid4()


def _assigned(epoch: int, partitions: list[int]) -> ShareGroupHeartbeatResponse:
    return ShareGroupHeartbeatResponse(
        member_epoch=epoch, heartbeat_interval_ms=300, assignment=ShareGroupHeartbeatResponse.Assignment(
            topic_partitions=[ShareGroupHeartbeatResponse.TopicPartitions(topic_id=TOPIC_ID, partitions=partitions)]))


def test_join_then_heartbeat_at_the_interval_without_repeating_the_subscription() -> None:
    m = ShareMembershipManager("g", rack_id="r1")
    assert not m.should_heartbeat(0)  # nothing subscribed
    m.subscribe(["b", "a"])
    assert m.should_heartbeat(0)
    join = m.heartbeat_request()
    assert (join.group_id, join.member_epoch, join.subscribed_topic_names, join.rack_id) == ("g", 0, ["a", "b"], "r1")
    assert uuid.UUID(join.member_id)  # the member chooses its id
    assert not m.should_heartbeat(0)  # one in flight
    assert m.on_heartbeat_response(_assigned(1, [1, 0]), 1000) is HeartbeatOutcome.OK
    assert (m.state, m.member_epoch, m.assignment) == (ShareMemberState.STABLE, 1, {TOPIC_ID: [0, 1]})
    assert not m.should_heartbeat(1299) and m.should_heartbeat(1300)
    again = m.heartbeat_request()
    assert (again.member_epoch, again.subscribed_topic_names, again.rack_id) == (1, None, None)


def test_a_fenced_member_rejoins_with_epoch_zero_and_its_subscription() -> None:
    m = ShareMembershipManager("g")
    m.subscribe(["t"])
    m.heartbeat_request()
    m.on_heartbeat_response(_assigned(3, [0]), 0)
    m.heartbeat_request()
    fenced = ShareGroupHeartbeatResponse(error_code=FencedMemberEpochError.code)
    assert m.on_heartbeat_response(fenced, 500) is HeartbeatOutcome.REJOIN
    assert (m.member_epoch, m.assignment, m.state) == (0, {}, ShareMemberState.JOINING)
    assert m.should_heartbeat(500)
    assert m.heartbeat_request().subscribed_topic_names == ["t"]


def test_coordinator_errors_and_fatal_errors() -> None:
    m = ShareMembershipManager("g", retry_backoff_ms=100)
    m.subscribe(["t"])
    m.heartbeat_request()
    moved = ShareGroupHeartbeatResponse(error_code=NotCoordinatorError.code)
    assert m.on_heartbeat_response(moved, 0) is HeartbeatOutcome.COORDINATOR_UNKNOWN
    assert m.should_heartbeat(0)  # Java resets the backoff: at once, once the coordinator is found again
    m.heartbeat_request()
    with pytest.raises(GroupAuthorizationFailedError, match="share group g"):
        m.on_heartbeat_response(ShareGroupHeartbeatResponse(error_code=GroupAuthorizationFailedError.code), 0)


def test_leaving_sends_epoch_minus_one_and_forgets_the_assignment() -> None:
    m = ShareMembershipManager("g")
    m.subscribe(["t"])
    m.heartbeat_request()
    m.on_heartbeat_response(_assigned(2, [0]), 0)
    leave = m.leave_request()
    assert (leave.member_id, leave.member_epoch) == (m.member_id, -1)
    assert (m.state, m.assignment, m.member_epoch, m.subscription) == (ShareMemberState.LEFT, {}, 0, ["t"])
    assert not m.should_heartbeat(10**9)
    m.subscribe(["t"])  # joins again
    assert m.heartbeat_request().member_epoch == 0
    m.leave_request(unsubscribe=True)
    assert m.subscription == []


def test_failed_heartbeats_back_off_exponentially_until_one_succeeds() -> None:
    """Java's share heartbeat manager (its request state): a failure waits retry.backoff.ms, each further
    failure in a row twice as long (jitter +-20%) up to retry.backoff.max.ms; a success starts again."""
    m = ShareMembershipManager("g", retry_backoff_ms=100, retry_backoff_max_ms=1000)
    m.subscribe(["t"])
    now = 0
    for low, high in [(80, 120), (160, 240), (320, 480), (640, 960), (800, 1000), (800, 1000)]:
        m.heartbeat_request()
        if now % 2:
            m.on_heartbeat_failure(now)  # no answer
        else:  # an answer with a retriable error
            loading = ShareGroupHeartbeatResponse(error_code=CoordinatorLoadInProgressError.code)
            assert m.on_heartbeat_response(loading, now) is HeartbeatOutcome.RETRY
        wait = m.time_to_next_heartbeat(now)
        assert low <= wait <= high
        now += wait
        assert m.should_heartbeat(now)
        now += 1
    m.heartbeat_request()
    assert m.on_heartbeat_response(_assigned(1, [0]), now) is HeartbeatOutcome.OK
    m.heartbeat_request()
    m.on_heartbeat_failure(now)
    assert 80 <= m.time_to_next_heartbeat(now) <= 120
