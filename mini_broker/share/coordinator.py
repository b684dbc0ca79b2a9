"""The share groups' driver: the :class:`ShareGroupManager` under one lock, served while the group coordinator's
:class:`~mini_broker.coordinator.runtime.CoordinatorRuntime` serves (NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS otherwise), with a periodic task on the runtime's timer that ends expired member
sessions. A member whose session expires has its share sessions closed (its acquired records released); a member
that leaves closes them itself (its final ShareFetch / ShareAcknowledge, which librdkafka sends after the leave
heartbeat, still acknowledges what it holds).

Not durable yet: the groups live in memory and are dropped when the runtime unloads; members rejoin (epoch 0)
after UNKNOWN_MEMBER_ID, as after a coordinator move.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.group.consumer.model import TopicsImage
from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.group import (
    ShareGroup,
    ShareGroupHeartbeatParams,
    ShareGroupHeartbeatResult,
    ShareGroupManager,
    ShareGroupMember,
)
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

    def inactive_error(self) -> int | None:
        return None if self.runtime.is_active else self.runtime.inactive_error()

    def heartbeat(self, request: ShareGroupHeartbeatParams) -> ShareGroupHeartbeatResult:
        error = self.inactive_error()
        if error is not None:
            return ShareGroupHeartbeatResult(error, "the group coordinator is not serving here: look it up again "
                                                    "(FindCoordinator) and retry", request.member_id or None)
        with self._lock:
            return self._manager.heartbeat(request, self.time.milliseconds(), self._topics())

    def expire_members(self) -> None:
        with self._lock:
            expired = self._manager.expire(self.time.milliseconds(), self._topics())
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

    def list_groups(self) -> list[tuple[str, str]]:
        """(group id, state) of every share group."""
        with self._lock:
            return [(g.group_id, g.state.value) for g in self._manager.groups.values()]
