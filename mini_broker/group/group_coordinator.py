"""The classic-protocol group coordinator's driver (Kafka: ``kafka.coordinator.group.GroupCoordinator``).

It answers JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, TxnOffsetCommit, OffsetFetch,
ListGroups, DescribeGroups, DeleteGroups and OffsetDelete for the groups of the ``__consumer_offsets`` partitions
this broker serves (each broker owns one; see docs/ARCHITECTURE.md "mini_broker group coordinator" for the
per-state answers): a single broker serves every partition; a cluster broker serves a group only while it leads
the group's partition (``partition_for(group_id)``): NOT_COORDINATOR otherwise, COORDINATOR_LOAD_IN_PROGRESS while
that partition loads. That lifecycle is the :class:`~mini_broker.coordinator.runtime.CoordinatorRuntime`'s
(``runtime``), which hosts this coordinator (:meth:`GroupCoordinator.load` / :meth:`~GroupCoordinator.on_loaded` /
:meth:`~GroupCoordinator.unload`, per partition).

The decisions are made by the sans-IO core (:mod:`group_join`, :mod:`group_heartbeat`, :mod:`group_offsets`,
:mod:`group_rebalance`): a typed request and ``now`` in, state changed, effects out
(:mod:`group_effects`). This driver owns what is not pure: the group map and its locks, the coordinator's
status, the clock, the two purgatories that time the core's timeouts (``Heartbeat``: sessions and pending
members; ``Rebalance``: join rounds and sync phases, each a :class:`DelayedGroupTimeout`), the replay of the
offsets log (:class:`GroupMetadataManager`) and the periodic offset expiry. :meth:`_run` calls the core under
the group's lock and applies its effects in order; an append effect becomes a
:class:`~mini_broker.coordinator.result.CoordinatorResult` (:meth:`GroupCoordinator.write_result`: the records
and what they change once appended and once the ISR has them) which the runtime writes, still under the group's
lock. This coordinator never appends to ``__consumer_offsets`` itself.

Locks: ``_groups_lock`` guards only the group map. Each group has one RLock (``group.lock``), which its
timeouts share. Order: group lock -> groups-map lock -> log lock. A group lock is never held while taking
another group's lock; timer threads take a group lock with no other lock held.

Answers: JoinGroup and SyncGroup answer through reply callbacks (maybe later, from the timer thread or
another handler thread, always under the group lock); the other calls return their result.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from mini_broker.coordinator.result import CoordinatorResult
from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.group import group_heartbeat, group_join, group_migration, group_offsets, group_rebalance
from mini_broker.group.delayed_group_timeout import DelayedGroupTimeout
from mini_broker.group.group_config import GroupConfig
from mini_broker.group.group_effects import (
    AppendAssignment,
    AppendGroupMetadata,
    AppendOffsetCommits,
    AppendTxnOffsetCommits,
    CancelTimeout,
    Effect,
    HeartbeatTimeout,
    JoinTimeout,
    RemoveGroup,
    ScheduleTimeout,
    SendJoinResponse,
    SendSyncResponse,
    Step,
    Timeout,
    WriteEffect,
)
from mini_broker.group.group_metadata import (
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_MEMBER_ID,
    GroupMetadata,
    GroupSummary,
)
from mini_broker.group.group_metadata_manager import (
    GROUP_METADATA_TOPIC_NAME,
    GroupMetadataManager,
    LoadedGroup,
    group_metadata_key,
    group_metadata_records,
    group_metadata_value,
    offset_commit_records,
    tombstone_records,
    txn_offset_commit_records,
)
from mini_broker.group.group_requests import (
    NONE,
    FetchedOffset,
    HeartbeatParams,
    JoinCallback,
    JoinGroupParams,
    JoinGroupResult,
    LeaveGroupParams,
    LeaveMemberResult,
    OffsetCommitParams,
    SyncCallback,
    SyncGroupParams,
    SyncGroupResult,
    TxnOffsetCommitParams,
)
from mini_broker.group.group_state import GroupState
from mini_broker.group.member_metadata import MemberMetadata
from mini_broker.group.migration_snapshot import ClassicGroupSnapshot
from mini_broker.purgatory.delayed_operation import DelayedOperation
from mini_broker.purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from mini_broker.purgatory.keys import GroupJoinKey, GroupSyncKey, MemberKey
from mini_broker.timer.system_timer import SystemTimer
from pykafka_client.errors import (
    GroupIdNotFoundError,
    IllegalGenerationError,
    InvalidGroupIdError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    UnknownMemberIdError,
)
from pykafka_client.utils.time import SYSTEM_TIME, Time

if TYPE_CHECKING:
    from mini_broker.group.consumer.coordinator import ConsumerGroupCoordinator
    from mini_broker.metrics import BrokerMetrics
    from mini_broker.share.coordinator import ShareGroupCoordinator

_log = logging.getLogger(__name__)

R = TypeVar("R")
P = ParamSpec("P")


def restore_group(group_id: str, loaded: LoadedGroup, now: int) -> GroupMetadata:
    """A group as the offsets log left it: with members it comes back Stable with its generation, leader and
    assignments (Empty otherwise), with its committed offsets."""
    stored = loaded.group
    if stored is None:
        group = GroupMetadata(group_id, GroupState.EMPTY, now)
    else:
        state = GroupState.STABLE if stored.members else GroupState.EMPTY
        group = GroupMetadata(group_id, state, stored.current_state_timestamp)
        group.protocol_type = stored.protocol_type
        group.generation_id = stored.generation_id
        group.protocol_name = stored.protocol_name
        for sm in stored.members:
            member = MemberMetadata(sm.member_id, sm.group_instance_id, sm.client_id, sm.client_host,
                                    sm.rebalance_timeout_ms, sm.session_timeout_ms, stored.protocol_type or "",
                                    [(stored.protocol_name or "", sm.subscription)])
            member.assignment = sm.assignment
            group.add(member)
        group.leader_id = stored.leader_id if stored.leader_id in group.members else group.leader_id
        if stored.protocol_type == CONSUMER_PROTOCOL_TYPE and stored.members:
            group.subscribed_topics = group.compute_subscribed_topics()
    group.offsets.update(loaded.offsets)
    for producer_id, offsets in loaded.pending_txn_offsets.items():
        group.pending_txn_offsets[producer_id] = dict(offsets)
    for producer_id, partitions in loaded.superseded_txn_offsets.items():
        if partitions:
            group.superseded_txn_offsets[producer_id] = set(partitions)
    return group


class GroupCoordinator:
    """Coordinates every classic group of this broker. Call :meth:`startup` before use.

    ``timer_run_inline`` with ``reaper_enabled=False`` makes the purgatories deterministic for tests with a
    ``MockTime``: nothing expires until :meth:`advance_clock` is called, and expired operations run on the
    calling thread.
    """

    def __init__(self, config: GroupConfig, manager: GroupMetadataManager, time: Time = SYSTEM_TIME, *,
                 broker_id: int = 0, timer_run_inline: bool = False, reaper_enabled: bool = True) -> None:
        self.config = config
        self.manager = manager
        self.time = time
        self._groups: dict[str, GroupMetadata] = {}
        self._groups_lock = threading.Lock()

        def timer(name: str) -> SystemTimer:
            return SystemTimer(name, time, start_ms=time.hi_res_clock_ms(), run_inline=timer_run_inline)

        self.heartbeat_purgatory: DelayedOperationPurgatory[DelayedOperation] = DelayedOperationPurgatory(
            "Heartbeat", timer("Heartbeat"), broker_id, reaper_enabled=reaper_enabled, time=time)
        self.rebalance_purgatory: DelayedOperationPurgatory[DelayedOperation] = DelayedOperationPurgatory(
            "Rebalance", timer("Rebalance"), broker_id, reaper_enabled=reaper_enabled, time=time)
        #: the lifecycle on ``__consumer_offsets`` (election, load, resignation), its appends and the periodic
        #: tasks and replication continuations (on the heartbeat purgatory's timer thread)
        self.runtime = CoordinatorRuntime(GROUP_METADATA_TOPIC_NAME, manager.partitions, self,
                                          self.heartbeat_purgatory.timeout_timer)
        #: KIP-848 consumer groups (mini_broker/group/consumer), hosted on the same runtime; set by the broker.
        #: The group APIs route a group id to them or to this classic coordinator by the group's type.
        self._consumer_groups: ConsumerGroupCoordinator | None = None
        #: KIP-932 share groups on this runtime (set by the broker): they replay their records at each load
        self.share_groups: ShareGroupCoordinator | None = None

    @property
    def consumer_groups(self) -> ConsumerGroupCoordinator | None:
        return self._consumer_groups

    @consumer_groups.setter
    def consumer_groups(self, consumer_groups: ConsumerGroupCoordinator | None) -> None:
        """Host ``consumer_groups``; they reach back here for the online migration (KIP-848)."""
        self._consumer_groups = consumer_groups
        if consumer_groups is not None:
            consumer_groups.classic_groups = self

    # -- lifecycle ----------------------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        return self.runtime.is_active

    @property
    def is_running(self) -> bool:
        return self.runtime.is_running

    def startup(self, follow_partition_leadership: bool = False) -> None:
        """Start the periodic offset expiry and serve: a single broker replays its offsets log now; with
        ``follow_partition_leadership`` (a cluster broker) nothing is loaded and every group request gets
        NOT_COORDINATOR until the runtime's election."""
        self.runtime.startup(follow_partition_leadership)
        self.runtime.schedule_periodic(self.cleanup_group_metadata, self.config.offsets_retention_check_interval_ms,
                                       "offsets cleanup")

    # -- HostedCoordinator --------------------------------------------------------------------------------
    def load(self, coordinator_epoch: int | None, partition: int) -> int:
        """Replay ``__consumer_offsets`` partition ``partition`` into groups (the runtime serves them once
        :meth:`on_loaded` ran); the groups of the other partitions stay as they are."""
        now = self.time.milliseconds()
        replayed = self.manager.load(self.runtime.get_partition(partition))
        # an id with only share-group records (or nothing live left: a deleted share group) is no classic group
        groups = {group_id: restore_group(group_id, loaded, now) for group_id, loaded in replayed.items()
                  if loaded.group is not None or loaded.offsets or loaded.pending_txn_offsets
                  or loaded.consumer_records}
        with self._groups_lock:
            self._groups.update(groups)
        if self.consumer_groups is not None:  # KIP-848 consumer groups replay their own records
            self.consumer_groups.load({k: v for loaded in replayed.values() for k, v in loaded.consumer_records.items()})
        if self.share_groups is not None:  # KIP-932 share groups likewise
            self.share_groups.load({k: v for loaded in replayed.values() for k, v in loaded.share_records.items()})
        return len(groups)

    def _in_partition(self, partition: int) -> Callable[[str], bool]:
        return lambda group_id: self.runtime.partition_for(group_id) == partition

    def on_loaded(self, partition: int) -> None:
        """Start the session timers of the loaded members of ``partition``'s groups."""
        in_partition = self._in_partition(partition)
        for group in self._all_groups():
            if not in_partition(group.group_id):
                continue
            with group.lock:
                for member in list(group.members.values()):
                    self._run(group, group_rebalance.schedule_next_heartbeat, group, member)

    def unload(self, partition: int) -> None:
        """Drop the groups of ``partition``; their parked joins and syncs are answered NOT_COORDINATOR."""
        in_partition = self._in_partition(partition)
        with self._groups_lock:
            groups = [g for g in self._groups.values() if in_partition(g.group_id)]
            for group in groups:
                del self._groups[group.group_id]
        if self.consumer_groups is not None:  # KIP-848 consumer groups go with the partition's state
            self.consumer_groups.unload(in_partition)
        if self.share_groups is not None:
            self.share_groups.unload(in_partition)
        for group in groups:
            with group.lock:
                self._run(group, group_rebalance.unload_group, group)

    def shutdown(self) -> None:
        """Stop serving (COORDINATOR_NOT_AVAILABLE), stop the purgatories, close the offsets log."""
        self.runtime.shutdown()
        self.heartbeat_purgatory.shutdown()
        self.rebalance_purgatory.shutdown()
        self.manager.close()

    def register_metrics(self, metrics: BrokerMetrics) -> None:
        """Gauges (Kafka MBean names flattened): the two purgatories' sizes, groups per state, offsets."""
        for purgatory in (self.heartbeat_purgatory, self.rebalance_purgatory):
            p = purgatory
            metrics.gauge("kafka_server_DelayedOperationPurgatory_PurgatorySize",
                          lambda p=p: float(p.watched), delayedOperation=p.purgatory_name)  # type: ignore[misc]
            metrics.gauge("kafka_server_DelayedOperationPurgatory_NumDelayedOperations",
                          lambda p=p: float(p.num_delayed), delayedOperation=p.purgatory_name)  # type: ignore[misc]
        metrics.gauge("kafka_coordinator_group_GroupMetadataManager_NumGroups", lambda: float(len(self._all_groups())))
        metrics.gauge("kafka_coordinator_group_GroupMetadataManager_NumOffsets",
                      lambda: float(sum(len(g.offsets) for g in self._all_groups())))
        for state in GroupState:
            metrics.gauge(f"kafka_coordinator_group_GroupMetadataManager_NumGroups{state.value}",
                          lambda st=state: float(sum(g.state is st for g in self._all_groups())))  # type: ignore[misc]

    def advance_clock(self) -> None:
        """Expire what is due on both purgatories now (tests with a MockTime and inline timers)."""
        while self.heartbeat_purgatory.timeout_timer.advance_clock(0) | \
                self.rebalance_purgatory.timeout_timer.advance_clock(0):
            pass

    # -- group map -----------------------------------------------------------------------------------------
    def get_group(self, group_id: str) -> GroupMetadata | None:
        with self._groups_lock:
            return self._groups.get(group_id)

    def _all_groups(self) -> list[GroupMetadata]:
        with self._groups_lock:
            return list(self._groups.values())

    def _get_or_maybe_create_group(self, group_id: str, create: bool) -> GroupMetadata | None:
        with self._groups_lock:
            group = self._groups.get(group_id)
            if group is None and create:
                group = GroupMetadata(group_id, GroupState.EMPTY, self.time.milliseconds())
                self._groups[group_id] = group
            return group

    def _remove_group(self, group: GroupMetadata) -> None:
        with self._groups_lock:
            if self._groups.get(group.group_id) is group:
                del self._groups[group.group_id]

    def _validate_group_status(self, group_id: str, allow_empty_id: bool = False) -> int | None:
        if not group_id and not allow_empty_id:
            return InvalidGroupIdError.code
        return self.runtime.error_for(group_id)

    # -- driving the core ---------------------------------------------------------------------------------
    def _run(self, group: GroupMetadata, call: Callable[Concatenate[Step, P], R], *args: P.args,
             **kwargs: P.kwargs) -> R:
        """``call(step, *args)`` into the core for ``group`` (whose lock the caller holds), then apply what
        it emitted, in order."""
        step = Step(self.config, self.time.milliseconds())
        result = call(step, *args, **kwargs)
        for effect in step.effects:
            self._apply(group, effect, step.now)
        return result

    def _apply(self, group: GroupMetadata, effect: Effect, now: int) -> None:
        if isinstance(effect, SendJoinResponse):
            effect.reply(effect.result)
        elif isinstance(effect, SendSyncResponse):
            effect.reply(effect.result)
        elif isinstance(effect, ScheduleTimeout):
            purgatory, key = self._timer_slot(effect.timeout)
            purgatory.cancel_for_key(key)
            purgatory.try_complete_else_watch(DelayedGroupTimeout(self, group, effect.timeout, effect.delay_ms),
                                              [key])
        elif isinstance(effect, CancelTimeout):
            purgatory, key = self._timer_slot(effect.timeout)
            purgatory.cancel_for_key(key)
        elif isinstance(effect, RemoveGroup):
            self._remove_group(group)
        else:
            self.runtime.write(self.write_result(group, effect, now))

    def write_result(self, group: GroupMetadata, effect: WriteEffect, now: int) -> CoordinatorResult[None]:
        """The write of one of the core's append effects for ``group`` (sans-IO: nothing is appended here): its
        ``__consumer_offsets`` records and what they change once appended / once the ISR has them. No error
        path: a failed append raises out of the operation, as before the runtime wrote (OffsetCommit and
        TxnOffsetCommit answer NOT_COORDINATOR for a resignation; see their handlers)."""
        if isinstance(effect, AppendOffsetCommits):
            return self._offset_commit_result(group, effect, now)
        if isinstance(effect, AppendTxnOffsetCommits):
            return self._txn_offset_commit_result(group, effect, now)
        if isinstance(effect, AppendGroupMetadata):
            return CoordinatorResult(group_metadata_records(effect.group_id, effect.group, now), None)
        if isinstance(effect, AppendAssignment):
            assignment = effect

            def hand_out() -> None:  # Kafka hands the assignment out in storeGroup's callback
                self._run(group, group_join.complete_assignment, group, assignment.generation_id,
                          assignment.assignment)

            return CoordinatorResult(group_metadata_records(effect.group_id, effect.group, now), None,
                                     on_appended=hand_out)
        return CoordinatorResult(tombstone_records(effect.group_id, effect.offsets, effect.group_too, now), None)

    @staticmethod
    def _offset_commit_result(group: GroupMetadata, effect: AppendOffsetCommits,
                              now: int) -> CoordinatorResult[None]:
        """Appended commit records are pending (Kafka ``pendingOffsetCommits``) until the ISR has them, then the
        group's offsets, so that nothing a failover may lose is ever read; on a single broker both happen at once.
        The wait's end runs on the runtime's timer thread (never under the purgatory op's lock) and takes the
        group lock."""
        offsets = effect.offsets
        staged: list[int] = []

        def appended() -> None:
            staged.append(group_offsets.stage_offset_commit(group, offsets))

        def durable(error: int) -> None:
            with group.lock:
                group_offsets.complete_staged_offset_commit(group, staged[0], offsets, error == 0)

        return CoordinatorResult(offset_commit_records(effect.group_id, offsets, now), None, on_appended=appended,
                                 on_durable=durable)

    @staticmethod
    def _txn_offset_commit_result(group: GroupMetadata, effect: AppendTxnOffsetCommits,
                                  now: int) -> CoordinatorResult[None]:
        """Appended transactional offsets are pending until the transaction's marker; if the ISR never gets
        their records they stop being pending (Kafka ``failPendingTxnOffsetCommit``; the client was told to
        retry)."""
        producer_id, offsets = effect.producer_id, effect.offsets

        def appended() -> None:
            group_offsets.complete_txn_offset_commit(group, producer_id, offsets)

        def durable(error: int) -> None:
            if error != 0:
                with group.lock:
                    group_offsets.fail_pending_txn_offsets(group, producer_id, offsets)

        records = txn_offset_commit_records(effect.group_id, producer_id, effect.producer_epoch, offsets, now)
        return CoordinatorResult(records, None, on_appended=appended, on_durable=durable)

    def _timer_slot(self, timeout: Timeout) -> tuple[DelayedOperationPurgatory[DelayedOperation], object]:
        if isinstance(timeout, HeartbeatTimeout):
            return self.heartbeat_purgatory, MemberKey(timeout.group_id, timeout.member_id)
        if isinstance(timeout, JoinTimeout):
            return self.rebalance_purgatory, GroupJoinKey(timeout.group_id)
        return self.rebalance_purgatory, GroupSyncKey(timeout.group_id)

    def on_timeout(self, group: GroupMetadata, timeout: Timeout) -> None:
        """A :class:`DelayedGroupTimeout` fired (timer thread, or the caller of :meth:`advance_clock`)."""
        with group.lock:
            if self.get_group(group.group_id) is not group:  # unloaded since it was armed
                return
            self._run(group, group_rebalance.on_timeout, group, timeout)

    # -- JoinGroup / SyncGroup ----------------------------------------------------------------------------
    def handle_join_group(self, request: JoinGroupParams, reply: JoinCallback) -> None:
        """JoinGroup. Validation order: group id / coordinator status, session timeout range, unknown group
        with a member id, then the core (``group_join.join_group``)."""
        error = self._validate_group_status(request.group_id)
        if error is None:
            error = group_join.validate_join(request, self.config)
        if error is not None:
            reply(JoinGroupResult(request.member_id, error))
            return
        group = self._get_or_maybe_create_group(request.group_id, request.member_id == UNKNOWN_MEMBER_ID)
        if group is None:
            reply(JoinGroupResult(request.member_id, UnknownMemberIdError.code))
            return
        with group.lock:
            self._run(group, group_join.join_group, group, request, reply)

    def validate_join(self, request: JoinGroupParams) -> int | None:
        """The checks of a JoinGroup before its group is looked at (coordinator status, session timeout range)."""
        error = self._validate_group_status(request.group_id)
        return error if error is not None else group_join.validate_join(request, self.config)

    def handle_sync_group(self, request: SyncGroupParams, reply: SyncCallback) -> None:
        error = self._validate_group_status(request.group_id)
        group = None if error is not None else self.get_group(request.group_id)
        if group is None:
            reply(SyncGroupResult(UnknownMemberIdError.code if error is None else error))
            return
        with group.lock:
            self._run(group, group_join.sync_group, group, request, reply)

    # -- Heartbeat / LeaveGroup ---------------------------------------------------------------------------
    def handle_heartbeat(self, request: HeartbeatParams) -> int:
        error = self._validate_group_status(request.group_id)
        if error is not None:
            return error
        group = self.get_group(request.group_id)
        if group is None:
            return UnknownMemberIdError.code
        with group.lock:
            return self._run(group, group_heartbeat.heartbeat, group, request)

    def handle_leave_group(self, request: LeaveGroupParams) -> tuple[int, list[LeaveMemberResult]]:
        """(top-level error, per-member results)."""
        error = self._validate_group_status(request.group_id)
        if error is not None:
            return error, []
        group = self.get_group(request.group_id)
        if group is None:
            return NONE, [LeaveMemberResult(m.member_id, m.group_instance_id, UnknownMemberIdError.code)
                          for m in request.members]
        with group.lock:
            return self._run(group, group_heartbeat.leave_group, group, list(request.members))

    # -- offsets -----------------------------------------------------------------------------------------
    def handle_commit_offsets(self, request: OffsetCommitParams) -> dict[tuple[str, int], int]:
        """Per-partition error codes (see ``group_offsets.commit_offsets``)."""
        error = self._validate_group_status(request.group_id, allow_empty_id=True)
        if error is not None:
            return {tp: error for tp in request.offsets}
        group = self.get_group(request.group_id)
        if group is None:
            if request.generation_id >= 0:
                return {tp: IllegalGenerationError.code for tp in request.offsets}
            group = self._get_or_maybe_create_group(request.group_id, True)
            assert group is not None
        with group.lock:
            try:
                return self._run(group, group_offsets.commit_offsets, group, request)
            except NotLeaderOrFollowerError:
                return {tp: NotCoordinatorError.code for tp in request.offsets}  # resigned after the check

    def handle_txn_commit_offsets(self, request: TxnOffsetCommitParams) -> dict[tuple[str, int], int]:
        """Per-partition error codes (see ``group_offsets.commit_txn_offsets``); a group the coordinator does
        not know is created Empty, as Kafka does for transactional commits."""
        error = self._validate_group_status(request.group_id)
        if error is not None:
            return {tp: error for tp in request.offsets}
        group = self._get_or_maybe_create_group(request.group_id, True)
        assert group is not None
        with group.lock:
            try:
                return self._run(group, group_offsets.commit_txn_offsets, group, request)
            except NotLeaderOrFollowerError:
                return {tp: NotCoordinatorError.code for tp in request.offsets}  # resigned after the check

    def write_txn_marker(self, producer_id: int, committed: bool, partitions: Sequence[int], records: bytes) -> None:
        """The WriteTxnMarkers path for ``__consumer_offsets``: append the marker control batch to each of
        ``partitions`` (raises as the log does, and NOT_LEADER_OR_FOLLOWER on a cluster broker not leading one),
        then materialize or drop the producer's pending offsets in the groups of that partition (on a cluster broker
        once the ISR has the marker; if it never does, the transaction coordinator writes the marker again)."""
        if self.runtime.follows_partition_leadership:
            not_led = [p for p in partitions if p not in self.runtime.active_partitions]
            if not_led:
                raise NotLeaderOrFollowerError(f"this broker does not lead __consumer_offsets partitions {not_led}; "
                                               "send the marker to their leader")
        for partition in partitions:
            def replicated(error: int, partition: int = partition) -> None:
                if error == 0:  # Kafka: the cache changes in the acks=-1 append's callback
                    self.on_transaction_completed(producer_id, committed, [partition])

            self.runtime.write(CoordinatorResult(records, None, on_durable=replicated), partition)

    def on_transaction_completed(self, producer_id: int, committed: bool, partitions: Sequence[int]) -> None:
        """:class:`~mini_broker.transaction.seams.TxnOffsetsListener`: every group of the ``__consumer_offsets``
        ``partitions`` applies the marker to its pending transactional offsets."""
        wanted = set(partitions)
        for group in self._all_groups():
            if self.runtime.partition_for(group.group_id) not in wanted:
                continue
            with group.lock:
                group_offsets.complete_pending_txn_offsets(group, producer_id, committed)

    def handle_fetch_offsets(self, group_id: str, partitions: Sequence[tuple[str, int]] | None,
                             require_stable: bool = False) -> tuple[int, dict[tuple[str, int], FetchedOffset]]:
        """(group error, offsets). ``partitions`` None: every committed offset of the group. Unknown groups and
        partitions without a commit give offset -1; ``require_stable``: UNSTABLE_OFFSET_COMMIT for partitions
        with offsets pending in a transaction."""
        error = self._validate_group_status(group_id, allow_empty_id=True)
        if error is not None:
            return error, {}
        group = self.get_group(group_id)
        if group is None:
            return NONE, group_offsets.fetch_offsets(None, partitions)
        with group.lock:
            return NONE, group_offsets.fetch_offsets(group, partitions, require_stable)

    # -- admin --------------------------------------------------------------------------------------------
    def handle_list_groups(self, states: Iterable[str] = ()) -> tuple[int, list[tuple[str, str, str]]]:
        """(error, [(group id, protocol type, state)]) of the groups of every partition served here;
        ``states`` filters case-insensitively. COORDINATOR_LOAD_IN_PROGRESS while a partition loads (Kafka)."""
        if self.runtime.leads_no_partition:
            return NONE, []  # a cluster broker lists the groups of the partitions it leads: none
        if not self.runtime.is_active or self.runtime.is_loading:
            return self.runtime.inactive_error(), []
        wanted = {s.lower() for s in states}
        out: list[tuple[str, str, str]] = []
        for g in self._all_groups():
            with g.lock:
                if g.is_state(GroupState.DEAD):
                    continue
                if wanted and g.state.value.lower() not in wanted:
                    continue
                out.append((g.group_id, g.protocol_type or "", g.state.value))
        return NONE, out

    def handle_describe_group(self, group_id: str) -> tuple[int, GroupSummary]:
        error = self._validate_group_status(group_id, allow_empty_id=True)
        if error is not None:
            return error, GroupSummary("", "", "", [])
        group = self.get_group(group_id)
        if group is None:
            return NONE, GroupSummary(GroupState.DEAD.value, "", "", [])
        with group.lock:
            return NONE, group.summary()

    def handle_delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        """Empty groups are deleted with their offsets; others get NON_EMPTY_GROUP, unknown GROUP_ID_NOT_FOUND."""
        out: dict[str, int] = {}
        for group_id in group_ids:
            error = self._validate_group_status(group_id, allow_empty_id=True)
            group = None if error is not None else self.get_group(group_id)
            if group is None:
                out[group_id] = GroupIdNotFoundError.code if error is None else error
                continue
            with group.lock:
                out[group_id] = self._run(group, group_offsets.delete_group, group)
        return out

    def handle_delete_offsets(self, group_id: str,
                              partitions: Sequence[tuple[str, int]]) -> tuple[int, dict[tuple[str, int], int]]:
        """(group error, per-partition errors); see ``group_offsets.delete_offsets``."""
        error = self._validate_group_status(group_id)
        if error is not None:
            return error, {}
        group = self.get_group(group_id)
        if group is None:
            return GroupIdNotFoundError.code, {}
        with group.lock:
            return self._run(group, group_offsets.delete_offsets, group, partitions)

    # -- KIP-848 online migration (the consumer groups call these, holding their own lock) -------------------
    @property
    def classic_max_size(self) -> int:
        """``group.max.size``: a consumer group larger than this is not downgraded."""
        return self.config.group_max_size

    def has_members(self, group_id: str) -> bool:
        group = self.get_group(group_id)
        if group is None:
            return False
        with group.lock:
            return not group.is_empty() and not group.is_state(GroupState.DEAD)

    def hand_over_for_upgrade(self, group_id: str, max_size: int) -> ClassicGroupSnapshot | str | None:
        """Empty the classic group ``group_id`` for a consumer group to replace it (its offsets stay here): its
        snapshot, carrying the group's new record for the consumer group to append with its own (one batch);
        None when it has no members (nothing to convert); a string saying why it cannot be upgraded."""
        group = self.get_group(group_id)
        if group is None:
            return None
        with group.lock:
            if group.is_empty() or group.is_state(GroupState.DEAD):
                return None
            why = group_migration.upgrade_error(group, max_size)
            if why is not None:
                return why
            step = Step(self.config, self.time.milliseconds())
            snapshot = group_migration.hand_over(step, group)
            stored: list[tuple[bytes, bytes | None]] = []
            for effect in step.effects:
                if isinstance(effect, AppendGroupMetadata):  # written by the consumer group, with its records
                    stored.append((group_metadata_key(effect.group_id), group_metadata_value(effect.group)))
                else:
                    self._apply(group, effect, step.now)
            return replace(snapshot, records=tuple(stored))

    def adopt_downgraded(self, snapshot: ClassicGroupSnapshot, preceding: Sequence[tuple[bytes, bytes | None]] = (),
                         then: Callable[[int], None] = lambda error: None) -> None:
        """The consumer group ``snapshot.group_id`` downgraded: its classic members form this classic group. The
        group's record is appended in one batch after ``preceding`` (the consumer group's tombstones), so that the
        conversion is one atomic write, as Kafka's; ``then(0)`` once the ISR has it, ``then(NOT_COORDINATOR)``
        when it loses it. Raises when that append fails, the classic group put back as it was (Empty, or absent)."""
        existed = self.get_group(snapshot.group_id) is not None
        group = self._get_or_maybe_create_group(snapshot.group_id, True)
        assert group is not None
        with group.lock:
            before = (group.generation_id, group.protocol_name, group.protocol_type)
            step = Step(self.config, self.time.milliseconds())
            group_migration.adopt(step, group, snapshot)
            for effect in step.effects:
                if preceding and isinstance(effect, AppendGroupMetadata):
                    try:
                        self.runtime.write(CoordinatorResult(
                            group_metadata_records(effect.group_id, effect.group, step.now, preceding), None,
                            on_durable=lambda error: then(int(NotCoordinatorError.code) if error else 0)))
                    except Exception:
                        group_migration.undo_adopt(group, *before, step.now)
                        if not existed:
                            self._remove_group(group)
                        raise
                    preceding = ()
                else:
                    self._apply(group, effect, step.now)
            assert not preceding, "adopting a downgraded group stores it"

    def cleanup_group_metadata(self) -> int:
        """Expire offsets past ``offsets.retention.minutes``; drop Empty groups left without offsets. Returns
        the number of offsets removed. A KIP-848 consumer group's offsets (kept here by an Empty group of its id)
        expire by Kafka's consumer-group rule (never for a topic it subscribes to); an Empty consumer group left
        without offsets is deleted, as Kafka deletes it."""
        total = 0
        consumer_groups = self._consumer_groups
        for group in self._all_groups():
            topics = None if consumer_groups is None else consumer_groups.subscribed_topics(group.group_id)
            with group.lock:
                total += self._run(group, group_offsets.expire_offsets, group, topics)
        if consumer_groups is not None:
            without_offsets = []
            for group_id in consumer_groups.empty_group_ids():
                holder = self.get_group(group_id)
                if holder is None:
                    without_offsets.append(group_id)
                    continue
                with holder.lock:
                    if not holder.has_offsets():
                        without_offsets.append(group_id)
            if without_offsets:
                consumer_groups.delete_groups(without_offsets)
        return total
