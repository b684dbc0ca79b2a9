"""JoinGroup and SyncGroup in the sans-IO core (Kafka: ``GroupCoordinator.handleJoinGroup`` / ``handleSyncGroup``).

The driver has validated the coordinator's status and the group id, resolved (or created) the group and
holds its lock. JoinGroup's remaining validation order: session timeout range (:func:`validate_join`, before
the group is looked up), ``group.max.size``, protocol compatibility; then the per-state handling. Answers
are :class:`SendJoinResponse` / :class:`SendSyncResponse` effects, now or when the round completes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from mini_broker.group.group_config import GroupConfig
from mini_broker.group.group_effects import AppendAssignment, SendJoinResponse, SendSyncResponse, Step
from mini_broker.group.group_metadata import UNKNOWN_MEMBER_ID, GroupMetadata
from mini_broker.group.group_rebalance import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    add_pending_member,
    answer_join,
    answer_sync,
    join_result,
    maybe_complete_join,
    maybe_prepare_rebalance,
    prepare_rebalance,
    propagate_assignment,
    remove_pending_sync_member,
    schedule_next_heartbeat,
    store_group,
    stored_group,
    validate_current_member,
    validate_member_generation,
)
from mini_broker.group.group_requests import (
    NONE,
    JoinCallback,
    JoinGroupParams,
    JoinGroupResult,
    SyncCallback,
    SyncGroupParams,
    SyncGroupResult,
)
from mini_broker.group.group_state import GroupState
from mini_broker.group.member_metadata import MemberMetadata
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    IllegalStateError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

_log = logging.getLogger("mini_broker.group.group_coordinator")


# -- JoinGroup --------------------------------------------------------------------------------------------
def validate_join(request: JoinGroupParams, config: GroupConfig) -> int | None:
    """INVALID_SESSION_TIMEOUT outside ``group.min/max.session.timeout.ms``."""
    if not (config.group_min_session_timeout_ms <= request.session_timeout_ms
            <= config.group_max_session_timeout_ms):
        return InvalidSessionTimeoutError.code
    return None


def join_group(step: Step, group: GroupMetadata, request: JoinGroupParams, reply: JoinCallback) -> None:
    """A JoinGroup for ``group`` (created by the driver when the member id is unknown)."""
    member_id = request.member_id
    if not _accept_joining_member(step, group, member_id):
        group.remove(member_id)
        step.emit(SendJoinResponse(reply, JoinGroupResult(UNKNOWN_MEMBER_ID, GroupMaxSizeReachedError.code)))
    elif member_id == UNKNOWN_MEMBER_ID:
        _new_member_join(step, group, request, reply)
    else:
        _current_member_join(step, group, request, reply)
    if group.is_state(GroupState.PREPARING_REBALANCE):
        maybe_complete_join(step, group)


def _accept_joining_member(step: Step, group: GroupMetadata, member_id: str) -> bool:
    max_size = step.config.group_max_size
    state = group.state
    if state in (GroupState.EMPTY, GroupState.DEAD):
        return True
    if state is GroupState.PREPARING_REBALANCE:
        return ((group.has(member_id) and group.get(member_id).is_awaiting_join)
                or group.num_members_awaiting_join < max_size)
    return group.has(member_id) or group.size() < max_size


def _join_error(group: GroupMetadata, request: JoinGroupParams) -> int | None:
    if group.is_state(GroupState.DEAD):
        return CoordinatorNotAvailableError.code
    if not group.supports_protocols(request.protocol_type, {name for name, _ in request.protocols}):
        return InconsistentGroupProtocolError.code
    return None


def _new_member_join(step: Step, group: GroupMetadata, request: JoinGroupParams, reply: JoinCallback) -> None:
    error = _join_error(group, request)
    if error is not None:
        step.emit(SendJoinResponse(reply, JoinGroupResult(UNKNOWN_MEMBER_ID, error)))
        return
    instance_id = request.group_instance_id
    new_member_id = group.generate_member_id(request.client_id, instance_id)
    if instance_id is not None:
        old_member_id = group.current_static_member_id(instance_id)
        if old_member_id is not None:
            _log.info("static member %s of group %s rejoins without a member id: replacing %s with %s",
                      instance_id, group.group_id, old_member_id, new_member_id)
            _update_static_member_and_rebalance(step, group, old_member_id, new_member_id, request, reply)
        else:
            _add_member_and_rebalance(step, group, new_member_id, request, reply)
    elif request.require_known_member_id:
        # KIP-394: hand out the id, expect the member back with it within its session timeout.
        add_pending_member(step, group, new_member_id, request.session_timeout_ms)
        step.emit(SendJoinResponse(reply, JoinGroupResult(new_member_id, MemberIdRequiredError.code)))
    else:
        _add_member_and_rebalance(step, group, new_member_id, request, reply)


def _current_member_join(step: Step, group: GroupMetadata, request: JoinGroupParams, reply: JoinCallback) -> None:
    member_id = request.member_id
    error = _join_error(group, request)
    if error is None and group.is_pending_member(member_id):
        if request.group_instance_id is not None:
            raise IllegalStateError(f"JoinGroup with group instance id {request.group_instance_id} for pending "
                                    f"member {member_id}")
        _add_member_and_rebalance(step, group, member_id, request, reply)
        return
    if error is None:
        error = validate_current_member(group, member_id, request.group_instance_id)
    if error is not None:
        step.emit(SendJoinResponse(reply, JoinGroupResult(member_id, error)))
        return
    state = group.state
    member = group.get(member_id) if group.has(member_id) else None
    if member is None or state is GroupState.EMPTY:
        step.emit(SendJoinResponse(reply, JoinGroupResult(member_id, UnknownMemberIdError.code)))
    elif state is GroupState.PREPARING_REBALANCE:
        _update_member_and_rebalance(step, group, member, request, reply)
    elif state is GroupState.COMPLETING_REBALANCE:
        if member.matches(request.protocols):
            # The member lost the JoinGroup answer: give it the current generation again.
            step.emit(SendJoinResponse(reply, join_result(group, member_id, with_members=group.is_leader(member_id))))
        else:
            _update_member_and_rebalance(step, group, member, request, reply)
    elif group.is_leader(member_id) or not member.matches(request.protocols):
        # Stable. A leader's JoinGroup always rebalances (it may have seen metadata changes).
        _update_member_and_rebalance(step, group, member, request, reply)
    else:
        step.emit(SendJoinResponse(reply, join_result(group, member_id, with_members=False)))


def _add_member_and_rebalance(step: Step, group: GroupMetadata, member_id: str, request: JoinGroupParams,
                              reply: JoinCallback) -> None:
    member = MemberMetadata(member_id, request.group_instance_id, request.client_id, request.client_host,
                            request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
                            request.protocols)
    member.is_new = True
    if group.is_state(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
        group.new_member_added = True
    group.add(member, reply)
    schedule_next_heartbeat(step, group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
    maybe_prepare_rebalance(step, group, f"adding new member {member_id}")


def _update_static_member_and_rebalance(step: Step, group: GroupMetadata, old_member_id: str, new_member_id: str,
                                        request: JoinGroupParams, reply: JoinCallback) -> None:
    instance_id = request.group_instance_id
    assert instance_id is not None
    current_leader = group.leader_id
    old = group.members.get(old_member_id)
    if old is not None:
        # The old member id's parked requests are fenced.
        answer_join(step, group, old, JoinGroupResult(old_member_id, FencedInstanceIdError.code))
        answer_sync(step, group, old, SyncGroupResult(FencedInstanceIdError.code))
    member = group.replace_static_member(instance_id, old_member_id, new_member_id)
    schedule_next_heartbeat(step, group, member)
    group.update_member(member, request.protocols, reply)
    state = group.state
    if state is GroupState.STABLE:
        if group.protocol_name == group.select_protocol():
            # The assignment stays valid: persist the new member id, no rebalance.
            store_group(step, group, {m.member_id: m.assignment for m in group.members.values()})
            if request.support_skipping_assignment:
                is_leader = group.is_leader(new_member_id)
                answer_join(step, group, member, join_result(group, new_member_id, with_members=is_leader,
                                                             skip_assignment=is_leader))
            else:
                # Before v9 the old leader id is returned so that the member does not run an assignment
                # that a Stable group would not use.
                answer_join(step, group, member, join_result(group, new_member_id, with_members=False,
                                                             leader_id=current_leader or ""))
        else:
            maybe_prepare_rebalance(step, group, f"static member {instance_id} changed protocols")
    elif state is GroupState.COMPLETING_REBALANCE:
        # The leader may already have assigned the old member id: rebalance.
        prepare_rebalance(step, group, f"static member {instance_id} rejoined while completing")
    elif state in (GroupState.EMPTY, GroupState.DEAD):
        raise IllegalStateError(f"group {group.group_id} is {state.value} while static member "
                                f"{instance_id} rejoins")


def _update_member_and_rebalance(step: Step, group: GroupMetadata, member: MemberMetadata,
                                 request: JoinGroupParams, reply: JoinCallback) -> None:
    group.update_member(member, request.protocols, reply)
    maybe_prepare_rebalance(step, group, f"member {member.member_id} rejoined")


# -- SyncGroup --------------------------------------------------------------------------------------------
def sync_group(step: Step, group: GroupMetadata, request: SyncGroupParams, reply: SyncCallback) -> None:
    error = _validate_sync_group(group, request)
    if error is not None:
        step.emit(SendSyncResponse(reply, SyncGroupResult(error)))
        return
    member_id = request.member_id
    state = group.state
    if state is GroupState.EMPTY:
        step.emit(SendSyncResponse(reply, SyncGroupResult(UnknownMemberIdError.code)))
    elif state is GroupState.PREPARING_REBALANCE:
        step.emit(SendSyncResponse(reply, SyncGroupResult(RebalanceInProgressError.code)))
    elif state is GroupState.COMPLETING_REBALANCE:
        group.get(member_id).awaiting_sync_callback = reply
        remove_pending_sync_member(step, group, member_id)
        if group.is_leader(member_id):
            _log.info("assignment received from leader %s of group %s for generation %d", member_id,
                      group.group_id, group.generation_id)
            assignment = {m: request.assignments.get(m, b"") for m in group.members}
            step.emit(AppendAssignment(group.group_id, stored_group(group, assignment), group.generation_id,
                                       assignment))
    elif state is GroupState.STABLE:
        remove_pending_sync_member(step, group, member_id)
        member = group.get(member_id)
        step.emit(SendSyncResponse(reply, SyncGroupResult(NONE, group.protocol_type, group.protocol_name,
                                                          member.assignment)))
        schedule_next_heartbeat(step, group, member)
    else:
        raise IllegalStateError(f"SyncGroup reached dead group {group.group_id}")


def complete_assignment(step: Step, group: GroupMetadata, generation_id: int, assignment: Mapping[str, bytes]) -> None:
    """The leader's assignment is in the log: hand it to every parked SyncGroup, the group is Stable (if it
    is still that generation's CompletingRebalance)."""
    if not group.is_state(GroupState.COMPLETING_REBALANCE) or group.generation_id != generation_id:
        return
    for m_id, data in assignment.items():
        group.get(m_id).assignment = data
    propagate_assignment(step, group, NONE)
    group.transition_to(GroupState.STABLE, step.now)


def _validate_sync_group(group: GroupMetadata, request: SyncGroupParams) -> int | None:
    error = validate_member_generation(group, request.member_id, request.group_instance_id, request.generation_id)
    if error is not None:
        return error
    if request.protocol_type is not None and request.protocol_type != group.protocol_type:
        return InconsistentGroupProtocolError.code
    if request.protocol_name is not None and request.protocol_name != group.protocol_name:
        return InconsistentGroupProtocolError.code
    return None
