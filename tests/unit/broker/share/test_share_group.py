"""Share group membership (sans-IO): join, heartbeat, leave, fencing, session expiry, the simple assignor."""

from __future__ import annotations

import itertools
import uuid

from mini_broker.group.consumer.model import TopicInfo, TopicsImage
from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.group import ShareGroupHeartbeatParams, ShareGroupManager, ShareGroupState, simple_assign
from pykafka_client.errors import (
    FencedMemberEpochError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    UnknownMemberIdError,
)
from pykafka_client.utils.time import MockTime

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
TOPICS = TopicsImage.of([TopicInfo(T1, "one", 1), TopicInfo(T2, "six", 6)])
CONFIG = ShareGroupConfig(session_timeout_ms=1000, heartbeat_interval_ms=100, max_size=3)


def _manager() -> ShareGroupManager:
    ids = (f"m{i}" for i in itertools.count())
    return ShareGroupManager(CONFIG, lambda: next(ids))


def _join(mgr: ShareGroupManager, now: int, topics: tuple[str, ...] = ("one",), member_id: str = "") -> tuple[str, int]:
    r = mgr.heartbeat(ShareGroupHeartbeatParams("g", member_id, 0, subscribed_topic_names=topics), now, TOPICS)
    assert r.error_code == 0 and r.member_id is not None
    return r.member_id, r.member_epoch


def test_simple_assignor_shares_a_partition_among_more_members_than_partitions() -> None:
    out = simple_assign({"a": ("one",), "b": ("one",), "c": ("one",)}, TOPICS)
    assert out == {"a": {T1: frozenset({0})}, "b": {T1: frozenset({0})}, "c": {T1: frozenset({0})}}


def test_simple_assignor_splits_partitions_among_fewer_members() -> None:
    out = simple_assign({"a": ("six",), "b": ("six",)}, TOPICS)
    assert out == {"a": {T2: frozenset({0, 2, 4})}, "b": {T2: frozenset({1, 3, 5})}}
    assert simple_assign({"a": ("missing",)}, TOPICS) == {"a": {}}


def test_join_gets_a_member_id_an_epoch_and_the_assignment() -> None:
    mgr = _manager()
    r = mgr.heartbeat(ShareGroupHeartbeatParams("g", "", 0, subscribed_topic_names=("one",)), 0, TOPICS)
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m0", 1, 100)
    assert r.assignment == {T1: frozenset({0})}
    # a heartbeat with nothing new: same epoch, no assignment (unchanged)
    again = mgr.heartbeat(ShareGroupHeartbeatParams("g", "m0", 1), 10, TOPICS)
    assert (again.error_code, again.member_epoch, again.assignment) == (0, 1, None)
    assert mgr.groups["g"].state is ShareGroupState.STABLE


def test_a_second_member_bumps_the_epoch_and_both_get_the_shared_partition() -> None:
    mgr = _manager()
    a, a_epoch = _join(mgr, 0)
    _, b_epoch = _join(mgr, 0)
    assert b_epoch == a_epoch + 1
    r = mgr.heartbeat(ShareGroupHeartbeatParams("g", a, a_epoch), 10, TOPICS)
    assert (r.member_epoch, r.assignment) == (b_epoch, {T1: frozenset({0})})


def test_a_member_may_name_its_own_id() -> None:
    mgr = _manager()
    assert _join(mgr, 0, member_id="mine")[0] == "mine"


def test_unknown_members_and_stale_epochs_are_refused() -> None:
    mgr = _manager()
    a, epoch = _join(mgr, 0)
    assert mgr.heartbeat(ShareGroupHeartbeatParams("g", "nobody", 1), 0, TOPICS).error_code == \
        UnknownMemberIdError.code
    assert mgr.heartbeat(ShareGroupHeartbeatParams("g", a, epoch + 5), 0, TOPICS).error_code == \
        FencedMemberEpochError.code
    assert mgr.heartbeat(ShareGroupHeartbeatParams("g", "", 0), 0, TOPICS).error_code == InvalidRequestError.code


def test_the_group_size_is_bounded() -> None:
    mgr = _manager()
    for _ in range(3):
        _join(mgr, 0)
    r = mgr.heartbeat(ShareGroupHeartbeatParams("g", "", 0, subscribed_topic_names=("one",)), 0, TOPICS)
    assert r.error_code == GroupMaxSizeReachedError.code and "group.share.max.size" in (r.error_message or "")


def test_leave_removes_the_member_and_the_others_get_a_new_epoch() -> None:
    mgr = _manager()
    a, a_epoch = _join(mgr, 0, ("six",))
    b, b_epoch = _join(mgr, 0, ("six",))
    r = mgr.heartbeat(ShareGroupHeartbeatParams("g", b, -1), 0, TOPICS)
    assert (r.error_code, r.member_epoch) == (0, -1)
    assert not mgr.is_member("g", b)
    r = mgr.heartbeat(ShareGroupHeartbeatParams("g", a, a_epoch), 0, TOPICS)
    assert r.member_epoch == b_epoch + 1 and r.assignment == {T2: frozenset(range(6))}


def test_a_silent_member_expires_after_the_session_timeout() -> None:
    time = MockTime()
    mgr = _manager()
    a, _ = _join(mgr, time.milliseconds())
    time.sleep(999)
    assert mgr.expire(time.milliseconds(), TOPICS) == []
    time.sleep(1)
    assert mgr.expire(time.milliseconds(), TOPICS) == [("g", a)]
    assert not mgr.is_member("g", a)
    assert mgr.groups["g"].state is ShareGroupState.EMPTY


def test_a_topic_gaining_partitions_is_reassigned() -> None:
    mgr = _manager()
    a, epoch = _join(mgr, 0)
    grown = TopicsImage.of([TopicInfo(T1, "one", 2)])
    r = mgr.heartbeat(ShareGroupHeartbeatParams("g", a, epoch), 0, grown)
    assert r.member_epoch == epoch + 1 and r.assignment == {T1: frozenset({0, 1})}
