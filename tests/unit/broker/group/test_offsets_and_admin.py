"""GroupCoordinator: OffsetCommit / OffsetFetch rules, ListGroups, DescribeGroups, DeleteGroups,
OffsetDelete, offset expiry."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mini_broker.group import GroupState, LeaveMember
from pykafka_client.errors import (
    GroupIdNotFoundError,
    GroupNotEmptyError,
    GroupSubscribedToTopicError,
    IllegalGenerationError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from tests.unit.broker.group.harness import GROUP, Harness, subscription

NONE = 0
TP0, TP1, OTHER = ("t", 0), ("t", 1), ("other", 0)


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.close()


def test_manual_commit_with_default_generation_creates_empty_group(h: Harness) -> None:
    assert h.commit("", -1, {TP0: 10, TP1: 11}) == {TP0: NONE, TP1: NONE}
    assert h.group().state is GroupState.EMPTY
    assert h.fetch([TP0, TP1, OTHER]) == {TP0: 10, TP1: 11, OTHER: -1}
    assert h.fetch(None) == {TP0: 10, TP1: 11}


def test_commit_unknown_group_with_generation_is_illegal(h: Harness) -> None:
    assert h.commit("m", 1, {TP0: 1}) == {TP0: IllegalGenerationError.code}
    assert h.coordinator.get_group(GROUP) is None


def test_fetch_unknown_group(h: Harness) -> None:
    assert h.fetch([TP0], group_id="nobody") == {TP0: -1}
    assert h.fetch(None, group_id="nobody") == {}


def test_member_commit_rules(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    assert h.commit(leader, 1, {TP0: 5}) == {TP0: NONE}
    assert h.commit(leader, 2, {TP0: 6}) == {TP0: IllegalGenerationError.code}
    assert h.commit("ghost", 1, {TP0: 6}) == {TP0: UnknownMemberIdError.code}
    # Manual commit while the group has members: only members may commit.
    assert h.commit("", -1, {TP0: 6}) == {TP0: UnknownMemberIdError.code}
    h.join(leader)  # PreparingRebalance: the previous generation may still commit
    assert h.commit(follower, 1, {TP0: 7}) == {TP0: NONE}
    h.join(follower)  # CompletingRebalance, generation 2
    assert h.group().state is GroupState.COMPLETING_REBALANCE
    assert h.commit(follower, 2, {TP0: 8}) == {TP0: RebalanceInProgressError.code}
    assert h.fetch([TP0]) == {TP0: 7}


def test_commit_after_group_is_empty(h: Harness) -> None:
    leader, = h.stable_group(1)
    h.leave(LeaveMember(leader))
    assert h.group().state is GroupState.EMPTY
    assert h.commit("", -1, {TP0: 3}) == {TP0: NONE}
    assert h.commit(leader, 1, {TP0: 4}) == {TP0: UnknownMemberIdError.code}


def test_metadata_too_large(h: Harness) -> None:
    h2 = Harness(offset_metadata_max_bytes=4)
    try:
        assert h2.commit("", -1, {TP0: 1}, metadata="12345") == {TP0: OffsetMetadataTooLargeError.code}
        assert h2.commit("", -1, {TP0: 1}, metadata="1234") == {TP0: NONE}
    finally:
        h2.close()


def test_list_and_describe_groups(h: Harness) -> None:
    leader, = h.stable_group(1)
    h.commit("", -1, {TP0: 1}, group_id="manual")
    error, groups = h.coordinator.handle_list_groups()
    assert error == NONE and sorted(groups) == [("group", "consumer", "Stable"), ("manual", "", "Empty")]
    assert h.coordinator.handle_list_groups(["stable"])[1] == [("group", "consumer", "Stable")]
    assert h.coordinator.handle_list_groups(["Dead"])[1] == []
    error, summary = h.coordinator.handle_describe_group(GROUP)
    assert (summary.state, summary.protocol_type, summary.protocol) == ("Stable", "consumer", "range")
    [m] = summary.members
    assert (m.member_id, m.client_id, m.client_host) == (leader, "client", "/127.0.0.1")
    assert m.assignment == leader.encode() and m.metadata == subscription("t")
    assert h.coordinator.handle_describe_group("nobody")[1].state == "Dead"
    h.join(leader, protocols=[("range", subscription("t", "u"))])  # rebalancing: no metadata shown
    h.advance(0)
    _, summary = h.coordinator.handle_describe_group(GROUP)
    assert summary.state == "CompletingRebalance" and summary.protocol == "" and summary.members[0].assignment == b""


def test_delete_groups(h: Harness) -> None:
    h.stable_group(1)
    h.commit("", -1, {TP0: 1}, group_id="empty")
    out = h.coordinator.handle_delete_groups([GROUP, "empty", "nobody"])
    assert out == {GROUP: GroupNotEmptyError.code, "empty": NONE, "nobody": GroupIdNotFoundError.code}
    assert h.coordinator.get_group("empty") is None
    assert h.fetch([TP0], group_id="empty") == {TP0: -1}


def test_offset_delete(h: Harness) -> None:
    leader, = h.stable_group(1)  # subscribed to "t"
    assert h.commit(leader, 1, {TP0: 1, OTHER: 2}) == {TP0: NONE, OTHER: NONE}
    error, out = h.coordinator.handle_delete_offsets(GROUP, [TP0, OTHER])
    assert error == NONE and out == {TP0: GroupSubscribedToTopicError.code, OTHER: NONE}
    assert h.fetch([TP0, OTHER]) == {TP0: 1, OTHER: -1}
    assert h.coordinator.handle_delete_offsets("nobody", [TP0]) == (GroupIdNotFoundError.code, {})
    h.commit("", -1, {TP0: 1}, group_id="manual")
    assert h.coordinator.handle_delete_offsets("manual", [TP0]) == (NONE, {TP0: NONE})
    assert h.coordinator.get_group("manual") is None  # empty and offset-less: gone


def test_offset_delete_non_consumer_group_with_members(h: Harness) -> None:
    box = h.join(protocol_type="connect", protocols=[("default", b"x")])
    h.finish_initial_join()
    assert box.value.error_code == NONE
    assert h.coordinator.handle_delete_offsets(GROUP, [TP0]) == (GroupNotEmptyError.code, {})


def test_offsets_expire_after_retention_when_empty(h: Harness) -> None:
    h2 = Harness(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000)
    try:
        h2.commit("", -1, {TP0: 1})
        h2.advance(50_000)
        assert h2.fetch([TP0]) == {TP0: 1}
        h2.advance(10_000)
        assert h2.fetch([TP0]) == {TP0: -1}
        assert h2.coordinator.get_group(GROUP) is None
    finally:
        h2.close()


def test_offsets_of_stable_group_do_not_expire(h: Harness) -> None:
    h2 = Harness(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000)
    try:
        leader, = h2.stable_group(1, session_ms=600_000)
        h2.commit(leader, 1, {TP0: 1})
        h2.advance(100_000)
        assert h2.fetch([TP0]) == {TP0: 1}
    finally:
        h2.close()
