"""Sticky assignors (Java: AbstractStickyAssignor, StickyAssignor, CooperativeStickyAssignor).

Goals, in order: (1) balance: when every member has the same subscription, partition counts differ by
at most one; otherwise no partition can move to an eligible member that has two or more fewer
partitions; (2) stickiness: partitions a member owned in the latest generation stay with it as far
as balance allows.

Ownership claims: a member's owned partitions come from its assignor user data (``sticky``, eager)
or from the subscription's ``owned_partitions`` and ``generation_id`` (``cooperative-sticky``). When
several members claim a partition, the claim of the highest generation wins; equal-generation
conflicting claims are all discarded (the partition is treated as unowned).

Cooperative (KIP-429): a partition moving from one member to another is *left out* of the new owner's
assignment in this rebalance; the old owner sees it missing, revokes it and rejoins, and the next
rebalance gives it to the new owner. So a transfer takes two rebalances and never overlaps.

The algorithm is this project's own (greedy fill, then moves that strictly reduce imbalance); it is
deterministic and meets the same balance and stickiness properties as Java's, but on unusual
inputs the exact partition choice may differ from Java's.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pykafka_client.consumer.assignors.abstract_assignor import (
    AbstractPartitionAssignor,
    Assignment,
    RebalanceProtocol,
    Subscription,
    partitions_of,
    sorted_members,
)
from pykafka_client.structs import TopicPartition

DEFAULT_GENERATION = -1


@dataclass(frozen=True, slots=True)
class MemberData:
    """A member's ownership claim: partitions and the generation they were owned in."""

    partitions: list[TopicPartition]
    generation: int | None


class AbstractStickyAssignor(AbstractPartitionAssignor):
    """Common sticky algorithm; subclasses say where ownership claims come from."""

    def __init__(self) -> None:
        #: after ``assign_partitions``: partition -> member it moves to from another owner
        self.partitions_transferring_ownership: dict[TopicPartition, str] = {}

    def member_data(self, subscription: Subscription) -> MemberData:
        raise NotImplementedError

    def assign_partitions(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        members = sorted_members(subscriptions)
        order = {m: i for i, m in enumerate(members)}
        subscribed = {m: {t for t in subscriptions[m].topics if partitions_per_topic.get(t, 0) > 0} for m in members}
        topics = sorted({t for ts in subscribed.values() for t in ts})
        all_partitions = [tp for t in topics for tp in partitions_of(t, partitions_per_topic[t])]

        # Resolve ownership claims: highest generation wins; equal-generation conflicts void the claim.
        claims: dict[TopicPartition, tuple[int, list[str]]] = {}
        for m in members:
            data = self.member_data(subscriptions[m])
            gen = DEFAULT_GENERATION if data.generation is None else data.generation
            for tp in dict.fromkeys(data.partitions):
                if tp.topic not in subscribed[m] or not 0 <= tp.partition < partitions_per_topic[tp.topic]:
                    continue
                current = claims.get(tp)
                if current is None or gen > current[0]:
                    claims[tp] = (gen, [m])
                elif gen == current[0]:
                    current[1].append(m)
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in members}
        for tp in all_partitions:
            claim = claims.get(tp)
            if claim is not None and len(claim[1]) == 1:
                assignment[claim[1][0]].append(tp)

        if len({frozenset(s) for s in subscribed.values()}) <= 1:
            self._constrained_assign(members, all_partitions, assignment)
        else:
            self._general_assign(members, order, subscribed, all_partitions, assignment)

        self.partitions_transferring_ownership = self._transferring(subscriptions, assignment)
        return {m: sorted(ps) for m, ps in assignment.items()}

    @staticmethod
    def _constrained_assign(
        members: list[str], all_partitions: list[TopicPartition], assignment: dict[str, list[TopicPartition]]
    ) -> None:
        if not members:
            return
        n, c = len(all_partitions), len(members)
        min_quota, extra = divmod(n, c)
        max_quota = min_quota + (1 if extra else 0)
        slots_over_min = extra
        kept: set[TopicPartition] = set()
        # members owning the most keep the larger quota first (fewest moves)
        for m in sorted(members, key=lambda x: -len(assignment[x])):
            owned = sorted(assignment[m])
            if len(owned) >= max_quota and max_quota > min_quota and slots_over_min > 0:
                keep = owned[:max_quota]
                slots_over_min -= 1
            else:
                keep = owned[:min_quota]
            assignment[m] = keep
            kept.update(keep)
        unassigned = [tp for tp in all_partitions if tp not in kept]
        pos = 0
        for m in members:
            need = min_quota - len(assignment[m])
            if need > 0:
                assignment[m].extend(unassigned[pos : pos + need])
                pos += need
        for m in members:
            if pos >= len(unassigned) or slots_over_min <= 0:
                break
            if len(assignment[m]) == min_quota:
                assignment[m].append(unassigned[pos])
                pos += 1
                slots_over_min -= 1

    @staticmethod
    def _general_assign(
        members: list[str],
        order: dict[str, int],
        subscribed: dict[str, set[str]],
        all_partitions: list[TopicPartition],
        assignment: dict[str, list[TopicPartition]],
    ) -> None:
        eligible = {t: [m for m in members if t in subscribed[m]] for t in {tp.topic for tp in all_partitions}}
        owner: dict[TopicPartition, str] = {tp: m for m, ps in assignment.items() for tp in ps}
        sticky = set(owner)
        counts = {m: len(ps) for m, ps in assignment.items()}

        def least_loaded(tp: TopicPartition) -> str:
            return min(eligible[tp.topic], key=lambda m: (counts[m], order[m]))

        # Most constrained partitions first.
        for tp in sorted(
            (tp for tp in all_partitions if tp not in owner), key=lambda tp: (len(eligible[tp.topic]), tp)
        ):
            m = least_loaded(tp)
            owner[tp] = m
            counts[m] += 1
        # Move partitions while a move strictly reduces imbalance; prefer moving non-sticky ones.
        candidates = sorted(all_partitions, key=lambda tp: (tp in sticky, len(eligible[tp.topic]), tp))
        moved = True
        while moved:
            moved = False
            for tp in candidates:
                current = owner[tp]
                target = least_loaded(tp)
                if counts[target] < counts[current] - 1:
                    owner[tp] = target
                    counts[current] -= 1
                    counts[target] += 1
                    moved = True
        for m in members:
            assignment[m] = []
        for tp in all_partitions:
            assignment[owner[tp]].append(tp)

    def _transferring(
        self, subscriptions: Mapping[str, Subscription], assignment: Mapping[str, list[TopicPartition]]
    ) -> dict[TopicPartition, str]:
        """Partitions newly given to a member while some other member still claims them."""
        added: dict[TopicPartition, str] = {}
        revoked: set[TopicPartition] = set()
        for m, assigned in assignment.items():
            owned = set(self.member_data(subscriptions[m]).partitions)
            assigned_set = set(assigned)
            for tp in assigned:
                if tp not in owned:
                    added[tp] = m
            revoked.update(owned - assigned_set)
        return {tp: m for tp, m in added.items() if tp in revoked}


# -- StickyAssignor user data: [topic: string, partitions: [int32]] + generation: int32 (v1) -------


def encode_sticky_user_data(partitions: Sequence[TopicPartition], generation: int | None) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = bytearray(struct.pack(">i", len(by_topic)))
    for topic, parts in by_topic.items():
        name = topic.encode()
        out += struct.pack(">h", len(name)) + name + struct.pack(">i", len(parts))
        out += struct.pack(f">{len(parts)}i", *parts)
    out += struct.pack(">i", DEFAULT_GENERATION if generation is None else generation)
    return bytes(out)


def decode_sticky_user_data(data: bytes) -> MemberData:
    """Decode v1 (or v0, without generation). Malformed data is an empty claim (it only costs
    stickiness, never correctness)."""
    try:
        pos = 0
        (n_topics,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n_topics < 0 or n_topics > len(data):
            return MemberData([], None)
        partitions: list[TopicPartition] = []
        for _ in range(n_topics):
            (name_len,) = struct.unpack_from(">h", data, pos)
            pos += 2
            if name_len < 0 or pos + name_len > len(data):
                return MemberData([], None)
            topic = bytes(data[pos : pos + name_len]).decode()
            pos += name_len
            (n_parts,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if n_parts < 0 or pos + 4 * n_parts > len(data):
                return MemberData([], None)
            partitions.extend(TopicPartition(topic, p) for p in struct.unpack_from(f">{n_parts}i", data, pos))
            pos += 4 * n_parts
        generation = struct.unpack_from(">i", data, pos)[0] if pos + 4 <= len(data) else None
        return MemberData(partitions, generation)
    except (struct.error, UnicodeDecodeError):
        return MemberData([], None)


class StickyAssignor(AbstractStickyAssignor):
    """Eager sticky assignor: remembers its last assignment and sends it as user data."""

    def __init__(self) -> None:
        super().__init__()
        self._member_assignment: list[TopicPartition] | None = None
        self._generation: int = DEFAULT_GENERATION

    def name(self) -> str:
        return "sticky"

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._member_assignment = list(assignment.partitions)
        self._generation = generation_id

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        if self._member_assignment is None:
            return None
        return encode_sticky_user_data(self._member_assignment, self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        if not subscription.user_data:
            return MemberData([], None)
        return decode_sticky_user_data(subscription.user_data)


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """Cooperative sticky assignor (KIP-429): claims come from the subscription's owned partitions;
    transfers are split over two rebalances (see module docstring). User data holds the generation
    (int32) for brokers/members on consumer protocol versions below 2."""

    def __init__(self) -> None:
        super().__init__()
        self._generation = DEFAULT_GENERATION

    def name(self) -> str:
        return "cooperative-sticky"

    def supported_protocols(self) -> Sequence[RebalanceProtocol]:
        return (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._generation = generation_id

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        return struct.pack(">i", self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        generation: int | None = None
        if subscription.generation_id >= 0:
            generation = subscription.generation_id
        elif subscription.user_data is not None and len(subscription.user_data) >= 4:
            generation = struct.unpack_from(">i", subscription.user_data, 0)[0]
        return MemberData(list(subscription.owned_partitions), generation)

    def assign_partitions(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        assignment = super().assign_partitions(partitions_per_topic, subscriptions)
        for tp, member in self.partitions_transferring_ownership.items():
            assignment[member].remove(tp)
        return assignment
