"""Share group membership (Java: ShareMembershipManager, KIP-932), sans-IO: it builds each
ShareGroupHeartbeat request and digests its response; the share consumer sends them.

The member chooses its id (a UUID), joins with epoch 0 and its subscribed topics, and takes the
assignment the coordinator returns (topic ids and partitions; every member of a share group may be given
the same partition). A fenced or unknown member rejoins with epoch 0; leaving sends epoch -1.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Collection
from enum import Enum

from pykafka_client.consumer.heartbeat_backoff import HeartbeatBackoff
from pykafka_client.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedMemberEpochError,
    NotCoordinatorError,
    UnknownMemberIdError,
    for_code,
)
from pykafka_client.protocol.messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse

LEAVE_GROUP_MEMBER_EPOCH = -1


class ShareMemberState(Enum):
    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    STABLE = "STABLE"
    LEFT = "LEFT"


class HeartbeatOutcome(Enum):
    OK = "OK"
    COORDINATOR_UNKNOWN = "COORDINATOR_UNKNOWN"  # find the coordinator again, then heartbeat
    RETRY = "RETRY"  # back off and heartbeat again
    REJOIN = "REJOIN"  # fenced or unknown: the assignment is gone, rejoin with epoch 0


class ShareMembershipManager:
    """One member's view of its share group: id, epoch, subscription and assignment."""

    def __init__(self, group_id: str, rack_id: str | None = None, retry_backoff_ms: int = 100,
                 retry_backoff_max_ms: int | None = None, rng: random.Random | None = None) -> None:
        self.group_id = group_id
        self.rack_id = rack_id or None
        self.member_id = str(uuid.uuid4())
        self.member_epoch = 0
        self.state = ShareMemberState.UNSUBSCRIBED
        self.subscription: list[str] = []
        self.assignment: dict[uuid.UUID, list[int]] = {}
        self.heartbeat_interval_ms = 5000
        #: failed heartbeats back off exponentially up to ``retry_backoff_max_ms`` (None: constant)
        self.backoff = HeartbeatBackoff(
            retry_backoff_ms, retry_backoff_ms if retry_backoff_max_ms is None else retry_backoff_max_ms, rng)
        self._next_heartbeat_ms = 0
        self._send_subscription = False
        self.in_flight = False

    def subscribe(self, topics: Collection[str]) -> None:
        self.subscription = sorted(set(topics))
        self._send_subscription = True
        self._next_heartbeat_ms = 0
        if self.state in (ShareMemberState.UNSUBSCRIBED, ShareMemberState.LEFT):
            self.state = ShareMemberState.JOINING

    def should_heartbeat(self, now_ms: int) -> bool:
        return (self.state in (ShareMemberState.JOINING, ShareMemberState.STABLE) and not self.in_flight
                and now_ms >= self._next_heartbeat_ms)

    def time_to_next_heartbeat(self, now_ms: int) -> int:
        return max(0, self._next_heartbeat_ms - now_ms)

    def heartbeat_request(self) -> ShareGroupHeartbeatRequest:
        """The next heartbeat; the subscription is sent when joining or after it changed."""
        full = self._send_subscription or self.member_epoch == 0
        self.in_flight = True
        return ShareGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=self.member_epoch,
            rack_id=self.rack_id if full else None, subscribed_topic_names=list(self.subscription) if full else None)

    def leave_request(self, unsubscribe: bool = False) -> ShareGroupHeartbeatRequest:
        """The heartbeat that leaves the group (sent with the current epoch's member id); a later subscribe
        joins again with epoch 0. ``unsubscribe`` also forgets the subscription."""
        request = ShareGroupHeartbeatRequest(group_id=self.group_id, member_id=self.member_id,
                                             member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
        self.state = ShareMemberState.LEFT
        self.assignment = {}
        self.member_epoch = 0
        if unsubscribe:
            self.subscription = []
        return request

    def on_heartbeat_failure(self, now_ms: int) -> None:
        """The request did not get an answer (disconnect, timeout): try again after the backoff."""
        self.in_flight = False
        self._next_heartbeat_ms = now_ms + self.backoff.on_failed_attempt()

    def on_heartbeat_response(self, response: ShareGroupHeartbeatResponse, now_ms: int) -> HeartbeatOutcome:
        """Digest a heartbeat's answer; raises the broker's error when it is fatal (authorization, ...)."""
        self.in_flight = False
        err = response.error_code
        if err == 0:
            self.backoff.reset()
            self._send_subscription = False
            if response.member_id:
                self.member_id = response.member_id
            self.member_epoch = response.member_epoch
            if response.heartbeat_interval_ms > 0:
                self.heartbeat_interval_ms = response.heartbeat_interval_ms
            if response.assignment is not None:
                self.assignment = {t.topic_id: sorted(t.partitions) for t in response.assignment.topic_partitions}
            if self.state is ShareMemberState.JOINING:
                self.state = ShareMemberState.STABLE
            self._next_heartbeat_ms = now_ms + self.heartbeat_interval_ms
            return HeartbeatOutcome.OK
        self._next_heartbeat_ms = now_ms + self.backoff.on_failed_attempt()
        if err in (NotCoordinatorError.code, CoordinatorNotAvailableError.code):
            # Java resets the backoff: the next heartbeat goes as soon as the coordinator is found again
            self.backoff.reset()
            self._next_heartbeat_ms = now_ms
            return HeartbeatOutcome.COORDINATOR_UNKNOWN
        if err == CoordinatorLoadInProgressError.code:
            return HeartbeatOutcome.RETRY
        if err in (UnknownMemberIdError.code, FencedMemberEpochError.code):
            self.backoff.reset()
            self.member_epoch = 0
            self.assignment = {}
            self._send_subscription = True
            self._next_heartbeat_ms = now_ms
            self.state = ShareMemberState.JOINING
            return HeartbeatOutcome.REJOIN
        raise for_code(err)(
            f"ShareGroupHeartbeat for share group {self.group_id} failed: {response.error_message or 'no detail'}")
