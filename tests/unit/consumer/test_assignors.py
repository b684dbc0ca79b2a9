from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.consumer.assignors import (
    Assignment,
    ConsumerPartitionAssignor,
    CooperativeStickyAssignor,
    GroupSubscription,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    get_assignor_instances,
    rebalance_protocol,
)
from pykafka_client.consumer.assignors.sticky import decode_sticky_user_data, encode_sticky_user_data
from pykafka_client.errors import ConfigurationError
from pykafka_client.structs import TopicPartition

pytestmark = pytest.mark.timeout(60)


def tp(topic: str, p: int) -> TopicPartition:
    return TopicPartition(topic, p)


def run(
    assignor: ConsumerPartitionAssignor, partitions: Mapping[str, int], subs: dict[str, Subscription]
) -> dict[str, list[TopicPartition]]:
    result = assignor.assign(partitions, GroupSubscription(subs)).assignments
    return {m: a.partitions for m, a in result.items()}


# -- range --------------------------------------------------------------------------------------


def test_range_two_consumers_two_topics() -> None:
    subs = {"c0": Subscription(["t0", "t1"]), "c1": Subscription(["t0", "t1"])}
    out = run(RangeAssignor(), {"t0": 3, "t1": 3}, subs)
    assert out == {"c0": [tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)], "c1": [tp("t0", 2), tp("t1", 2)]}


def test_range_only_subscribers_get_a_topic_and_missing_topics_are_skipped() -> None:
    subs = {"c0": Subscription(["t0"]), "c1": Subscription(["t0", "t1", "nope"])}
    out = run(RangeAssignor(), {"t0": 2, "t1": 1}, subs)
    assert out == {"c0": [tp("t0", 0)], "c1": [tp("t0", 1), tp("t1", 0)]}


def test_range_more_consumers_than_partitions() -> None:
    subs = {f"c{i}": Subscription(["t"]) for i in range(3)}
    assert run(RangeAssignor(), {"t": 2}, subs) == {"c0": [tp("t", 0)], "c1": [tp("t", 1)], "c2": []}


def test_static_members_sort_first_by_instance_id() -> None:
    subs = {
        "a": Subscription(["t"]),
        "b": Subscription(["t"], group_instance_id="z"),
        "c": Subscription(["t"], group_instance_id="y"),
    }
    out = run(RangeAssignor(), {"t": 3}, subs)
    assert out == {"c": [tp("t", 0)], "b": [tp("t", 1)], "a": [tp("t", 2)]}


# -- roundrobin ---------------------------------------------------------------------------------


def test_roundrobin_two_consumers_two_topics() -> None:
    subs = {"c0": Subscription(["t0", "t1"]), "c1": Subscription(["t0", "t1"])}
    out = run(RoundRobinAssignor(), {"t0": 3, "t1": 3}, subs)
    assert out == {"c0": [tp("t0", 0), tp("t0", 2), tp("t1", 1)], "c1": [tp("t0", 1), tp("t1", 0), tp("t1", 2)]}


def test_roundrobin_skips_unsubscribed_members() -> None:
    subs = {"c0": Subscription(["t0"]), "c1": Subscription(["t0", "t1"]), "c2": Subscription(["t0", "t1", "t2"])}
    out = run(RoundRobinAssignor(), {"t0": 1, "t1": 2, "t2": 3}, subs)
    # Java RoundRobinAssignorTest.testMultipleConsumersMixedTopicSubscriptions
    assert out == {"c0": [tp("t0", 0)], "c1": [tp("t1", 0)], "c2": [tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)]}


def test_no_members_no_partitions() -> None:
    for a in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor(), CooperativeStickyAssignor()):
        assert run(a, {"t": 3}, {}) == {}
        assert run(a, {}, {"c": Subscription(["t"])}) == {"c": []}


# -- sticky -------------------------------------------------------------------------------------


def _sticky_round(
    assignor_factory: type[StickyAssignor] | type[CooperativeStickyAssignor],
    partitions: Mapping[str, int],
    topics: dict[str, list[str]],
    previous: dict[str, list[TopicPartition]],
    generation: int,
) -> dict[str, list[TopicPartition]]:
    subs = {}
    for m, ts in topics.items():
        owned = previous.get(m, [])
        if assignor_factory is StickyAssignor:
            subs[m] = Subscription(ts, user_data=encode_sticky_user_data(owned, generation) if owned else None)
        else:
            subs[m] = Subscription(ts, owned_partitions=owned, generation_id=generation if owned else -1)
    return run(assignor_factory(), partitions, subs)


def test_sticky_javadoc_example_member_leaves() -> None:
    parts = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
    all_topics = list(parts)
    first = _sticky_round(StickyAssignor, parts, {m: all_topics for m in ("c0", "c1", "c2")}, {}, 1)
    assert sorted(len(v) for v in first.values()) == [2, 3, 3]
    second = _sticky_round(StickyAssignor, parts, {m: all_topics for m in ("c0", "c2")}, first, 1)
    assert len(second["c0"]) == len(second["c2"]) == 4
    assert set(first["c0"]) <= set(second["c0"])
    assert set(first["c2"]) <= set(second["c2"])


def test_sticky_same_members_same_assignment() -> None:
    parts = {"t0": 5, "t1": 3}
    topics = {"a": ["t0", "t1"], "b": ["t0"], "c": ["t0", "t1"]}
    first = _sticky_round(StickyAssignor, parts, topics, {}, 1)
    again = _sticky_round(StickyAssignor, parts, topics, first, 1)
    assert again == first


def test_sticky_newer_generation_wins_conflicting_claims() -> None:
    subs = {
        "a": Subscription(["t"], user_data=encode_sticky_user_data([tp("t", 0), tp("t", 1)], 3)),
        "b": Subscription(["t"], user_data=encode_sticky_user_data([tp("t", 0)], 2)),
    }
    out = run(StickyAssignor(), {"t": 2}, subs)
    assert out["a"] == [tp("t", 0)] or out["a"] == [tp("t", 1)]
    # a keeps one of its own (newest claim), b gets the other; nothing is double-assigned
    assert sorted(out["a"] + out["b"]) == [tp("t", 0), tp("t", 1)]


def test_sticky_user_data_roundtrip_and_garbage() -> None:
    data = encode_sticky_user_data([tp("t", 1), tp("u", 0), tp("t", 3)], 7)
    md = decode_sticky_user_data(data)
    assert sorted(md.partitions) == [tp("t", 1), tp("t", 3), tp("u", 0)]
    assert md.generation == 7
    assert decode_sticky_user_data(data[:-4]).generation is None  # v0: no generation
    for bad in (b"", b"\x7f\xff\xff\xff", b"\x00\x00\x00\x01\x7f\xff", data[:9]):
        assert decode_sticky_user_data(bad).partitions == []


def test_sticky_assignor_remembers_its_assignment() -> None:
    a = StickyAssignor()
    assert a.subscription_user_data({"t"}) is None
    a.on_assignment(Assignment([tp("t", 2)]), 5)
    ud = a.subscription_user_data({"t"})
    assert ud is not None
    md = decode_sticky_user_data(ud)
    assert (md.partitions, md.generation) == ([tp("t", 2)], 5)


# -- cooperative-sticky -------------------------------------------------------------------------


def test_cooperative_transfer_takes_two_rebalances() -> None:
    parts = {"t": 4}
    owned = {"c0": [tp("t", p) for p in range(4)]}
    topics = {"c0": ["t"], "c1": ["t"]}
    first = _sticky_round(CooperativeStickyAssignor, parts, topics, owned, 1)
    # c0 keeps two, the two moving to c1 are withheld until c0 has revoked them
    assert len(first["c0"]) == 2 and set(first["c0"]) < set(owned["c0"])
    assert first["c1"] == []
    second = _sticky_round(CooperativeStickyAssignor, parts, topics, first, 2)
    assert second["c0"] == first["c0"]
    assert sorted(second["c1"]) == sorted(set(owned["c0"]) - set(first["c0"]))


def test_cooperative_new_partitions_go_straight_to_new_member() -> None:
    topics = {"c0": ["t"], "c1": ["t"]}
    out = _sticky_round(CooperativeStickyAssignor, {"t": 4}, topics, {"c0": [tp("t", 0), tp("t", 1)]}, 1)
    assert out == {"c0": [tp("t", 0), tp("t", 1)], "c1": [tp("t", 2), tp("t", 3)]}


def test_cooperative_generation_from_user_data_for_old_protocol() -> None:
    a = CooperativeStickyAssignor()
    a.on_assignment(Assignment([]), 9)
    ud = a.subscription_user_data({"t"})
    md = a.member_data(Subscription(["t"], user_data=ud, owned_partitions=[tp("t", 0)]))
    assert md.generation == 9
    md2 = a.member_data(Subscription(["t"], user_data=ud, owned_partitions=[], generation_id=4))
    assert md2.generation == 4


# -- properties ---------------------------------------------------------------------------------

ASSIGNORS = [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, list[str]]]:
    n_topics = draw(st.integers(1, 4))
    parts = {f"t{i}": draw(st.integers(1, 6)) for i in range(n_topics)}
    n_members = draw(st.integers(1, 5))
    topics = {
        f"m{j}": draw(st.lists(st.sampled_from(sorted(parts)), min_size=1, max_size=n_topics, unique=True))
        for j in range(n_members)
    }
    return parts, topics


@pytest.mark.parametrize("cls", ASSIGNORS)
@settings(max_examples=60, deadline=None)
@given(sc=scenarios())
def test_every_partition_assigned_once_to_a_subscriber(
    cls: type[ConsumerPartitionAssignor], sc: tuple[dict[str, int], dict[str, list[str]]]
) -> None:
    parts, topics = sc
    out = run(cls(), parts, {m: Subscription(ts) for m, ts in topics.items()})
    assigned = [p for ps in out.values() for p in ps]
    subscribed_topics = {t for ts in topics.values() for t in ts}
    expected = {tp(t, p) for t in subscribed_topics for p in range(parts[t])}
    assert sorted(assigned) == sorted(expected)
    for m, ps in out.items():
        assert all(p.topic in topics[m] for p in ps)


@pytest.mark.parametrize("cls", [StickyAssignor, CooperativeStickyAssignor])
@settings(max_examples=60, deadline=None)
@given(sc=scenarios(), data=st.data())
def test_sticky_balanced_and_sticky(
    cls: type[StickyAssignor] | type[CooperativeStickyAssignor],
    sc: tuple[dict[str, int], dict[str, list[str]]],
    data: st.DataObject,
) -> None:
    parts, topics = sc
    first = _sticky_round(cls, parts, topics, {}, 1)
    counts = {m: len(ps) for m, ps in first.items()}
    for m, ps in first.items():
        for p in ps:  # no move could make it more balanced
            assert all(counts[o] >= counts[m] - 1 for o in topics if p.topic in topics[o])
    if len({frozenset(t) for t in topics.values()}) == 1:
        assert max(counts.values()) - min(counts.values()) <= 1
    # one member leaves: everyone else keeps what it had
    leaver = data.draw(st.sampled_from(sorted(topics)))
    remaining = {m: ts for m, ts in topics.items() if m != leaver}
    if not remaining:
        return
    second = _sticky_round(cls, parts, remaining, first, 1)
    if len({frozenset(t) for t in topics.values()}) == 1:
        for m in remaining:
            assert set(first[m]) <= set(second[m])


def test_assignor_lookup_and_protocol() -> None:
    assignors = get_assignor_instances(["range", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"])
    assert [a.name() for a in assignors] == ["range", "cooperative-sticky"]
    assert rebalance_protocol(assignors) is RebalanceProtocol.EAGER
    assert rebalance_protocol(get_assignor_instances(["cooperative-sticky"])) is RebalanceProtocol.COOPERATIVE
    with pytest.raises(ConfigurationError, match=r"partition\.assignment\.strategy"):
        get_assignor_instances(["fancy"])
    with pytest.raises(ConfigurationError):
        get_assignor_instances(["range", "range"])
    custom = RoundRobinAssignor()
    assert get_assignor_instances([custom, StickyAssignor])[0] is custom
