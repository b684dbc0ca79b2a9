"""The consumer's group client for ``group.protocol=consumer`` (KIP-848; Java: the AsyncKafkaConsumer's
ConsumerHeartbeatRequestManager, ConsumerMembershipManager and CommitRequestManager, driven here by the
classic consumer's loop and heartbeat thread).

The decisions are :class:`~pykafka_client.consumer.membership_manager.ConsumerMembershipManager`'s; this
class does the I/O and the callbacks:
* heartbeats (ConsumerGroupHeartbeat) go out from the heartbeat thread or from ``poll()`` when the manager
  says one is due; responses are applied under ``self.lock``;
* reconciliation runs in the application thread inside ``poll()``: revoke first (auto-commit, then
  ``on_partitions_revoked`` with the removed partitions only), then assign (``on_partitions_assigned`` with
  the added ones only), and the next heartbeat acknowledges what the member owns;
* fencing (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID): ``on_partitions_lost``, then rejoin with epoch 0;
* TOPIC_AUTHORIZATION_FAILED is raised by the next ``poll()`` while the member keeps its state and heartbeats
  (Java reports it so, to recover once the ACLs are added); other non-retriable errors are fatal;
* unsubscribe and close leave with epoch -1, a static member (``group.instance.id``) with -2;
* commits carry the member id and epoch (OffsetCommit v9+), and so do committed-offset reads (OffsetFetch v9);
  STALE_MEMBER_EPOCH is retried when the epoch moved on since the request was built, else the commit fails
  (CommitFailedError) or the read raises StaleMemberEpochError.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any, TypeVar

from pykafka_client.consumer.assignors import ConsumerPartitionAssignor
from pykafka_client.consumer.client_adapter import ConsumerClient
from pykafka_client.consumer.consumer_coordinator import ConsumerCoordinator
from pykafka_client.consumer.group_rebalance_config import GroupMembershipOperation, GroupRebalanceConfig
from pykafka_client.consumer.group_response_handlers import COORDINATOR_MOVED_ERRORS
from pykafka_client.consumer.member_state import Generation
from pykafka_client.consumer.member_state import MemberState as ClassicMemberState
from pykafka_client.consumer.membership_manager import (
    REPORTED_HEARTBEAT_ERRORS,
    ConsumerMembershipManager,
    MemberState,
)
from pykafka_client.consumer.offset_response_handlers import CommittedOffsets
from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.errors import (
    CommitFailedError,
    CoordinatorNotAvailableError,
    RebalanceInProgressClientError,
    StaleMemberEpochError,
)
from pykafka_client.errors_base import RetriableError
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.protocol.messages.consumer_group_heartbeat_response import ConsumerGroupHeartbeatResponse
from pykafka_client.structs import OffsetAndMetadata, TopicPartition
from pykafka_client.utils.time import Time, Timer

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: OffsetCommit v9 carries the member epoch in ``generation_id_or_member_epoch`` (KIP-848)
OFFSET_COMMIT_MEMBER_EPOCH_VERSION = 9


class StaleMemberEpochRetry(RetriableError):
    """A commit was built with an epoch the member has moved past: it is sent again with the new epoch."""


class ConsumerGroupCoordinator(ConsumerCoordinator):
    """See module docstring. Used by KafkaConsumer when ``group.protocol=consumer``."""

    def __init__(
        self,
        config: GroupRebalanceConfig,
        client: ConsumerClient,
        time: Time,
        subscriptions: SubscriptionState,
        metadata: Metadata,
        assignors: Sequence[ConsumerPartitionAssignor],
        *,
        server_assignor: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(config, client, time, subscriptions, metadata, assignors, **kwargs)
        self.membership = ConsumerMembershipManager(
            config.group_id,
            config.group_instance_id,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            server_assignor=server_assignor,
            rack_id=self.client_rack,
            retry_backoff_ms=config.retry_backoff_ms,
            retry_backoff_max_ms=config.retry_backoff_max_ms,
        )
        # KIP-1082: the client names its member id once and keeps it for the consumer's lifetime
        self.membership.member_id = str(uuid.uuid4())
        self._synced_subscription: tuple[frozenset[str], str | None] | None = None

    # -- what the classic machinery sees ----------------------------------------------------------

    @property
    def state(self) -> ClassicMemberState:
        """The heartbeat thread polls while the member is in the group (STABLE here), idles otherwise."""
        with self.lock:
            in_group = self.membership.state.is_in_group() or self.membership.state is MemberState.FENCED
        return ClassicMemberState.STABLE if in_group else ClassicMemberState.UNJOINED

    def generation_snapshot(self) -> Generation:
        with self.lock:
            return Generation(self.membership.member_epoch, self.membership.member_id, None)

    def generation_if_stable(self) -> Generation | None:
        with self.lock:
            if self.membership.state.is_in_group() and self.membership.member_epoch > 0:
                return self.generation_snapshot()
            return None

    def rebalance_in_progress(self) -> bool:
        with self.lock:
            return self.membership.state in (MemberState.JOINING, MemberState.RECONCILING, MemberState.ACKNOWLEDGING)

    def request_rejoin(self, reason: str) -> None:
        """The new protocol has no client-triggered rebalance: subscription changes reach the coordinator
        with the next heartbeat (see :meth:`poll`)."""
        log.debug("rejoin requested (%s): the consumer protocol sends the change with the next heartbeat", reason)

    def rejoin_needed_or_pending(self) -> bool:
        return False

    def reset_generation_on_response_error(self, api: str, error: type[Any]) -> None:
        log.info("%s from %s: the next heartbeat tells whether the member was fenced", error.__name__, api)

    def offset_commit_oldest_version(self) -> int | None:
        return OFFSET_COMMIT_MEMBER_EPOCH_VERSION

    def time_to_next_heartbeat(self, now_ms: int) -> int:
        with self.lock:
            if self.membership.state is MemberState.RECONCILING:
                return self.rebalance_config.retry_backoff_ms  # come back to reconcile
            wait = self.membership.time_to_next_heartbeat(now_ms)
            interval = self.membership.heartbeat_interval_ms or self.rebalance_config.retry_backoff_ms
            return min(wait, interval)

    # -- poll --------------------------------------------------------------------------------------

    def poll(self, timer: Timer, wait_for_join_group: bool = True) -> bool:
        self.invoke_completed_offset_commit_callbacks()
        with self.lock:
            failure, self.heartbeat_failure = self.heartbeat_failure, None
            fatal = self.membership.fatal_error
        if failure is not None:
            raise failure
        if fatal is not None:
            raise fatal
        if self.subscriptions.has_auto_assigned_partitions():
            with self.lock:
                self.heartbeat.poll(timer.current_time_ms())
            if self.coordinator_unknown() and not self.ensure_coordinator_ready(timer):
                return False
            self.maybe_update_pattern_subscription()
            self._maybe_handle_fenced()
            self._sync_subscription()
            self.start_heartbeat_thread_if_needed()
            self.maybe_send_heartbeat(timer.current_time_ms())
            self._reconcile()
            self.maybe_send_heartbeat(timer.current_time_ms())  # acknowledge at once
        self.maybe_auto_commit_offsets_async(timer.current_time_ms())
        return True

    def _sync_subscription(self) -> None:
        pattern = self.subscriptions.subscribed_pattern if self.subscriptions.has_pattern_subscription() else None
        regex = pattern.pattern if pattern is not None else None
        current = (frozenset(self.subscriptions.subscription()) if regex is None else frozenset(), regex)
        with self.lock:
            unsubscribed = self.membership.state is MemberState.UNSUBSCRIBED
            if current == self._synced_subscription and not unsubscribed:
                return
            if regex is None and not current[0]:
                return
            self._synced_subscription = current
            self.membership.on_subscription_updated(current[0], regex)
            self.cond.notify_all()

    def _maybe_handle_fenced(self) -> None:
        """A fenced member, or one that left because max.poll.interval.ms expired, lost its partitions:
        ``on_partitions_lost`` (no commit), then it rejoins with epoch 0."""
        with self.lock:
            fenced = self.membership.state is MemberState.FENCED
            stale = self.membership.left_on_poll_timeout
            if not fenced and not stale:
                return
            self.heartbeat.poll(self.time.hi_res_clock_ms())
        owned = self.subscriptions.assigned_partitions()
        failure = None
        if owned:
            why = "was fenced" if fenced else "left the group after max.poll.interval.ms expired"
            log.info("member %s: partitions %s are lost", why, sorted(map(str, owned)))
            failure = self._invoke("on_partitions_lost", owned)
            self.subscriptions.assign_from_subscribed([])
        with self.lock:
            if fenced:
                self.membership.on_fenced_done()
            else:
                self.membership.on_poll_timeout_handled()
            self.cond.notify_all()
        if failure is not None:
            raise failure

    def _reconcile(self) -> None:
        """Revoke, then assign, then let the next heartbeat acknowledge (application thread, no lock held
        while the listener runs)."""
        cluster = self.cluster_metadata.fetch()

        def topic_name(topic_id: uuid.UUID) -> str | None:
            return cluster.topic_name(topic_id)

        with self.lock:
            rec = self.membership.next_reconciliation(topic_name)
            waiting = self.membership.waiting_for_metadata
        if waiting:
            log.debug("target assignment names topic ids not in the metadata yet: refreshing it")
            self.cluster_metadata.request_update()
            return
        if rec is None:
            return
        if not self.subscriptions.check_assignment_matched_subscription(rec.assigned):
            log.debug("target assignment %s is ahead of the local subscription: waiting", sorted(map(str, rec.assigned)))
            self.cluster_metadata.request_update()
            return
        failure: BaseException | None = None
        if rec.revoked:
            if self.auto_commit_enabled:
                try:
                    commit_timer = self.time.timer(self.rebalance_config.rebalance_timeout_ms)
                    self.commit_offsets_sync(self.subscriptions.all_consumed(), commit_timer)
                except Exception as e:
                    log.warning("auto-commit of offsets before revoking %s failed: %s", sorted(map(str, rec.revoked)), e)
            self.subscriptions.mark_pending_revocation(rec.revoked)
            failure = self._invoke("on_partitions_revoked", rec.revoked)
            self.subscriptions.assign_from_subscribed(self.subscriptions.assigned_partitions() - rec.revoked)
        self.subscriptions.assign_from_subscribed(rec.assigned)
        if self.auto_commit_enabled:
            self.next_auto_commit_timer.update()
            self.next_auto_commit_timer.reset(self.auto_commit_interval_ms)
        failure = self._invoke("on_partitions_assigned", rec.added) or failure
        with self.lock:
            self.membership.on_reconciliation_done(rec)
            self.cond.notify_all()
        log.info("reconciled assignment of epoch %d: revoked %s, added %s", rec.member_epoch,
                 sorted(map(str, rec.revoked)), sorted(map(str, rec.added)))  # fmt: skip
        if failure is not None:
            raise failure

    # -- heartbeats ----------------------------------------------------------------------------------

    def maybe_send_heartbeat(self, now_ms: int) -> RequestFuture[None] | None:
        """Send the heartbeat the membership manager asks for now, if any (either thread)."""
        with self.lock:
            if self.closed and self.membership.state is not MemberState.LEAVING:
                return None
            coordinator = self.coordinator
            if coordinator is None:
                return None
            request = self.membership.heartbeat_request(now_ms)
            if request is None:
                return None
            log.debug("sending %s", request)
            sent = self.client.send(coordinator, request)
            leaving = request.member_epoch < 0
            # Java ignores the answer to a leave: applied, it would land on the next membership (a subscribe
            # right after an unsubscribe), setting its epoch to -1 and clearing its in-flight heartbeat
            handler = self._handle_leave_response if leaving else self._handle_heartbeat_response
            future: RequestFuture[None] = self._compose(sent, handler, "ConsumerGroupHeartbeat")
        if not leaving:
            future.add_callbacks(None, self._heartbeat_failed)
        return future

    def _handle_heartbeat_response(self, body: ConsumerGroupHeartbeatResponse, future: RequestFuture[None]) -> None:
        with self.lock:
            err = self.membership.on_heartbeat_response(body, self.time.hi_res_clock_ms())
            if err is not None and type(err) in COORDINATOR_MOVED_ERRORS:
                self.mark_coordinator_unknown(f"{type(err).__name__} from ConsumerGroupHeartbeat")
            if isinstance(err, REPORTED_HEARTBEAT_ERRORS):
                # Java: raised by the application's next poll(); the membership and its heartbeats go on
                self.heartbeat_failure = err
            if err is None:
                self.heartbeat.received_heartbeat()
            self.cond.notify_all()
        if err is not None:
            log.info("ConsumerGroupHeartbeat of group %s failed: %s", self.rebalance_config.group_id, err)
        future.complete(None)

    def _handle_leave_response(self, body: ConsumerGroupHeartbeatResponse, future: RequestFuture[None]) -> None:
        if body.error_code:
            log.debug("leaving group %s: ConsumerGroupHeartbeat answered error %d", self.rebalance_config.group_id,
                      body.error_code)
        future.complete(None)

    def _heartbeat_failed(self, exc: BaseException) -> None:
        with self.lock:
            self.membership.on_heartbeat_failure(self.time.hi_res_clock_ms())
            self.cond.notify_all()
        log.debug("ConsumerGroupHeartbeat failed: %s", exc)

    def heartbeat_step(self, now_ms: int) -> int:
        retry = self.rebalance_config.retry_backoff_ms
        with self.lock:
            if self.closed or self.membership.should_skip_heartbeat():
                return retry
            if self.membership.state.is_in_group() and self.heartbeat.poll_timeout_expired(now_ms):
                log.warning(
                    "consumer poll timeout has expired: the time between poll() calls exceeded "
                    "max.poll.interval.ms (%d ms); leaving the group (its partitions are lost; the next poll() "
                    "rejoins). Consider a larger max.poll.interval.ms or a smaller max.poll.records.",
                    self.rebalance_config.rebalance_timeout_ms,
                )
                self.membership.on_poll_timer_expired()
        if self.coordinator_unknown():
            self.lookup_coordinator()
            return retry
        self.maybe_send_heartbeat(now_ms)
        with self.lock:
            return max(1, min(retry, self.membership.time_to_next_heartbeat(now_ms)))

    # -- commits -------------------------------------------------------------------------------------

    def _commit_generation(self) -> Generation | BaseException:
        if not self.subscriptions.has_auto_assigned_partitions():
            return Generation()
        with self.lock:
            state = self.membership.state
            gen = Generation(self.membership.member_epoch, self.membership.member_id, None)
        if state.is_in_group() and gen.generation_id > 0:
            return gen
        if state is MemberState.JOINING:
            return RebalanceInProgressClientError(
                "offset commit cannot be completed since the consumer is joining the group; call poll() until "
                "it has an assignment, then retry the commit"
            )
        return CommitFailedError(
            f"offset commit cannot be completed: the member is {state.value}, not part of the group (it left, "
            "was fenced or its session expired); its partitions may be assigned to another member"
        )

    def _send_offset_commit_request(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> RequestFuture[None]:
        built_with = self.generation_snapshot()
        return self._retry_stale_epoch(built_with, super()._send_offset_commit_request(offsets), "offset commit",
                                       CommitFailedError)  # fmt: skip

    def offset_fetch_member(self) -> Generation | None:
        """A member with an epoch names itself in OffsetFetch (v9, Java: CommitRequestManager sends the member
        id and epoch while the member has one); before its first epoch, or after leaving or being fenced, it
        reads as any client does."""
        return self.generation_if_stable()

    def _send_offset_fetch_request(self, partitions: Collection[TopicPartition]) -> RequestFuture[CommittedOffsets]:
        built_with = self.generation_snapshot()
        inner = super()._send_offset_fetch_request(partitions)
        return self._retry_stale_epoch(built_with, inner, "offset fetch", StaleMemberEpochError)

    def _retry_stale_epoch(
        self, built_with: Generation, inner: RequestFuture[_T], what: str, final: type[Exception]
    ) -> RequestFuture[_T]:
        """Java (CommitRequestManager): a request answered STALE_MEMBER_EPOCH is retried when the member has a
        newer epoch than the one it was built with (a retriable error); else it fails with ``final``."""
        outer: RequestFuture[_T] = RequestFuture()

        def failed(exc: BaseException) -> None:
            if isinstance(exc, StaleMemberEpochError):
                current = self.generation_if_stable()
                if current is not None and current.generation_id != built_with.generation_id:
                    exc = StaleMemberEpochRetry(
                        f"{what} built with member epoch {built_with.generation_id}; retrying with epoch "
                        f"{current.generation_id}"
                    )
                else:
                    exc = final(
                        f"{what} failed with STALE_MEMBER_EPOCH (epoch {built_with.generation_id}): the "
                        "member is not part of the group with that epoch any more"
                    )
            outer.raise_(exc)

        inner.add_callbacks(outer.complete, failed)
        return outer

    # -- leaving ---------------------------------------------------------------------------------------

    def on_leave_prepare(self) -> None:
        """Unsubscribe/close: revoke what the member owns (``on_partitions_lost`` if it was fenced), then
        the next heartbeat leaves."""
        with self.lock:
            fenced = self.membership.state in (MemberState.FENCED, MemberState.FATAL)
            self.membership.leave_group()
            preparing = self.membership.state is MemberState.PREPARE_LEAVING
        owned = self.subscriptions.assigned_partitions()
        if owned and self.subscriptions.has_auto_assigned_partitions():
            failure = self._invoke("on_partitions_lost" if fenced else "on_partitions_revoked", owned)
            self.subscriptions.assign_from_subscribed([])
            if failure is not None:
                log.warning("rebalance callback during leave failed: %s", failure)
        if preparing:
            with self.lock:
                self.membership.on_leave_prepared()
        self._synced_subscription = None

    def maybe_leave_group(
        self, reason: str, operation: GroupMembershipOperation = GroupMembershipOperation.DEFAULT
    ) -> RequestFuture[None] | None:
        """Send the leave heartbeat (epoch -1, or -2 for a static member) prepared by :meth:`on_leave_prepare`."""
        if operation is GroupMembershipOperation.REMAIN_IN_GROUP:
            return None
        with self.lock:
            if self.membership.state is not MemberState.LEAVING:
                return None
            log.info("member %s leaving group %s with epoch %d: %s", self.membership.member_id,
                     self.rebalance_config.group_id, self.membership.member_epoch, reason)  # fmt: skip
        future = self.maybe_send_heartbeat(self.time.hi_res_clock_ms())
        if future is None:
            return RequestFuture.failure(CoordinatorNotAvailableError("no coordinator to send the leave heartbeat to"))
        self.client.poll_no_wakeup()
        return future


__all__ = ["OFFSET_COMMIT_MEMBER_EPOCH_VERSION", "ConsumerGroupCoordinator"]
