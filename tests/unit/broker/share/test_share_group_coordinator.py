"""The share groups' driver on the group coordinator's runtime (MockTime, inline timers): requests are served
only while the runtime serves, the groups are written to and replayed from ``__consumer_offsets``, and the
periodic expiry removes silent members and has what they held released."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from mini_broker.group import GroupConfig, GroupCoordinator, GroupMetadataManager
from mini_broker.group.consumer import TopicInfo, TopicsImage
from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.coordinator import EXPIRY_CHECK_INTERVAL_MS, ShareGroupCoordinator
from mini_broker.share.group import ShareGroupHeartbeatParams, ShareGroupHeartbeatResult
from mini_broker.share.records import group_records
from pykafka_client.errors import GroupNotEmptyError, NotCoordinatorError
from pykafka_client.utils.time import MockTime

SESSION_MS = 6000
TOPICS = TopicsImage.of([TopicInfo(uuid.UUID(int=7), "t", 3)])


class Harness:
    def __init__(self, time: MockTime, follow: bool = False) -> None:
        self.removed: list[tuple[str, str]] = []
        self.classic = GroupCoordinator(GroupConfig(), GroupMetadataManager(None, time), time, timer_run_inline=True,
                                        reaper_enabled=False)
        self.share = ShareGroupCoordinator(ShareGroupConfig(session_timeout_ms=SESSION_MS, heartbeat_interval_ms=100),
                                           self.classic.runtime, lambda: TOPICS,
                                           lambda g, m: self.removed.append((g, m)), time)
        self.classic.share_groups = self.share
        self.classic.startup(follow_partition_leadership=follow)
        self.share.startup()

    def heartbeat(self, request: ShareGroupHeartbeatParams) -> ShareGroupHeartbeatResult:
        replies: list[ShareGroupHeartbeatResult] = []
        self.share.heartbeat(request, replies.append)
        assert len(replies) == 1, "a single broker answers a heartbeat at once"
        return replies[0]

    def join(self, member_id: str) -> ShareGroupHeartbeatResult:
        return self.heartbeat(ShareGroupHeartbeatParams("g", member_id, 0, subscribed_topic_names=("t",)))


@pytest.fixture
def time() -> MockTime:
    return MockTime()


@pytest.fixture
def single(time: MockTime) -> Iterator[Harness]:
    h = Harness(time)
    yield h
    h.classic.shutdown()


def test_a_broker_not_leading_the_partition_answers_not_coordinator(time: MockTime) -> None:
    h = Harness(time, follow=True)
    try:
        assert h.join("m1").error_code == NotCoordinatorError.code
        assert not h.share.is_share_group("g")
    finally:
        h.classic.shutdown()


def test_an_unload_drops_the_groups_and_a_load_replays_their_records(single: Harness, time: MockTime) -> None:
    assert single.join("m1").member_epoch == 1
    described = single.share.describe("g")
    assert described is not None
    live = group_records(described)  # what __consumer_offsets holds for the group
    single.classic.unload(0)
    assert not single.share.is_share_group("g")
    assert single.share.load(live) == 1
    group = single.share.describe("g")
    assert group is not None and list(group.members) == ["m1"] and group.members["m1"].member_epoch == 1
    assert single.heartbeat(ShareGroupHeartbeatParams("g", "m1", 1)).error_code == 0
    # the replayed member's session starts at the load
    time.sleep(SESSION_MS + EXPIRY_CHECK_INTERVAL_MS)
    single.classic.advance_clock()
    assert single.removed == [("g", "m1")]


def test_the_periodic_expiry_removes_a_silent_member_and_reports_it(single: Harness, time: MockTime) -> None:
    single.join("m1")
    time.sleep(SESSION_MS - 1)
    single.classic.advance_clock()
    assert single.removed == []
    time.sleep(1 + EXPIRY_CHECK_INTERVAL_MS)
    single.classic.advance_clock()
    assert single.removed == [("g", "m1")]
    group = single.share.describe("g")
    assert group is not None and group.members == {}


def test_delete_groups_refuses_a_group_with_members_and_deletes_it_once_empty(single: Harness) -> None:
    single.join("m1")
    assert single.share.delete_groups(["g", "not-a-share-group"]) == {"g": GroupNotEmptyError.code}
    assert single.share.list_groups() == [("g", "Stable")]
    left = single.heartbeat(ShareGroupHeartbeatParams("g", "m1", -1))
    assert left.error_code == 0
    assert single.share.list_groups() == [("g", "Empty")]
    assert single.share.delete_groups(["g"]) == {"g": 0}
    assert single.share.describe("g") is None and single.share.list_groups() == []
    # the id is free again: a member joining creates a new group from epoch 1
    assert single.join("m2").member_epoch == 1
