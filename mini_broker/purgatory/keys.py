"""Keys under which delayed operations are watched (Java DelayedOperationKey and its implementations).

Any hashable value can be a key; these are the ones the broker uses. ``key_label`` is the readable form
Kafka logs and uses in metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class TopicPartitionOperationKey(NamedTuple):
    """Produce, fetch and DeleteRecords operations waiting on one partition (a named tuple: every produce request
    checks the purgatories with one, and a tuple hashes without a Python-level ``__hash__``)."""

    topic: str
    partition: int

    @property
    def key_label(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class MemberKey:
    """A heartbeat (session timeout) of one group member."""

    group_id: str
    member_id: str

    @property
    def key_label(self) -> str:
        return f"{self.group_id}-{self.member_id}"


@dataclass(frozen=True, slots=True)
class GroupJoinKey:
    """A JoinGroup round (rebalance) of one group."""

    group_id: str

    @property
    def key_label(self) -> str:
        return self.group_id


@dataclass(frozen=True, slots=True)
class GroupSyncKey:
    """A SyncGroup wait of one group."""

    group_id: str

    @property
    def key_label(self) -> str:
        return f"sync-{self.group_id}"


@dataclass(frozen=True, slots=True)
class DelayedShareFetchGroupKey:
    """ShareFetch requests of one share group waiting on one partition (topic id) for records to acquire: checked
    when records of that share partition are acknowledged, released or their locks expire."""

    group_id: str
    topic_id: object
    partition: int

    @property
    def key_label(self) -> str:
        return f"{self.group_id}-{self.topic_id}-{self.partition}"


# Kafka's old name for the join key; the same thing.
GroupKey = GroupJoinKey


@dataclass(frozen=True, slots=True)
class TopicKey:
    """CreateTopics / DeleteTopics waiting on one topic."""

    topic: str

    @property
    def key_label(self) -> str:
        return self.topic
