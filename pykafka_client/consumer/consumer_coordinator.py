"""The consumer's group coordinator client (Java: ConsumerCoordinator): the ``consumer`` embedded
protocol, rebalance callbacks, committed-offset look-ups and offset commits (sync, async, auto).

Rebalance protocol: EAGER when any configured assignor only supports eager (the Java 3.x default
list ``[range, cooperative-sticky]`` is therefore eager), COOPERATIVE when all support it (KIP-429).
* EAGER: before each join every owned partition is revoked (``on_partitions_revoked``), then the full
  new assignment is given (``on_partitions_assigned``).
* COOPERATIVE: partitions are kept across the rebalance; after SyncGroup only those no longer
  assigned are revoked (then the member rejoins at once so they can move), and only the new ones are
  given to ``on_partitions_assigned``.
* When the generation is lost (session timeout, fenced, unknown member) owned partitions are reported
  through ``on_partitions_lost`` and must not be committed.

Commits during a rebalance (as in Java): a synchronous commit while the member is rebalancing raises
RebalanceInProgressClientError (retry after the next poll); a commit whose generation is no longer
valid (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID) raises CommitFailedError and triggers a rejoin.
Commit callbacks of ``commit_async`` run in the application thread (next poll or commit), never in
the heartbeat thread.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial

from pykafka_client.consumer.abstract_coordinator import AbstractCoordinator, is_retriable
from pykafka_client.consumer.assignors import (
    ConsumerPartitionAssignor,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
    rebalance_protocol,
)
from pykafka_client.consumer.client_adapter import ConsumerClient
from pykafka_client.consumer.consumer_protocol import (
    PROTOCOL_TYPE,
    deserialize_assignment,
    deserialize_subscription,
    serialize_assignment,
    serialize_subscription,
)
from pykafka_client.consumer.group_rebalance_config import GroupRebalanceConfig
from pykafka_client.consumer.member_state import Generation
from pykafka_client.consumer.offset_response_handlers import (
    OFFSET_FETCH_MEMBER_EPOCH_VERSION,
    CommittedOffsets,
    handle_offset_commit_response,
    handle_offset_fetch_response,
    offset_commit_request,
    offset_fetch_request,
)
from pykafka_client.consumer.subscription_state import FetchPosition, SubscriptionState
from pykafka_client.errors import (
    CommitFailedError,
    CoordinatorNotAvailableError,
    IllegalStateError,
    RebalanceInProgressClientError,
)
from pykafka_client.errors_base import KafkaError, RetriableError
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages.join_group_response import JoinGroupResponse
from pykafka_client.structs import OffsetAndMetadata, TopicPartition
from pykafka_client.utils.time import Time, Timer

log = logging.getLogger(__name__)

OffsetCommitCallback = Callable[[Mapping[TopicPartition, OffsetAndMetadata], "BaseException | None"], None]

_OFFSET_FETCH_MAX_VERSION = 7  # single-group form


class RetriableCommitFailedError(RetriableError):
    """An asynchronous commit failed with a retriable error; a later commit may succeed."""


class ConsumerCoordinator(AbstractCoordinator):
    """See module docstring."""

    def __init__(
        self,
        config: GroupRebalanceConfig,
        client: ConsumerClient,
        time: Time,
        subscriptions: SubscriptionState,
        metadata: Metadata,
        assignors: Sequence[ConsumerPartitionAssignor],
        *,
        auto_commit_enabled: bool = True,
        auto_commit_interval_ms: int = 5000,
        client_rack: str | None = None,
        throw_on_fetch_stable_offset_unsupported: bool = False,
    ) -> None:
        super().__init__(config, client, time)
        if not assignors:
            raise IllegalStateError("no assignors configured")
        self.subscriptions = subscriptions
        self.cluster_metadata = metadata
        self.assignors = list(assignors)
        self.protocol = rebalance_protocol(self.assignors)
        self.auto_commit_enabled = auto_commit_enabled
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.next_auto_commit_timer = time.timer(auto_commit_interval_ms)
        self.client_rack = client_rack or None
        self.is_leader = False
        self.joined_subscription: set[str] = set()
        self._completed_offset_commits: deque[
            tuple[OffsetCommitCallback, Mapping[TopicPartition, OffsetAndMetadata], BaseException | None]
        ] = deque()
        self._commit_lock = threading.Lock()
        self._pending_async_commits = 0
        self._async_commit_fenced = False
        self._pattern_metadata_version = -1
        self.include_internal_topics = False
        self._assignment_snapshot: dict[str, int | None] | None = None
        self._assignment_snapshot_version = -1
        self._pending_committed_request: (
            tuple[
                tuple[frozenset[TopicPartition], Generation],
                RequestFuture[dict[TopicPartition, OffsetAndMetadata | None]],
            ]
            | None
        ) = None

    # -- embedded protocol -------------------------------------------------------------------

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def metadata(self) -> list[tuple[str, bytes]]:
        topics = set(self.subscriptions.subscription())
        self.joined_subscription = set(topics)
        owned = self.subscriptions.assigned_partitions_list()
        gen = self.generation_snapshot().generation_id
        out = []
        for assignor in self.assignors:
            sub = Subscription(
                sorted(topics),
                assignor.subscription_user_data(topics),
                owned,
                gen,
                self.client_rack,
            )
            out.append((assignor.name(), serialize_subscription(sub)))
        return out

    def _lookup_assignor(self, name: str) -> ConsumerPartitionAssignor:
        for a in self.assignors:
            if a.name() == name:
                return a
        raise IllegalStateError(f"coordinator selected invalid assignment protocol: {name}")

    def perform_assignment(
        self,
        leader_id: str,
        protocol: str,
        members: list[JoinGroupResponse.JoinGroupResponseMember],
        skip_assignment: bool,
    ) -> dict[str, bytes]:
        assignor = self._lookup_assignor(protocol)
        subscriptions: dict[str, Subscription] = {}
        all_topics: set[str] = set()
        for m in members:
            sub = deserialize_subscription(bytes(m.metadata))
            sub.group_instance_id = m.group_instance_id
            subscriptions[m.member_id] = sub
            all_topics.update(sub.topics)
        self.is_leader = True
        if skip_assignment:
            return {}
        # The leader needs metadata for every member's topics.
        if self.subscriptions.group_subscribe(all_topics):
            self.client.await_metadata_update(self.time.timer(self.rebalance_config.request_timeout_ms))
        cluster = self.cluster_metadata.fetch()
        partitions_per_topic = {}
        for t in all_topics:
            n = cluster.partition_count_for_topic(t)
            if n:
                partitions_per_topic[t] = n
        log.info("performing assignment with %s for %d members", protocol, len(subscriptions))
        result = assignor.assign(partitions_per_topic, GroupSubscription(subscriptions)).assignments
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            self._validate_cooperative_assignment(subscriptions, {m: a.partitions for m, a in result.items()})
        return {m: serialize_assignment(a) for m, a in result.items()}

    @staticmethod
    def _validate_cooperative_assignment(
        subscriptions: Mapping[str, Subscription], assignments: Mapping[str, list[TopicPartition]]
    ) -> None:
        """With COOPERATIVE no partition may move straight from one owner to another."""
        added: set[TopicPartition] = set()
        revoked: set[TopicPartition] = set()
        for member, assigned in assignments.items():
            owned = set(subscriptions[member].owned_partitions) if member in subscriptions else set()
            added |= set(assigned) - owned
            revoked |= owned - set(assigned)
        both = added & revoked
        if both:
            raise IllegalStateError(
                "the assignor returned an assignment that moves partitions directly between members under the "
                "cooperative protocol: " + ", ".join(sorted(map(str, both)))
            )

    # -- rebalance hooks (application thread, no lock held) ------------------------------------

    def _invoke(self, name: str, partitions: Collection[TopicPartition]) -> BaseException | None:
        listener = self.subscriptions.rebalance_listener
        try:
            getattr(listener, name)(sorted(partitions))
        except Exception as e:  # reported after the rebalance completes, as in Java
            log.error("user rebalance callback %s failed: %s", name, e)
            return e
        return None

    def on_join_prepare(self, timer: Timer, generation: int, member_id: str) -> bool:
        if self.auto_commit_enabled:
            try:
                # bounded by the rebalance timeout, not by the (possibly zero) poll timer, as Java 2.x
                commit_timer = self.time.timer(self.rebalance_config.rebalance_timeout_ms)
                self.commit_offsets_sync(self.subscriptions.all_consumed(), commit_timer)
            except Exception as e:
                log.warning("auto-commit of offsets before rebalance failed: %s", e)
        failure: BaseException | None = None
        owned = self.subscriptions.assigned_partitions()
        if generation == -1 or not member_id:
            if owned:
                failure = self._invoke("on_partitions_lost", owned)
                self.subscriptions.assign_from_subscribed([])
        elif self.protocol is RebalanceProtocol.EAGER:
            failure = self._invoke("on_partitions_revoked", owned)
            self.subscriptions.assign_from_subscribed([])
        else:
            # cooperative: give up only partitions of topics we are no longer subscribed to
            gone = {tp for tp in owned if not self.subscriptions.check_assignment_matched_subscription([tp])}
            if gone:
                failure = self._invoke("on_partitions_revoked", gone)
                self.subscriptions.assign_from_subscribed(owned - gone)
        self.is_leader = False
        self.subscriptions.reset_group_subscription()
        if failure is not None:
            raise failure
        return True

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment_bytes: bytes) -> None:
        assignor = self._lookup_assignor(protocol)
        assignment = deserialize_assignment(assignment_bytes)
        assigned = set(assignment.partitions)
        if not self.subscriptions.check_assignment_matched_subscription(assigned):
            log.warning("assignment %s does not match the subscription: rejoining", sorted(map(str, assigned)))
            self.request_rejoin("assignment does not match the subscription")
            return
        owned = self.subscriptions.assigned_partitions()
        failure: BaseException | None = None
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            revoked = owned - assigned
            if revoked:
                self.subscriptions.mark_pending_revocation(revoked)
                failure = self._invoke("on_partitions_revoked", revoked)
                self.request_rejoin("need to revoke partitions and re-join")
            added = assigned - owned
        else:
            added = assigned
        try:
            assignor.on_assignment(assignment, generation)
        except Exception as e:
            failure = failure or e
        if self.auto_commit_enabled:
            self.next_auto_commit_timer.update()
            self.next_auto_commit_timer.reset(self.auto_commit_interval_ms)
        self.subscriptions.assign_from_subscribed(assigned)
        topics = set(self.subscriptions.metadata_topics()) if self.is_leader else set(self.subscriptions.subscription())
        self._assignment_snapshot = self._metadata_snapshot(topics)
        self._assignment_snapshot_version = self.cluster_metadata.update_version()
        f2 = self._invoke("on_partitions_assigned", added)
        failure = failure or f2
        if failure is not None:
            raise failure

    def on_leave_prepare(self) -> None:
        owned = self.subscriptions.assigned_partitions()
        if not owned or not self.subscriptions.has_auto_assigned_partitions():
            return
        gen = self.generation_snapshot()
        name = "on_partitions_lost" if gen.generation_id == -1 or not gen.member_id else "on_partitions_revoked"
        failure = self._invoke(name, owned)
        self.subscriptions.assign_from_subscribed([])
        if failure is not None:
            log.warning("rebalance callback during leave failed: %s", failure)

    # -- the consumer's poll ---------------------------------------------------------------------

    def poll(self, timer: Timer, wait_for_join_group: bool = True) -> bool:
        """Everything the group needs from ``KafkaConsumer.poll``: commit callbacks, coordinator,
        (re)join, auto-commit. False if the timer expired before the group was ready."""
        self.invoke_completed_offset_commit_callbacks()
        with self.lock:
            failure, self.heartbeat_failure = self.heartbeat_failure, None
        if failure is not None:
            raise failure
        if self.subscriptions.has_auto_assigned_partitions():
            with self.lock:
                self.heartbeat.poll(timer.current_time_ms())
            if self.coordinator_unknown() and not self.ensure_coordinator_ready(timer):
                return False
            self._maybe_rejoin_on_metadata_change()
            if self.rejoin_needed_or_pending():
                if self.subscriptions.has_pattern_subscription() and self._pattern_metadata_version < 0:
                    # a pattern needs topic metadata before the first join (Java: ensureFreshMetadata)
                    if not self.client.await_metadata_update(timer):
                        return False
                self.maybe_update_pattern_subscription()
                if not self.ensure_active_group(timer if wait_for_join_group else self.time.timer(0)):
                    return False
        self.maybe_update_pattern_subscription()
        self.maybe_auto_commit_offsets_async(timer.current_time_ms())
        return True

    def _metadata_snapshot(self, topics: Collection[str]) -> dict[str, int | None]:
        cluster = self.cluster_metadata.fetch()
        return {t: cluster.partition_count_for_topic(t) for t in topics}

    def _maybe_rejoin_on_metadata_change(self) -> None:
        """Rejoin when the partition count of a topic in the last assignment's view changed (a topic
        grew or was deleted), so the new partitions get assigned (Java: metadata/assignment snapshots)."""
        snapshot = self._assignment_snapshot
        if snapshot is None or self.rejoin_needed_or_pending():
            return
        if self.cluster_metadata.update_version() == self._assignment_snapshot_version:
            return
        self._assignment_snapshot_version = self.cluster_metadata.update_version()
        current = self._metadata_snapshot(snapshot)
        if current != snapshot:
            log.info("partition counts changed since the last assignment (%s -> %s): rejoining", snapshot, current)
            self._assignment_snapshot = None
            self.request_rejoin("cached metadata has changed")

    def maybe_update_pattern_subscription(self) -> None:
        """With a pattern subscription, match it against the topics of the latest metadata; a change
        of the matched set triggers a rejoin. Application thread only."""
        if not self.subscriptions.has_pattern_subscription():
            self._pattern_metadata_version = -1
            return
        version = self.cluster_metadata.update_version()
        if version == self._pattern_metadata_version:
            return
        self._pattern_metadata_version = version
        cluster = self.cluster_metadata.fetch()
        matched = [
            t
            for t in cluster.topics()
            if self.subscriptions.matches_subscribed_pattern(t)
            and (self.include_internal_topics or t not in cluster.internal_topics)
        ]
        if self.subscriptions.subscribe_from_pattern(matched):
            log.info("pattern subscription now matches %s", sorted(matched))
            self.request_rejoin("pattern subscription matched a different set of topics")

    def time_to_next_poll(self, now_ms: int) -> int:
        if not self.auto_commit_enabled:
            return self.time_to_next_heartbeat(now_ms)
        self.next_auto_commit_timer.update(now_ms)
        return min(self.next_auto_commit_timer.remaining_ms(), self.time_to_next_heartbeat(now_ms))

    def time_to_next_heartbeat(self, now_ms: int) -> int:
        with self.lock:
            if self.state.has_not_joined_group():
                return 2**62
            return self.heartbeat.time_to_next_heartbeat(now_ms)

    # -- committed offsets ---------------------------------------------------------------------

    def refresh_committed_offsets_if_needed(self, timer: Timer) -> bool:
        """Seek INITIALIZING partitions to their committed offsets. False if the timer expired."""
        initializing = self.subscriptions.initializing_partitions()
        if not initializing:
            return True
        offsets = self.fetch_committed_offsets(initializing, timer)
        if offsets is None:
            return False
        for tp, om in offsets.items():
            if om is not None and self.subscriptions.is_assigned(tp):
                # validated first when it carries a leader epoch: the log may have diverged since (KIP-320)
                position = FetchPosition(om.offset, om.leader_epoch).with_leader(self.cluster_metadata.current_leader(tp))
                self.subscriptions.seek_unvalidated(tp, position)
                log.info("setting offset for %s to the committed offset %d", tp, om.offset)
        return True

    def fetch_committed_offsets(
        self, partitions: Collection[TopicPartition], timer: Timer
    ) -> dict[TopicPartition, OffsetAndMetadata | None] | None:
        """Committed offsets (None per partition without one); None overall if the timer expired."""
        if not partitions:
            return {}
        key = (frozenset(partitions), self.generation_snapshot())
        while True:
            if not self.ensure_coordinator_ready(timer):
                return None
            # An unfinished request for the same partitions and generation is reused, so that repeated
            # short polls do not pile up OffsetFetch requests (Java: pendingCommittedOffsetRequest).
            pending = self._pending_committed_request
            if pending is not None and pending[0] == key and not pending[1].failed():
                future = pending[1]
            else:
                future = self._send_offset_fetch_request(partitions)
                self._pending_committed_request = (key, future)
            self.client.poll_future(future, timer)
            if not future.is_done():
                return None
            self._pending_committed_request = None
            if future.succeeded():
                result: dict[TopicPartition, OffsetAndMetadata | None] = future.value()
                return result
            exc = future.exception()
            if not is_retriable(exc):
                raise exc
            timer.sleep(self.rebalance_config.retry_backoff_ms)
            if timer.is_expired():
                return None

    def _send_offset_fetch_request(self, partitions: Collection[TopicPartition]) -> RequestFuture[CommittedOffsets]:
        coordinator = self.check_and_get_coordinator()
        if coordinator is None:
            return RequestFuture.failure(CoordinatorNotAvailableError())
        member = self.offset_fetch_member()
        request = offset_fetch_request(self.rebalance_config.group_id, partitions, member)
        if member is None:
            sent = self.client.send(coordinator, request, latest_allowed_version=_OFFSET_FETCH_MAX_VERSION)
        else:
            sent = self.client.send(coordinator, request, oldest_allowed_version=OFFSET_FETCH_MEMBER_EPOCH_VERSION,
                                    latest_allowed_version=OFFSET_FETCH_MEMBER_EPOCH_VERSION)  # fmt: skip
        return self._compose(sent, partial(handle_offset_fetch_response, self), "OffsetFetch")

    def offset_fetch_member(self) -> Generation | None:
        """The member id and epoch an OffsetFetch names (v9+); None for a classic member, as Java's
        ConsumerCoordinator does not send them."""
        return None

    # -- commits ---------------------------------------------------------------------------------

    def _commit_generation(self) -> Generation | BaseException:
        if not self.subscriptions.has_auto_assigned_partitions():
            return Generation()  # manual assignment: no generation, as in Java
        gen = self.generation_if_stable()
        if gen is not None:
            return gen
        if self.rebalance_in_progress():
            return RebalanceInProgressClientError(
                "offset commit cannot be completed since the consumer is undergoing a rebalance; "
                "complete the rebalance by calling poll() and then retry the commit"
            )
        return CommitFailedError(
            "offset commit cannot be completed since the consumer is not part of an active group for auto "
            "partition assignment; it is likely that the consumer was kicked out of the group"
        )

    def _send_offset_commit_request(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> RequestFuture[None]:
        if not offsets:
            return RequestFuture.void_success()
        coordinator = self.check_and_get_coordinator()
        if coordinator is None:
            return RequestFuture.failure(CoordinatorNotAvailableError())
        gen = self._commit_generation()
        if isinstance(gen, BaseException):
            return RequestFuture.failure(gen)
        try:
            request = offset_commit_request(
                self.rebalance_config.group_id, self.rebalance_config.group_instance_id, gen, offsets
            )
        except IllegalStateError as e:
            return RequestFuture.failure(e)
        sent = self.client.send(coordinator, request, oldest_allowed_version=self.offset_commit_oldest_version())
        return self._compose(sent, partial(handle_offset_commit_response, self, gen), "OffsetCommit")

    def offset_commit_oldest_version(self) -> int | None:
        """The oldest OffsetCommit version this member may send (None: any)."""
        return self.rebalance_config.oldest_allowed_version(ApiKey.OFFSET_COMMIT)

    def commit_offsets_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timer: Timer) -> bool:
        """Commit and wait; False if the timer expired first. Retriable errors are retried."""
        self.invoke_completed_offset_commit_callbacks()
        if not offsets:
            return True
        while True:
            if self.coordinator_unknown() and not self.ensure_coordinator_ready(timer):
                return False
            future = self._send_offset_commit_request(offsets)
            self.client.poll_future(future, timer)
            if not future.is_done():
                return False
            if future.succeeded():
                return True
            exc = future.exception()
            if not is_retriable(exc) or isinstance(exc, RebalanceInProgressClientError):
                raise exc
            timer.sleep(self.rebalance_config.retry_backoff_ms)
            if timer.is_expired():
                return False

    def commit_offsets_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], callback: OffsetCommitCallback | None = None
    ) -> RequestFuture[None]:
        """Send a commit without waiting; ``callback(offsets, exception_or_None)`` runs in the
        application thread at a later poll()/commit."""
        self.invoke_completed_offset_commit_callbacks()
        cb = callback or self._default_commit_callback
        offsets = dict(offsets)
        result: RequestFuture[None] = RequestFuture()

        def done(exc: BaseException | None) -> None:
            if exc is not None and is_retriable(exc) and not isinstance(exc, RebalanceInProgressClientError):
                exc = RetriableCommitFailedError(f"offset commit failed with a retriable exception: {exc}")
            with self._commit_lock:
                self._pending_async_commits -= 1
                self._completed_offset_commits.append((cb, offsets, exc))
            if exc is None:
                result.complete(None)
            else:
                result.raise_(exc)

        with self._commit_lock:
            self._pending_async_commits += 1

        def send() -> None:
            f = self._send_offset_commit_request(offsets)
            f.add_callbacks(lambda _: done(None), done)

        if self.coordinator_unknown():
            lookup = self.lookup_coordinator()
            lookup.add_callbacks(lambda _: send(), done)
        else:
            send()
        self.client.poll_no_wakeup()  # give it a chance to go out now
        return result

    @staticmethod
    def _default_commit_callback(
        offsets: Mapping[TopicPartition, OffsetAndMetadata], exc: BaseException | None
    ) -> None:
        if exc is not None:
            log.error("offset commit failed for %s: %s", sorted(map(str, offsets)), exc)

    def invoke_completed_offset_commit_callbacks(self) -> None:
        while True:
            with self._commit_lock:
                if not self._completed_offset_commits:
                    return
                cb, offsets, exc = self._completed_offset_commits.popleft()
            cb(offsets, exc)

    def has_pending_async_commits(self) -> bool:
        with self._commit_lock:
            return self._pending_async_commits > 0

    def maybe_auto_commit_offsets_async(self, now_ms: int) -> None:
        if not self.auto_commit_enabled:
            return
        self.next_auto_commit_timer.update(now_ms)
        if not self.next_auto_commit_timer.is_expired():
            return
        self.next_auto_commit_timer.reset(self.auto_commit_interval_ms)
        offsets = self.subscriptions.all_consumed()

        def cb(committed: Mapping[TopicPartition, OffsetAndMetadata], exc: BaseException | None) -> None:
            if exc is None:
                log.debug("auto-committed offsets %s", {str(k): v.offset for k, v in committed.items()})
            elif isinstance(exc, RetriableError):
                log.debug("auto-commit of %s failed (will retry): %s", sorted(map(str, committed)), exc)
                self.next_auto_commit_timer.reset(
                    min(self.auto_commit_interval_ms, self.rebalance_config.retry_backoff_ms)
                )
            else:
                log.warning("auto-commit of offsets %s failed: %s", sorted(map(str, committed)), exc)

        if offsets:
            self.commit_offsets_async(offsets, cb)

    def maybe_auto_commit_offsets_sync(self, timer: Timer) -> None:
        if self.auto_commit_enabled:
            try:
                if not self.commit_offsets_sync(self.subscriptions.all_consumed(), timer):
                    log.debug("auto-commit on close timed out")
            except KafkaError as e:
                log.warning("synchronous auto-commit failed: %s", e)

    def close(self, timer: Timer) -> None:
        """Auto-commit (if enabled and part of a group), then leave the group and stop heartbeats."""
        try:
            self.maybe_auto_commit_offsets_sync(timer)
            while self.has_pending_async_commits() and not timer.is_expired():
                self.client.poll(timer)
                timer.update()
            self.invoke_completed_offset_commit_callbacks()
        finally:
            super().close(timer)
