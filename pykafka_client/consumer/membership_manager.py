"""The member side of the KIP-848 consumer group protocol (Java: ConsumerMembershipManager and the
heartbeat state of ConsumerHeartbeatRequestManager), sans-IO.

:class:`ConsumerMembershipManager` takes the subscription, heartbeat responses (or failures) and the
clock, and answers two questions: which ConsumerGroupHeartbeat to send now (:meth:`heartbeat_request`),
and which partitions to revoke and assign (:meth:`next_reconciliation`). The coordinator that drives it
does the I/O and runs the rebalance listener in the application thread.

States (Java's MemberState)::

    UNSUBSCRIBED    -> JOINING          subscribe
    JOINING         -> RECONCILING      first response with an assignment (or STABLE when nothing changes)
    RECONCILING     -> ACKNOWLEDGING    revocation and assignment done: the next heartbeat says what we own
    ACKNOWLEDGING   -> STABLE           heartbeat with the owned partitions sent
    STABLE          -> RECONCILING      a response carries a new target assignment
    any member      -> FENCED           FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: partitions lost
    FENCED          -> JOINING          after on_partitions_lost, rejoin with epoch 0
    any member      -> PREPARE_LEAVING  unsubscribe / close: revoke first
    PREPARE_LEAVING -> LEAVING          heartbeat with epoch -1 (-2 for a static member) next
    LEAVING         -> UNSUBSCRIBED     leave heartbeat sent
    any member      -> LEAVING          max.poll.interval.ms expired: leave at once (epoch -1), the
                                        partitions are lost; the next poll() rejoins
    any             -> FATAL            a non-recoverable heartbeat error (authorization, unsupported assignor, ...)

Heartbeats: at the interval the last response gave; at once in JOINING, ACKNOWLEDGING and LEAVING; never
two in flight. The first heartbeat of a membership (epoch 0) and the first after an error carry every
field; later ones carry only what changed (subscription, owned partitions), as Java's HeartbeatState.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from enum import Enum

from pykafka_client.consumer.group_response_handlers import COORDINATOR_MOVED_ERRORS
from pykafka_client.consumer.heartbeat_backoff import HeartbeatBackoff
from pykafka_client.errors import (
    FencedMemberEpochError,
    IllegalStateError,
    TopicAuthorizationFailedError,
    UnknownMemberIdError,
    for_code,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest
from pykafka_client.protocol.messages.consumer_group_heartbeat_response import ConsumerGroupHeartbeatResponse
from pykafka_client.structs import TopicPartition

#: heartbeat errors reported to the application (its next poll() raises them) while the member stays in its
#: state and keeps heartbeating (Java's heartbeat manager: so that it recovers once the missing ACLs are added)
REPORTED_HEARTBEAT_ERRORS: tuple[type[KafkaError], ...] = (TopicAuthorizationFailedError,)

#: epoch of a member leaving the group (KIP-848)
LEAVE_GROUP_MEMBER_EPOCH = -1
#: epoch of a static member leaving temporarily (keeps its instance id's assignment until the session ends)
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
JOIN_GROUP_MEMBER_EPOCH = 0

#: heartbeat errors after which the member is fenced and rejoins with epoch 0 (Java: transitionToFenced)
FENCING_ERRORS: tuple[type[KafkaError], ...] = (FencedMemberEpochError, UnknownMemberIdError)


class MemberState(Enum):
    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    PREPARE_LEAVING = "PREPARE_LEAVING"
    LEAVING = "LEAVING"
    FATAL = "FATAL"

    def is_in_group(self) -> bool:
        return self not in (MemberState.UNSUBSCRIBED, MemberState.FENCED, MemberState.FATAL)


_VALID: dict[MemberState, frozenset[MemberState]] = {
    MemberState.UNSUBSCRIBED: frozenset({MemberState.JOINING, MemberState.FATAL}),
    MemberState.JOINING: frozenset(
        {MemberState.RECONCILING, MemberState.STABLE, MemberState.FENCED, MemberState.PREPARE_LEAVING,
         MemberState.JOINING, MemberState.LEAVING, MemberState.FATAL}),
    MemberState.RECONCILING: frozenset(
        {MemberState.ACKNOWLEDGING, MemberState.STABLE, MemberState.RECONCILING, MemberState.FENCED,
         MemberState.PREPARE_LEAVING, MemberState.JOINING, MemberState.LEAVING, MemberState.FATAL}),
    MemberState.ACKNOWLEDGING: frozenset(
        {MemberState.STABLE, MemberState.RECONCILING, MemberState.FENCED, MemberState.PREPARE_LEAVING,
         MemberState.JOINING, MemberState.LEAVING, MemberState.FATAL}),
    MemberState.STABLE: frozenset(
        {MemberState.RECONCILING, MemberState.FENCED, MemberState.PREPARE_LEAVING, MemberState.JOINING,
         MemberState.LEAVING, MemberState.FATAL}),
    MemberState.FENCED: frozenset({MemberState.JOINING, MemberState.UNSUBSCRIBED, MemberState.FATAL}),
    MemberState.PREPARE_LEAVING: frozenset({MemberState.LEAVING, MemberState.UNSUBSCRIBED, MemberState.FATAL}),
    MemberState.LEAVING: frozenset({MemberState.UNSUBSCRIBED, MemberState.FATAL}),
    MemberState.FATAL: frozenset({MemberState.UNSUBSCRIBED}),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """What to do to reach the target assignment: revoke ``revoked`` first, then assign ``added``;
    ``assigned`` is the whole new assignment, ``member_epoch`` the epoch it belongs to."""

    revoked: frozenset[TopicPartition]
    added: frozenset[TopicPartition]
    assigned: frozenset[TopicPartition]
    member_epoch: int
    #: the target (topic id -> partitions) this reconciliation reaches
    target: Mapping[uuid.UUID, frozenset[int]]


class ConsumerMembershipManager:
    """See module docstring. Not thread-safe: the coordinator calls it under its lock."""

    def __init__(
        self,
        group_id: str,
        group_instance_id: str | None = None,
        *,
        rebalance_timeout_ms: int = 300_000,
        server_assignor: str | None = None,
        rack_id: str | None = None,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.server_assignor = server_assignor
        self.rack_id = rack_id
        #: failed heartbeats back off exponentially up to ``retry_backoff_max_ms`` (None: constant)
        self.backoff = HeartbeatBackoff(
            retry_backoff_ms, retry_backoff_ms if retry_backoff_max_ms is None else retry_backoff_max_ms, rng)
        self.state = MemberState.UNSUBSCRIBED
        self.member_id = ""
        self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        self.heartbeat_interval_ms = 0
        self._next_heartbeat_ms = 0
        #: after a failed heartbeat, no heartbeat before this (Java: the heartbeat request state's backoff holds
        #: every send, joining and acknowledging included)
        self._retry_at_ms = 0
        self.heartbeat_in_flight = False
        self._subscribed_topics: frozenset[str] = frozenset()
        self._subscribed_regex: str | None = None
        #: the last target assignment the coordinator sent (topic id -> partitions), None before any
        self.target_assignment: dict[uuid.UUID, frozenset[int]] | None = None
        self._target_epoch = -1
        self._reconciled_target: dict[uuid.UUID, frozenset[int]] | None = None
        #: partitions this member owns (after reconciliation), by name and by topic id
        self.current_assignment: frozenset[TopicPartition] = frozenset()
        self._owned_by_id: dict[uuid.UUID, frozenset[int]] = {}
        # what the last heartbeat sent, for incremental requests (None: send it again)
        self._sent_topics: frozenset[str] | None = None
        self._sent_regex: str | None = None
        self._sent_owned: dict[uuid.UUID, frozenset[int]] | None = None
        self._send_all_fields = True
        self.fatal_error: BaseException | None = None
        self.waiting_for_metadata = False
        #: the member left because max.poll.interval.ms expired: the next poll() gives its partitions up as
        #: lost and rejoins (Java: the member is "stale")
        self.left_on_poll_timeout = False

    # -- state -------------------------------------------------------------------------------

    def transition_to(self, target: MemberState) -> None:
        if target not in _VALID[self.state]:
            raise IllegalStateError(f"invalid consumer group member state transition {self.state.value} -> {target.value}")
        self.state = target

    def should_skip_heartbeat(self) -> bool:
        return self.state in (MemberState.UNSUBSCRIBED, MemberState.FENCED, MemberState.FATAL,
                              MemberState.PREPARE_LEAVING)  # fmt: skip

    # -- subscription ------------------------------------------------------------------------

    def on_subscription_updated(self, topics: Collection[str], regex: str | None = None) -> None:
        """The application subscribed (topics, or a regex the broker resolves): join if not a member,
        otherwise send the new subscription with the next heartbeat."""
        self._subscribed_topics = frozenset(topics)
        self._subscribed_regex = regex
        if self.state is MemberState.UNSUBSCRIBED:
            self._join()
        elif self.state.is_in_group():
            self._next_heartbeat_ms = 0  # tell the coordinator now

    def _join(self) -> None:
        self.transition_to(MemberState.JOINING)
        self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        self._reset_sent_fields()
        self._next_heartbeat_ms = 0
        self.target_assignment = None
        self._reconciled_target = None
        self._target_epoch = -1

    def _reset_sent_fields(self) -> None:
        self._send_all_fields = True
        self._sent_topics = None
        self._sent_regex = None
        self._sent_owned = None

    # -- heartbeats --------------------------------------------------------------------------

    def time_to_next_heartbeat(self, now_ms: int) -> int:
        """ms until a heartbeat is due (0: now); a large number when none will be sent."""
        if self.should_skip_heartbeat() or self.heartbeat_in_flight:
            return 2**31
        if self.state is MemberState.LEAVING:
            return 0
        if self.state in (MemberState.JOINING, MemberState.ACKNOWLEDGING):
            return max(0, self._retry_at_ms - now_ms)
        return max(0, self._next_heartbeat_ms - now_ms)

    def heartbeat_request(self, now_ms: int) -> ConsumerGroupHeartbeatRequest | None:
        """The heartbeat to send now, or None; marks it in flight (answer with :meth:`on_heartbeat_response`
        or :meth:`on_heartbeat_failure`)."""
        if self.time_to_next_heartbeat(now_ms) > 0:
            return None
        req = self._build_request()
        self.heartbeat_in_flight = True
        self._next_heartbeat_ms = now_ms + self.heartbeat_interval_ms
        if self.state is MemberState.ACKNOWLEDGING:
            self.transition_to(MemberState.STABLE)
        elif self.state is MemberState.LEAVING:
            self.transition_to(MemberState.UNSUBSCRIBED)
            self.heartbeat_in_flight = False  # the leave response is not waited for
        return req

    def _build_request(self) -> ConsumerGroupHeartbeatRequest:
        req = ConsumerGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=self.member_epoch,
            instance_id=self.group_instance_id,
        )  # fmt: skip
        if self.state is MemberState.LEAVING:
            return req
        send_all = self._send_all_fields
        if send_all:
            req.rebalance_timeout_ms = self.rebalance_timeout_ms
            req.rack_id = self.rack_id
            req.server_assignor = self.server_assignor
        if self._subscribed_regex is not None:
            if send_all or self._sent_regex != self._subscribed_regex:
                req.subscribed_topic_regex = self._subscribed_regex
                self._sent_regex = self._subscribed_regex
        elif send_all or self._sent_topics != self._subscribed_topics:
            req.subscribed_topic_names = sorted(self._subscribed_topics)
            self._sent_topics = self._subscribed_topics
        if send_all or self._sent_owned != self._owned_by_id:
            req.topic_partitions = [
                ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=tid, partitions=sorted(ps))
                for tid, ps in sorted(self._owned_by_id.items(), key=lambda kv: str(kv[0]))
            ]
            self._sent_owned = dict(self._owned_by_id)
        self._send_all_fields = False
        return req

    def on_heartbeat_failure(self, now_ms: int) -> None:
        """The request failed without a response (disconnect, timeout): retry after the backoff with
        every field."""
        self.heartbeat_in_flight = False
        self._reset_sent_fields()
        self._next_heartbeat_ms = self._retry_at_ms = now_ms + self.backoff.on_failed_attempt()

    def on_heartbeat_response(self, response: ConsumerGroupHeartbeatResponse, now_ms: int) -> KafkaError | None:
        """Apply a response. Returns the error for the coordinator to act on (None when there was none):
        a fencing error moves the member to FENCED (the caller runs ``on_partitions_lost`` and then
        :meth:`on_fenced_done`); a retriable one, or one of :data:`REPORTED_HEARTBEAT_ERRORS` (which the caller
        reports to the application), is retried after the backoff with every field, the member staying in its
        state; any other error is fatal."""
        self.heartbeat_in_flight = False
        if response.error_code != 0:
            cls = for_code(response.error_code)
            err = cls(response.error_message or f"ConsumerGroupHeartbeat of group {self.group_id} failed")
            self._reset_sent_fields()
            self._next_heartbeat_ms = self._retry_at_ms = now_ms + self.backoff.on_failed_attempt()
            if self.state in (MemberState.UNSUBSCRIBED, MemberState.LEAVING, MemberState.PREPARE_LEAVING):
                return err  # a late answer to a leave: nothing to do
            if isinstance(err, COORDINATOR_MOVED_ERRORS):
                # Java resets the backoff: the next heartbeat goes as soon as the coordinator is found again
                self.backoff.reset()
                self._next_heartbeat_ms = self._retry_at_ms = 0
            if isinstance(err, FENCING_ERRORS):
                self.backoff.reset()
                self._retry_at_ms = 0  # Java resets the backoff: the rejoin goes at once
                if self.state.is_in_group():
                    self.transition_to(MemberState.FENCED)
            elif not err.retriable and not isinstance(err, REPORTED_HEARTBEAT_ERRORS):
                self.fatal_error = err
                self.transition_to(MemberState.FATAL)
            return err
        if self.state in (MemberState.UNSUBSCRIBED, MemberState.FENCED, MemberState.FATAL,
                          MemberState.PREPARE_LEAVING, MemberState.LEAVING):  # fmt: skip
            return None  # a response to a heartbeat of a membership we gave up
        self.backoff.reset()
        if response.member_id:
            self.member_id = response.member_id
        self.member_epoch = response.member_epoch
        if response.heartbeat_interval_ms > 0:
            self.heartbeat_interval_ms = response.heartbeat_interval_ms
            self._next_heartbeat_ms = now_ms + response.heartbeat_interval_ms
        if response.assignment is not None:
            target = {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions}
            self.target_assignment = target
            self._target_epoch = response.member_epoch
            if target != self._reconciled_target or self.state is MemberState.JOINING:
                self.transition_to(MemberState.RECONCILING)
        elif self.state is MemberState.JOINING and self.target_assignment is None:
            self.transition_to(MemberState.STABLE)
        return None

    # -- reconciliation ------------------------------------------------------------------------

    def next_reconciliation(self, topic_name: Callable[[uuid.UUID], str | None]) -> Reconciliation | None:
        """The revocation and assignment that reach the target, or None when there is nothing to do or a
        topic id of the target is not in the metadata yet (``waiting_for_metadata``: refresh it, ask again)."""
        self.waiting_for_metadata = False
        if self.state is not MemberState.RECONCILING or self.target_assignment is None:
            return None
        assigned: set[TopicPartition] = set()
        for tid, parts in self.target_assignment.items():
            name = topic_name(tid)
            if name is None:
                self.waiting_for_metadata = True
                return None
            assigned.update(TopicPartition(name, p) for p in parts)
        owned = self.current_assignment
        return Reconciliation(
            frozenset(owned - assigned), frozenset(assigned - owned), frozenset(assigned), self._target_epoch,
            dict(self.target_assignment),
        )

    def on_reconciliation_done(self, reconciliation: Reconciliation) -> None:
        """The listener ran: the member owns ``reconciliation.assigned``, which the next heartbeat
        acknowledges. Ignored if the membership changed meanwhile (fenced, leaving). When a newer target
        arrived while the listener ran, the member stays RECONCILING: the next reconciliation reaches it (the
        heartbeats meanwhile report what it owns now)."""
        if self.state is not MemberState.RECONCILING or self.target_assignment is None:
            return
        self.current_assignment = reconciliation.assigned
        self._owned_by_id = dict(reconciliation.target)
        self._reconciled_target = dict(reconciliation.target)
        if self.target_assignment == self._reconciled_target:
            self.transition_to(MemberState.ACKNOWLEDGING)

    # -- fencing and leaving ---------------------------------------------------------------------

    def _release_assignment(self) -> None:
        self.current_assignment = frozenset()
        self._owned_by_id = {}
        self.target_assignment = None
        self._reconciled_target = None

    def on_fenced_done(self) -> None:
        """``on_partitions_lost`` ran: rejoin with epoch 0 (keeping the member id), unless unsubscribed."""
        if self.state is not MemberState.FENCED:
            return
        self._release_assignment()
        self._join()

    def leave_group(self) -> None:
        """Unsubscribe or close: PREPARE_LEAVING; the caller revokes the owned partitions, then calls
        :meth:`on_leave_prepared`. Members that never joined go straight to UNSUBSCRIBED."""
        if self.state in (MemberState.UNSUBSCRIBED, MemberState.PREPARE_LEAVING, MemberState.LEAVING):
            return
        if self.state in (MemberState.FENCED, MemberState.FATAL):
            self._release_assignment()
            self.state = MemberState.UNSUBSCRIBED
            return
        self.transition_to(MemberState.PREPARE_LEAVING)

    def on_poll_timer_expired(self) -> None:
        """The application did not poll within max.poll.interval.ms: leave now with epoch -1 (Java sends the
        leave without running the listener, which would need the application thread); the owned partitions
        are reported lost by the next poll(), which then rejoins."""
        if not self.state.is_in_group() or self.state in (MemberState.PREPARE_LEAVING, MemberState.LEAVING):
            return
        self.left_on_poll_timeout = True
        self.target_assignment = None
        self._reconciled_target = None
        self.member_epoch = LEAVE_GROUP_MEMBER_EPOCH
        self.heartbeat_in_flight = False
        self.transition_to(MemberState.LEAVING)

    def on_poll_timeout_handled(self) -> None:
        """The next poll() reported the partitions lost: forget them (the subscription rejoins)."""
        self.left_on_poll_timeout = False
        self.current_assignment = frozenset()
        self._owned_by_id = {}

    def on_leave_prepared(self) -> None:
        """The owned partitions were revoked: the next heartbeat leaves, with epoch -1, or -2 for a static
        member (KIP-848: the static member's assignment is kept for its next incarnation)."""
        if self.state is not MemberState.PREPARE_LEAVING:
            return
        self._release_assignment()
        if not self.member_id:
            self.state = MemberState.UNSUBSCRIBED
            return
        self.member_epoch = (
            LEAVE_GROUP_STATIC_MEMBER_EPOCH if self.group_instance_id is not None else LEAVE_GROUP_MEMBER_EPOCH
        )
        self.heartbeat_in_flight = False
        self.transition_to(MemberState.LEAVING)


__all__ = [
    "FENCING_ERRORS",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "ConsumerMembershipManager",
    "MemberState",
    "Reconciliation",
]
