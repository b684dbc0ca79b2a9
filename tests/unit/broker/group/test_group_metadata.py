"""GroupMetadata: protocol selection, member bookkeeping (the state table: test_group_state.py)."""

from __future__ import annotations

import pytest

from mini_broker.group.group_metadata import GroupMetadata, parse_consumer_subscription
from mini_broker.group.group_state import GroupState
from mini_broker.group.member_metadata import MemberMetadata
from pykafka_client.errors import IllegalStateError
from tests.unit.broker.group.harness import subscription

S = GroupState


def group_in(state: GroupState) -> GroupMetadata:
    return GroupMetadata("g", state, 0)


def member(member_id: str, protocols: list[tuple[str, bytes]], instance: str | None = None) -> MemberMetadata:
    return MemberMetadata(member_id, instance, "c", "/h", 60000, 10000, "consumer", protocols)


def test_select_protocol_most_votes_among_common() -> None:
    g = group_in(S.PREPARING_REBALANCE)
    g.add(member("a", [("range", b""), ("roundrobin", b"")]))
    g.add(member("b", [("roundrobin", b""), ("range", b"")]))
    g.add(member("c", [("roundrobin", b""), ("sticky", b"")]))
    # range is not supported by c: only roundrobin is a candidate.
    assert g.candidate_protocols() == {"roundrobin"}
    assert g.select_protocol() == "roundrobin"
    g.remove("c")
    g.add(member("d", [("range", b""), ("roundrobin", b"")]))
    assert g.select_protocol() == "range"  # a and d vote range, b roundrobin


def test_supports_protocols() -> None:
    g = group_in(S.EMPTY)
    assert not g.supports_protocols("", {"range"})
    assert not g.supports_protocols("consumer", set())
    assert g.supports_protocols("consumer", {"range"})
    g.transition_to(S.PREPARING_REBALANCE, 0)
    g.add(member("a", [("range", b"")]))
    assert g.supports_protocols("consumer", {"range", "x"})
    assert not g.supports_protocols("consumer", {"x"})
    assert not g.supports_protocols("connect", {"range"})


def test_add_remove_leader_and_counts() -> None:
    g = group_in(S.PREPARING_REBALANCE)
    a = member("a", [("range", b"")])
    g.add(a, callback=lambda r: None)
    g.add(member("b", [("range", b"")], instance="i-b"))
    assert g.leader_id == "a"
    assert g.num_members_awaiting_join == 1
    assert g.static_members == {"i-b": "b"}
    assert not g.has_all_members_joined()
    g.remove("a")
    assert g.leader_id == "b" and g.num_members_awaiting_join == 0
    g.remove("b")
    assert g.leader_id is None and g.static_members == {} and not g.supported_protocols


def test_pending_member_blocks_all_joined() -> None:
    g = group_in(S.PREPARING_REBALANCE)
    g.add(member("a", [("range", b"")]), callback=lambda r: None)
    assert g.has_all_members_joined()
    g.add_pending_member("p")
    assert not g.has_all_members_joined()


def test_init_next_generation() -> None:
    g = group_in(S.PREPARING_REBALANCE)
    g.add(member("a", [("range", subscription("t1", "t2"))]))
    g.init_next_generation(1)
    assert (g.generation_id, g.protocol_name, g.state) == (1, "range", S.COMPLETING_REBALANCE)
    assert g.subscribed_topics == {"t1", "t2"}
    g.transition_to(S.PREPARING_REBALANCE, 2)
    g.remove("a")
    g.init_next_generation(3)
    assert (g.generation_id, g.protocol_name, g.state) == (2, None, S.EMPTY)


def test_cannot_add_pending_sync_member_not_in_group() -> None:
    g = group_in(S.PREPARING_REBALANCE)
    with pytest.raises(IllegalStateError):
        g.add_pending_sync_member("nobody")


def test_new_generation_clears_pending_sync_members() -> None:
    g = group_in(S.PREPARING_REBALANCE)
    g.add(member("a", [("range", b"")]))
    g.add_pending_sync_member("a")
    g.init_next_generation(0)
    assert g.has_received_sync_from_all_members()


def test_parse_consumer_subscription() -> None:
    assert parse_consumer_subscription(subscription("x", "y")) == {"x", "y"}
    assert parse_consumer_subscription(b"\x00") is None
    assert parse_consumer_subscription(b"\x00\x00\x7f\xff\xff\xff") is None  # lying array length
