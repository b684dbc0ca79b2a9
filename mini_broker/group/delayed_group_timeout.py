"""A group coordinator timeout in a purgatory (Kafka: the timer behind ``DelayedHeartbeat``, ``DelayedJoin``,
``DelayedSync``; the new coordinator's ``CoordinatorTimer``).

The sans-IO core decides when a join round or a sync phase is over and when a session no longer needs its
deadline (it emits ``CancelTimeout``), so this operation never completes early: it only fires. It shares the
group's lock; when its delay passes the driver hands the timeout back to the core
(``GroupCoordinator.on_timeout``).
"""

from __future__ import annotations

from typing import Protocol

from mini_broker.group.group_effects import Timeout
from mini_broker.group.group_metadata import GroupMetadata
from mini_broker.purgatory.delayed_operation import DelayedOperation


class GroupTimeoutListener(Protocol):
    """Told when a group's timeout fired (the group coordinator)."""

    def on_timeout(self, group: GroupMetadata, timeout: Timeout) -> None: ...


class DelayedGroupTimeout(DelayedOperation):
    def __init__(self, coordinator: GroupTimeoutListener, group: GroupMetadata, timeout: Timeout,
                 delay_ms: int) -> None:
        super().__init__(delay_ms, group.lock)
        self.coordinator = coordinator
        self.group = group
        self.timeout = timeout

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        return

    def on_expiration(self) -> None:
        self.coordinator.on_timeout(self.group, self.timeout)
