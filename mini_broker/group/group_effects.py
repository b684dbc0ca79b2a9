"""What the group coordinator's sans-IO core asks its driver to do, as values.

A call into the core (:class:`Step`: the config, ``now`` and the effects so far) changes the group's state
and emits, in order:

* responses: :class:`SendJoinResponse`, :class:`SendSyncResponse` (the parked request's reply handle and
  its answer; immediate answers of the other APIs are plain return values);
* log appends to ``__consumer_offsets``: :class:`AppendGroupMetadata`, :class:`AppendAssignment`,
  :class:`AppendOffsetCommits`, :class:`AppendTxnOffsetCommits` (a transactional batch),
  :class:`AppendTombstones`, and :class:`RemoveGroup` (drop the group from the coordinator's map);
* timer effects: :class:`ScheduleTimeout` (replaces whatever is armed under the same key) and
  :class:`CancelTimeout`, for a :class:`HeartbeatTimeout` (a member's session or a KIP-394 pending member's
  deadline), a :class:`JoinTimeout` (a join round) or a :class:`SyncTimeout` (a generation's sync phase).
  When one fires, the driver hands it back to the core (``group_rebalance.on_timeout``).

The driver (:mod:`mini_broker.group.group_coordinator`) applies the effects in order, under the group's lock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mini_broker.group.group_config import GroupConfig
from mini_broker.group.group_metadata_manager import StoredGroup
from mini_broker.group.group_requests import (
    CommittedOffset,
    JoinCallback,
    JoinGroupResult,
    SyncCallback,
    SyncGroupResult,
)


# -- responses --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SendJoinResponse:
    reply: JoinCallback
    result: JoinGroupResult


@dataclass(frozen=True, slots=True)
class SendSyncResponse:
    reply: SyncCallback
    result: SyncGroupResult


# -- log appends ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AppendGroupMetadata:
    """A GroupMetadata record: the group at the end of a rebalance, when it became Empty, or after a
    static member got a new id."""

    group_id: str
    group: StoredGroup


@dataclass(frozen=True, slots=True)
class AppendAssignment:
    """The GroupMetadata record of a generation with the leader's assignment (Kafka's ``storeGroup`` from
    SyncGroup). Once it is appended, the core hands the assignment out (``group_join.complete_assignment``)."""

    group_id: str
    group: StoredGroup
    generation_id: int
    assignment: Mapping[str, bytes]


@dataclass(frozen=True, slots=True)
class AppendOffsetCommits:
    """OffsetCommit records. The offsets become visible (``group_offsets.complete_offset_commit``) once the
    append succeeded, as Kafka's pending offset commits do."""

    group_id: str
    offsets: Mapping[tuple[str, int], CommittedOffset]


@dataclass(frozen=True, slots=True)
class AppendTxnOffsetCommits:
    """OffsetCommit records written as a transactional batch of ``producer_id``. Once appended they are
    pending (``group_offsets.complete_txn_offset_commit``) until the transaction's marker."""

    group_id: str
    producer_id: int
    producer_epoch: int
    offsets: Mapping[tuple[str, int], CommittedOffset]


@dataclass(frozen=True, slots=True)
class AppendTombstones:
    """Null-valued records for ``offsets`` and, with ``group_too``, for the group's metadata."""

    group_id: str
    offsets: Sequence[tuple[str, int]]
    group_too: bool


@dataclass(frozen=True, slots=True)
class RemoveGroup:
    """The group is Dead: drop it from the coordinator's group map."""

    group_id: str


# -- timers -----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class HeartbeatTimeout:
    """A member's session deadline (Kafka's DelayedHeartbeat); ``is_pending`` for a KIP-394 pending member."""

    group_id: str
    member_id: str
    is_pending: bool = False


@dataclass(frozen=True, slots=True)
class JoinTimeout:
    """The deadline of a join round (Kafka's DelayedJoin / InitialDelayedJoin); ``timer_id`` is the group's
    ``pending_join.timer_id`` when it was armed."""

    group_id: str
    timer_id: int


@dataclass(frozen=True, slots=True)
class SyncTimeout:
    """The deadline for every member of ``generation_id`` to send SyncGroup (Kafka's DelayedSync)."""

    group_id: str
    generation_id: int


Timeout = HeartbeatTimeout | JoinTimeout | SyncTimeout


@dataclass(frozen=True, slots=True)
class ScheduleTimeout:
    timeout: Timeout
    delay_ms: int


@dataclass(frozen=True, slots=True)
class CancelTimeout:
    """Cancel what is armed under ``timeout``'s key (the member for heartbeats, the group for join/sync)."""

    timeout: Timeout


#: The effects the coordinator runtime writes to ``__consumer_offsets`` (``GroupCoordinator.write_result``).
WriteEffect = AppendGroupMetadata | AppendAssignment | AppendOffsetCommits | AppendTxnOffsetCommits | AppendTombstones

Effect = (SendJoinResponse | SendSyncResponse | AppendGroupMetadata | AppendAssignment | AppendOffsetCommits
          | AppendTxnOffsetCommits | AppendTombstones | RemoveGroup | ScheduleTimeout | CancelTimeout)


@dataclass
class Step:
    """One call into the core: what it may read (``config``, ``now``) and what it emitted."""

    config: GroupConfig
    now: int
    effects: list[Effect] = field(default_factory=list)

    def emit(self, effect: Effect) -> None:
        self.effects.append(effect)
