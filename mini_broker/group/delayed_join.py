"""Delayed operations of a join round (Kafka: ``DelayedJoin``, ``InitialDelayedJoin``).

Both share the group's lock (an RLock), so the coordinator may re-check them while holding it.

* :class:`DelayedJoin` waits up to the group's rebalance timeout; it completes early as soon as every
  member has rejoined and no KIP-394 member is pending. Completion runs ``on_complete_join``.
* :class:`InitialDelayedJoin` is used when an Empty group starts its first rebalance: it never completes
  early. When its delay passes and a new member joined meanwhile (``group.new_member_added``), it re-arms
  itself for another ``group.initial.rebalance.delay.ms`` (capped by what remains of the rebalance
  timeout); otherwise it completes the join round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_broker.purgatory.delayed_operation import DelayedOperation
from mini_broker.purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from mini_broker.purgatory.keys import GroupJoinKey

if TYPE_CHECKING:
    from mini_broker.group.group_coordinator import GroupCoordinator
    from mini_broker.group.group_metadata import GroupMetadata


class DelayedJoin(DelayedOperation):
    """The join phase of a rebalance: all members rejoin, or the rebalance timeout passes."""

    def __init__(self, coordinator: GroupCoordinator, group: GroupMetadata, rebalance_timeout_ms: int) -> None:
        super().__init__(rebalance_timeout_ms, group.lock)
        self.coordinator = coordinator
        self.group = group

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_join(self.group, self.force_complete)

    def on_complete(self) -> None:
        self.coordinator.on_complete_join(self.group)


class InitialDelayedJoin(DelayedOperation):
    """The first rebalance of an Empty group, held back to let more members arrive."""

    def __init__(self, coordinator: GroupCoordinator, purgatory: DelayedOperationPurgatory[DelayedOperation],
                 group: GroupMetadata, configured_rebalance_delay_ms: int, delay_ms: int,
                 remaining_ms: int) -> None:
        super().__init__(delay_ms, group.lock)
        self.coordinator = coordinator
        self.purgatory = purgatory
        self.group = group
        self.configured_rebalance_delay_ms = configured_rebalance_delay_ms
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        group = self.group
        with group.lock:
            if group.new_member_added and self.remaining_ms != 0:
                group.new_member_added = False
                delay = min(self.configured_rebalance_delay_ms, self.remaining_ms)
                remaining = max(self.remaining_ms - delay, 0)
                self.purgatory.try_complete_else_watch(
                    InitialDelayedJoin(self.coordinator, self.purgatory, group, self.configured_rebalance_delay_ms,
                                       delay, remaining),
                    [GroupJoinKey(group.group_id)])
            else:
                self.coordinator.on_complete_join(group)
