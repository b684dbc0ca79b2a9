"""The consumer groups' driver on the group coordinator's runtime (MockTime, inline timers): requests are
served only while the runtime serves, a resignation drops the groups (members rejoin: UNKNOWN_MEMBER_ID), and
the periodic expiry removes members whose session ended."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from mini_broker.group import GroupConfig, GroupCoordinator, GroupMetadataManager
from mini_broker.group.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupHeartbeatParams,
    TopicInfo,
    TopicsImage,
)
from mini_broker.group.consumer.coordinator import EXPIRY_CHECK_INTERVAL_MS
from pykafka_client.errors import NotCoordinatorError, NotLeaderOrFollowerError, UnknownMemberIdError
from pykafka_client.utils.time import MockTime
from tests.unit.broker.group.consumer.helpers import heartbeat

SESSION_MS = 6000
TOPICS = TopicsImage.of([TopicInfo(uuid.UUID(int=7), "t", 3)])


@pytest.fixture
def time() -> MockTime:
    return MockTime()


def _coordinators(time: MockTime, follow: bool) -> tuple[GroupCoordinator, ConsumerGroupCoordinator]:
    classic = GroupCoordinator(GroupConfig(), GroupMetadataManager(None, time), time, timer_run_inline=True,
                               reaper_enabled=False)
    classic.startup(follow_partition_leadership=follow)
    consumer = ConsumerGroupCoordinator(ConsumerGroupConfig(session_timeout_ms=SESSION_MS), classic.runtime,
                                        lambda: TOPICS, time)
    classic.consumer_groups = consumer
    consumer.startup()
    return classic, consumer


@pytest.fixture
def single(time: MockTime) -> Iterator[tuple[GroupCoordinator, ConsumerGroupCoordinator]]:
    classic, consumer = _coordinators(time, follow=False)
    yield classic, consumer
    classic.shutdown()


def _join(consumer: ConsumerGroupCoordinator, member_id: str) -> int:
    return heartbeat(consumer, ConsumerGroupHeartbeatParams(
        "g", member_id, 0, rebalance_timeout_ms=1000, subscribed_topic_names=("t",), owned_partitions={})).error_code


def test_a_cluster_broker_not_leading_the_partition_answers_not_coordinator(time: MockTime) -> None:
    """As the classic groups: NOT_COORDINATOR until this broker leads ``__consumer_offsets``."""
    classic, consumer = _coordinators(time, follow=True)
    try:
        assert _join(consumer, "m1") == NotCoordinatorError.code
        assert not consumer.is_consumer_group("g")
    finally:
        classic.shutdown()


def test_a_resignation_drops_the_consumer_groups(single: tuple[GroupCoordinator, ConsumerGroupCoordinator]) -> None:
    """The state is in memory, hosted on the runtime: unloading the coordinator drops it with the classic
    groups; a member heartbeating afterwards (to the new coordinator) must rejoin."""
    classic, consumer = single
    assert _join(consumer, "m1") == 0
    assert consumer.is_consumer_group("g")
    classic.unload(0)
    assert not consumer.is_consumer_group("g")
    r = heartbeat(consumer, ConsumerGroupHeartbeatParams("g", "m1", 1, owned_partitions={}))
    assert r.error_code == UnknownMemberIdError.code


def test_the_periodic_expiry_removes_a_silent_member(
        single: tuple[GroupCoordinator, ConsumerGroupCoordinator], time: MockTime) -> None:
    """``group.consumer.session.timeout.ms`` is enforced by the runtime's periodic task, without requests."""
    classic, consumer = single
    assert _join(consumer, "m1") == 0
    time.sleep(SESSION_MS - 1)
    classic.advance_clock()
    group = consumer.describe("g")
    assert group is not None and list(group.members) == ["m1"]
    time.sleep(1 + EXPIRY_CHECK_INTERVAL_MS)  # noticed by the next check at the latest
    classic.advance_clock()
    group = consumer.describe("g")
    assert group is not None and group.members == {} and group.group_epoch == 2


def test_a_change_whose_append_fails_is_undone(
        single: tuple[GroupCoordinator, ConsumerGroupCoordinator], monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's coordinator runtime reverts its in-memory timeline when the write of an operation's records fails:
    a member whose join could not be written is not in the group, the group epoch and target assignment are
    those before the join (here: nothing a failover would lose is served); the join retried later succeeds."""
    classic, consumer = single
    assert _join(consumer, "m1") == 0
    before = consumer.describe("g")
    assert before is not None

    def refuse(records: bytes, flush: bool = False) -> None:
        raise NotLeaderOrFollowerError("this broker no longer leads __consumer_offsets-0")

    monkeypatch.setattr(classic.runtime.partition, "append", refuse)
    assert _join(consumer, "m2") == NotCoordinatorError.code
    after = consumer.describe("g")
    assert after is not None and list(after.members) == ["m1"]
    assert (after.group_epoch, after.target_assignment_epoch, after.target_assignment) == (
        before.group_epoch, before.target_assignment_epoch, before.target_assignment)
    assert after.members["m1"] == before.members["m1"]
    monkeypatch.undo()
    assert _join(consumer, "m2") == 0
    joined = consumer.describe("g")
    assert joined is not None and sorted(joined.members) == ["m1", "m2"]
    assert joined.group_epoch == before.group_epoch + 1
