"""Committed offsets and group deletion in the sans-IO core (Kafka: ``GroupCoordinator.handleCommitOffsets``,
``handleFetchOffsets``, ``handleDeleteGroups``, ``handleDeleteOffsets`` and the offset expiry of
``GroupMetadataManager.cleanupGroupMetadata``). The driver holds the group's lock.

A commit emits :class:`AppendOffsetCommits`; the offsets become visible (:func:`complete_offset_commit`)
once the driver appended them, or on a cluster broker once the ISR has them: until then they are pending
(:func:`stage_offset_commit`, :func:`complete_staged_offset_commit`), and OffsetFetch with ``require_stable``
answers UNSTABLE_OFFSET_COMMIT for such a partition. Deletions change the group at once and emit tombstones; a
group left Empty without offsets goes Dead and is dropped (:class:`RemoveGroup`).

Transactional commits (TxnOffsetCommit, KIP-98/447) emit :class:`AppendTxnOffsetCommits`; once appended the
offsets are pending under the producer id (invisible to OffsetFetch, which answers UNSTABLE_OFFSET_COMMIT
for such a partition when asked for stable offsets) until :func:`complete_pending_txn_offsets` applies the
transaction's marker: COMMIT makes them the group's offsets, ABORT drops them. A marker for a producer with
nothing pending changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mini_broker.group.group_effects import (
    AppendOffsetCommits,
    AppendTombstones,
    AppendTxnOffsetCommits,
    RemoveGroup,
    Step,
)
from mini_broker.group.group_metadata import CONSUMER_PROTOCOL_TYPE, UNKNOWN_MEMBER_ID, GroupMetadata
from mini_broker.group.group_rebalance import schedule_next_heartbeat, validate_current_member
from mini_broker.group.group_requests import (
    NONE,
    CommittedOffset,
    FetchedOffset,
    OffsetCommitParams,
    TxnOffsetCommitParams,
)
from mini_broker.group.group_state import GroupState
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupIdNotFoundError,
    GroupNotEmptyError,
    GroupSubscribedToTopicError,
    IllegalGenerationError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    UnstableOffsetCommitError,
)


# -- OffsetCommit / OffsetFetch ---------------------------------------------------------------------------
def commit_offsets(step: Step, group: GroupMetadata, request: OffsetCommitParams) -> dict[tuple[str, int], int]:
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
    errors, valid = _check_metadata_sizes(step, request.offsets)
    if valid:
        step.emit(AppendOffsetCommits(group.group_id, valid))
    return errors


def _check_metadata_sizes(step: Step, offsets: Mapping[tuple[str, int], CommittedOffset]
                          ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], CommittedOffset]]:
    """(error per partition, the offsets to write): OFFSET_METADATA_TOO_LARGE over ``offset.metadata.max.bytes``."""
    errors: dict[tuple[str, int], int] = {}
    valid: dict[tuple[str, int], CommittedOffset] = {}
    for tp, om in offsets.items():
        if len(om.metadata.encode()) > step.config.offset_metadata_max_bytes:
            errors[tp] = OffsetMetadataTooLargeError.code
        else:
            valid[tp] = om
            errors[tp] = NONE
    return errors, valid


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


def complete_offset_commit(group: GroupMetadata, offsets: Mapping[tuple[str, int], CommittedOffset]) -> None:
    """The commit records are in the log: the offsets are now the group's (and newer than any transactional
    commit of those partitions still pending)."""
    group.offsets.update(offsets)
    for pid, pending in group.pending_txn_offsets.items():
        newer = [tp for tp in offsets if tp in pending]
        if newer:
            group.superseded_txn_offsets.setdefault(pid, set()).update(newer)


def stage_offset_commit(group: GroupMetadata, offsets: Mapping[tuple[str, int], CommittedOffset]) -> int:
    """The commit records are appended but the ISR does not have them yet (a cluster broker): the offsets are
    pending (Kafka ``prepareOffsetCommit``), invisible to OffsetFetch until :func:`complete_staged_offset_commit`.
    Returns the commit's sequence."""
    group.offset_commit_seq += 1
    seq = group.offset_commit_seq
    for tp, om in offsets.items():
        group.pending_offset_commits[tp] = (seq, om)
    return seq


def complete_staged_offset_commit(group: GroupMetadata, seq: int, offsets: Mapping[tuple[str, int], CommittedOffset],
                                  replicated: bool) -> None:
    """The ISR wait of the staged commit ``seq`` ended (Kafka ``onOffsetCommitAppend`` /
    ``failPendingOffsetWrite``): when ``replicated``, its offsets become the group's, except for partitions whose
    pending commits were removed meanwhile (offsets deleted) or that already hold a later commit; a commit still
    staged by ``seq`` stops being pending either way."""
    applied: dict[tuple[str, int], CommittedOffset] = {}
    for tp, om in offsets.items():
        staged = group.pending_offset_commits.get(tp)
        if staged is None:
            continue
        if replicated and group.offset_commit_seqs.get(tp, 0) < seq:
            applied[tp] = om
            group.offset_commit_seqs[tp] = seq
        if staged[0] == seq:
            del group.pending_offset_commits[tp]
    if applied:
        complete_offset_commit(group, applied)


def commit_txn_offsets(step: Step, group: GroupMetadata, request: TxnOffsetCommitParams) -> dict[tuple[str, int], int]:
    """Per-partition error codes of a TxnOffsetCommit (Kafka ``doTxnCommitOffsets``): a Dead group ->
    COORDINATOR_NOT_AVAILABLE; a static member whose instance id maps to another member -> FENCED_INSTANCE_ID;
    a member id the group does not know -> UNKNOWN_MEMBER_ID; a generation >= 0 other than the group's ->
    ILLEGAL_GENERATION. Without member id and generation (pre-KIP-447 clients) the member is not checked."""
    error = _validate_txn_offset_commit(group, request)
    if error is not None:
        return {tp: error for tp in request.offsets}
    errors, valid = _check_metadata_sizes(step, request.offsets)
    if valid:
        step.emit(AppendTxnOffsetCommits(group.group_id, request.producer_id, request.producer_epoch, valid))
    return errors


def _validate_txn_offset_commit(group: GroupMetadata, request: TxnOffsetCommitParams) -> int | None:
    if group.is_state(GroupState.DEAD):
        return CoordinatorNotAvailableError.code
    if request.group_instance_id is not None:
        current = group.current_static_member_id(request.group_instance_id)
        if current is not None and current != request.member_id:
            return FencedInstanceIdError.code
    if request.member_id != UNKNOWN_MEMBER_ID and not group.has(request.member_id):
        return UnknownMemberIdError.code
    if request.generation_id >= 0 and request.generation_id != group.generation_id:
        return IllegalGenerationError.code
    return None


def complete_txn_offset_commit(group: GroupMetadata, producer_id: int,
                               offsets: Mapping[tuple[str, int], CommittedOffset]) -> None:
    """The transactional commit records are in the log: pending until the producer's marker."""
    group.pending_txn_offsets.setdefault(producer_id, {}).update(offsets)
    group.superseded_txn_offsets.get(producer_id, set()).difference_update(offsets)


def fail_pending_txn_offsets(group: GroupMetadata, producer_id: int,
                             offsets: Mapping[tuple[str, int], CommittedOffset]) -> None:
    """The records of a transactional commit did not reach the ISR: its offsets stop being pending (those a
    later commit of the producer replaced stay)."""
    pending = group.pending_txn_offsets.get(producer_id)
    if pending is None:
        return
    for tp, om in offsets.items():
        if pending.get(tp) is om:
            del pending[tp]
    if not pending:
        del group.pending_txn_offsets[producer_id]


def complete_pending_txn_offsets(group: GroupMetadata, producer_id: int, committed: bool) -> int:
    """The marker of ``producer_id``'s transaction: COMMIT materializes its pending offsets (except those a
    later plain commit of the partition superseded), ABORT drops them. Returns how many were pending."""
    pending = group.pending_txn_offsets.pop(producer_id, None)
    superseded = group.superseded_txn_offsets.pop(producer_id, set())
    if not pending:
        return 0
    if committed:
        group.offsets.update({tp: om for tp, om in pending.items() if tp not in superseded})
    return len(pending)


def fetch_offsets(group: GroupMetadata | None, partitions: Sequence[tuple[str, int]] | None,
                  require_stable: bool = False) -> dict[tuple[str, int], FetchedOffset]:
    """``partitions`` None: every committed offset of the group. Unknown groups and partitions without a
    commit give offset -1. Offsets pending (in a transaction, or not yet on the ISR) are not visible; with
    ``require_stable`` a partition that has some answers UNSTABLE_OFFSET_COMMIT (the client retries)."""
    committed: dict[tuple[str, int], CommittedOffset] = {}
    live = group is not None and not group.is_state(GroupState.DEAD)
    if group is not None and live:
        committed = dict(group.offsets)
    wanted = list(committed) if partitions is None else list(partitions)
    out: dict[tuple[str, int], FetchedOffset] = {}
    for tp in wanted:
        om = committed.get(tp)
        if require_stable and group is not None and live and group.has_pending_offset_commits(tp):
            out[tp] = FetchedOffset(-1, -1, "", UnstableOffsetCommitError.code)
        else:
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
                   partitions: Iterable[tuple[str, int]]) -> tuple[int, dict[tuple[str, int], int]]:
    """(group error, per-partition errors): Empty groups lose the offsets; a consumer group with members
    keeps those of subscribed topics (GROUP_SUBSCRIBED_TO_TOPIC); other non-empty groups NON_EMPTY_GROUP."""
    errors: dict[tuple[str, int], int] = {}
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


def expire_offsets(step: Step, group: GroupMetadata, consumer_group_topics: frozenset[str] | None = None) -> int:
    """Offsets past ``offsets.retention.minutes`` (see ``GroupMetadata.remove_expired_offsets``; with
    ``consumer_group_topics`` the group keeps a KIP-848 consumer group's offsets) go; an Empty group left without
    offsets is dropped. Returns the number of offsets removed."""
    if group.is_state(GroupState.DEAD):
        return 0
    removed = group.remove_expired_offsets(step.now, step.config.offsets_retention_ms, group.is_subscribed_to_topic,
                                           consumer_group_topics)
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
