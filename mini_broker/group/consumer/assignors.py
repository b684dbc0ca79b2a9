"""The server-side assignors (KIP-848 ``group.consumer.assignors``; a member picks one with
``group.remote.assignor``): ``uniform`` and ``range``.

An assignor sees every member's subscribed topic ids and its current target partitions, and the subscribed
topics; it returns each member's new target. Both are deterministic (members ordered by id, topics by name).

* ``uniform`` (Kafka's ``UniformAssignor``): every partition of the subscribed topics to a subscribed member,
  partition counts as even as the subscriptions allow (two members subscribed to the same topics differ by at
  most one partition), and sticky: a member keeps what it had whenever the balance allows it.
  Rack-aware (KIP-881, as Kafka's uniform assignor): when members name racks and the partitions' replica racks
  are known, a partition goes to a member in one of its replicas' racks whenever that does not break the
  balance, a member keeps a current partition outside its rack only when no subscribed member is in one of the
  partition's racks, and the balancing moves prefer a taker in the partition's racks.
* ``range`` (Kafka's server-side ``RangeAssignor``): per topic, the subscribed members in member-id order get
  contiguous ranges, the first ``partitions % members`` one partition more (co-partitioned topics line up).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mini_broker.group.consumer.config import RANGE_ASSIGNOR, UNIFORM_ASSIGNOR
from mini_broker.group.consumer.model import Assignment, TopicInfo, normalize

TopicPartition = tuple[uuid.UUID, int]


@dataclass(frozen=True)
class MemberSubscription:
    """What an assignor knows of a member: its subscribed topic ids and its current target assignment."""

    subscribed_topic_ids: frozenset[uuid.UUID]
    current: Assignment
    #: the member's rack (ConsumerGroupHeartbeat RackId), None when it names none
    rack_id: str | None = None


Assignor = Callable[[Mapping[str, MemberSubscription], Mapping[uuid.UUID, TopicInfo]], dict[str, Assignment]]


def _sorted_topics(topics: Mapping[uuid.UUID, TopicInfo]) -> list[TopicInfo]:
    return sorted(topics.values(), key=lambda t: t.name)


def _to_assignments(owned: Mapping[str, set[TopicPartition]]) -> dict[str, Assignment]:
    out: dict[str, Assignment] = {}
    for member_id, tps in owned.items():
        by_topic: dict[uuid.UUID, set[int]] = {}
        for topic_id, p in tps:
            by_topic.setdefault(topic_id, set()).add(p)
        out[member_id] = normalize(by_topic)
    return out


def uniform_assign(members: Mapping[str, MemberSubscription],
                   topics: Mapping[uuid.UUID, TopicInfo]) -> dict[str, Assignment]:
    """Sticky, balanced, rack-aware when racks are known: keep current partitions (see the module docstring),
    give the free ones to the least loaded subscribed member (in the partition's racks when one is below its
    quota), then move partitions from the most to the least loaded subscribed member until no move narrows the
    gap."""
    member_ids = sorted(members)
    owned: dict[str, set[TopicPartition]] = {m: set() for m in member_ids}
    order = {tp: i for i, tp in enumerate((t.topic_id, p) for t in _sorted_topics(topics)
                                            for p in range(t.num_partitions))}
    eligible: dict[uuid.UUID, list[str]] = {
        t: [m for m in member_ids if t in members[m].subscribed_topic_ids] for t in topics}
    rack_aware = any(members[m].rack_id for m in member_ids) and any(t.partition_racks for t in topics.values())

    def in_rack(m: str, tp: TopicPartition) -> bool:
        return rack_aware and members[m].rack_id is not None and members[m].rack_id in topics[tp[0]].racks_of(tp[1])

    def has_rack_match(tp: TopicPartition) -> bool:
        return any(in_rack(m, tp) for m in eligible[tp[0]])

    subscribers = [m for m in member_ids if members[m].subscribed_topic_ids & topics.keys()]
    quota = -(-len(order) // len(subscribers)) if subscribers else 0
    owner: dict[TopicPartition, str] = {}
    for m in member_ids:  # stickiness: what is still valid stays
        for topic_id, partitions in members[m].current.items():
            if topic_id not in topics or topic_id not in members[m].subscribed_topic_ids:
                continue
            for p in partitions:
                tp = (topic_id, p)
                if tp in order and tp not in owner and (in_rack(m, tp) or not has_rack_match(tp)):
                    owner[tp] = m
                    owned[m].add(tp)
    for tp in sorted(order, key=order.__getitem__):
        if tp in owner or not eligible[tp[0]]:
            continue
        m = min(eligible[tp[0]], key=lambda c: (len(owned[c]), c))
        matching = [c for c in eligible[tp[0]] if in_rack(c, tp)]
        if matching:
            best = min(matching, key=lambda c: (len(owned[c]), c))
            if len(owned[best]) < quota or len(owned[best]) <= len(owned[m]):
                m = best
        owner[tp] = m
        owned[m].add(tp)
    moved = True
    while moved:  # each move narrows a gap of two or more: this ends
        moved = False
        for giver in sorted(member_ids, key=lambda c: (-len(owned[c]), c)):
            # partitions outside the giver's racks move first
            for tp in sorted(owned[giver], key=lambda t: (in_rack(giver, t), -order[t])):
                taker = min(eligible[tp[0]], key=lambda c: (len(owned[c]), not in_rack(c, tp), c))
                if len(owned[giver]) - len(owned[taker]) > 1:
                    owned[giver].discard(tp)
                    owned[taker].add(tp)
                    moved = True
                    break
            if moved:
                break
    return _to_assignments(owned)


def range_assign(members: Mapping[str, MemberSubscription],
                 topics: Mapping[uuid.UUID, TopicInfo]) -> dict[str, Assignment]:
    """Per topic, contiguous ranges to the subscribed members in member-id order."""
    owned: dict[str, set[TopicPartition]] = {m: set() for m in members}
    for topic in _sorted_topics(topics):
        subscribed = sorted(m for m, s in members.items() if topic.topic_id in s.subscribed_topic_ids)
        if not subscribed:
            continue
        quota, extra = divmod(topic.num_partitions, len(subscribed))
        start = 0
        for i, m in enumerate(subscribed):
            count = quota + (1 if i < extra else 0)
            owned[m].update((topic.topic_id, p) for p in range(start, start + count))
            start += count
    return _to_assignments(owned)


ASSIGNORS: Mapping[str, Assignor] = {UNIFORM_ASSIGNOR: uniform_assign, RANGE_ASSIGNOR: range_assign}
