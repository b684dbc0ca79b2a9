"""The classic-protocol group coordinator (Kafka: ``kafka.coordinator.group.GroupCoordinator``).

It answers JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
DescribeGroups, DeleteGroups and OffsetDelete for every group (a single broker coordinates all of them).
See docs/ARCHITECTURE.md "mini_broker group coordinator" for the per-state answers.

Timing lives in two purgatories on the timing wheel: ``Heartbeat`` (:class:`DelayedHeartbeat`: session
timeouts, KIP-394 pending members, the 5-minute new-member join timeout) and ``Rebalance``
(:class:`DelayedJoin` / :class:`InitialDelayedJoin` under ``GroupJoinKey``, :class:`DelayedSync` under
``GroupSyncKey``).

Locks: the coordinator's ``_groups_lock`` guards only the group map. Each group has one RLock
(``group.lock``), which its delayed operations share. Order: group lock -> groups-map lock -> log lock.
``check_and_complete`` / ``try_complete_else_watch`` are called under a group's lock only with that group's
keys: the operations on them take that same (re-entrant) lock, so no other lock is ever waited for while
holding it. A group lock is never held while taking another group's lock.

Answers: JoinGroup and SyncGroup answer through callbacks (maybe later, from the timer thread or another
handler thread, always under the group lock); the other calls return their result.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from mini_broker.group.delayed_heartbeat import DelayedHeartbeat
from mini_broker.group.delayed_join import DelayedJoin, InitialDelayedJoin
from mini_broker.group.delayed_sync import DelayedSync
from mini_broker.group.group_metadata import (
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_MEMBER_ID,
    GroupMetadata,
    GroupState,
    GroupSummary,
    JoinGroupResult,
    OffsetAndMetadata,
    SyncGroupResult,
)
from mini_broker.group.group_metadata_manager import GroupMetadataManager, StoredGroup, StoredMember
from mini_broker.group.member_metadata import JoinCallback, MemberMetadata, SyncCallback
from mini_broker.purgatory.delayed_operation import DelayedOperation
from mini_broker.purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from mini_broker.purgatory.keys import GroupJoinKey, GroupSyncKey, MemberKey
from mini_broker.timer.system_timer import SystemTimer
from mini_broker.timer.timer_task import TimerTask
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    GroupNotEmptyError,
    GroupSubscribedToTopicError,
    IllegalGenerationError,
    IllegalStateError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from pykafka_client.utils.time import SYSTEM_TIME, Time

if TYPE_CHECKING:
    from mini_broker.metrics import BrokerMetrics

_log = logging.getLogger(__name__)

NONE: Final = 0
INT_MAX: Final = 2**31 - 1
#: How long a member without a member id may wait in a join round (its socket is muted meanwhile, so a
#: disconnect cannot be noticed).
NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 5 * 60 * 1000

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class GroupConfig:
    """Coordinator settings (Kafka names in snake_case)."""

    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = INT_MAX
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 10080 * 60 * 1000
    offsets_retention_check_interval_ms: int = 600000
    offsets_topic_segment_bytes: int = 104857600

    @classmethod
    def from_broker(cls, get: Callable[[str], object]) -> GroupConfig:
        """From broker configs; ``get(name)`` returns the value (defaults applied) or None."""
        d = cls()

        def val(name: str, default: int) -> int:
            v = get(name)
            return default if v is None else int(str(v))

        return cls(
            group_min_session_timeout_ms=val("group.min.session.timeout.ms", d.group_min_session_timeout_ms),
            group_max_session_timeout_ms=val("group.max.session.timeout.ms", d.group_max_session_timeout_ms),
            group_initial_rebalance_delay_ms=val("group.initial.rebalance.delay.ms",
                                                 d.group_initial_rebalance_delay_ms),
            group_max_size=val("group.max.size", d.group_max_size),
            offset_metadata_max_bytes=val("offset.metadata.max.bytes", d.offset_metadata_max_bytes),
            offsets_retention_ms=val("offsets.retention.minutes", d.offsets_retention_ms // 60000) * 60000,
            offsets_retention_check_interval_ms=val("offsets.retention.check.interval.ms",
                                                    d.offsets_retention_check_interval_ms),
            offsets_topic_segment_bytes=val("offsets.topic.segment.bytes", d.offsets_topic_segment_bytes),
        )


@dataclass(frozen=True, slots=True)
class LeaveMember:
    """One member of a LeaveGroup request (v0-2 send one with the top-level member id)."""

    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error_code: int


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    error_code: int = NONE


class _OffsetsCleanup(TimerTask):
    """Periodic offset expiry; re-adds itself after each run until the coordinator stops."""

    def __init__(self, coordinator: GroupCoordinator, timer: SystemTimer, interval_ms: int) -> None:
        super().__init__(interval_ms)
        self._coordinator = coordinator
        self._timer = timer

    def run(self) -> None:
        if not self._coordinator.is_active:
            return
        try:
            self._coordinator.cleanup_group_metadata()
        except Exception:
            _log.exception("offsets cleanup failed")
        if self._coordinator.is_active:
            self._timer.add(_OffsetsCleanup(self._coordinator, self._timer, self.delay_ms))


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
        self._active = False

        def timer(name: str) -> SystemTimer:
            return SystemTimer(name, time, start_ms=time.hi_res_clock_ms(), run_inline=timer_run_inline)

        self.heartbeat_purgatory: DelayedOperationPurgatory[DelayedOperation] = DelayedOperationPurgatory(
            "Heartbeat", timer("Heartbeat"), broker_id, reaper_enabled=reaper_enabled, time=time)
        self.rebalance_purgatory: DelayedOperationPurgatory[DelayedOperation] = DelayedOperationPurgatory(
            "Rebalance", timer("Rebalance"), broker_id, reaper_enabled=reaper_enabled, time=time)

    # -- lifecycle ----------------------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        return self._active

    def startup(self) -> None:
        """Replay the offsets log into groups, start their members' session timers, start serving."""
        now = self.time.milliseconds()
        for group_id, loaded in self.manager.load().items():
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
                                            sm.rebalance_timeout_ms, sm.session_timeout_ms,
                                            stored.protocol_type or "", [(stored.protocol_name or "", sm.subscription)])
                    member.assignment = sm.assignment
                    group.add(member)
                group.leader_id = stored.leader_id if stored.leader_id in group.members else group.leader_id
                if stored.protocol_type == CONSUMER_PROTOCOL_TYPE and stored.members:
                    group.subscribed_topics = group.compute_subscribed_topics()
            group.offsets.update(loaded.offsets)
            self._groups[group_id] = group
        self._active = True
        for group in list(self._groups.values()):
            with group.lock:
                for member in list(group.members.values()):
                    self._complete_and_schedule_next_heartbeat_expiration(group, member)
        interval = self.config.offsets_retention_check_interval_ms
        timer = self.heartbeat_purgatory.timeout_timer
        timer.add(_OffsetsCleanup(self, timer, interval))

    def shutdown(self) -> None:
        """Stop serving (COORDINATOR_NOT_AVAILABLE), stop the purgatories, close the offsets log."""
        self._active = False
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

        def groups() -> list[GroupMetadata]:
            with self._groups_lock:
                return list(self._groups.values())

        metrics.gauge("kafka_coordinator_group_GroupMetadataManager_NumGroups", lambda: float(len(groups())))
        metrics.gauge("kafka_coordinator_group_GroupMetadataManager_NumOffsets",
                      lambda: float(sum(len(g.offsets) for g in groups())))
        for state in GroupState:
            metrics.gauge(f"kafka_coordinator_group_GroupMetadataManager_NumGroups{state.value}",
                          lambda st=state: float(sum(g.state is st for g in groups())))  # type: ignore[misc]

    def advance_clock(self) -> None:
        """Expire what is due on both purgatories now (tests with a MockTime and inline timers)."""
        while self.heartbeat_purgatory.timeout_timer.advance_clock(0) | \
                self.rebalance_purgatory.timeout_timer.advance_clock(0):
            pass

    # -- group map -----------------------------------------------------------------------------------------
    def get_group(self, group_id: str) -> GroupMetadata | None:
        with self._groups_lock:
            return self._groups.get(group_id)

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
        if not self._active:
            return CoordinatorNotAvailableError.code
        return None

    # -- JoinGroup ----------------------------------------------------------------------------------------
    def handle_join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                          require_known_member_id: bool, support_skipping_assignment: bool, client_id: str,
                          client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                          protocols: Sequence[tuple[str, bytes]], callback: JoinCallback,
                          reason: str | None = None) -> None:
        """JoinGroup. Validation order: group id / coordinator status, session timeout range, unknown group
        with a member id, group.max.size, protocol compatibility; then the per-state handling."""
        error = self._validate_group_status(group_id)
        if error is not None:
            callback(JoinGroupResult(member_id, error))
            return
        if not (self.config.group_min_session_timeout_ms <= session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            callback(JoinGroupResult(member_id, InvalidSessionTimeoutError.code))
            return
        is_unknown_member = member_id == UNKNOWN_MEMBER_ID
        group = self._get_or_maybe_create_group(group_id, is_unknown_member)
        if group is None:
            callback(JoinGroupResult(member_id, UnknownMemberIdError.code))
            return
        with group.lock:
            if not self._accept_joining_member(group, member_id):
                group.remove(member_id)
                callback(JoinGroupResult(UNKNOWN_MEMBER_ID, GroupMaxSizeReachedError.code))
            elif is_unknown_member:
                self._do_new_member_join_group(group, group_instance_id, require_known_member_id,
                                               support_skipping_assignment, client_id, client_host,
                                               rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                               callback, reason)
            else:
                self._do_current_member_join_group(group, member_id, group_instance_id, client_id, client_host,
                                                   rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                                   protocols, callback, reason)
            if group.is_state(GroupState.PREPARING_REBALANCE):
                self.rebalance_purgatory.check_and_complete(GroupJoinKey(group.group_id))

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        state = group.state
        if state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if state is GroupState.PREPARING_REBALANCE:
            return ((group.has(member_id) and group.get(member_id).is_awaiting_join)
                    or group.num_members_awaiting_join < self.config.group_max_size)
        return group.has(member_id) or group.size() < self.config.group_max_size

    def _do_new_member_join_group(self, group: GroupMetadata, group_instance_id: str | None,
                                  require_known_member_id: bool, support_skipping_assignment: bool, client_id: str,
                                  client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                                  protocol_type: str, protocols: Sequence[tuple[str, bytes]], callback: JoinCallback,
                                  reason: str | None) -> None:
        if group.is_state(GroupState.DEAD):
            callback(JoinGroupResult(UNKNOWN_MEMBER_ID, CoordinatorNotAvailableError.code))
            return
        if not group.supports_protocols(protocol_type, {name for name, _ in protocols}):
            callback(JoinGroupResult(UNKNOWN_MEMBER_ID, InconsistentGroupProtocolError.code))
            return
        new_member_id = group.generate_member_id(client_id, group_instance_id)
        if group_instance_id is not None:
            old_member_id = group.current_static_member_id(group_instance_id)
            if old_member_id is not None:
                _log.info("static member %s of group %s rejoins without a member id: replacing %s with %s",
                          group_instance_id, group.group_id, old_member_id, new_member_id)
                self._update_static_member_and_rebalance(group, old_member_id, new_member_id, group_instance_id,
                                                         protocols, callback, support_skipping_assignment)
            else:
                self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, new_member_id,
                                               group_instance_id, client_id, client_host, protocol_type, protocols,
                                               group, callback)
        elif require_known_member_id:
            # KIP-394: hand out the id, expect the member back with it within its session timeout.
            self._add_pending_member_expiration(group, new_member_id, session_timeout_ms)
            callback(JoinGroupResult(new_member_id, MemberIdRequiredError.code))
        else:
            self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, new_member_id, None, client_id,
                                           client_host, protocol_type, protocols, group, callback)

    def _validate_current_member(self, group: GroupMetadata, member_id: str,
                                 group_instance_id: str | None) -> int | None:
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

    def _do_current_member_join_group(self, group: GroupMetadata, member_id: str, group_instance_id: str | None,
                                      client_id: str, client_host: str, rebalance_timeout_ms: int,
                                      session_timeout_ms: int, protocol_type: str,
                                      protocols: Sequence[tuple[str, bytes]], callback: JoinCallback,
                                      reason: str | None) -> None:
        if group.is_state(GroupState.DEAD):
            callback(JoinGroupResult(member_id, CoordinatorNotAvailableError.code))
            return
        if not group.supports_protocols(protocol_type, {name for name, _ in protocols}):
            callback(JoinGroupResult(member_id, InconsistentGroupProtocolError.code))
            return
        if group.is_pending_member(member_id):
            if group_instance_id is not None:
                raise IllegalStateError(f"JoinGroup with group instance id {group_instance_id} for pending member "
                                        f"{member_id}")
            self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, member_id, None, client_id,
                                           client_host, protocol_type, protocols, group, callback)
            return
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            callback(JoinGroupResult(member_id, error))
            return
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, group.get(member_id), protocols, callback)
        elif state is GroupState.COMPLETING_REBALANCE:
            member = group.get(member_id)
            if member.matches(protocols):
                # The member lost the JoinGroup answer: give it the current generation again.
                callback(self._join_result(group, member_id, with_members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, protocols, callback)
        elif state is GroupState.STABLE:
            member = group.get(member_id)
            if group.is_leader(member_id) or not member.matches(protocols):
                # A leader's JoinGroup always rebalances (it may have seen metadata changes).
                self._update_member_and_rebalance(group, member, protocols, callback)
            else:
                callback(self._join_result(group, member_id, with_members=False))
        else:
            callback(JoinGroupResult(member_id, UnknownMemberIdError.code))

    def _join_result(self, group: GroupMetadata, member_id: str, with_members: bool,
                     leader_id: str | None = None, skip_assignment: bool = False) -> JoinGroupResult:
        return JoinGroupResult(
            member_id=member_id, error_code=NONE, generation_id=group.generation_id,
            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
            leader_id=(leader_id if leader_id is not None else group.leader_id) or "",
            members=group.current_member_metadata() if with_members else [], skip_assignment=skip_assignment)

    def _add_member_and_rebalance(self, rebalance_timeout_ms: int, session_timeout_ms: int, member_id: str,
                                  group_instance_id: str | None, client_id: str, client_host: str,
                                  protocol_type: str, protocols: Sequence[tuple[str, bytes]], group: GroupMetadata,
                                  callback: JoinCallback) -> None:
        member = MemberMetadata(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                                session_timeout_ms, protocol_type, protocols)
        member.is_new = True
        if group.is_state(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, callback)
        self._complete_and_schedule_next_expiration(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id}")

    def _update_static_member_and_rebalance(self, group: GroupMetadata, old_member_id: str, new_member_id: str,
                                            group_instance_id: str, protocols: Sequence[tuple[str, bytes]],
                                            callback: JoinCallback, support_skipping_assignment: bool) -> None:
        current_leader = group.leader_id
        member = group.replace_static_member(group_instance_id, old_member_id, new_member_id)
        self._complete_and_schedule_next_heartbeat_expiration(group, member)
        group.update_member(member, protocols, callback)
        state = group.state
        if state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                # The assignment stays valid: persist the new member id, no rebalance.
                self._store_group(group, {m.member_id: m.assignment for m in group.members.values()})
                if support_skipping_assignment:
                    is_leader = group.is_leader(new_member_id)
                    group.maybe_invoke_join_callback(member, self._join_result(
                        group, new_member_id, with_members=is_leader, skip_assignment=is_leader))
                else:
                    # Before v9 the old leader id is returned so that the member does not run an assignment
                    # that a Stable group would not use.
                    group.maybe_invoke_join_callback(member, self._join_result(
                        group, new_member_id, with_members=False, leader_id=current_leader or ""))
            else:
                self._maybe_prepare_rebalance(group, f"static member {group_instance_id} changed protocols")
        elif state is GroupState.COMPLETING_REBALANCE:
            # The leader may already have assigned the old member id: rebalance.
            self._prepare_rebalance(group, f"static member {group_instance_id} rejoined while completing")
        elif state in (GroupState.EMPTY, GroupState.DEAD):
            raise IllegalStateError(f"group {group.group_id} is {state.value} while static member "
                                    f"{group_instance_id} rejoins")

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     protocols: Sequence[tuple[str, bytes]], callback: JoinCallback) -> None:
        group.update_member(member, protocols, callback)
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_state(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, RebalanceInProgressError.code)
        self._remove_sync_expiration(group)
        delayed: DelayedOperation
        if group.is_state(GroupState.EMPTY):
            delay = self.config.group_initial_rebalance_delay_ms
            delayed = InitialDelayedJoin(self, self.rebalance_purgatory, group, delay, delay,
                                         max(group.rebalance_timeout_ms() - delay, 0))
        else:
            delayed = DelayedJoin(self, group, group.rebalance_timeout_ms())
        group.transition_to(GroupState.PREPARING_REBALANCE, self.time.milliseconds())
        _log.info("preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
                  group.group_id, group.state.value, group.generation_id, reason)
        self.rebalance_purgatory.try_complete_else_watch(delayed, [GroupJoinKey(group.group_id)])

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.clear_pending_sync_members()
        self.rebalance_purgatory.cancel_for_key(GroupSyncKey(group.group_id))

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: int) -> None:
        if not group.is_state(GroupState.COMPLETING_REBALANCE):
            raise IllegalStateError(f"group {group.group_id} must be CompletingRebalance, not {group.state.value}")
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        for member in list(group.members.values()):
            if error == NONE:
                result = SyncGroupResult(NONE, group.protocol_type, group.protocol_name, member.assignment)
            else:
                result = SyncGroupResult(error)
            if group.maybe_invoke_sync_callback(member, result):
                # The member's session restarts when its sync is answered.
                self._complete_and_schedule_next_heartbeat_expiration(group, member)

    # -- join completion (DelayedJoin / InitialDelayedJoin) ------------------------------------------------
    def try_complete_join(self, group: GroupMetadata, force_complete: Callable[[], bool]) -> bool:
        with group.lock:
            if group.has_all_members_joined():
                return force_complete()
            return False

    def on_complete_join(self, group: GroupMetadata) -> None:
        with group.lock:
            for failed in [m for m in group.not_yet_rejoined_members() if not m.is_static_member]:
                _log.info("group %s removes dynamic member %s that did not rejoin", group.group_id, failed.member_id)
                group.remove(failed.member_id)
                self._remove_heartbeat_for_leaving_member(group, failed.member_id)
            if group.is_state(GroupState.DEAD):
                return
            if not group.maybe_elect_new_joined_leader() and group.members:
                # Nobody rejoined: wait another round, session timeouts will remove the silent members.
                _log.warning("group %s could not complete its rebalance: no member rejoined", group.group_id)
                self.rebalance_purgatory.try_complete_else_watch(
                    DelayedJoin(self, group, group.rebalance_timeout_ms()), [GroupJoinKey(group.group_id)])
                return
            group.init_next_generation(self.time.milliseconds())
            if group.is_state(GroupState.EMPTY):
                _log.info("group %s with generation %d is now empty", group.group_id, group.generation_id)
                self._store_group(group, {})
                return
            _log.info("stabilized group %s generation %d (protocol %s, %d members)", group.group_id,
                      group.generation_id, group.protocol_name, group.size())
            for member in list(group.members.values()):
                group.maybe_invoke_join_callback(
                    member, self._join_result(group, member.member_id, with_members=group.is_leader(member.member_id)))
                self._complete_and_schedule_next_heartbeat_expiration(group, member)
                member.is_new = False
                group.add_pending_sync_member(member.member_id)
            self._schedule_pending_sync(group)

    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        self.rebalance_purgatory.try_complete_else_watch(
            DelayedSync(self, group, group.generation_id, group.rebalance_timeout_ms()), [GroupSyncKey(group.group_id)])

    def try_complete_pending_sync(self, group: GroupMetadata, generation_id: int,
                                  force_complete: Callable[[], bool]) -> bool:
        with group.lock:
            if generation_id != group.generation_id:
                return force_complete()
            if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
                if group.has_received_sync_from_all_members():
                    return force_complete()
                return False
            return force_complete()

    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None:
        with group.lock:
            if generation_id != group.generation_id:
                return
            if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and \
                    not group.has_received_sync_from_all_members():
                missing = sorted(group.pending_sync_members)
                _log.info("group %s removes members %s that did not send SyncGroup in time", group.group_id, missing)
                for member_id in missing:
                    group.remove(member_id)
                    self._remove_heartbeat_for_leaving_member(group, member_id)
                self._prepare_rebalance(group, f"members {missing} did not sync")

    # -- heartbeats (DelayedHeartbeat) ----------------------------------------------------------------------
    def _complete_and_schedule_next_heartbeat_expiration(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)

    def _complete_and_schedule_next_expiration(self, group: GroupMetadata, member: MemberMetadata,
                                               timeout_ms: int) -> None:
        key = MemberKey(group.group_id, member.member_id)
        member.heartbeat_satisfied = True
        self.heartbeat_purgatory.check_and_complete(key)
        member.heartbeat_satisfied = False
        self.heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member.member_id, False, timeout_ms), [key])

    def _add_pending_member_expiration(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        group.add_pending_member(member_id)
        self.heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member_id, True, timeout_ms), [MemberKey(group.group_id, member_id)])

    def _remove_heartbeat_for_leaving_member(self, group: GroupMetadata, member_id: str) -> None:
        self.heartbeat_purgatory.check_and_complete(MemberKey(group.group_id, member_id))

    def try_complete_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool,
                               force_complete: Callable[[], bool]) -> bool:
        with group.lock:
            if group.is_state(GroupState.DEAD):
                return force_complete()
            if is_pending:
                return force_complete() if group.has(member_id) else False
            if not group.has(member_id) or group.get(member_id).has_satisfied_heartbeat():
                return force_complete()
            return False

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        with group.lock:
            if group.is_state(GroupState.DEAD):
                return
            if is_pending:
                if group.is_pending_member(member_id):
                    _log.info("pending member %s of group %s expired", member_id, group.group_id)
                    self._remove_pending_member_and_update_group(group, member_id)
                return
            member = group.members.get(member_id)
            if member is not None and not member.has_satisfied_heartbeat():
                _log.info("member %s of group %s failed (session expired), removing it", member_id, group.group_id)
                self._remove_member_and_update_group(group, member)

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        # A new member may time out while its JoinGroup is parked: answer it so that it can retry.
        group.maybe_invoke_join_callback(member, JoinGroupResult(UNKNOWN_MEMBER_ID, UnknownMemberIdError.code))
        group.remove(member.member_id)
        state = group.state
        if state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"removing member {member.member_id}")
        elif state is GroupState.PREPARING_REBALANCE:
            self.rebalance_purgatory.check_and_complete(GroupJoinKey(group.group_id))

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        group.remove_pending_member(member_id)
        if group.is_state(GroupState.PREPARING_REBALANCE):
            self.rebalance_purgatory.check_and_complete(GroupJoinKey(group.group_id))

    # -- SyncGroup ----------------------------------------------------------------------------------------
    def handle_sync_group(self, group_id: str, generation_id: int, member_id: str, protocol_type: str | None,
                          protocol_name: str | None, group_instance_id: str | None,
                          assignments: dict[str, bytes], callback: SyncCallback) -> None:
        error = self._validate_group_status(group_id)
        if error is not None:
            callback(SyncGroupResult(error))
            return
        group = self.get_group(group_id)
        if group is None:
            callback(SyncGroupResult(UnknownMemberIdError.code))
            return
        with group.lock:
            error = self._validate_sync_group(group, generation_id, member_id, protocol_type, protocol_name,
                                              group_instance_id)
            if error is not None:
                callback(SyncGroupResult(error))
                return
            state = group.state
            if state is GroupState.EMPTY:
                callback(SyncGroupResult(UnknownMemberIdError.code))
            elif state is GroupState.PREPARING_REBALANCE:
                callback(SyncGroupResult(RebalanceInProgressError.code))
            elif state is GroupState.COMPLETING_REBALANCE:
                group.get(member_id).awaiting_sync_callback = callback
                self._remove_pending_sync_member(group, member_id)
                if group.is_leader(member_id):
                    _log.info("assignment received from leader %s of group %s for generation %d", member_id,
                              group.group_id, group.generation_id)
                    assignment = {m: assignments.get(m, b"") for m in group.members}
                    self._store_group(group, assignment)
                    for m_id, data in assignment.items():
                        group.get(m_id).assignment = data
                    self._propagate_assignment(group, NONE)
                    group.transition_to(GroupState.STABLE, self.time.milliseconds())
            elif state is GroupState.STABLE:
                self._remove_pending_sync_member(group, member_id)
                member = group.get(member_id)
                callback(SyncGroupResult(NONE, group.protocol_type, group.protocol_name, member.assignment))
                self._complete_and_schedule_next_heartbeat_expiration(group, member)
            else:
                raise IllegalStateError(f"SyncGroup reached dead group {group_id}")

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.remove_pending_sync_member(member_id)
        self.rebalance_purgatory.check_and_complete(GroupSyncKey(group.group_id))

    def _validate_sync_group(self, group: GroupMetadata, generation_id: int, member_id: str,
                             protocol_type: str | None, protocol_name: str | None,
                             group_instance_id: str | None) -> int | None:
        if group.is_state(GroupState.DEAD):
            return CoordinatorNotAvailableError.code
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return IllegalGenerationError.code
        if protocol_type is not None and protocol_type != group.protocol_type:
            return InconsistentGroupProtocolError.code
        if protocol_name is not None and protocol_name != group.protocol_name:
            return InconsistentGroupProtocolError.code
        return None

    # -- Heartbeat ----------------------------------------------------------------------------------------
    def handle_heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                         generation_id: int) -> int:
        error = self._validate_group_status(group_id)
        if error is not None:
            return error
        group = self.get_group(group_id)
        if group is None:
            return UnknownMemberIdError.code
        with group.lock:
            if group.is_state(GroupState.DEAD):
                return CoordinatorNotAvailableError.code
            error = self._validate_current_member(group, member_id, group_instance_id)
            if error is not None:
                return error
            if generation_id != group.generation_id:
                return IllegalGenerationError.code
            state = group.state
            if state is GroupState.EMPTY:
                return UnknownMemberIdError.code
            self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
            if state is GroupState.PREPARING_REBALANCE:
                return RebalanceInProgressError.code
            return NONE

    # -- LeaveGroup ---------------------------------------------------------------------------------------
    def handle_leave_group(self, group_id: str,
                           leaving: Sequence[LeaveMember]) -> tuple[int, list[LeaveMemberResult]]:
        """(top-level error, per-member results)."""
        error = self._validate_group_status(group_id)
        if error is not None:
            return error, []
        group = self.get_group(group_id)
        if group is None:
            return NONE, [LeaveMemberResult(m.member_id, m.group_instance_id, UnknownMemberIdError.code)
                          for m in leaving]
        results: list[LeaveMemberResult] = []
        with group.lock:
            if group.is_state(GroupState.DEAD):
                return CoordinatorNotAvailableError.code, []
            for m in leaving:
                results.append(LeaveMemberResult(m.member_id, m.group_instance_id, self._leave_one(group, m)))
        return NONE, results

    def _leave_one(self, group: GroupMetadata, m: LeaveMember) -> int:
        if m.member_id == UNKNOWN_MEMBER_ID:
            # Administrative removal by group instance id.
            current = None if m.group_instance_id is None else group.current_static_member_id(m.group_instance_id)
            if current is None:
                return UnknownMemberIdError.code
            self._remove_current_member_from_group(group, current)
            return NONE
        if group.is_pending_member(m.member_id):
            self._remove_pending_member_and_update_group(group, m.member_id)
            self.heartbeat_purgatory.check_and_complete(MemberKey(group.group_id, m.member_id))
            return NONE
        error = self._validate_current_member(group, m.member_id, m.group_instance_id)
        if error is not None:
            return error
        self._remove_current_member_from_group(group, m.member_id)
        return NONE

    def _remove_current_member_from_group(self, group: GroupMetadata, member_id: str) -> None:
        member = group.get(member_id)
        _log.info("member %s leaves group %s", member_id, group.group_id)
        self._remove_member_and_update_group(group, member)
        self._remove_heartbeat_for_leaving_member(group, member_id)

    # -- offsets -----------------------------------------------------------------------------------------
    def handle_commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                              generation_id: int,
                              offsets: dict[TopicPartition, OffsetAndMetadata]) -> dict[TopicPartition, int]:
        """Per-partition error codes. Generation -1 with no member id is a manual (admin) commit, allowed
        while the group is Empty; members commit with their current generation (Stable, PreparingRebalance),
        get REBALANCE_IN_PROGRESS in CompletingRebalance."""
        error = self._validate_group_status(group_id, allow_empty_id=True)
        if error is not None:
            return {tp: error for tp in offsets}
        group = self.get_group(group_id)
        if group is None:
            if generation_id >= 0:
                return {tp: IllegalGenerationError.code for tp in offsets}
            group = self._get_or_maybe_create_group(group_id, True)
            assert group is not None
        with group.lock:
            error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
            if error is not None:
                return {tp: error for tp in offsets}
            state = group.state
            if state is GroupState.COMPLETING_REBALANCE:
                return {tp: RebalanceInProgressError.code for tp in offsets}
            if state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
                self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
            return self._store_offsets(group, offsets)

    def _validate_offset_commit(self, group: GroupMetadata, generation_id: int, member_id: str,
                                group_instance_id: str | None) -> int | None:
        if group.is_state(GroupState.DEAD):
            return CoordinatorNotAvailableError.code
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = self._validate_current_member(group, member_id, group_instance_id)
            if error is not None:
                return error
            if generation_id != group.generation_id:
                return IllegalGenerationError.code
            return None
        if not group.is_state(GroupState.EMPTY):
            # Only members may commit to a group with members.
            return UnknownMemberIdError.code
        return None

    def _store_offsets(self, group: GroupMetadata,
                       offsets: dict[TopicPartition, OffsetAndMetadata]) -> dict[TopicPartition, int]:
        errors: dict[TopicPartition, int] = {}
        valid: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, om in offsets.items():
            if len(om.metadata.encode()) > self.config.offset_metadata_max_bytes:
                errors[tp] = OffsetMetadataTooLargeError.code
            else:
                valid[tp] = om
                errors[tp] = NONE
        if valid:
            self.manager.store_offsets(group.group_id, valid, self.time.milliseconds())
            group.offsets.update(valid)
        return errors

    def handle_fetch_offsets(self, group_id: str,
                             partitions: Sequence[TopicPartition] | None) -> tuple[int, dict[TopicPartition, FetchedOffset]]:
        """(group error, offsets). ``partitions`` None: every committed offset of the group. Unknown groups and
        partitions without a commit give offset -1."""
        error = self._validate_group_status(group_id, allow_empty_id=True)
        if error is not None:
            return error, {}
        group = self.get_group(group_id)
        committed: dict[TopicPartition, OffsetAndMetadata] = {}
        if group is not None:
            with group.lock:
                if not group.is_state(GroupState.DEAD):
                    committed = dict(group.offsets)
        wanted = list(committed) if partitions is None else list(partitions)
        out: dict[TopicPartition, FetchedOffset] = {}
        for tp in wanted:
            om = committed.get(tp)
            out[tp] = FetchedOffset(-1, -1, "") if om is None else FetchedOffset(om.offset, om.leader_epoch, om.metadata)
        return NONE, out

    # -- admin --------------------------------------------------------------------------------------------
    def handle_list_groups(self, states: Iterable[str] = ()) -> tuple[int, list[tuple[str, str, str]]]:
        """(error, [(group id, protocol type, state)]); ``states`` filters case-insensitively."""
        if not self._active:
            return CoordinatorNotAvailableError.code, []
        wanted = {s.lower() for s in states}
        with self._groups_lock:
            groups = list(self._groups.values())
        out: list[tuple[str, str, str]] = []
        for g in groups:
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
            if error is not None:
                out[group_id] = error
                continue
            group = self.get_group(group_id)
            if group is None:
                out[group_id] = GroupIdNotFoundError.code
                continue
            with group.lock:
                if group.is_state(GroupState.DEAD):
                    out[group_id] = GroupIdNotFoundError.code
                elif group.is_state(GroupState.EMPTY):
                    group.transition_to(GroupState.DEAD, self.time.milliseconds())
                    removed = group.remove_all_offsets()
                    self.manager.delete(group_id, removed, True, self.time.milliseconds())
                    self._remove_group(group)
                    out[group_id] = NONE
                else:
                    out[group_id] = GroupNotEmptyError.code
        return out

    def handle_delete_offsets(self, group_id: str,
                              partitions: Sequence[TopicPartition]) -> tuple[int, dict[TopicPartition, int]]:
        """(group error, per-partition errors): Empty groups lose the offsets; a consumer group with members
        keeps those of subscribed topics (GROUP_SUBSCRIBED_TO_TOPIC); other non-empty groups NON_EMPTY_GROUP."""
        error = self._validate_group_status(group_id)
        if error is not None:
            return error, {}
        group = self.get_group(group_id)
        if group is None:
            return GroupIdNotFoundError.code, {}
        errors: dict[TopicPartition, int] = {}
        with group.lock:
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
                removed = group.remove_offsets(eligible)
                self.manager.delete(group_id, removed, False, self.time.milliseconds())
                for tp in eligible:
                    errors[tp] = NONE
            self._maybe_remove_empty_group(group)
        return NONE, errors

    def _maybe_remove_empty_group(self, group: GroupMetadata) -> None:
        """An Empty group with no offsets left is dropped (Dead), its metadata tombstoned."""
        if group.is_state(GroupState.EMPTY) and not group.has_offsets():
            group.transition_to(GroupState.DEAD, self.time.milliseconds())
            self.manager.delete(group.group_id, [], True, self.time.milliseconds())
            self._remove_group(group)

    def cleanup_group_metadata(self) -> int:
        """Expire offsets past ``offsets.retention.minutes`` (see ``GroupMetadata.remove_expired_offsets``);
        drop Empty groups left without offsets. Returns the number of offsets removed."""
        now = self.time.milliseconds()
        with self._groups_lock:
            groups = list(self._groups.values())
        total = 0
        for group in groups:
            with group.lock:
                if group.is_state(GroupState.DEAD):
                    continue
                removed = group.remove_expired_offsets(now, self.config.offsets_retention_ms,
                                                       group.is_subscribed_to_topic)
                if removed:
                    self.manager.delete(group.group_id, removed, False, now)
                    total += len(removed)
                    self._maybe_remove_empty_group(group)
        return total

    # -- persistence --------------------------------------------------------------------------------------
    def _store_group(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        protocol = group.protocol_name
        members: list[StoredMember] = []
        if protocol is not None and group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            members = [StoredMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                    m.rebalance_timeout_ms, m.session_timeout_ms, m.metadata(protocol),
                                    assignment.get(m.member_id, b""))
                       for m in group.members.values()]
        stored = StoredGroup(group.protocol_type, group.generation_id, protocol, group.leader_id,
                             group.current_state_timestamp, members)
        self.manager.store_group(group.group_id, stored, self.time.milliseconds())
