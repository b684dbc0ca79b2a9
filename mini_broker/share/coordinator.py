"""The share groups' driver: the :class:`ShareGroupManager` under one lock, served while the group coordinator's
:class:`~mini_broker.coordinator.runtime.CoordinatorRuntime` serves (NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS otherwise), with a periodic task on the runtime's timer that ends expired member
sessions. A member whose session expires has its share sessions closed (its acquired records released); a member
that leaves closes them itself (its final ShareFetch / ShareAcknowledge, which librdkafka sends after the leave
heartbeat, still acknowledges what it holds).

Every change of a group is appended to the runtime's partition as the share-group records that turn its previous
image into its new one (:mod:`mini_broker.share.records`); a heartbeat that changed its group is answered once
they are durable. The classic coordinator's load hands this driver the live share-group records, which it
replays (members come back with their epochs and assignments and a fresh session); the groups are dropped when
the runtime unloads.

Share-partition state (Kafka's ShareGroupStatePartitionMetadata): the group's records name the share partitions
whose state the share coordinators may hold: a partition is added in the append of the assignment that first
names it (its leader creates the state on the first fetch, at ``share.auto.offset.reset``) or of an admin's start
offset. Deleting the group (DeleteGroups) or a topic's offsets (DeleteShareGroupOffsets) first marks the topics
deleting, then deletes each partition's state at its share coordinator (:class:`ShareStateAdmin`: in process on a
single broker, DeleteShareGroupState on a cluster), then drops them (a failure leaves them marked and recorded: a
retry deletes them); altering offsets initializes the state at a new state epoch; describing offsets reads each
partition's summary (ReadShareGroupStateSummary). The share-partition leaders that still hold the old state are
fenced on their next write (FENCED_STATE_EPOCH) and read the state again when a member opens a share session.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping

from mini_broker.coordinator.partitioning import drop_keys_of_partition
from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.group.consumer.group_configs import GroupConfigEntry, apply_changes
from mini_broker.group.consumer.model import TopicsImage
from mini_broker.group.consumer.records import diff
from mini_broker.server.api_error import error_code
from mini_broker.share import group_configs
from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.group import (
    ShareGroup,
    ShareGroupHeartbeatParams,
    ShareGroupHeartbeatResult,
    ShareGroupManager,
    ShareGroupMember,
)
from mini_broker.share.records import group_config_record, group_records, replay, replay_group_configs
from mini_broker.share.state_admin import ShareStateAdmin, StateSummary
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    GroupNotEmptyError,
    MessageDecodeError,
    NotCoordinatorError,
    for_code,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

#: (topic id, partition)
TopicIdPartition = tuple[uuid.UUID, int]
#: how often member sessions are checked (a bound on how late an expiry is noticed)
EXPIRY_CHECK_INTERVAL_MS = 100


class ShareGroupCoordinator:
    """Serves the share groups while ``runtime`` serves; call :meth:`startup` once. ``on_member_removed(group id,
    member id)`` is called (no lock held) for every member whose session expired."""

    def __init__(self, config: ShareGroupConfig, runtime: CoordinatorRuntime, topics: Callable[[], TopicsImage],
                 on_member_removed: Callable[[str, str], object] = lambda g, m: None,
                 time: Time = SYSTEM_TIME, state_admin: ShareStateAdmin | None = None,
                 on_state_deleted: Callable[[str, TopicIdPartition | None], object] = lambda g, tp: None) -> None:
        self.config = config
        self.runtime = runtime
        self.time = time
        self._topics = topics
        self._on_member_removed = on_member_removed
        self._lock = threading.Lock()
        self._manager = ShareGroupManager(config)
        #: where the share partitions' state is kept (the share coordinators; None: nowhere, unit tests)
        self.state_admin = state_admin
        #: called (no lock held) after the state of a group's share partition (None: all of them) changed or was
        #: deleted at the share coordinator: this broker's own share partitions of it are read again
        self.on_state_deleted = on_state_deleted

    def startup(self) -> None:
        self.runtime.schedule_periodic(self.expire_members, EXPIRY_CHECK_INTERVAL_MS, "share group sessions")

    def inactive_error(self, group_id: str | None = None) -> int | None:
        """The error for a request of ``group_id`` while the runtime does not serve its partition (None: any
        request while it serves no partition), else None."""
        if group_id is not None:
            return self.runtime.error_for(group_id)
        return None if self.runtime.is_active else self.runtime.inactive_error()

    def load(self, live_records: Mapping[bytes, bytes]) -> int:
        """Add the groups a partition's live share-group records describe (the other partitions' groups stay);
        each member's session starts now. Returns the number of groups loaded."""
        try:
            groups = replay(live_records.items())
            configs = replay_group_configs(live_records.items())
        except MessageDecodeError:
            _log.exception("event=share_groups_not_loaded reason=unreadable_record: the share groups start empty "
                           "and their members rejoin")
            groups, configs = {}, {}
        now = self.time.milliseconds()
        with self._lock:
            self._manager.group_configs.update(configs)
            for group in groups.values():
                timeout = self._manager.config_for(group.group_id).session_timeout_ms
                for member_id in group.members:
                    group.session_deadlines[member_id] = now + timeout
            self._manager.groups.update(groups)
        return len(groups)

    def unload(self, in_partition: Callable[[str], bool] | None = None) -> None:
        """Drop the share groups of a partition the runtime stopped serving (``in_partition(group id)``; None:
        every group)."""
        with self._lock:
            if in_partition is None:
                self._manager.groups.clear()
                self._manager.group_configs.clear()
                return
            drop_keys_of_partition(in_partition, self._manager.groups, self._manager.group_configs)

    # -- group configs (the share.* keys of GROUP config resources) ----------------------------------------
    def group_config(self, group_id: str) -> ShareGroupConfig:
        """The share config that applies to the group (the broker's with the group's overrides)."""
        with self._lock:
            return self._manager.config_for(group_id)

    def describe_group_configs(self, group_id: str, keys: list[str] | None = None) -> list[GroupConfigEntry]:
        with self._lock:
            return group_configs.describe(self._manager.group_configs.get(group_id, {}), self.config, keys)

    def alter_group_configs(self, group_id: str, changes: Mapping[str, str | None], validate_only: bool) -> None:
        """Set (a value) or remove (None) some of the group's ``share.*`` configs: validated as a whole
        (InvalidConfigurationError), then written to the group's partition and applied (new share partitions,
        acquisitions and heartbeats use them)."""
        error = self.inactive_error(group_id)
        if error is not None:
            raise NotCoordinatorError(f"the group coordinator is not serving here (error {error}): look it up "
                                      f"again (FindCoordinator) and retry")
        with self._lock:
            overrides = apply_changes(
                self._manager.group_configs, group_id, changes, group_configs.SHARE_GROUP_CONFIG_KEYS,
                lambda proposed: group_configs.validate(proposed, self.config), validate_only)
            if overrides is None:
                return
            self.runtime.write_records([group_config_record(group_id, overrides)], self.time.milliseconds(),
                                       what=f"share configs of group {group_id}")
        _log.info("event=share_group_configs_altered group=%s configs=%s", group_id, overrides)

    def _image(self, group_id: str) -> dict[bytes, bytes]:
        group = self._manager.groups.get(group_id)
        return {} if group is None else group_records(group)

    def _persist(self, group_ids: Iterable[str], before: Mapping[str, Mapping[bytes, bytes]],
                 then: Callable[[int], None] = lambda error: None) -> None:
        """Append what changed in these groups since ``before`` (the caller holds the lock), then ``then(0)`` once
        durable (at once when nothing changed), or ``then(NOT_COORDINATOR)`` when the append failed or was lost."""
        changes = [change for group_id in group_ids for change in diff(before.get(group_id, {}), self._image(group_id))]
        self.runtime.write_records(changes, self.time.milliseconds(), then, f"share groups {list(group_ids)}")

    def heartbeat(self, request: ShareGroupHeartbeatParams,
                  reply: Callable[[ShareGroupHeartbeatResult], None]) -> None:
        """ShareGroupHeartbeat: ``reply(result)`` once the change it made is durable (maybe later, on the
        runtime's timer thread)."""
        error = self.inactive_error(request.group_id)
        if error is not None:
            reply(ShareGroupHeartbeatResult(error, "the group coordinator is not serving here: look it up again "
                                                   "(FindCoordinator) and retry", request.member_id or None))
            return

        def written(error: int) -> None:
            reply(result if not error else ShareGroupHeartbeatResult(
                error, "the share group's records could not be written here: look the coordinator up again "
                       "(FindCoordinator) and retry", request.member_id or None))

        with self._lock:
            before = {request.group_id: self._image(request.group_id)}
            result = self._manager.heartbeat(request, self.time.milliseconds(), self._topics())
            self._persist([request.group_id], before, written)

    def expire_members(self) -> None:
        with self._lock:
            now = self.time.milliseconds()
            before = {g.group_id: self._image(g.group_id) for g in self._manager.groups.values()
                      if any(d <= now for d in g.session_deadlines.values())}
            expired = self._manager.expire(now, self._topics())
            self._persist(before, before)
        for group_id, member_id in expired:
            _log.info("event=share_group_member_expired group=%s member=%s", group_id, member_id)
            self._on_member_removed(group_id, member_id)

    def is_share_group(self, group_id: str) -> bool:
        with self._lock:
            return group_id in self._manager.groups

    def is_member(self, group_id: str, member_id: str) -> bool:
        with self._lock:
            return self._manager.is_member(group_id, member_id)

    def describe(self, group_id: str) -> ShareGroup | None:
        """A copy of the group's state (None: not a share group here)."""
        with self._lock:
            group = self._manager.groups.get(group_id)
            if group is None:
                return None
            members = {m: ShareGroupMember(v.member_id, v.member_epoch, v.subscribed_topic_names, v.rack_id,
                                           v.client_id, v.client_host, dict(v.assignment))
                       for m, v in group.members.items()}
            return ShareGroup(group.group_id, group.group_epoch, group.assignment_epoch, members,
                              initialized=dict(group.initialized), deleting=group.deleting)

    def create_empty_group(self, group_id: str) -> bool:
        """An empty share group under ``group_id`` unless one exists (AlterShareGroupOffsets on a new group id, so
        that its offsets may be set before it is first used, as Kafka 4.2 does); its records are appended. Whether
        the group was created."""
        with self._lock:
            if group_id in self._manager.groups:
                return False
            self._manager.groups[group_id] = ShareGroup(group_id)
            self._persist([group_id], {group_id: {}})
        _log.info("event=share_group_created group=%s reason=offsets_altered", group_id)
        return True

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        """For the share groups among ``group_ids``: 0 (deleted, with its records and the state of every share
        partition it has at the share coordinators: it had no members), GROUP_NOT_EMPTY, or the error of a state
        deletion (the group stays, marked deleting; deleting it again retries). A group id that is not a share
        group here is left out of the answer. The share coordinator calls run with no lock held."""
        out: dict[str, int] = {}
        with self._lock:
            ids = [g for g in dict.fromkeys(group_ids) if g in self._manager.groups]
            partitions = {}
            for g in ids:
                if self._manager.groups[g].members:
                    out[g] = int(GroupNotEmptyError.code)
                else:
                    partitions[g] = self._manager.state_partitions(g)
            before = {g: self._image(g) for g in partitions}
            for g, topics in partitions.items():
                self._manager.mark_deleting(g, topics)
            self._persist(list(partitions), before)
        for g, topics in partitions.items():
            error = self._delete_state(g, topics)
            if error:
                out[g] = error
        with self._lock:
            done = [g for g in partitions if g not in out]
            before = {g: self._image(g) for g in done}
            for g in done:
                self._manager.remove_topics(g, partitions[g])
                out[g] = self._manager.delete_group(g)  # GROUP_NOT_EMPTY: a member joined meanwhile
            self._persist(done, before)
        for group_id in done:
            self.on_state_deleted(group_id, None)
            if not out[group_id]:
                _log.info("event=share_group_deleted group=%s share_partitions=%d", group_id,
                          sum(len(ps) for ps in partitions[group_id].values()))
        return out

    # -- share-partition state at the share coordinators (ShareGroupStatePartitionMetadata) -----------------
    def state_partitions(self, group_id: str) -> dict[uuid.UUID, frozenset[int]]:
        """The group's share partitions whose state the share coordinators may hold (topic id -> partitions)."""
        with self._lock:
            return self._manager.state_partitions(group_id)

    def describe_offsets(self, group_id: str) -> dict[TopicIdPartition, StateSummary | KafkaError | None]:
        """The state summary of each of the group's share partitions with state, from its share coordinator
        (ReadShareGroupStateSummary; None: it has no state; the error when it could not be read)."""
        out: dict[TopicIdPartition, StateSummary | KafkaError | None] = {}
        for topic_id, parts in self.state_partitions(group_id).items():
            for p in sorted(parts):
                try:
                    found = self._admin().read_state_summary((group_id, topic_id, p))
                except KafkaError as e:
                    out[(topic_id, p)] = e
                    continue
                out[(topic_id, p)] = found if found is not None and found.start_offset >= 0 else None
        return out

    def alter_offset(self, group_id: str, tp: TopicIdPartition, start_offset: int) -> None:
        """Start the share partition afresh at ``start_offset`` at its share coordinator (InitializeShareGroupState
        with a new state epoch: its leader's writes of the old state are fenced and it reads the new one), then
        record it among the group's share partitions with state. Raises the share coordinator's ``KafkaError``."""
        self._admin().initialize_group_state((group_id, *tp), start_offset)
        with self._lock:
            if group_id in self._manager.groups:
                before = {group_id: self._image(group_id)}
                self._manager.add_initialized(group_id, tp[0], [tp[1]])
                self._persist([group_id], before)
        self.on_state_deleted(group_id, tp)

    def delete_offsets(self, group_id: str, topic_id: uuid.UUID) -> int:
        """Delete the state of the group's share partitions of one topic at their share coordinators
        (DeleteShareGroupState), then forget them: their next use starts at ``share.auto.offset.reset``. Returns
        how many there were; raises the first deletion's ``KafkaError`` (the topic stays marked deleting)."""
        with self._lock:
            parts = self._manager.state_partitions(group_id).get(topic_id, frozenset())
            if not parts:
                return 0
            before = {group_id: self._image(group_id)}
            self._manager.mark_deleting(group_id, [topic_id])
            self._persist([group_id], before)
        error = self._delete_state(group_id, {topic_id: parts})
        if error:
            raise for_code(error)(f"the share state of group {group_id}'s partitions of topic {topic_id} could not "
                                  f"be deleted at their share coordinators: retry")
        with self._lock:
            before = {group_id: self._image(group_id)}
            self._manager.remove_topics(group_id, [topic_id])
            self._persist([group_id], before)
        for p in parts:
            self.on_state_deleted(group_id, (topic_id, p))
        return len(parts)

    def _admin(self) -> ShareStateAdmin:
        if self.state_admin is None:
            raise CoordinatorNotAvailableError("this broker's share groups have no share coordinator to keep their "
                                               "share partitions' state: the broker is still starting, retry")
        return self.state_admin

    def _delete_state(self, group_id: str, topics: Mapping[uuid.UUID, frozenset[int]]) -> int:
        """Delete these share partitions' state at their share coordinators (no lock held): 0, or the error code
        of the first that failed (the others are still tried). Without a share coordinator nothing is kept."""
        error = 0
        if self.state_admin is None:
            return error
        for topic_id, parts in topics.items():
            for p in sorted(parts):
                try:
                    self._admin().delete_group_state((group_id, topic_id, p))
                except KafkaError as e:
                    _log.warning("event=share_state_not_deleted group=%s topic_id=%s partition=%d error=%r",
                                 group_id, topic_id, p, e)
                    error = error or error_code(e)
        return error

    def list_groups(self) -> list[tuple[str, str]]:
        """(group id, state) of every share group."""
        with self._lock:
            return [(g.group_id, g.state.value) for g in self._manager.groups.values()]
