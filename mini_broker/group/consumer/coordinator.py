"""The consumer groups' driver: the :class:`ConsumerGroupManager` under one lock, served on the classic group
coordinator's :class:`~mini_broker.coordinator.runtime.CoordinatorRuntime` (same ``__consumer_offsets``
partition, same status: NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS answers while the runtime does not serve),
with a periodic task that expires sessions and rebalance timeouts.

Every change of a group is appended to the runtime's partition as the records that turn the group's previous
image into its new one (:mod:`records`); the classic coordinator's load hands this driver the live
consumer-group records (:meth:`ConsumerGroupCoordinator.load`), which it replays: members come back with their
epochs and assignments and a fresh session. The state is dropped when the runtime unloads (a resignation, a
shutdown). The groups' committed offsets are the classic coordinator's (stored and replayed like any group's);
this driver only checks the member epochs of commits and fetches.

A heartbeat that changed its group is answered once its records are durable: on a cluster broker once the ISR
has them (Kafka's write to the coordinator's partition with acks=-1). Expiries and deletions do not wait.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.group.consumer import group_configs, records
from mini_broker.group.consumer.config import ConsumerGroupConfig
from mini_broker.group.consumer.group_configs import GroupConfigEntry
from mini_broker.group.consumer.manager import (
    ConsumerGroupHeartbeatParams,
    ConsumerGroupHeartbeatResult,
    ConsumerGroupManager,
)
from mini_broker.group.consumer.model import JOIN_GROUP_MEMBER_EPOCH, ConsumerGroup, MemberState, TopicsImage
from mini_broker.group.group_requests import (
    HeartbeatParams,
    JoinGroupParams,
    JoinGroupResult,
    LeaveMember,
    LeaveMemberResult,
    SyncGroupParams,
    SyncGroupResult,
)
from mini_broker.group.migration_snapshot import ClassicGroupSnapshot
from pykafka_client.errors import (
    GroupIdNotFoundError,
    MessageDecodeError,
    NotCoordinatorError,
    UnknownMemberIdError,
)
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

#: how often sessions and rebalance timeouts are checked (a bound on how late an expiry is noticed)
EXPIRY_CHECK_INTERVAL_MS = 100


class ClassicGroups(Protocol):
    """What the online migration needs of the classic coordinator."""

    @property
    def classic_max_size(self) -> int: ...

    def has_members(self, group_id: str) -> bool: ...

    def hand_over_for_upgrade(self, group_id: str, max_size: int) -> ClassicGroupSnapshot | str | None: ...

    def adopt_downgraded(self, snapshot: ClassicGroupSnapshot) -> None: ...


class ConsumerGroupCoordinator:
    """Serves the consumer groups while ``runtime`` serves; call :meth:`startup` once."""

    def __init__(self, config: ConsumerGroupConfig, runtime: CoordinatorRuntime,
                 topics: Callable[[], TopicsImage], time: Time = SYSTEM_TIME) -> None:
        self.config = config
        self.runtime = runtime
        self.time = time
        self._topics = topics
        self._lock = threading.Lock()
        self._manager = ConsumerGroupManager(config)
        #: the classic coordinator on the same runtime (set when it hosts these groups), for the migration
        self.classic_groups: ClassicGroups | None = None

    def startup(self) -> None:
        self.runtime.schedule_periodic(self.expire_members, EXPIRY_CHECK_INTERVAL_MS, "consumer group sessions")

    def unload(self) -> None:
        """Drop every consumer group (the runtime stopped serving, or reloads)."""
        with self._lock:
            self._manager.groups.clear()

    def load(self, live_records: Mapping[bytes, bytes]) -> int:
        """Replace the groups by those the partition's live consumer-group records describe (the classic
        coordinator's load collects them); each member's session starts now. Returns the number of groups."""
        try:
            groups = records.replay(live_records.items())
            configs = records.replay_group_configs(live_records.items())
        except MessageDecodeError:
            _log.exception("event=consumer_groups_not_loaded reason=unreadable_record: the consumer groups start "
                           "empty and their members rejoin")
            groups, configs = {}, {}
        with self._lock:
            self._manager.group_configs = configs
        now = self.time.milliseconds()
        for group in groups.values():
            for member in group.members.values():
                group.session_deadlines[member.member_id] = now + (
                    member.classic_session_timeout_ms if member.uses_classic_protocol
                    else self._manager.session_timeout_ms(group.group_id))
                if member.state is MemberState.UNREVOKED_PARTITIONS:
                    group.rebalance_deadlines[member.member_id] = (now + member.rebalance_timeout_ms,
                                                                   member.member_epoch)
        with self._lock:
            self._manager.groups = groups
        return len(groups)

    def _image(self, group_id: str) -> dict[bytes, bytes]:
        group = self._manager.groups.get(group_id)
        return {} if group is None else records.group_records(group)

    def _persist(self, group_ids: Iterable[str], before: Mapping[str, Mapping[bytes, bytes]],
                 then: Callable[[int], None] = lambda error: None) -> None:
        """Append what changed in these groups since ``before`` (the caller holds the lock), then ``then(0)`` once
        the ISR has it (at once on a single broker, or when nothing changed), or ``then(NOT_COORDINATOR)`` when
        the partition refused the append or lost it (this broker no longer leads it)."""
        changes = [change for group_id in group_ids for change in records.diff(before.get(group_id, {}),
                                                                                self._image(group_id))]
        self.runtime.write_records(changes, self.time.milliseconds(), then, f"consumer groups {list(group_ids)}")

    def inactive_error(self) -> int | None:
        """The error for any request while the runtime does not serve, else None."""
        return None if self.runtime.is_active else self.runtime.inactive_error()

    # -- requests -----------------------------------------------------------------------------------------
    def heartbeat(self, request: ConsumerGroupHeartbeatParams,
                  reply: Callable[[ConsumerGroupHeartbeatResult], None]) -> None:
        """ConsumerGroupHeartbeat: ``reply(result)`` once the change it made is durable (on a cluster broker:
        once the ISR has its records; maybe later, on the runtime's timer thread)."""
        error = self.inactive_error()
        if error is not None:
            reply(ConsumerGroupHeartbeatResult(error, "the group coordinator is not serving here: look it up again "
                                                      "(FindCoordinator) and retry", request.member_id or None))
            return
        topics = self._topics()

        def written(error: int) -> None:
            if error:
                reply(ConsumerGroupHeartbeatResult(error, "the group's records could not be written here: look "
                                                          "the coordinator up again (FindCoordinator) and retry",
                                                   request.member_id or None))
                return
            if result.error_code:
                _log.debug("event=consumer_group_heartbeat_error group=%s member=%s epoch=%d error=%d message=%s",
                           request.group_id, request.member_id, request.member_epoch, result.error_code,
                           result.error_message)
            reply(result)

        with self._lock:
            before = {request.group_id: self._image(request.group_id)}
            refused = self._maybe_upgrade(request, topics)
            if refused is not None:
                reply(refused)
                return
            result = self._manager.heartbeat(request, self.time.milliseconds(), topics)
            self._persist([request.group_id], before, written)
            downgraded = self._take_downgrades(topics)
        self._hand_back(downgraded)

    def _maybe_upgrade(self, request: ConsumerGroupHeartbeatParams,
                       topics: TopicsImage) -> ConsumerGroupHeartbeatResult | None:
        """KIP-848's online upgrade (the caller holds the lock): a joining consumer-protocol member converts a
        classic group with members into a consumer group when ``group.consumer.migration.policy`` allows it; a
        refusal (GROUP_ID_NOT_FOUND, as Kafka answers) is returned."""
        if (request.group_id in self._manager.groups or self.classic_groups is None
                or request.member_epoch != JOIN_GROUP_MEMBER_EPOCH):
            return None
        if not self.config.upgrade_enabled:
            why: ClassicGroupSnapshot | str | None = (
                f"group.consumer.migration.policy={self.config.migration_policy} does not allow an online upgrade")
            if not self.classic_groups.has_members(request.group_id):
                return None
        else:
            why = self.classic_groups.hand_over_for_upgrade(request.group_id, self.config.max_size)
        if why is None:
            return None
        if isinstance(why, str):
            return ConsumerGroupHeartbeatResult(
                GroupIdNotFoundError.code, f"Group {request.group_id} is a classic group with members and cannot be "
                                           f"upgraded to a consumer group: {why}. Use group.protocol=classic, or "
                                           f"another group id.", request.member_id or None)
        self._manager.upgrade(why, self.time.milliseconds(), topics)
        _log.info("event=consumer_group_upgraded group=%s classic_generation=%d members=%d", why.group_id,
                  why.generation_id, len(why.members))
        return None

    def _take_downgrades(self, topics: TopicsImage) -> list[ClassicGroupSnapshot]:
        """The groups to downgrade now, their tombstones written (the caller holds the lock)."""
        before = {g: self._image(g) for g in self._manager.downgrade_candidates}
        max_size = None if self.classic_groups is None else self.classic_groups.classic_max_size
        downgraded = self._manager.take_downgrades(topics, max_size)
        if downgraded:
            self._persist([d.group_id for d in downgraded], before)
        return downgraded

    def _hand_back(self, downgraded: list[ClassicGroupSnapshot]) -> None:
        """KIP-848's online downgrade: the classic coordinator takes the groups back (no lock of ours held)."""
        for snapshot in downgraded:
            _log.info("event=consumer_group_downgraded group=%s epoch=%d members=%d", snapshot.group_id,
                      snapshot.generation_id, len(snapshot.members))
            if self.classic_groups is not None:
                self.classic_groups.adopt_downgraded(snapshot)

    def expire_members(self) -> None:
        with self._lock:
            before = {g: self._image(g) for g in self._manager.expiring_groups(self.time.milliseconds())}
            expired = self._manager.expire(self.time.milliseconds())
            self._persist(before, before)
            downgraded = self._take_downgrades(self._topics()) if expired else []
        self._hand_back(downgraded)
        for e in expired:
            _log.info("event=consumer_group_member_removed group=%s member=%s reason=%r", e.group_id, e.member_id,
                      e.reason)

    # -- classic members (KIP-848 online migration) ---------------------------------------------------------
    def classic_join(self, request: JoinGroupParams, reply: Callable[[JoinGroupResult], None]) -> None:
        """JoinGroup to a consumer group with members (the caller checked): answered once durable."""
        topics = self._topics()
        with self._lock:
            if request.group_id not in self._manager.groups:
                reply(JoinGroupResult(request.member_id, UnknownMemberIdError.code))
                return
            before = {request.group_id: self._image(request.group_id)}
            result = self._manager.classic_join(request, self.time.milliseconds(), topics)
            self._persist([request.group_id], before, lambda error: reply(
                JoinGroupResult(request.member_id, error) if error else result))
            downgraded = self._take_downgrades(topics)  # a static member replaced the last consumer member
        self._hand_back(downgraded)

    def classic_sync(self, request: SyncGroupParams) -> SyncGroupResult:
        with self._lock:
            if request.group_id not in self._manager.groups:
                return SyncGroupResult(UnknownMemberIdError.code)
            return self._manager.classic_sync(request, self.time.milliseconds(), self._topics())

    def classic_heartbeat(self, request: HeartbeatParams) -> int:
        with self._lock:
            if request.group_id not in self._manager.groups:
                return int(UnknownMemberIdError.code)
            return self._manager.classic_heartbeat(request, self.time.milliseconds())

    def classic_leave(self, group_id: str, leaving: list[LeaveMember]) -> list[LeaveMemberResult]:
        with self._lock:
            if group_id not in self._manager.groups:
                return [LeaveMemberResult(m.member_id, m.group_instance_id, UnknownMemberIdError.code)
                        for m in leaving]
            before = {group_id: self._image(group_id)}
            out = self._manager.classic_leave(group_id, leaving)
            self._persist([group_id], before)
            downgraded = self._take_downgrades(self._topics())
        self._hand_back(downgraded)
        return out

    # -- group configs (GROUP config resources) ------------------------------------------------------------
    def describe_group_configs(self, group_id: str, keys: list[str] | None = None) -> list[GroupConfigEntry]:
        with self._lock:
            return group_configs.describe(self._manager.group_configs.get(group_id, {}), self.config, keys)

    def alter_group_configs(self, group_id: str, changes: Mapping[str, str | None], validate_only: bool) -> None:
        """Set (a value) or remove (None) some of the group's configs: validated as a whole
        (InvalidConfigurationError), then written to the group's partition and applied to the group (its members
        get the new heartbeat interval in their next response; sessions restart with the new timeout)."""
        error = self.inactive_error()
        if error is not None:
            raise NotCoordinatorError(f"the group coordinator is not serving here (error {error}): look it up "
                                      f"again (FindCoordinator) and retry")
        with self._lock:
            overrides = group_configs.apply_changes(
                self._manager.group_configs, group_id, changes, group_configs.GROUP_CONFIG_KEYS,
                lambda proposed: group_configs.validate(proposed, self.config), validate_only)
            if overrides is None:
                return
            self.runtime.write_records([records.group_config_record(group_id, overrides)], self.time.milliseconds(),
                                       what=f"configs of group {group_id}")
        _log.info("event=group_configs_altered group=%s configs=%s", group_id, overrides)

    def topics_image(self) -> TopicsImage:
        """The topics as the groups see them now (also the share groups' view)."""
        return self._topics()

    def is_consumer_group(self, group_id: str) -> bool:
        with self._lock:
            return group_id in self._manager.groups

    def subscribed_topics(self, group_id: str) -> frozenset[str] | None:
        """The topics the consumer group's members subscribe to (None: not a consumer group)."""
        with self._lock:
            group = self._manager.groups.get(group_id)
            return None if group is None else frozenset(group.subscribed_topic_names())

    def empty_group_ids(self) -> list[str]:
        with self._lock:
            return [g.group_id for g in self._manager.groups.values() if not g.members]

    def is_empty_consumer_group(self, group_id: str) -> bool:
        with self._lock:
            group = self._manager.groups.get(group_id)
            return group is not None and not group.members

    def describe(self, group_id: str) -> ConsumerGroup | None:
        """A copy of the group's state (None: not a consumer group here)."""
        with self._lock:
            group = self._manager.groups.get(group_id)
            if group is None:
                return None
            return ConsumerGroup(group.group_id, group.group_epoch, dict(group.members), dict(group.static_members),
                                 group.target_assignment_epoch, dict(group.target_assignment))

    def preferred_assignor(self, group: ConsumerGroup) -> str:
        return self._manager.preferred_assignor(group)

    def list_groups(self) -> list[tuple[str, str]]:
        """(group id, state) of every consumer group."""
        with self._lock:
            return [(g.group_id, g.state.value) for g in self._manager.groups.values()]

    def validate_offset_commit(self, group_id: str, member_id: str, member_epoch: int,
                               api_version: int | None = None) -> int | None:
        """None: not a consumer group (the classic rules apply); else the commit's error code (0: allowed);
        ``api_version``: the OffsetCommit's (None: a TxnOffsetCommit)."""
        with self._lock:
            if group_id not in self._manager.groups:
                return None
            return self._manager.validate_offset_commit(group_id, member_id, member_epoch, api_version)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int | None:
        """None: not a consumer group; else the fetch's error code (0: allowed)."""
        with self._lock:
            if group_id not in self._manager.groups:
                return None
            return self._manager.validate_offset_fetch(group_id, member_id, member_epoch)

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        """For the consumer groups among ``group_ids``: 0 (deleted, it had no members) or GROUP_NOT_EMPTY."""
        with self._lock:
            before = {g: self._image(g) for g in group_ids if g in self._manager.groups}
            out = {g: self._manager.delete_group(g) for g in before}
            self._persist(before, before)
            return out
