"""The server-side assignors of KIP-848 (Kafka's ``UniformAssignor`` and server-side ``RangeAssignor``)."""

from __future__ import annotations

import uuid

from mini_broker.group.consumer.assignors import MemberSubscription, range_assign, uniform_assign
from mini_broker.group.consumer.model import TopicInfo, iter_partitions

A = TopicInfo(uuid.UUID(int=1), "a", 6)
B = TopicInfo(uuid.UUID(int=2), "b", 3)
TOPICS = {A.topic_id: A, B.topic_id: B}


def _members(*names: str, topics: frozenset[uuid.UUID] = frozenset({A.topic_id, B.topic_id})
             ) -> dict[str, MemberSubscription]:
    return {n: MemberSubscription(topics, {}) for n in names}


def _owners(result: dict[str, object]) -> dict[tuple[uuid.UUID, int], list[str]]:
    owners: dict[tuple[uuid.UUID, int], list[str]] = {}
    for m, assignment in result.items():
        for tp in iter_partitions(assignment):  # type: ignore[arg-type]
            owners.setdefault(tp, []).append(m)
    return owners


def test_uniform_gives_every_partition_to_one_member_balanced() -> None:
    """UniformAssignor, homogeneous subscriptions: every partition once, counts differ by at most one."""
    result = uniform_assign(_members("m1", "m2", "m3", "m4"), TOPICS)
    owners = _owners(result)  # type: ignore[arg-type]
    assert len(owners) == 9 and all(len(v) == 1 for v in owners.values())
    counts = sorted(sum(len(ps) for ps in a.values()) for a in result.values())
    assert counts[-1] - counts[0] <= 1


def test_uniform_is_sticky_when_a_member_joins() -> None:
    """UniformAssignor keeps a member's partitions when the balance allows: a third member takes partitions
    from the others, nobody else's partitions move between the two old members."""
    first = uniform_assign(_members("m1", "m2"), TOPICS)
    members = {m: MemberSubscription(frozenset(TOPICS), first[m]) for m in ("m1", "m2")}
    members["m3"] = MemberSubscription(frozenset(TOPICS), {})
    second = uniform_assign(members, TOPICS)
    for m in ("m1", "m2"):
        assert set(iter_partitions(second[m])) <= set(iter_partitions(first[m]))
    assert sorted(sum(len(ps) for ps in a.values()) for a in second.values()) == [3, 3, 3]


def test_uniform_heterogeneous_subscriptions_only_assigns_subscribed_topics() -> None:
    """A member only gets partitions of topics it subscribes to; b's 3 partitions all go to m2."""
    members = {"m1": MemberSubscription(frozenset({A.topic_id}), {}),
               "m2": MemberSubscription(frozenset({A.topic_id, B.topic_id}), {})}
    result = uniform_assign(members, TOPICS)
    assert B.topic_id not in result["m1"]
    assert result["m2"][B.topic_id] == frozenset({0, 1, 2})
    assert len(_owners(result)) == 9  # type: ignore[arg-type]


def test_range_assigns_contiguous_ranges_in_member_id_order() -> None:
    """RangeAssignor: per topic, member-id order, the first ``partitions % members`` members one more."""
    result = range_assign(_members("m2", "m1"), TOPICS)
    assert result["m1"] == {A.topic_id: frozenset({0, 1, 2}), B.topic_id: frozenset({0, 1})}
    assert result["m2"] == {A.topic_id: frozenset({3, 4, 5}), B.topic_id: frozenset({2})}
