"""The rebalance core shared by every group API (Kafka: the rebalance half of ``GroupCoordinator``).

Sans-IO: each function takes a :class:`Step` (config, ``now``, effects out) and a group the caller has locked,
changes the group and emits effects; nothing here touches a purgatory, a thread or the log.

Rebalance timing (Kafka's):

* :func:`prepare_rebalance` arms the join round: from Empty an initial round of
  ``group.initial.rebalance.delay.ms`` (re-armed while new members keep arriving, until the rebalance timeout
  is used up; never completed early), otherwise the group's rebalance timeout, completed early by
  :func:`maybe_complete_join` once every member rejoined and no KIP-394 member is pending.
* :func:`complete_join` removes dynamic members that did not rejoin, starts the next generation, answers the
  parked JoinGroups (only the leader gets the member list) and arms the sync deadline.
* Sessions: :func:`schedule_next_heartbeat` re-arms a member's session timeout; a member waiting in a join or
  sync round (and not new) needs none. New members are held to :data:`NEW_MEMBER_JOIN_TIMEOUT_MS`.
* :func:`on_timeout` is what a fired timeout does: expire a session or a pending member, finish or re-arm a
  join round, remove the members that did not sync.
"""

from __future__ import annotations

import logging
from typing import Final

from mini_broker.group.group_effects import (
    AppendGroupMetadata,
    CancelTimeout,
    HeartbeatTimeout,
    JoinTimeout,
    ScheduleTimeout,
    SendJoinResponse,
    SendSyncResponse,
    Step,
    SyncTimeout,
    Timeout,
)
from mini_broker.group.group_metadata import UNKNOWN_MEMBER_ID, GroupMetadata
from mini_broker.group.group_metadata_manager import StoredGroup, StoredMember
from mini_broker.group.group_requests import NONE, JoinGroupResult, SyncGroupResult
from mini_broker.group.group_state import GroupState
from mini_broker.group.member_metadata import MemberMetadata
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    IllegalStateError,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

_log = logging.getLogger("mini_broker.group.group_coordinator")

#: How long a member without a member id may wait in a join round (its socket is muted meanwhile, so a
#: disconnect cannot be noticed).
NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 5 * 60 * 1000


# -- answers ----------------------------------------------------------------------------------------------
def answer_join(step: Step, group: GroupMetadata, member: MemberMetadata, result: JoinGroupResult) -> None:
    """Answer ``member``'s parked JoinGroup, if any."""
    reply = group.take_join_reply(member)
    if reply is not None:
        step.emit(SendJoinResponse(reply, result))


def answer_sync(step: Step, group: GroupMetadata, member: MemberMetadata, result: SyncGroupResult) -> bool:
    """Answer ``member``'s parked SyncGroup; False when none was parked."""
    reply = group.take_sync_reply(member)
    if reply is None:
        return False
    step.emit(SendSyncResponse(reply, result))
    return True


def join_result(group: GroupMetadata, member_id: str, with_members: bool, leader_id: str | None = None,
                skip_assignment: bool = False) -> JoinGroupResult:
    return JoinGroupResult(
        member_id=member_id, error_code=NONE, generation_id=group.generation_id,
        protocol_type=group.protocol_type, protocol_name=group.protocol_name,
        leader_id=(leader_id if leader_id is not None else group.leader_id) or "",
        members=group.current_member_metadata() if with_members else [], skip_assignment=skip_assignment)


def validate_current_member(group: GroupMetadata, member_id: str, group_instance_id: str | None) -> int | None:
    """FENCED_INSTANCE_ID when the instance id maps to another member id; UNKNOWN_MEMBER_ID when the
    instance id or the member id is unknown."""
    if group_instance_id is not None:
        current = group.current_static_member_id(group_instance_id)
        if current is None:
            return UnknownMemberIdError.code
        if current != member_id:
            _log.info("static member %s of group %s fenced: member id %s, current %s", group_instance_id,
                      group.group_id, member_id, current)
            return FencedInstanceIdError.code
        return None
    if not group.has(member_id):
        return UnknownMemberIdError.code
    return None


def validate_member_generation(group: GroupMetadata, member_id: str, group_instance_id: str | None,
                               generation_id: int) -> int | None:
    """Heartbeat's and SyncGroup's common checks: a live group, a current member, its generation."""
    if group.is_state(GroupState.DEAD):
        return CoordinatorNotAvailableError.code
    error = validate_current_member(group, member_id, group_instance_id)
    if error is not None:
        return error
    if generation_id != group.generation_id:
        return IllegalGenerationError.code
    return None


# -- persistence ------------------------------------------------------------------------------------------
def stored_group(group: GroupMetadata, assignment: dict[str, bytes]) -> StoredGroup:
    """The group's metadata record (members only while CompletingRebalance or Stable)."""
    protocol = group.protocol_name
    members: list[StoredMember] = []
    if protocol is not None and group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        members = [StoredMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                m.rebalance_timeout_ms, m.session_timeout_ms, m.metadata(protocol),
                                assignment.get(m.member_id, b""))
                   for m in group.members.values()]
    return StoredGroup(group.protocol_type, group.generation_id, protocol, group.leader_id,
                       group.current_state_timestamp, members)


def store_group(step: Step, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
    step.emit(AppendGroupMetadata(group.group_id, stored_group(group, assignment)))


# -- sessions ---------------------------------------------------------------------------------------------
def schedule_next_heartbeat(step: Step, group: GroupMetadata, member: MemberMetadata,
                            timeout_ms: int | None = None) -> None:
    """The member's session restarts: its armed deadline goes; a new one of ``timeout_ms`` (default: its
    session timeout) is armed unless a join or sync round it waits in covers it."""
    timeout = HeartbeatTimeout(group.group_id, member.member_id)
    if member.has_satisfied_heartbeat():
        step.emit(CancelTimeout(timeout))
    else:
        step.emit(ScheduleTimeout(timeout, member.session_timeout_ms if timeout_ms is None else timeout_ms))


def add_pending_member(step: Step, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
    """KIP-394: ``member_id`` was handed out; it must join within ``timeout_ms``."""
    group.add_pending_member(member_id)
    step.emit(ScheduleTimeout(HeartbeatTimeout(group.group_id, member_id, is_pending=True), timeout_ms))


def cancel_heartbeat(step: Step, group: GroupMetadata, member_id: str) -> None:
    step.emit(CancelTimeout(HeartbeatTimeout(group.group_id, member_id)))


def remove_member_and_update_group(step: Step, group: GroupMetadata, member: MemberMetadata) -> None:
    """Remove a member; a Stable or CompletingRebalance group rebalances, a join round may now complete."""
    # A new member may time out while its JoinGroup is parked: answer it so that it can retry.
    answer_join(step, group, member, JoinGroupResult(UNKNOWN_MEMBER_ID, UnknownMemberIdError.code))
    group.remove(member.member_id)
    state = group.state
    if state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        maybe_prepare_rebalance(step, group, f"removing member {member.member_id}")
    elif state is GroupState.PREPARING_REBALANCE:
        maybe_complete_join(step, group)


def remove_pending_member_and_update_group(step: Step, group: GroupMetadata, member_id: str) -> None:
    group.remove_pending_member(member_id)
    if group.is_state(GroupState.PREPARING_REBALANCE):
        maybe_complete_join(step, group)


# -- join rounds ------------------------------------------------------------------------------------------
def maybe_prepare_rebalance(step: Step, group: GroupMetadata, reason: str) -> None:
    if group.can_rebalance():
        prepare_rebalance(step, group, reason)


def prepare_rebalance(step: Step, group: GroupMetadata, reason: str) -> None:
    """Start a join round: fail parked syncs, drop the sync deadline, arm the join timeout, PreparingRebalance."""
    if group.is_state(GroupState.COMPLETING_REBALANCE):
        reset_and_propagate_assignment_error(step, group, RebalanceInProgressError.code)
    remove_sync_expiration(step, group)
    if group.is_state(GroupState.EMPTY):
        delay = step.config.group_initial_rebalance_delay_ms
        pending = group.arm_join(initial=True, remaining_ms=max(group.rebalance_timeout_ms() - delay, 0))
    else:
        delay = group.rebalance_timeout_ms()
        pending = group.arm_join(initial=False)
    group.transition_to(GroupState.PREPARING_REBALANCE, step.now)
    _log.info("preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
              group.group_id, group.state.value, group.generation_id, reason)
    step.emit(ScheduleTimeout(JoinTimeout(group.group_id, pending.timer_id), delay))
    maybe_complete_join(step, group)


def _arm_join_round(step: Step, group: GroupMetadata) -> None:
    pending = group.arm_join(initial=False)
    step.emit(ScheduleTimeout(JoinTimeout(group.group_id, pending.timer_id), group.rebalance_timeout_ms()))
    maybe_complete_join(step, group)


def maybe_complete_join(step: Step, group: GroupMetadata) -> None:
    """Complete a (non-initial) join round early once every member rejoined and none is pending."""
    pending = group.pending_join
    if pending is None or pending.initial or not group.has_all_members_joined():
        return
    group.pending_join = None
    step.emit(CancelTimeout(JoinTimeout(group.group_id, pending.timer_id)))
    complete_join(step, group)


def _on_join_timeout(step: Step, group: GroupMetadata, timeout: JoinTimeout) -> None:
    pending = group.pending_join
    if pending is None or pending.timer_id != timeout.timer_id:
        return  # completed or re-armed meanwhile
    group.pending_join = None
    if pending.initial and group.new_member_added and pending.remaining_ms != 0:
        # New members arrived during the initial delay: wait once more, within the rebalance timeout.
        group.new_member_added = False
        delay = min(step.config.group_initial_rebalance_delay_ms, pending.remaining_ms)
        again = group.arm_join(initial=True, remaining_ms=max(pending.remaining_ms - delay, 0))
        step.emit(ScheduleTimeout(JoinTimeout(group.group_id, again.timer_id), delay))
        return
    complete_join(step, group)


def complete_join(step: Step, group: GroupMetadata) -> None:
    """The join round is over (Kafka's onCompleteJoin)."""
    for failed in [m for m in group.not_yet_rejoined_members() if not m.is_static_member]:
        _log.info("group %s removes dynamic member %s that did not rejoin", group.group_id, failed.member_id)
        group.remove(failed.member_id)
        cancel_heartbeat(step, group, failed.member_id)
    if group.is_state(GroupState.DEAD):
        return
    if not group.maybe_elect_new_joined_leader() and group.members:
        # Nobody rejoined: wait another round, session timeouts will remove the silent members.
        _log.warning("group %s could not complete its rebalance: no member rejoined", group.group_id)
        _arm_join_round(step, group)
        return
    group.init_next_generation(step.now)
    if group.is_state(GroupState.EMPTY):
        _log.info("group %s with generation %d is now empty", group.group_id, group.generation_id)
        store_group(step, group, {})
        return
    _log.info("stabilized group %s generation %d (protocol %s, %d members)", group.group_id,
              group.generation_id, group.protocol_name, group.size())
    for member in list(group.members.values()):
        answer_join(step, group, member,
                    join_result(group, member.member_id, with_members=group.is_leader(member.member_id)))
        schedule_next_heartbeat(step, group, member)
        member.is_new = False
        group.add_pending_sync_member(member.member_id)
    step.emit(ScheduleTimeout(SyncTimeout(group.group_id, group.generation_id), group.rebalance_timeout_ms()))


# -- sync phase -------------------------------------------------------------------------------------------
def remove_sync_expiration(step: Step, group: GroupMetadata) -> None:
    group.clear_pending_sync_members()
    step.emit(CancelTimeout(SyncTimeout(group.group_id, group.generation_id)))


def remove_pending_sync_member(step: Step, group: GroupMetadata, member_id: str) -> None:
    """``member_id`` synced; the sync deadline goes once every member did."""
    group.remove_pending_sync_member(member_id)
    if group.has_received_sync_from_all_members() or \
            group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        step.emit(CancelTimeout(SyncTimeout(group.group_id, group.generation_id)))


def reset_and_propagate_assignment_error(step: Step, group: GroupMetadata, error: int) -> None:
    if not group.is_state(GroupState.COMPLETING_REBALANCE):
        raise IllegalStateError(f"group {group.group_id} must be CompletingRebalance, not {group.state.value}")
    for member in group.members.values():
        member.assignment = b""
    propagate_assignment(step, group, error)


def propagate_assignment(step: Step, group: GroupMetadata, error: int) -> None:
    """Answer every parked SyncGroup with its assignment (or ``error``)."""
    for member in list(group.members.values()):
        if error == NONE:
            result = SyncGroupResult(NONE, group.protocol_type, group.protocol_name, member.assignment)
        else:
            result = SyncGroupResult(error)
        if answer_sync(step, group, member, result):
            # The member's session restarts when its sync is answered.
            schedule_next_heartbeat(step, group, member)


def _on_sync_timeout(step: Step, group: GroupMetadata, timeout: SyncTimeout) -> None:
    if timeout.generation_id != group.generation_id:
        return
    if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and \
            not group.has_received_sync_from_all_members():
        missing = sorted(group.pending_sync_members)
        _log.info("group %s removes members %s that did not send SyncGroup in time", group.group_id, missing)
        for member_id in missing:
            group.remove(member_id)
            cancel_heartbeat(step, group, member_id)
        prepare_rebalance(step, group, f"members {missing} did not sync")


# -- fired timeouts ---------------------------------------------------------------------------------------
def _on_heartbeat_timeout(step: Step, group: GroupMetadata, timeout: HeartbeatTimeout) -> None:
    if group.is_state(GroupState.DEAD):
        return
    member_id = timeout.member_id
    if timeout.is_pending:
        if group.is_pending_member(member_id):
            _log.info("pending member %s of group %s expired", member_id, group.group_id)
            remove_pending_member_and_update_group(step, group, member_id)
        return
    member = group.members.get(member_id)
    if member is not None and not member.has_satisfied_heartbeat():
        _log.info("member %s of group %s failed (session expired), removing it", member_id, group.group_id)
        remove_member_and_update_group(step, group, member)


def on_timeout(step: Step, group: GroupMetadata, timeout: Timeout) -> None:
    """A timeout armed by a :class:`ScheduleTimeout` fired at ``step.now``."""
    if isinstance(timeout, HeartbeatTimeout):
        _on_heartbeat_timeout(step, group, timeout)
    elif isinstance(timeout, JoinTimeout):
        _on_join_timeout(step, group, timeout)
    else:
        _on_sync_timeout(step, group, timeout)


# -- unloading (the coordinator resigned) ----------------------------------------------------------------
def unload_group(step: Step, group: GroupMetadata) -> None:
    """Kafka's ``onGroupUnloaded``: this broker no longer coordinates ``group`` (it resigned the leadership of
    its ``__consumer_offsets`` partition). The group goes Dead, its timeouts are cancelled and the parked
    JoinGroups and SyncGroups are answered NOT_COORDINATOR, so their members find the new coordinator."""
    for member in list(group.members.values()):
        answer_join(step, group, member, JoinGroupResult(member.member_id, NotCoordinatorError.code))
        answer_sync(step, group, member, SyncGroupResult(NotCoordinatorError.code))
        step.emit(CancelTimeout(HeartbeatTimeout(group.group_id, member.member_id)))
    for member_id in list(group.pending_members):
        step.emit(CancelTimeout(HeartbeatTimeout(group.group_id, member_id, is_pending=True)))
    if group.pending_join is not None:
        step.emit(CancelTimeout(JoinTimeout(group.group_id, group.pending_join.timer_id)))
    step.emit(CancelTimeout(SyncTimeout(group.group_id, group.generation_id)))
    if not group.is_state(GroupState.DEAD):
        group.transition_to(GroupState.DEAD, step.now)
