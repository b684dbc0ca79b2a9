"""The sync phase deadline of a generation (Kafka: ``DelayedSync``).

Armed when a join round completes, for the group's rebalance timeout, watched under ``GroupSyncKey``.
It completes once every member of the generation sent SyncGroup (or the group moved on); if the timeout
passes first, the members that did not sync are removed and the group rebalances.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_broker.purgatory.delayed_operation import DelayedOperation

if TYPE_CHECKING:
    from mini_broker.group.group_coordinator import GroupCoordinator
    from mini_broker.group.group_metadata import GroupMetadata


class DelayedSync(DelayedOperation):
    def __init__(self, coordinator: GroupCoordinator, group: GroupMetadata, generation_id: int,
                 rebalance_timeout_ms: int) -> None:
        super().__init__(rebalance_timeout_ms, group.lock)
        self.coordinator = coordinator
        self.group = group
        self.generation_id = generation_id

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_pending_sync(self.group, self.generation_id, self.force_complete)

    def on_complete(self) -> None:
        return

    def on_expiration(self) -> None:
        self.coordinator.on_expire_pending_sync(self.group, self.generation_id)
