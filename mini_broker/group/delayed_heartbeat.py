"""A member's session deadline (Kafka: ``DelayedHeartbeat``).

Watched under ``MemberKey(group, member)``; shares the group's lock. It completes (without effect) when
the member's heartbeat is satisfied or the member is gone; when its delay passes first, the coordinator
removes the member (``on_expire_heartbeat``). ``is_pending`` marks the deadline of a KIP-394 pending
member, which completes once that member has joined.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_broker.purgatory.delayed_operation import DelayedOperation

if TYPE_CHECKING:
    from mini_broker.group.group_coordinator import GroupCoordinator
    from mini_broker.group.group_metadata import GroupMetadata


class DelayedHeartbeat(DelayedOperation):
    def __init__(self, coordinator: GroupCoordinator, group: GroupMetadata, member_id: str, is_pending: bool,
                 timeout_ms: int) -> None:
        super().__init__(timeout_ms, group.lock)
        self.coordinator = coordinator
        self.group = group
        self.member_id = member_id
        self.is_pending = is_pending

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_heartbeat(self.group, self.member_id, self.is_pending,
                                                       self.force_complete)

    def on_complete(self) -> None:
        return

    def on_expiration(self) -> None:
        self.coordinator.on_expire_heartbeat(self.group, self.member_id, self.is_pending)
