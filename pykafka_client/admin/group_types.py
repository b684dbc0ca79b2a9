"""Arguments and results of the AdminClient's consumer-group, record and incremental-config operations
(Java ``admin.ConsumerGroupListing``, ``ConsumerGroupDescription``, ``MemberDescription``,
``AlterConfigOp``). Plain frozen dataclasses; partitions are ``TopicPartition``."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pykafka_client.structs import Node, TopicPartition

#: The group states a broker reports (Kafka's ``ClassicGroupState`` names).
DEAD = "Dead"
EMPTY = "Empty"

#: Group types (Java ``GroupType``): JoinGroup/SyncGroup groups, KIP-848 consumer groups, KIP-932 share groups.
CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"


@dataclass(frozen=True)
class ConsumerGroupListing:
    """One group as ListGroups reports it. ``protocol_type`` is ``"consumer"`` for consumer groups and
    ``""`` for a simple group (offsets committed without joining)."""

    group_id: str
    state: str
    protocol_type: str
    #: ``classic`` or ``consumer`` (KIP-848); None when the broker does not say (ListGroups before v5)
    type: str | None = None

    @property
    def is_simple_consumer_group(self) -> bool:
        return not self.protocol_type


@dataclass(frozen=True)
class MemberDescription:
    """A member of a group; ``assignment`` is empty unless the group is Stable (classic) or what the member
    owns (consumer group). ``member_epoch`` and ``target_assignment`` only for consumer groups (KIP-848)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: list[TopicPartition]
    member_epoch: int | None = None
    target_assignment: list[TopicPartition] | None = None


@dataclass(frozen=True)
class ConsumerGroupDescription:
    """A group as DescribeGroups reports it: ``state`` is Kafka's name (Stable, Empty, PreparingRebalance,
    CompletingRebalance, Dead: Dead is also how a broker describes a group it does not know); a consumer group
    (KIP-848, ConsumerGroupDescribe) reports its own states (Empty, Assigning, Reconciling, Stable, Dead)."""

    group_id: str
    is_simple_consumer_group: bool
    members: list[MemberDescription]
    partition_assignor: str
    state: str
    coordinator: Node | None
    #: ``classic`` (DescribeGroups) or ``consumer`` (ConsumerGroupDescribe, KIP-848)
    type: str = CLASSIC
    #: consumer groups only: the group epoch and the epoch of its target assignment
    group_epoch: int | None = None
    target_assignment_epoch: int | None = None

    @property
    def is_active(self) -> bool:
        """Whether members are in the group (it is neither Empty nor Dead)."""
        return self.state not in (EMPTY, DEAD)


@dataclass(frozen=True)
class ShareMemberDescription:
    """A member of a share group (Java ``ShareMemberDescription``): ``assignment`` is what the share assignor
    gave it (a partition may be assigned to several members)."""

    member_id: str
    rack_id: str | None
    client_id: str
    host: str
    assignment: list[TopicPartition]
    member_epoch: int
    subscribed_topic_names: list[str]


@dataclass(frozen=True)
class ShareGroupDescription:
    """A share group (KIP-932) as ShareGroupDescribe reports it (Java ``ShareGroupDescription``): ``state`` is
    Empty or Stable."""

    group_id: str
    members: list[ShareMemberDescription]
    partition_assignor: str
    state: str
    coordinator: Node | None
    group_epoch: int
    target_assignment_epoch: int


@dataclass(frozen=True)
class SharePartitionOffsetInfo:
    """A share partition of a share group as DescribeShareGroupOffsets reports it (Java
    ``SharePartitionOffsetInfo``): its start offset, the leader epoch (None: not known) and its lag, the records
    from the start offset to the end of the log not yet delivered for good (None: a broker older than Kafka 4.2,
    KIP-1226, does not say)."""

    start_offset: int
    leader_epoch: int | None = None
    lag: int | None = None


class AlterConfigOpType(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class AlterConfigOp:
    """One change of ``incremental_alter_configs``: set (or append/subtract a list element) ``name`` to
    ``value``, or delete the override of ``name`` (``value`` ignored)."""

    name: str
    value: str | None
    op_type: AlterConfigOpType = AlterConfigOpType.SET
