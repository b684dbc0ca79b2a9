"""Moving one member towards its target assignment (Kafka's ``CurrentAssignmentBuilder``).

The rule is revoke before assign: a member first gives up (and acknowledges, by heartbeating without them)
the partitions its target no longer has; only then it reaches the target epoch and gets new partitions, and
among those only the ones no other member still owns (assigned to it or pending its revocation). The others
come on a later heartbeat, once their previous owner released them.

* STABLE / UNRELEASED_PARTITIONS with a newer target: partitions to revoke -> UNREVOKED_PARTITIONS (epoch
  unchanged, nothing new); else the target epoch, with the free new partitions: STABLE when it has the whole
  target, UNRELEASED_PARTITIONS otherwise.
* UNREVOKED_PARTITIONS: stays until a heartbeat's owned partitions no longer hold any pending revocation;
  then as above.
* UNRELEASED_PARTITIONS at the target epoch: picks up what was released meanwhile.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from mini_broker.group.consumer.model import (
    Assignment,
    ConsumerGroupMember,
    MemberState,
    intersect,
    is_subset,
    normalize,
    subtract,
    union,
)

#: (topic id, partition) -> the owning member's epoch, -1 when free
PartitionEpoch = Callable[[uuid.UUID, int], int]


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment, partition_epoch: PartitionEpoch,
              owned: Assignment | None) -> ConsumerGroupMember:
    """The member after this heartbeat; ``owned``: the partitions the heartbeat says the member owns (None when
    the request did not carry them)."""
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        acknowledged = owned is not None and not intersect(owned, member.partitions_pending_revocation)
        if not acknowledged:
            return member
        return _next_assignment(member, target_epoch, target, partition_epoch)
    if member.state is MemberState.UNRELEASED_PARTITIONS and member.member_epoch == target_epoch:
        return _next_assignment(member, target_epoch, target, partition_epoch)
    if member.member_epoch != target_epoch:
        return _next_assignment(member, target_epoch, target, partition_epoch)
    return member


def _next_assignment(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
                     partition_epoch: PartitionEpoch) -> ConsumerGroupMember:
    assigned = member.assigned_partitions
    kept = intersect(assigned, target)
    to_revoke = subtract(assigned, target)
    if to_revoke:
        return member.with_changes(state=MemberState.UNREVOKED_PARTITIONS, assigned_partitions=kept,
                                   partitions_pending_revocation=to_revoke)
    wanted = subtract(target, kept)
    free = normalize({t: {p for p in ps if partition_epoch(t, p) == -1} for t, ps in wanted.items()})
    new_assigned = union(kept, free)
    state = MemberState.STABLE if is_subset(target, new_assigned) else MemberState.UNRELEASED_PARTITIONS
    previous = member.member_epoch if member.member_epoch != target_epoch else member.previous_member_epoch
    return member.with_changes(state=state, member_epoch=target_epoch, previous_member_epoch=previous,
                               assigned_partitions=new_assigned, partitions_pending_revocation={})
