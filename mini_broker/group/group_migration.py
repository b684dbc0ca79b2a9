"""The classic side of KIP-848's online migration (sans-IO, like the rest of the classic core).

* upgrade (:func:`hand_over`): a classic group with members becomes a consumer group. Its members, their
  protocols, timeouts and assignments (the last ones handed out, also while a rebalance is under way: what the
  members may still own) leave as a :class:`ClassicGroupSnapshot`; parked JoinGroups and
  SyncGroups are answered REBALANCE_IN_PROGRESS (their members rejoin, now as classic members of the consumer
  group); the classic group stays, Empty, to keep the group's committed offsets, and its record says so.
* downgrade (:func:`adopt`): the members of a consumer group that only has classic members left come back as
  a Stable classic group at the consumer group's epoch with their assignments; the group then rebalances
  (its members learn it from their next Heartbeat: REBALANCE_IN_PROGRESS) so that a classic leader assigns.
"""

from __future__ import annotations

from mini_broker.group.group_effects import CancelTimeout, HeartbeatTimeout, JoinTimeout, Step, SyncTimeout
from mini_broker.group.group_metadata import CONSUMER_PROTOCOL_TYPE, GroupMetadata
from mini_broker.group.group_rebalance import (
    answer_join,
    answer_sync,
    prepare_rebalance,
    schedule_next_heartbeat,
    store_group,
)
from mini_broker.group.group_requests import JoinGroupResult, SyncGroupResult
from mini_broker.group.group_state import GroupState
from mini_broker.group.member_metadata import MemberMetadata
from mini_broker.group.migration_snapshot import ClassicGroupSnapshot, ClassicMemberSnapshot
from pykafka_client.errors import RebalanceInProgressError


def upgrade_error(group: GroupMetadata, max_size: int) -> str | None:
    """Why ``group`` cannot be upgraded online (None: it can): Kafka converts only a group of the consumer
    embedded protocol whose size fits ``group.consumer.max.size``."""
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return (f"the group's protocol type is {group.protocol_type!r}, not the consumer embedded protocol "
                f"{CONSUMER_PROTOCOL_TYPE!r}")
    if group.size() > max_size:
        return f"the group's {group.size()} members exceed group.consumer.max.size={max_size}"
    return None


def hand_over(step: Step, group: GroupMetadata) -> ClassicGroupSnapshot:
    """Empty ``group`` (under its lock) into a snapshot for the consumer group that replaces it."""
    protocol = group.protocol_name
    members = tuple(
        ClassicMemberSnapshot(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                              m.session_timeout_ms, tuple(m.supported_protocols),
                              m.assignment)
        for m in group.members.values())
    snapshot = ClassicGroupSnapshot(group.group_id, group.generation_id, protocol, members)
    for member in list(group.members.values()):
        answer_join(step, group, member, JoinGroupResult(member.member_id, RebalanceInProgressError.code))
        answer_sync(step, group, member, SyncGroupResult(RebalanceInProgressError.code))
        step.emit(CancelTimeout(HeartbeatTimeout(group.group_id, member.member_id)))
        group.remove(member.member_id)
    for member_id in list(group.pending_members):
        step.emit(CancelTimeout(HeartbeatTimeout(group.group_id, member_id, is_pending=True)))
        group.remove_pending_member(member_id)
    if group.pending_join is not None:
        step.emit(CancelTimeout(JoinTimeout(group.group_id, group.pending_join.timer_id)))
        group.pending_join = None
    step.emit(CancelTimeout(SyncTimeout(group.group_id, group.generation_id)))
    group.clear_pending_sync_members()
    if not group.is_state(GroupState.PREPARING_REBALANCE):
        group.transition_to(GroupState.PREPARING_REBALANCE, step.now)
    group.transition_to(GroupState.EMPTY, step.now)
    group.leader_id = None
    store_group(step, group, {})
    return snapshot


def adopt(step: Step, group: GroupMetadata, snapshot: ClassicGroupSnapshot) -> None:
    """Fill the Empty ``group`` with the snapshot's members (Stable at its generation), store it, and start a
    rebalance for the members to rejoin."""
    group.generation_id = snapshot.generation_id
    for m in snapshot.members:
        member = MemberMetadata(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                m.session_timeout_ms, CONSUMER_PROTOCOL_TYPE, m.protocols)
        member.assignment = m.assignment
        group.add(member)
    group.protocol_name = group.select_protocol()
    for state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        if not group.is_state(state):
            group.transition_to(state, step.now)
    store_group(step, group, {m.member_id: m.assignment for m in snapshot.members})
    prepare_rebalance(step, group, "downgrade from a consumer group: its members are classic members")
    for member in group.members.values():
        schedule_next_heartbeat(step, group, member)


def undo_adopt(group: GroupMetadata, generation_id: int, protocol_name: str | None, protocol_type: str | None,
               now: int) -> None:
    """Put ``group`` back as it was before :func:`adopt` (Empty at ``generation_id``, holding only offsets) when
    the adoption's record could not be written (the consumer group stays; no timeout of the adoption is armed,
    its effects stop at the failed append)."""
    for member_id in list(group.members):
        group.remove(member_id)
    group.pending_join = None
    group.clear_pending_sync_members()
    group.generation_id, group.protocol_name, group.protocol_type = generation_id, protocol_name, protocol_type
    group.leader_id = None
    if not group.is_state(GroupState.EMPTY):
        if not group.is_state(GroupState.PREPARING_REBALANCE):
            group.transition_to(GroupState.PREPARING_REBALANCE, now)
        group.transition_to(GroupState.EMPTY, now)
