from __future__ import annotations

import re

import pytest

from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
from pykafka_client.consumer.subscription_state import (
    FetchPosition,
    OffsetResetStrategy,
    SubscriptionState,
    SubscriptionType,
)
from pykafka_client.errors import IllegalArgumentError, IllegalStateError, NoOffsetForPartitionError
from pykafka_client.structs import OffsetAndMetadata, TopicPartition

pytestmark = pytest.mark.timeout(60)

T0 = TopicPartition("topic", 0)
T1 = TopicPartition("topic", 1)
U0 = TopicPartition("other", 0)


def test_partition_assignment() -> None:
    s = SubscriptionState()
    assert s.assign_from_user([T0])
    assert s.assigned_partitions() == {T0}
    assert not s.has_all_fetch_positions()
    s.seek(T0, 1)
    assert s.is_fetchable(T0)
    assert s.all_consumed() == {T0: OffsetAndMetadata(1)}


def test_partition_assignment_change_keeps_positions() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0])
    s.seek(T0, 5)
    aid = s.assignment_id
    assert s.assign_from_user([T0, T1])
    assert s.assignment_id == aid + 1
    pos = s.position(T0)
    assert pos is not None and pos.offset == 5
    assert s.position(T1) is None
    assert not s.assign_from_user([T1, T0])  # same set: no change
    assert s.assignment_id == aid + 1


@pytest.mark.parametrize(
    "first,second",
    [("topics", "assign"), ("assign", "topics"), ("pattern", "topics"), ("topics", "pattern"), ("assign", "pattern")],
)
def test_subscription_types_are_exclusive(first: str, second: str) -> None:
    def do(s: SubscriptionState, kind: str) -> None:
        if kind == "topics":
            s.subscribe(["topic"])
        elif kind == "pattern":
            s.subscribe_pattern(re.compile("t.*"))
        else:
            s.assign_from_user([T0])

    s = SubscriptionState()
    do(s, first)
    before = s.subscription_type
    with pytest.raises(IllegalStateError, match="mutually exclusive"):
        do(s, second)
    assert s.subscription_type is before
    s.unsubscribe()
    do(s, second)


def test_unsubscribe_clears_everything() -> None:
    s = SubscriptionState()
    s.subscribe(["topic"])
    s.assign_from_subscribed([T0])
    s.unsubscribe()
    assert s.subscription_type is SubscriptionType.NONE
    assert s.subscription() == frozenset()
    assert s.assigned_partitions() == set()


def test_assign_from_subscribed_rejects_unsubscribed_topic() -> None:
    s = SubscriptionState()
    s.subscribe(["topic"])
    with pytest.raises(IllegalArgumentError):
        s.assign_from_subscribed([U0])
    s2 = SubscriptionState()
    s2.assign_from_user([T0])
    with pytest.raises(IllegalArgumentError):
        s2.assign_from_subscribed([T0])


def test_pattern_subscription() -> None:
    s = SubscriptionState()
    listener = ConsumerRebalanceListener()
    s.subscribe_pattern(re.compile("top.*"), listener)
    assert s.rebalance_listener is listener
    assert s.matches_subscribed_pattern("topic")
    assert not s.matches_subscribed_pattern("other")
    assert not s.matches_subscribed_pattern("xtopic")  # full match, as Java's Pattern.matcher().matches()
    assert s.subscribe_from_pattern(["topic"])
    assert not s.subscribe_from_pattern(["topic"])
    assert s.subscription() == {"topic"}
    s.assign_from_subscribed([T0])


def test_subscribe_from_pattern_requires_pattern_type() -> None:
    s = SubscriptionState()
    s.subscribe(["topic"])
    with pytest.raises(IllegalArgumentError):
        s.subscribe_from_pattern(["topic"])


def test_group_subscription_for_leader() -> None:
    s = SubscriptionState()
    s.subscribe(["topic"])
    assert s.group_subscribe(["other"])
    assert s.metadata_topics() == {"topic", "other"}
    assert s.subscription() == {"topic"}
    s.reset_group_subscription()
    assert s.metadata_topics() == {"topic"}


def test_negative_seek_rejected() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0])
    with pytest.raises(IllegalArgumentError):
        s.seek(T0, -1)


def test_operations_on_unassigned_partition_raise() -> None:
    s = SubscriptionState()
    with pytest.raises(IllegalStateError):
        s.seek(T0, 0)
    with pytest.raises(IllegalStateError):
        s.pause(T0)
    with pytest.raises(IllegalStateError):
        s.position(T0)


def test_pause_resume() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0, T1])
    s.seek(T0, 0)
    s.seek(T1, 0)
    s.pause(T0)
    assert s.is_paused(T0) and not s.is_fetchable(T0)
    assert s.fetchable_partitions() == [T1]
    assert s.paused_partitions() == {T0}
    s.resume(T0)
    assert s.fetchable_partitions() == [T0, T1]


def test_move_partition_to_end_changes_fetch_order() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0, T1, U0])
    for tp in (T0, T1, U0):
        s.seek(tp, 0)
    s.move_partition_to_end(T0)
    assert s.fetchable_partitions() == [T1, U0, T0]


def test_reset_lifecycle() -> None:
    s = SubscriptionState(OffsetResetStrategy.EARLIEST)
    s.assign_from_user([T0])
    assert s.initializing_partitions() == {T0}
    s.reset_initializing_positions()
    assert s.is_offset_reset_needed(T0)
    assert s.reset_strategy(T0) is OffsetResetStrategy.EARLIEST
    assert s.partitions_needing_reset(0) == {T0: OffsetResetStrategy.EARLIEST}
    s.set_next_allowed_retry([T0], 100)
    assert s.partitions_needing_reset(50) == {}
    assert s.partitions_needing_reset(100) == {T0: OffsetResetStrategy.EARLIEST}
    # a stale reset result (different strategy) is dropped
    assert not s.maybe_seek_unvalidated(T0, FetchPosition(3), OffsetResetStrategy.LATEST)
    assert s.maybe_seek_unvalidated(T0, FetchPosition(3), OffsetResetStrategy.EARLIEST)
    assert s.is_fetchable(T0)
    assert not s.maybe_seek_unvalidated(T0, FetchPosition(9), OffsetResetStrategy.EARLIEST)
    pos = s.position(T0)
    assert pos is not None and pos.offset == 3


def test_seek_cancels_pending_reset() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0])
    s.request_offset_reset(T0)
    s.seek(T0, 7)
    assert not s.is_offset_reset_needed(T0)
    assert s.partitions_needing_reset(0) == {}


def test_reset_strategy_none_raises_naming_partitions() -> None:
    s = SubscriptionState(OffsetResetStrategy.NONE)
    s.assign_from_user([T0, T1])
    s.seek(T1, 0)
    with pytest.raises(NoOffsetForPartitionError) as ei:
        s.reset_initializing_positions()
    assert ei.value.partitions == {T0}
    assert "topic-0" in str(ei.value)


def test_pending_revocation_is_not_fetchable() -> None:
    s = SubscriptionState()
    s.subscribe(["topic"])
    s.assign_from_subscribed([T0])
    s.seek(T0, 0)
    s.mark_pending_revocation([T0])
    assert not s.is_fetchable(T0)


def test_lag_uses_hw_or_lso() -> None:
    s = SubscriptionState()
    s.assign_from_user([T0])
    assert s.partition_lag(T0, False) is None
    s.seek(T0, 5)
    s.update_high_watermark(T0, 10)
    s.update_last_stable_offset(T0, 8)
    assert s.partition_lag(T0, False) == 5
    assert s.partition_lag(T0, True) == 3
