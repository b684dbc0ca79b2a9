"""Committed offsets and group deletion in the sans-IO core (Kafka: ``GroupCoordinator.handleCommitOffsets``,
``handleFetchOffsets``, ``handleDeleteGroups``, ``handleDeleteOffsets`` and the offset expiry of
``GroupMetadataManager.cleanupGroupMetadata``). The driver holds the group's lock.

A commit emits :class:`AppendOffsetCommits`; the offsets become visible (:func:`complete_offset_commit`)
once the driver appended them. Deletions change the group at once and emit tombstones; a group left Empty
without offsets goes Dead and is dropped (:class:`RemoveGroup`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mini_broker.group.group_effects import AppendOffsetCommits, AppendTombstones, RemoveGroup, Step
from mini_broker.group.group_metadata import CONSUMER_PROTOCOL_TYPE, UNKNOWN_MEMBER_ID, GroupMetadata
from mini_broker.group.group_rebalance import schedule_next_heartbeat, validate_current_member
from mini_broker.group.group_requests import (
    NONE,
    CommittedOffset,
    FetchedOffset,
    OffsetCommitParams,
    TopicPartition,
)
from mini_broker.group.group_state import GroupState
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    GroupNotEmptyError,
    GroupSubscribedToTopicError,
    IllegalGenerationError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)


# -- OffsetCommit / OffsetFetch ---------------------------------------------------------------------------
def commit_offsets(step: Step, group: GroupMetadata, request: OffsetCommitParams) -> dict[TopicPartition, int]:
    """Per-partition error codes. Generation -1 with no member id is a manual (admin) commit, allowed
    while the group is Empty; members commit with their current generation (Stable, PreparingRebalance),
    get REBALANCE_IN_PROGRESS in CompletingRebalance."""
    error = _validate_offset_commit(group, request)
    if error is not None:
        return {tp: error for tp in request.offsets}
    state = group.state
    if state is GroupState.COMPLETING_REBALANCE:
        return {tp: RebalanceInProgressError.code for tp in request.offsets}
    if state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
        schedule_next_heartbeat(step, group, group.get(request.member_id))
    errors: dict[TopicPartition, int] = {}
    valid: dict[TopicPartition, CommittedOffset] = {}
    for tp, om in request.offsets.items():
        if len(om.metadata.encode()) > step.config.offset_metadata_max_bytes:
            errors[tp] = OffsetMetadataTooLargeError.code
        else:
            valid[tp] = om
            errors[tp] = NONE
    if valid:
        step.emit(AppendOffsetCommits(group.group_id, valid))
    return errors


def _validate_offset_commit(group: GroupMetadata, request: OffsetCommitParams) -> int | None:
    if group.is_state(GroupState.DEAD):
        return CoordinatorNotAvailableError.code
    if request.generation_id >= 0 or request.member_id != UNKNOWN_MEMBER_ID or request.group_instance_id is not None:
        error = validate_current_member(group, request.member_id, request.group_instance_id)
        if error is not None:
            return error
        if request.generation_id != group.generation_id:
            return IllegalGenerationError.code
        return None
    if not group.is_state(GroupState.EMPTY):
        # Only members may commit to a group with members.
        return UnknownMemberIdError.code
    return None


def complete_offset_commit(group: GroupMetadata, offsets: Mapping[TopicPartition, CommittedOffset]) -> None:
    """The commit records are in the log: the offsets are now the group's."""
    group.offsets.update(offsets)


def fetch_offsets(group: GroupMetadata | None,
                  partitions: Sequence[TopicPartition] | None) -> dict[TopicPartition, FetchedOffset]:
    """``partitions`` None: every committed offset of the group. Unknown groups and partitions without a
    commit give offset -1."""
    committed: dict[TopicPartition, CommittedOffset] = {}
    if group is not None and not group.is_state(GroupState.DEAD):
        committed = dict(group.offsets)
    wanted = list(committed) if partitions is None else list(partitions)
    out: dict[TopicPartition, FetchedOffset] = {}
    for tp in wanted:
        om = committed.get(tp)
        out[tp] = FetchedOffset(-1, -1, "") if om is None else FetchedOffset(om.offset, om.leader_epoch, om.metadata)
    return out


# -- deletion and expiry ----------------------------------------------------------------------------------
def delete_group(step: Step, group: GroupMetadata) -> int:
    """Empty groups are deleted with their offsets; others get NON_EMPTY_GROUP (Dead: GROUP_ID_NOT_FOUND)."""
    if group.is_state(GroupState.DEAD):
        return GroupIdNotFoundError.code
    if not group.is_state(GroupState.EMPTY):
        return GroupNotEmptyError.code
    group.transition_to(GroupState.DEAD, step.now)
    step.emit(AppendTombstones(group.group_id, group.remove_all_offsets(), True))
    step.emit(RemoveGroup(group.group_id))
    return NONE


def delete_offsets(step: Step, group: GroupMetadata,
                   partitions: Iterable[TopicPartition]) -> tuple[int, dict[TopicPartition, int]]:
    """(group error, per-partition errors): Empty groups lose the offsets; a consumer group with members
    keeps those of subscribed topics (GROUP_SUBSCRIBED_TO_TOPIC); other non-empty groups NON_EMPTY_GROUP."""
    errors: dict[TopicPartition, int] = {}
    state = group.state
    if state is GroupState.DEAD:
        return GroupIdNotFoundError.code, {}
    if state is GroupState.EMPTY:
        eligible = list(partitions)
    elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
        eligible = []
        for tp in partitions:
            if group.is_subscribed_to_topic(tp[0]):
                errors[tp] = GroupSubscribedToTopicError.code
            else:
                eligible.append(tp)
    else:
        return GroupNotEmptyError.code, {}
    if eligible:
        step.emit(AppendTombstones(group.group_id, group.remove_offsets(eligible), False))
        for tp in eligible:
            errors[tp] = NONE
    _maybe_remove_empty_group(step, group)
    return NONE, errors


def expire_offsets(step: Step, group: GroupMetadata) -> int:
    """Offsets past ``offsets.retention.minutes`` (see ``GroupMetadata.remove_expired_offsets``) go; an Empty
    group left without offsets is dropped. Returns the number of offsets removed."""
    if group.is_state(GroupState.DEAD):
        return 0
    removed = group.remove_expired_offsets(step.now, step.config.offsets_retention_ms, group.is_subscribed_to_topic)
    if removed:
        step.emit(AppendTombstones(group.group_id, removed, False))
        _maybe_remove_empty_group(step, group)
    return len(removed)


def _maybe_remove_empty_group(step: Step, group: GroupMetadata) -> None:
    """An Empty group with no offsets left is dropped (Dead), its metadata tombstoned."""
    if group.is_state(GroupState.EMPTY) and not group.has_offsets():
        group.transition_to(GroupState.DEAD, step.now)
        step.emit(AppendTombstones(group.group_id, [], True))
        step.emit(RemoveGroup(group.group_id))
