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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from mini_broker.coordinator.partitioning import drop_keys_of_partition
from mini_broker.coordinator.result import CoordinatorResult
from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.group.consumer import group_configs, records
from mini_broker.group.consumer.config import ConsumerGroupConfig
from mini_broker.group.consumer.group_configs import GroupConfigEntry
from mini_broker.group.consumer.manager import (
    Checkpoint,
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
from pykafka_client.protocol.records import MemoryRecordsBuilder
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

#: how often sessions and rebalance timeouts are checked (a bound on how late an expiry is noticed)
EXPIRY_CHECK_INTERVAL_MS = 100
#: one append carries all the records of one change, whatever their size
_MAX_BATCH_BYTES = 1 << 30


class ClassicGroups(Protocol):
    """What the online migration needs of the classic coordinator."""

    @property
    def classic_max_size(self) -> int: ...

    def has_members(self, group_id: str) -> bool: ...

    def hand_over_for_upgrade(self, group_id: str, max_size: int) -> ClassicGroupSnapshot | str | None: ...

    def adopt_downgraded(self, snapshot: ClassicGroupSnapshot, preceding: Sequence[tuple[bytes, bytes | None]] = (),
                         then: Callable[[int], None] = lambda error: None) -> None: ...

    def validate_join(self, request: JoinGroupParams) -> int | None: ...

    def handle_join_group(self, request: JoinGroupParams, reply: Callable[[JoinGroupResult], None]) -> None: ...


@dataclass
class _Change:
    """A change about to be made to some groups: their records and their state before it, and records of the
    classic coordinator to write first in the same batch (an online upgrade's)."""

    images: Mapping[str, Mapping[bytes, bytes]]
    checkpoint: Checkpoint
    preceding: tuple[tuple[bytes, bytes | None], ...] = ()


def _first_error_after(calls: int, then: Callable[[int], None]) -> Callable[[int], None]:
    """A callback that runs ``then`` once it has been called ``calls`` times, with the first error (else 0)."""
    errors: list[int] = []
    lock = threading.Lock()

    def one(error: int) -> None:
        with lock:
            errors.append(error)
            if len(errors) != calls:
                return
        then(next((e for e in errors if e), 0))
    return one


class ConsumerGroupCoordinator:
    """Serves the consumer groups while ``runtime`` serves; call :meth:`startup` once."""

    def __init__(self, config: ConsumerGroupConfig, runtime: CoordinatorRuntime,
                 topics: Callable[[], TopicsImage], time: Time = SYSTEM_TIME) -> None:
        self.config = config
        self.runtime = runtime
        self.time = time
        self._topics = topics
        #: reentrant: a request routed under :meth:`group_types_held` then takes it again to act
        self._lock = threading.RLock()
        self._manager = ConsumerGroupManager(config)
        #: the classic coordinator on the same runtime (set when it hosts these groups), for the migration
        self.classic_groups: ClassicGroups | None = None

    @contextmanager
    def group_types_held(self) -> Iterator[None]:
        """While held, no group changes its type (no online upgrade or downgrade runs; they take the same
        lock): a classic-protocol request (SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, TxnOffsetCommit,
        OffsetFetch) routed by :meth:`is_consumer_group` or a ``validate_*`` call is acted on in the group it was
        routed to, as Kafka's coordinator shard routes and acts in one event of the group's partition. The
        classic coordinator's calls made while held take a group's lock after this one (the order the migrations
        take them in)."""
        with self._lock:
            yield

    def startup(self) -> None:
        self.runtime.schedule_periodic(self.expire_members, EXPIRY_CHECK_INTERVAL_MS, "consumer group sessions")

    def unload(self, in_partition: Callable[[str], bool] | None = None) -> None:
        """Drop the consumer groups of a partition the runtime stopped serving (``in_partition(group id)``; None:
        every group)."""
        with self._lock:
            if in_partition is None:
                self._manager.groups.clear()
                return
            drop_keys_of_partition(in_partition, self._manager.groups, self._manager.group_configs)

    def load(self, live_records: Mapping[bytes, bytes]) -> int:
        """Add the groups a partition's live consumer-group records describe (the classic coordinator's load
        collects them; the other partitions' groups stay); each member's session starts now. Returns the number of
        groups loaded."""
        try:
            groups = records.replay(live_records.items())
            configs = records.replay_group_configs(live_records.items())
        except MessageDecodeError:
            _log.exception("event=consumer_groups_not_loaded reason=unreadable_record: the consumer groups start "
                           "empty and their members rejoin")
            groups, configs = {}, {}
        with self._lock:
            self._manager.group_configs.update(configs)
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
            self._manager.groups.update(groups)
        return len(groups)

    def _image(self, group_id: str) -> dict[bytes, bytes]:
        group = self._manager.groups.get(group_id)
        return {} if group is None else records.group_records(group)

    def _begin(self, group_ids: Iterable[str]) -> _Change:
        """Before changing ``group_ids`` (the caller holds the lock): their records and state, for :meth:`_persist`."""
        ids = list(group_ids)
        return _Change({g: self._image(g) for g in ids}, self._manager.checkpoint(ids))

    def _persist(self, change: _Change, then: Callable[[int], None] = lambda error: None) -> None:
        """Append what changed in the groups of ``change`` since it began (the caller holds the lock), as one
        batch, then ``then(0)`` once the ISR has it (at once on a single broker, or when nothing changed). When
        the partition refuses the append (this broker no longer leads it, or its log failed) the groups are put
        back as they were (Kafka's runtime reverts its timeline: nothing unwritten is ever served) and
        ``then(NOT_COORDINATOR)`` runs; when the ISR loses it, ``then(NOT_COORDINATOR)``."""
        now = self.time.milliseconds()
        builder = MemoryRecordsBuilder(write_limit=_MAX_BATCH_BYTES)
        count = 0
        for key, value in change.preceding:
            builder.append(now, key, value)
            count += 1
        for group_id, before in change.images.items():
            for key, value in records.diff(before, self._image(group_id)):
                builder.append(now, key, value)
                count += 1
        if not count:
            then(0)
            return
        def failed(e: Exception) -> None:  # the partition's leadership moved (or its log failed): look again
            self._manager.revert(change.checkpoint)
            _log.error("event=consumer_group_records_not_appended groups=%s error=%r: the change is undone; its "
                       "members get NOT_COORDINATOR and look the coordinator up again", list(change.images), e)
            then(int(NotCoordinatorError.code))

        self.runtime.write(CoordinatorResult(
            builder.build(), None, on_durable=lambda error: then(int(NotCoordinatorError.code) if error else 0),
            on_failed=failed))

    def inactive_error(self, group_id: str | None = None) -> int | None:
        """The error for a request of ``group_id`` while the runtime does not serve its partition (None: any
        request while it serves no partition), else None."""
        if group_id is not None:
            return self.runtime.error_for(group_id)
        return None if self.runtime.is_active else self.runtime.inactive_error()

    # -- requests -----------------------------------------------------------------------------------------
    def heartbeat(self, request: ConsumerGroupHeartbeatParams,
                  reply: Callable[[ConsumerGroupHeartbeatResult], None]) -> None:
        """ConsumerGroupHeartbeat: ``reply(result)`` once the change it made is durable (on a cluster broker:
        once the ISR has its records; maybe later, on the runtime's timer thread)."""
        error = self.inactive_error(request.group_id)
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
            change = self._begin([request.group_id])
            refused = self._maybe_upgrade(request, topics, change)
            if refused is not None:
                reply(refused)
                return
            result = self._manager.heartbeat(request, self.time.milliseconds(), topics)
            self._persist_and_downgrade(change, topics, written)

    def _maybe_upgrade(self, request: ConsumerGroupHeartbeatParams, topics: TopicsImage,
                       change: _Change) -> ConsumerGroupHeartbeatResult | None:
        """KIP-848's online upgrade (the caller holds the lock): a joining consumer-protocol member converts a
        classic group with members into a consumer group when ``group.consumer.migration.policy`` allows it (the
        classic group's record goes into ``change``'s batch); a refusal (GROUP_ID_NOT_FOUND, as Kafka answers)
        is returned."""
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
        change.preceding = why.records
        _log.info("event=consumer_group_upgraded group=%s classic_generation=%d members=%d", why.group_id,
                  why.generation_id, len(why.members))
        return None

    def _persist_and_downgrade(self, change: _Change, topics: TopicsImage,
                               then: Callable[[int], None] = lambda error: None) -> None:
        """:meth:`_persist` ``change``, with KIP-848's online downgrade of the groups that qualify now (the caller
        holds the lock, so that no request sees a group between its two types): the classic coordinator takes
        each such group back, its classic group record appended in one batch with the tombstones of every record
        the consumer group had before ``change`` (Kafka writes the change that empties a group of consumer-protocol
        members and the conversion as one atomic batch). ``then(error)`` runs once every write of ``change``'s
        groups reported (the first error, else 0). When a conversion's append fails, its group is put back as it
        was before ``change`` (as Kafka's runtime reverts its timeline) and ``then`` gets NOT_COORDINATOR."""
        classic = self.classic_groups
        others = self._begin(g for g in self._manager.downgrade_candidates if g not in change.images)
        images = {**others.images, **change.images}
        before = {**others.checkpoint.groups, **change.checkpoint.groups}
        downgraded = self._manager.take_downgrades(topics, None if classic is None else classic.classic_max_size)
        if classic is None:  # no classic coordinator to hand the groups to: they only go
            self._persist(_Change(images, Checkpoint(before, change.checkpoint.downgrade_candidates),
                                  change.preceding), then)
            return
        gone = {d.group_id for d in downgraded}
        reported = _first_error_after(1 + len(gone & change.images.keys()), then)
        self._persist(_Change({g: i for g, i in images.items() if g not in gone},
                              Checkpoint({g: c for g, c in before.items() if g not in gone},
                                         change.checkpoint.downgrade_candidates), change.preceding),
                      reported)
        for snapshot in downgraded:
            group_id = snapshot.group_id
            done = reported if group_id in change.images else (lambda error: None)
            try:
                classic.adopt_downgraded(snapshot, records.diff(images[group_id], {}), done)
            except Exception as e:
                self._manager.revert(Checkpoint({group_id: before[group_id]}, frozenset({group_id})))
                _log.error("event=consumer_group_not_downgraded group=%s error=%r: its records could not be "
                           "written; it stays the consumer group it was before this change", group_id, e)
                done(int(NotCoordinatorError.code))
                continue
            _log.info("event=consumer_group_downgraded group=%s epoch=%d members=%d", group_id,
                      snapshot.generation_id, len(snapshot.members))

    def expire_members(self) -> None:
        with self._lock:
            change = self._begin(self._manager.expiring_groups(self.time.milliseconds()))
            expired = self._manager.expire(self.time.milliseconds())
            if expired:
                self._persist_and_downgrade(change, self._topics())
            else:
                self._persist(change)
        for e in expired:
            _log.info("event=consumer_group_member_removed group=%s member=%s reason=%r", e.group_id, e.member_id,
                      e.reason)

    # -- classic members (KIP-848 online migration) ---------------------------------------------------------
    def join_group(self, request: JoinGroupParams, reply: Callable[[JoinGroupResult], None]) -> None:
        """A JoinGroup, to whichever group ``request.group_id`` is when it is handled: a consumer group with
        members takes it as a classic member (KIP-848's online migration); an empty consumer group is deleted and
        the classic coordinator takes it (Kafka converts it); else the classic coordinator takes it. Decided and
        done under the lock the online upgrade and downgrade take (Kafka: one event of the coordinator runtime),
        so the group cannot change its type between the check and the join."""
        classic = self.classic_groups
        assert classic is not None, "JoinGroup needs the classic coordinator these consumer groups are hosted by"
        topics = self._topics()
        with self._lock:
            group = self._manager.groups.get(request.group_id)
            if group is None or not group.members:
                if group is not None:
                    change = self._begin([request.group_id])
                    self._manager.delete_group(request.group_id)
                    self._persist(change)
                classic.handle_join_group(request, reply)
                return
            error = classic.validate_join(request)
            if error is not None:
                reply(JoinGroupResult(request.member_id, error))
                return
            self._classic_join(request, reply, topics)

    def classic_join(self, request: JoinGroupParams, reply: Callable[[JoinGroupResult], None]) -> None:
        """JoinGroup to a consumer group with members (the caller checked): answered once durable."""
        topics = self._topics()
        with self._lock:
            if request.group_id not in self._manager.groups:
                reply(JoinGroupResult(request.member_id, UnknownMemberIdError.code))
                return
            self._classic_join(request, reply, topics)

    def _classic_join(self, request: JoinGroupParams, reply: Callable[[JoinGroupResult], None],
                      topics: TopicsImage) -> None:
        change = self._begin([request.group_id])
        result = self._manager.classic_join(request, self.time.milliseconds(), topics)
        self._persist_and_downgrade(  # a static member may have replaced the last consumer member
            change, topics, lambda error: reply(JoinGroupResult(request.member_id, error) if error else result))

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
            change = self._begin([group_id])
            out = self._manager.classic_leave(group_id, leaving)
            self._persist_and_downgrade(change, self._topics())
        return out

    # -- group configs (GROUP config resources) ------------------------------------------------------------
    def describe_group_configs(self, group_id: str, keys: list[str] | None = None) -> list[GroupConfigEntry]:
        with self._lock:
            return group_configs.describe(self._manager.group_configs.get(group_id, {}), self.config, keys)

    def alter_group_configs(self, group_id: str, changes: Mapping[str, str | None], validate_only: bool) -> None:
        """Set (a value) or remove (None) some of the group's configs: validated as a whole
        (InvalidConfigurationError), then written to the group's partition and applied to the group (its members
        get the new heartbeat interval in their next response; sessions restart with the new timeout)."""
        error = self.inactive_error(group_id)
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
            change = self._begin(g for g in group_ids if g in self._manager.groups)
            out = {g: self._manager.delete_group(g) for g in change.images}
            self._persist(change)
            return out
