"""Heartbeat and LeaveGroup in the sans-IO core (Kafka: ``GroupCoordinator.handleHeartbeat`` /
``handleLeaveGroup``). The driver holds the group's lock; session expiry itself is
``group_rebalance.on_timeout``."""

from __future__ import annotations

import logging

from mini_broker.group.group_effects import Step
from mini_broker.group.group_metadata import UNKNOWN_MEMBER_ID, GroupMetadata
from mini_broker.group.group_rebalance import (
    cancel_heartbeat,
    remove_member_and_update_group,
    remove_pending_member_and_update_group,
    schedule_next_heartbeat,
    validate_current_member,
    validate_member_generation,
)
from mini_broker.group.group_requests import NONE, HeartbeatParams, LeaveMember, LeaveMemberResult
from mini_broker.group.group_state import GroupState
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

_log = logging.getLogger("mini_broker.group.group_coordinator")


def heartbeat(step: Step, group: GroupMetadata, request: HeartbeatParams) -> int:
    """The error code to answer; a valid heartbeat restarts the member's session (also while rebalancing,
    when the member is told REBALANCE_IN_PROGRESS)."""
    error = validate_member_generation(group, request.member_id, request.group_instance_id, request.generation_id)
    if error is not None:
        return error
    state = group.state
    if state is GroupState.EMPTY:
        return UnknownMemberIdError.code
    schedule_next_heartbeat(step, group, group.get(request.member_id))
    if state is GroupState.PREPARING_REBALANCE:
        return RebalanceInProgressError.code
    return NONE


def leave_group(step: Step, group: GroupMetadata, leaving: list[LeaveMember]) -> tuple[int, list[LeaveMemberResult]]:
    """(top-level error, per-member results), members in request order."""
    if group.is_state(GroupState.DEAD):
        return CoordinatorNotAvailableError.code, []
    return NONE, [LeaveMemberResult(m.member_id, m.group_instance_id, _leave_one(step, group, m)) for m in leaving]


def _leave_one(step: Step, group: GroupMetadata, m: LeaveMember) -> int:
    if m.member_id == UNKNOWN_MEMBER_ID:
        # Administrative removal by group instance id.
        current = None if m.group_instance_id is None else group.current_static_member_id(m.group_instance_id)
        if current is None:
            return UnknownMemberIdError.code
        _remove_current_member_from_group(step, group, current)
        return NONE
    if group.is_pending_member(m.member_id):
        remove_pending_member_and_update_group(step, group, m.member_id)
        cancel_heartbeat(step, group, m.member_id)
        return NONE
    error = validate_current_member(group, m.member_id, m.group_instance_id)
    if error is not None:
        return error
    _remove_current_member_from_group(step, group, m.member_id)
    return NONE


def _remove_current_member_from_group(step: Step, group: GroupMetadata, member_id: str) -> None:
    member = group.get(member_id)
    _log.info("member %s leaves group %s", member_id, group.group_id)
    remove_member_and_update_group(step, group, member)
    cancel_heartbeat(step, group, member_id)
