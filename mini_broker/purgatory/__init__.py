"""Delayed operations and the purgatory that holds them (Java kafka.server.DelayedOperation*)."""

from __future__ import annotations

from mini_broker.purgatory.delayed_fetch import DelayedFetch, FetchParams, FetchPartitionStatus
from mini_broker.purgatory.delayed_operation import DelayedOperation
from mini_broker.purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from mini_broker.purgatory.keys import (
    DelayedShareFetchGroupKey,
    GroupJoinKey,
    GroupKey,
    GroupSyncKey,
    MemberKey,
    TopicKey,
    TopicPartitionOperationKey,
)

__all__ = [
    "DelayedFetch",
    "DelayedOperation",
    "DelayedOperationPurgatory",
    "DelayedShareFetchGroupKey",
    "FetchParams",
    "FetchPartitionStatus",
    "GroupJoinKey",
    "GroupKey",
    "GroupSyncKey",
    "MemberKey",
    "TopicKey",
    "TopicPartitionOperationKey",
]
