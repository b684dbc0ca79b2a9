"""The ``uniform`` server assignor with racks (KIP-881 for the server-side assignors, as Kafka's UniformAssignor):
a partition goes to a member in one of its replicas' racks whenever the balance allows it; without racks nothing
changes."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from mini_broker.group.consumer.assignors import MemberSubscription, uniform_assign
from mini_broker.group.consumer.model import TopicInfo

T = uuid.UUID(int=1)


def _topic(*racks: str) -> dict[uuid.UUID, TopicInfo]:
    return {T: TopicInfo(T, "t", len(racks), tuple(frozenset(r.split("+")) for r in racks))}


def _member(rack: str | None, *current: int) -> MemberSubscription:
    return MemberSubscription(frozenset({T}), {T: frozenset(current)} if current else {}, rack)


def _partitions(out: Mapping[str, Mapping[uuid.UUID, frozenset[int]]]) -> dict[str, set[int]]:
    return {m: set(a.get(T, frozenset())) for m, a in out.items()}


def test_partitions_go_to_members_in_their_replicas_racks() -> None:
    topics = _topic("b", "a", "b", "a")
    assert _partitions(uniform_assign({"m1": _member("a"), "m2": _member("b")}, topics)) == {
        "m1": {1, 3}, "m2": {0, 2}}
    # the same without racks: member-id order, whatever the replicas' racks
    assert _partitions(uniform_assign({"m1": _member(None), "m2": _member(None)}, topics)) == {
        "m1": {0, 2}, "m2": {1, 3}}


def test_balance_wins_over_racks() -> None:
    """Every replica in rack a: both members still get two partitions."""
    out = _partitions(uniform_assign({"m1": _member("a"), "m2": _member("b")}, _topic("a", "a", "a", "a")))
    assert sorted(len(ps) for ps in out.values()) == [2, 2]


def test_a_partition_outside_its_racks_moves_to_a_member_in_them() -> None:
    """Stickiness yields to racks: m1 (rack a) held partition 0 whose replicas are in rack b, where m2 is."""
    out = _partitions(uniform_assign({"m1": _member("a", 0, 1), "m2": _member("b", 2, 3)},
                                     _topic("b", "a", "a", "b")))
    assert out == {"m1": {1, 2}, "m2": {0, 3}}


def test_a_member_keeps_a_partition_no_member_is_in_the_racks_of() -> None:
    out = _partitions(uniform_assign({"m1": _member("a", 0, 1), "m2": _member("b", 2, 3)},
                                     _topic("c", "c", "c", "c")))
    assert out == {"m1": {0, 1}, "m2": {2, 3}}
