"""What the share group coordinator asks of the share coordinator about its groups' share partitions (Kafka's
``Persister`` as ``GroupCoordinatorService`` uses it): a summary of a share partition's state
(ReadShareGroupStateSummary, for DescribeShareGroupOffsets), a fresh start at an offset (InitializeShareGroupState,
for AlterShareGroupOffsets) and the state's deletion (DeleteShareGroupState, for DeleteGroups and
DeleteShareGroupOffsets). A single broker's :class:`~mini_broker.share.share_coordinator.ShareCoordinator` answers
in process; a cluster broker's :class:`~mini_broker.cluster.share_state.RemoteSharePersister` asks the share
coordinator of each share partition, wherever it runs: one code path for both."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from mini_broker.share.partition_manager import SharePersister

#: (group id, topic id, partition)
SharePartitionKey = tuple[str, uuid.UUID, int]


@dataclass(frozen=True)
class StateSummary:
    """A share partition's state as the share coordinator keeps it: its epochs, its start offset and how many of
    its in-flight records are done (acknowledged or archived: KIP-1226's delivery-complete count)."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int


class ShareStateAdmin(Protocol):
    """See the module docstring. Each call raises the ``KafkaError`` of a failure (the share coordinator could not
    be reached, or refused)."""

    def read_state_summary(self, key: SharePartitionKey) -> StateSummary | None:
        """The share partition's state (None: it never had one; start offset -1: it was deleted)."""
        ...

    def initialize_group_state(self, key: SharePartitionKey, start_offset: int) -> None:
        """Start the share partition afresh at ``start_offset`` with a new state epoch (its leader's later writes
        of the old state are fenced: FENCED_STATE_EPOCH, and it reads the new state)."""
        ...

    def delete_group_state(self, key: SharePartitionKey) -> None:
        """Delete the share partition's state (its leader's later writes of the old state are fenced; a later use
        starts it afresh at ``share.auto.offset.reset``)."""
        ...


class GroupStatePersister(SharePersister, ShareStateAdmin, Protocol):
    """A broker's persister: the share-partition leader's side (:class:`SharePersister`) and the group
    coordinator's (:class:`ShareStateAdmin`)."""
