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
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping

from mini_broker.coordinator.partitioning import drop_keys_of_partition
from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.group.consumer.group_configs import GroupConfigEntry, apply_changes
from mini_broker.group.consumer.model import TopicsImage
from mini_broker.group.consumer.records import diff
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
from pykafka_client.errors import MessageDecodeError, NotCoordinatorError
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

#: how often member sessions are checked (a bound on how late an expiry is noticed)
EXPIRY_CHECK_INTERVAL_MS = 100


class ShareGroupCoordinator:
    """Serves the share groups while ``runtime`` serves; call :meth:`startup` once. ``on_member_removed(group id,
    member id)`` is called (no lock held) for every member whose session expired."""

    def __init__(self, config: ShareGroupConfig, runtime: CoordinatorRuntime, topics: Callable[[], TopicsImage],
                 on_member_removed: Callable[[str, str], object] = lambda g, m: None,
                 time: Time = SYSTEM_TIME) -> None:
        self.config = config
        self.runtime = runtime
        self.time = time
        self._topics = topics
        self._on_member_removed = on_member_removed
        self._lock = threading.Lock()
        self._manager = ShareGroupManager(config)

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
            return ShareGroup(group.group_id, group.group_epoch, group.assignment_epoch, members)

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
        """For the share groups among ``group_ids``: 0 (deleted, with its records: it had no members) or
        GROUP_NOT_EMPTY. A group id that is not a share group here is left out of the answer."""
        with self._lock:
            ids = [g for g in dict.fromkeys(group_ids) if g in self._manager.groups]
            before = {g: self._image(g) for g in ids}
            out = {g: self._manager.delete_group(g) for g in ids}
            self._persist(ids, before)
        for group_id, error in out.items():
            if not error:
                _log.info("event=share_group_deleted group=%s", group_id)
        return out

    def list_groups(self) -> list[tuple[str, str]]:
        """(group id, state) of every share group."""
        with self._lock:
            return [(g.group_id, g.state.value) for g in self._manager.groups.values()]
