"""The public share consumer (Java: KafkaShareConsumer, KIP-932 share groups).

    from pykafka_client import KafkaShareConsumer

    with KafkaShareConsumer({"bootstrap.servers": "localhost:9092", "group.id": "workers",
                             "value.deserializer": "str"}) as consumer:
        consumer.subscribe(["jobs"])
        while True:
            for record in consumer.poll(1.0):
                print(record.offset, record.delivery_count, record.value)

* Members of a share group may all consume the same partitions: the broker hands each record to one member
  at a time (it is *acquired* for ``group.share.record.lock.duration.ms``) and counts its deliveries.
* ``share.acknowledgement.mode=implicit`` (the default): the next :meth:`poll` or :meth:`commit_sync` accepts
  every record of the previous poll. ``explicit``: call :meth:`acknowledge` for each record (ACCEPT, RELEASE
  for another delivery, REJECT for none) before polling again; :meth:`commit_sync` sends them at once.
* :meth:`close` settles what the consumer holds (implicit: accepted; explicit: unacknowledged records are
  released to the group), closes its share sessions and leaves the group.
* Not thread-safe, like Java's: one thread at a time; :meth:`wakeup` may be called from any thread.
* Membership is kept in the background (Java's ShareConsumer does it from its background thread): from the first
  :meth:`poll` on, the consumer's heartbeat thread (:class:`~pykafka_client.consumer.heartbeat_thread.HeartbeatThread`,
  the classic consumer's) sends ShareGroupHeartbeat when due, so a member that processes a batch for longer than
  ``group.share.session.timeout.ms``, or waits between polls, stays in the group. It only heartbeats (and completes
  what is in flight): records are fetched by :meth:`poll` alone, and acquisition locks expire as the broker
  decides. :meth:`close` stops it.
* :meth:`commit_async` sends the acknowledgements without waiting; their outcomes (and those of the
  acknowledgements carried by fetches) go to :meth:`set_acknowledgement_commit_callback`'s callback, called
  from a later poll or commit in the application's thread.
* The async twin is :class:`pykafka_client.aio.AsyncKafkaShareConsumer`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Generic, TypeVar, overload

from pykafka_client.consumer import api_arguments as args
from pykafka_client.consumer.client_adapter import ConsumerClient
from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.consumer_record import TimestampType
from pykafka_client.consumer.consumer_utils import create_consumer_network_client
from pykafka_client.consumer.group_rebalance_config import GroupRebalanceConfig
from pykafka_client.consumer.group_response_handlers import COORDINATOR_NODE_ID_BASE
from pykafka_client.consumer.heartbeat_thread import HeartbeatThread
from pykafka_client.consumer.member_state import MemberState
from pykafka_client.consumer.share_acknowledgements import GAP, AcknowledgeType, ShareAcknowledgements
from pykafka_client.consumer.share_config import ShareConsumerConfig
from pykafka_client.consumer.share_consumer_record import ShareConsumerRecord
from pykafka_client.consumer.share_membership_manager import (
    HeartbeatOutcome,
    ShareMembershipManager,
    ShareMemberState,
)
from pykafka_client.consumer.single_thread_guard import SingleThreadGuard
from pykafka_client.consumer.subscription_state import OffsetResetStrategy, SubscriptionState
from pykafka_client.errors import (
    FencedLeaderEpochError,
    IllegalStateError,
    InvalidShareSessionEpochError,
    KafkaError,
    NotLeaderOrFollowerError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    WakeupException,
    for_code,
)
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.protocol.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
)
from pykafka_client.protocol.records import MemoryRecords
from pykafka_client.serialization import Deserializer, resolve_deserializer
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, Time, Timer

log = logging.getLogger(__name__)

K = TypeVar("K")
V = TypeVar("V")

_DEFAULT_CLOSE_TIMEOUT_S = 30.0
_FIND_COORDINATOR_VERSION = 3  # the single-key form
#: the session epoch that closes a share session (ShareAcknowledge / ShareFetch)
_FINAL_SHARE_SESSION_EPOCH = -1
_LEADERSHIP_ERRORS = frozenset(e.code for e in (NotLeaderOrFollowerError, FencedLeaderEpochError,
                                               UnknownTopicOrPartitionError, UnknownTopicIdError))
#: top-level ShareFetch errors after which the next request opens a new share session (epoch 0)
_SESSION_ERRORS = frozenset((InvalidShareSessionEpochError.code, ShareSessionNotFoundError.code,
                             ShareSessionLimitReachedError.code))


#: Java's AcknowledgementCommitCallback: the offsets acknowledged per partition and None, or the error that
#: made them fail (then the records return to the group when their acquisition lock expires)
AcknowledgementCommitCallback = Callable[[dict[TopicPartition, set[int]], "KafkaError | None"], None]


def _offsets(batches: list[tuple[int, int, int]]) -> set[int]:
    """The offsets the application acknowledged in ``batches`` (gaps are the consumer's own)."""
    return {o for first, last, kind in batches if kind != GAP for o in range(first, last + 1)}


def _as_kafka_error(exc: BaseException) -> KafkaError:
    return exc if isinstance(exc, KafkaError) else KafkaError(f"{type(exc).__name__}: {exc}")


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


class ShareHeartbeats:
    """What the heartbeat thread drives for a share consumer (``HeartbeatDriven``): each step sends the
    ShareGroupHeartbeat that is due (looking the coordinator up first when unknown), under the consumer's lock.
    While the member is in the group (joining or joined) the thread also polls the client, so the answers are
    read whether or not the application polls."""

    def __init__(self, group_id: str, retry_backoff_ms: int, time: Time, client: ConsumerClient,
                 lock: threading.RLock, membership: ShareMembershipManager, step: Callable[[], None]) -> None:
        self.rebalance_config = GroupRebalanceConfig(group_id=group_id, retry_backoff_ms=retry_backoff_ms)
        self.time = time
        self.client = client
        self.lock = lock
        self.cond = threading.Condition(lock)
        self.closed = False
        self.heartbeat_failure: BaseException | None = None
        self._membership = membership
        self._step = step
        self._thread: HeartbeatThread | None = None

    @property
    def state(self) -> MemberState:
        """STABLE while the member is joining or in the group (the thread heartbeats and polls), else UNJOINED."""
        in_group = self._membership.state in (ShareMemberState.JOINING, ShareMemberState.STABLE)
        return MemberState.STABLE if in_group else MemberState.UNJOINED

    def heartbeat_step(self, now_ms: int) -> int:
        """Send the heartbeat that is due, if any; how long to wait before the next step (ms)."""
        retry = self.rebalance_config.retry_backoff_ms
        with self.lock:
            if self.closed:
                return retry
            self._step()
            return max(1, min(retry, self._membership.time_to_next_heartbeat(now_ms)))

    def start_thread_if_needed(self) -> None:
        """Start the background heartbeats (the consumer's first poll does; again if the thread died)."""
        if (self._thread is None or not self._thread.is_alive()) and not self.closed:
            self._thread = HeartbeatThread(self)
            self._thread.start()

    def shutdown(self) -> None:
        """No more heartbeats: the thread ends (call without the consumer's lock held: it may be waiting for it)."""
        with self.lock:
            self.closed = True
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.shutdown()


class KafkaShareConsumer(Generic[K, V]):
    """See module docstring. ``K``/``V`` are the key and value types, inferred from deserializer objects as
    :class:`~pykafka_client.KafkaConsumer` does (``bytes | None`` without one and without a config mapping;
    ``Any`` when a mapping could name one)."""

    @overload
    def __init__(
        self: KafkaShareConsumer[bytes | None, bytes | None],
        config: None = None,
        *,
        key_deserializer: None = None,
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: KafkaShareConsumer[K, bytes | None],
        config: None = None,
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: KafkaShareConsumer[bytes | None, V],
        config: None = None,
        *,
        key_deserializer: None = None,
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: KafkaShareConsumer[K, V],
        config: Mapping[str, Any] | None = None,
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: KafkaShareConsumer[K, Any],
        config: Mapping[str, Any],
        *,
        key_deserializer: Deserializer[K],
        value_deserializer: None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: KafkaShareConsumer[Any, V],
        config: Mapping[str, Any],
        *,
        key_deserializer: None = None,
        value_deserializer: Deserializer[V],
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(  # a config mapping, or a deserializer name ("str"), class or function: typed Any
        self: KafkaShareConsumer[Any, Any],
        config: Mapping[str, Any] | None = None,
        *,
        key_deserializer: str | type | Callable[[bytes], Any] | Deserializer[Any] | None = None,
        value_deserializer: str | type | Callable[[bytes], Any] | Deserializer[Any] | None = None,
        **overrides: Any,
    ) -> None: ...

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        key_deserializer: Any = None,
        value_deserializer: Any = None,
        time: Time = SYSTEM_TIME,
        client: ConsumerClient | None = None,
        metadata: ConsumerMetadata | None = None,
        **overrides: Any,
    ) -> None:
        """``config`` maps Kafka's dotted names to values (``group.id`` is required); keyword arguments name
        the same keys with ``_`` for ``.``. ``client``/``metadata`` replace the network layer (tests)."""
        if key_deserializer is not None:
            overrides["key_deserializer"] = key_deserializer
        if value_deserializer is not None:
            overrides["value_deserializer"] = value_deserializer
        self.config = cfg = ShareConsumerConfig(config, **overrides)
        self._time = time
        self._closed = False
        self._guard = SingleThreadGuard()
        self.group_id: str = cfg["group.id"]
        self.client_id = cfg["client.id"] or f"share-consumer-{self.group_id}-{id(self) & 0xFFFF}"
        self._default_api_timeout_ms: int = cfg["default.api.timeout.ms"]
        self._retry_backoff_ms: int = cfg["retry.backoff.ms"]
        self._key_deserializer = resolve_deserializer("key.deserializer", cfg["key.deserializer"] or "bytes")
        self._value_deserializer = resolve_deserializer("value.deserializer", cfg["value.deserializer"] or "bytes")
        self._subscriptions = SubscriptionState(OffsetResetStrategy.LATEST)
        self._network_client: NetworkClient | None = None
        if client is None:
            self._metadata: ConsumerMetadata
            self._client: ConsumerClient
            self._metadata, self._network_client, self._client = create_consumer_network_client(
                cfg, self._subscriptions, self.client_id, time)
        else:
            if metadata is None:
                raise IllegalStateError("a custom client needs its metadata: pass metadata= with client=")
            self._client = client
            metadata.subscriptions = self._subscriptions
            self._metadata = metadata
        self._membership = ShareMembershipManager(self.group_id, cfg["client.rack"], self._retry_backoff_ms,
                                                  cfg["retry.backoff.max.ms"])
        #: guards the membership, the coordinator, sessions, fetches and outcomes: the application thread holds it
        #: but while it waits on the network; the heartbeat thread and completion handlers take it
        self._lock = threading.RLock()
        self.heartbeats = ShareHeartbeats(self.group_id, self._retry_backoff_ms, time, self._client, self._lock,
                                          self._membership, self._maybe_heartbeat)
        self._acks = ShareAcknowledgements(cfg.explicit_acknowledgement)
        self._coordinator: Node | None = None
        self._find_coordinator: RequestFuture[ClientResponse] | None = None
        self._fatal: BaseException | None = None
        #: share session epoch per leader node id (absent: no session; the next ShareFetch opens one)
        self._session_epochs: dict[int, int] = {}
        self._fetches: dict[int, RequestFuture[ClientResponse]] = {}
        self._completed: list[ShareFetchResponse] = []
        self._commit_callback: AcknowledgementCommitCallback | None = None
        #: outcomes of sent acknowledgements, for the callback (called in the application's thread)
        self._ack_outcomes: list[tuple[dict[TopicPartition, set[int]], KafkaError | None]] = []

    # -- guard -------------------------------------------------------------------------------------

    @contextmanager
    def _open_in_this_thread(self) -> Iterator[None]:
        self._guard.acquire()
        try:
            if self._closed:
                raise IllegalStateError("This share consumer has already been closed.")
            with self._lock:
                yield
        finally:
            self._guard.release()

    @contextmanager
    def _released(self) -> Iterator[None]:
        """Let go of the consumer's lock while waiting on the network or calling the application's callback (the
        heartbeat thread and the completion handlers it fires need it)."""
        self._lock.release()
        try:
            yield
        finally:
            self._lock.acquire()

    def _timer(self, timeout: float | None) -> Timer:
        return self._time.timer(args.to_ms(timeout, self._default_api_timeout_ms))

    # -- public API --------------------------------------------------------------------------------

    def subscribe(self, topics: Collection[str]) -> None:
        """Subscribe to ``topics`` (replacing the previous subscription); an empty collection unsubscribes."""
        with self._open_in_this_thread():
            names = args.topic_names(topics)
            if not names:
                self._leave_group(unsubscribe=True)
                self._subscriptions.unsubscribe()
                return
            if self._subscriptions.subscribe(names, None):
                self._metadata.request_update_for_new_topics()
            self._membership.subscribe(names)

    def subscription(self) -> set[str]:
        with self._open_in_this_thread():
            return set(self._membership.subscription)

    def unsubscribe(self) -> None:
        """Leave the share group (settling held records as :meth:`close` does) and drop the subscription."""
        self.subscribe(())

    def poll(self, timeout: float | None = None) -> list[ShareConsumerRecord[K, V]]:
        """The records acquired for this consumer, waiting up to ``timeout`` seconds for some. In implicit
        mode this accepts every record of the previous poll; in explicit mode each of them must have been
        acknowledged (else IllegalStateError)."""
        with self._open_in_this_thread():
            if not self._membership.subscription:
                raise IllegalStateError("Consumer is not subscribed to any topics: call subscribe() before poll()")
            self._invoke_commit_callback()
            self._acks.check_all_acknowledged()
            if not self._acks.explicit:
                self._acks.settle_held(AcknowledgeType.ACCEPT)
            timer = self._timer(timeout)
            while True:
                self._raise_fatal()
                self._maybe_heartbeat()
                self.heartbeats.start_thread_if_needed()
                records = self._take_completed()
                if records:  # no new fetch before these are handed over: it carries their acknowledgements
                    return records
                self._send_fetches(timer)
                if timer.is_expired():  # poll(0) too sends what is queued and takes what has arrived
                    with self._released():
                        self._client.poll_no_wakeup()
                    return self._take_completed()
                bound = self._time.timer(min(timer.remaining_ms(), self._wait_bound_ms()))
                with self._released():
                    self._client.poll(bound)
                timer.update()

    def acknowledge(self, record: ShareConsumerRecord[Any, Any],
                    type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Explicit mode: acknowledge a record of the last poll (ACCEPT, RELEASE or REJECT); sent with the
        next poll, :meth:`commit_sync` or :meth:`close`."""
        with self._open_in_this_thread():
            self._acks.acknowledge(record.topic_partition(), record.offset, type)

    def commit_sync(self, timeout: float | None = None) -> dict[TopicPartition, KafkaError | None]:
        """Send the acknowledgements now (implicit mode: accept the last poll's records) and wait for them:
        per partition None, or the error the broker gave for it."""
        with self._open_in_this_thread():
            if not self._acks.explicit:
                self._acks.settle_held(AcknowledgeType.ACCEPT)
            results = self._send_acknowledgements(self._timer(timeout), final=False)
            self._invoke_commit_callback()
            return results

    def commit_async(self) -> None:
        """Send the acknowledgements now (implicit mode: accept the last poll's records) without waiting;
        their outcome goes to the acknowledgement commit callback during a later call."""
        with self._open_in_this_thread():
            if not self._acks.explicit:
                self._acks.settle_held(AcknowledgeType.ACCEPT)
            for node_id, (node, acks) in self._acknowledgement_targets().items():
                self._send_acknowledge(node_id, node, acks, final=False, results=None)
            with self._released():
                self._client.poll_no_wakeup()  # on the wire now, answered during a later call
            self._invoke_commit_callback()

    def set_acknowledgement_commit_callback(self, callback: AcknowledgementCommitCallback | None) -> None:
        """Called with each sent acknowledgement's outcome (offsets per partition, None or the error), from
        :meth:`poll`, :meth:`commit_sync`, :meth:`commit_async` and :meth:`close` in the calling thread."""
        with self._open_in_this_thread():
            self._commit_callback = callback

    def _invoke_commit_callback(self) -> None:
        outcomes, self._ack_outcomes = self._ack_outcomes, []
        callback = self._commit_callback
        if callback is not None and outcomes:
            with self._released():
                for offsets, error in outcomes:
                    callback(offsets, error)

    def wakeup(self) -> None:
        """Make the blocked (or next) poll or commit raise WakeupException; callable from any thread."""
        self._client.wakeup()

    def clear_wakeup(self) -> bool:
        """Drop a :meth:`wakeup` no blocking call consumed yet (True if one was pending); the async twin
        interrupts a cancelled poll with ``wakeup`` and clears what is left before its next call."""
        try:
            self._client.maybe_trigger_wakeup()
        except WakeupException:
            return True
        return False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, timeout: float | None = None) -> None:
        """Settle the held records (implicit: accept; explicit: release the unacknowledged ones), close the
        share sessions, leave the group and close the connections, within ``timeout`` seconds (30 default)."""
        if self._closed:
            return
        self.heartbeats.shutdown()
        with self._open_in_this_thread():
            try:
                timer = self._time.timer(args.to_ms(timeout, int(_DEFAULT_CLOSE_TIMEOUT_S * 1000)))
                self._leave_group(timer)
                self._invoke_commit_callback()
            finally:
                self._closed = True
                self._client.close()
                if self._network_client is not None:
                    self._metadata.close()

    def __enter__(self) -> KafkaShareConsumer[K, V]:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- membership --------------------------------------------------------------------------------

    def _raise_fatal(self) -> None:
        if self._fatal is None and self.heartbeats.heartbeat_failure is not None:
            self._fatal, self.heartbeats.heartbeat_failure = self.heartbeats.heartbeat_failure, None
        if self._fatal is not None:
            exc, self._fatal = self._fatal, None
            raise exc

    def _wait_bound_ms(self) -> int:
        """How long one client poll may block: until the next heartbeat, at most the retry backoff while
        the coordinator or the assignment is unknown."""
        bound = self._membership.time_to_next_heartbeat(self._time.milliseconds())
        if self._coordinator is None or not self._fetches:
            bound = min(bound, self._retry_backoff_ms)
        return max(1, bound)

    def _maybe_heartbeat(self) -> None:
        if self._coordinator is None:
            self._lookup_coordinator()
            return
        if not self._membership.should_heartbeat(self._time.milliseconds()):
            return
        future = self._client.send(self._coordinator, self._membership.heartbeat_request())
        future.add_callbacks(self._on_heartbeat, self._on_heartbeat_failure)

    def _on_heartbeat(self, response: ClientResponse) -> None:
        with self._lock:
            self._apply_heartbeat(response)

    def _apply_heartbeat(self, response: ClientResponse) -> None:
        try:
            outcome = self._membership.on_heartbeat_response(response.response_body, self._time.milliseconds())
        except KafkaError as e:
            self._fatal = e
            return
        if outcome is HeartbeatOutcome.COORDINATOR_UNKNOWN:
            self._coordinator = None
        elif outcome is HeartbeatOutcome.OK:
            self._metadata_for_assignment()

    def _on_heartbeat_failure(self, exc: BaseException) -> None:
        with self._lock:
            log.debug("share group heartbeat to %s failed: %s", self._coordinator, exc)
            self._membership.on_heartbeat_failure(self._time.milliseconds())
            self._coordinator = None

    def _metadata_for_assignment(self) -> None:
        cluster = self._metadata.fetch()
        if any(cluster.topic_name(topic_id) is None for topic_id in self._membership.assignment):
            self._metadata.request_update()

    def _lookup_coordinator(self) -> None:
        if self._find_coordinator is not None:
            return
        node = self._client.least_loaded_node()
        if node is None:
            return
        future = self._client.send(node, FindCoordinatorRequest(key=self.group_id, key_type=0),
                                   latest_allowed_version=_FIND_COORDINATOR_VERSION)
        self._find_coordinator = future

        def done(response: ClientResponse) -> None:
            body = response.response_body
            with self._lock:
                self._find_coordinator = None
                if isinstance(body, FindCoordinatorResponse) and body.error_code == 0:
                    self._coordinator = Node(COORDINATOR_NODE_ID_BASE - body.node_id, body.host, body.port)
                else:
                    log.debug("FindCoordinator for share group %s: %s", self.group_id, body)

        def failed(exc: BaseException) -> None:
            with self._lock:
                self._find_coordinator = None
            log.debug("FindCoordinator for share group %s failed: %s", self.group_id, exc)

        future.add_callbacks(done, failed)

    def _leave_group(self, timer: Timer | None = None, unsubscribe: bool = False) -> None:
        """Settle held records, close every share session (ShareAcknowledge, epoch -1), leave the group."""
        timer = timer or self._timer(None)
        self._acks.settle_held(AcknowledgeType.RELEASE if self._acks.explicit else AcknowledgeType.ACCEPT)
        try:
            self._send_acknowledgements(timer, final=True)
        except KafkaError as e:
            log.warning("closing the share sessions of group %s failed: %s", self.group_id, e)
        joined = self._membership.member_epoch > 0
        leave = self._membership.leave_request(unsubscribe)
        if self._coordinator is not None and joined:
            sent = self._client.send(self._coordinator, leave)
            with self._released():
                self._client.poll_future(sent, timer)

    # -- fetching ----------------------------------------------------------------------------------

    def _assigned_by_leader(self) -> dict[int, tuple[Node, dict[TopicPartition, Any]]]:
        """The assigned partitions (with their topic id) grouped by leader node."""
        cluster = self._metadata.fetch()
        out: dict[int, tuple[Node, dict[TopicPartition, Any]]] = {}
        for topic_id, partitions in self._membership.assignment.items():
            name = cluster.topic_name(topic_id)
            if name is None:
                self._metadata.request_update()
                continue
            for p in partitions:
                leader = cluster.leader_for((name, p))
                if leader is None:
                    self._metadata.request_update()
                    continue
                out.setdefault(leader.id, (leader, {}))[1][TopicPartition(name, p)] = topic_id
        return out

    def _acknowledgement_targets(self) -> dict[int, tuple[Node, dict[TopicPartition, tuple[Any, list[Any]]]]]:
        """The pending acknowledgements, as (topic id, batches) per partition, grouped by leader node."""
        cluster = self._metadata.fetch()
        out: dict[int, tuple[Node, dict[TopicPartition, tuple[Any, list[Any]]]]] = {}
        for tp, batches in self._acks.drain().items():
            topic_id = cluster.topic_id(tp.topic)
            leader = cluster.leader_for((tp.topic, tp.partition))
            if topic_id is None or leader is None:
                log.warning("dropping the acknowledgements of %s: its leader is unknown (the records return to "
                            "the group when their acquisition lock expires)", tp)
                continue
            out.setdefault(leader.id, (leader, {}))[1][tp] = (topic_id, batches)
        return out

    def _send_fetches(self, timer: Timer) -> None:
        cfg = self.config
        acks = self._acknowledgement_targets()
        for node_id, (node, partitions) in self._assigned_by_leader().items():
            if node_id in self._fetches:
                continue
            node_acks = acks.pop(node_id, (node, {}))[1]
            sent = {tp: _offsets(batches) for tp, (_, batches) in node_acks.items()}
            topics: dict[Any, list[ShareFetchRequest.FetchPartition]] = {}
            for tp, topic_id in partitions.items():
                batches = node_acks.pop(tp, (topic_id, []))[1]
                topics.setdefault(topic_id, []).append(ShareFetchRequest.FetchPartition(
                    partition_index=tp.partition,
                    acknowledgement_batches=[ShareFetchRequest.AcknowledgementBatch(f, last, [t])
                                             for f, last, t in batches]))
            for tp, (topic_id, batches) in node_acks.items():  # acknowledgements of partitions no longer assigned
                topics.setdefault(topic_id, []).append(ShareFetchRequest.FetchPartition(
                    partition_index=tp.partition, acknowledgement_batches=[
                        ShareFetchRequest.AcknowledgementBatch(f, last, [t]) for f, last, t in batches]))
            request = ShareFetchRequest(
                group_id=self.group_id, member_id=self._membership.member_id,
                share_session_epoch=self._session_epochs.get(node_id, 0),
                max_wait_ms=max(0, min(timer.remaining_ms(), cfg["fetch.max.wait.ms"])),
                min_bytes=cfg["fetch.min.bytes"], max_bytes=cfg["fetch.max.bytes"],
                max_records=cfg["max.poll.records"], batch_size=cfg["max.poll.records"],
                topics=[ShareFetchRequest.FetchTopic(topic_id=t, partitions=ps) for t, ps in topics.items()])
            self._session_epochs[node_id] = _next_epoch(request.share_session_epoch)
            future = self._client.send(node, request)
            self._fetches[node_id] = future
            future.add_callbacks(self._fetched(node_id, sent), self._fetch_failed(node_id, sent))
        for node_id, (node, node_acks) in acks.items():  # acknowledgements for nodes not fetched from now
            self._send_acknowledge(node_id, node, node_acks, final=False, results=None)

    def _fetched(self, node_id: int, sent: dict[TopicPartition, set[int]]) -> Callable[[ClientResponse], None]:
        def done(response: ClientResponse) -> None:
            with self._lock:
                take(response)

        def take(response: ClientResponse) -> None:
            self._fetches.pop(node_id, None)
            body = response.response_body
            if not isinstance(body, ShareFetchResponse):
                self._outcome(sent, KafkaError(f"unexpected ShareFetch response {type(body).__name__}"))
                return
            if body.error_code in _SESSION_ERRORS:
                self._session_epochs.pop(node_id, None)
            if body.error_code != 0:
                log.debug("ShareFetch from node %s failed: %s", node_id, for_code(body.error_code).__name__)
                self._outcome(sent, for_code(body.error_code)(body.error_message))
                return
            cluster = self._metadata.fetch()
            self._outcome(sent, {
                TopicPartition(name, p.partition_index): for_code(p.acknowledge_error_code)(p.acknowledge_error_message)
                for t in body.responses if (name := cluster.topic_name(t.topic_id)) is not None
                for p in t.partitions if p.acknowledge_error_code})
            self._completed.append(body)
        return done

    def _fetch_failed(self, node_id: int, sent: dict[TopicPartition, set[int]]) -> Callable[[BaseException], None]:
        def failed(exc: BaseException) -> None:
            with self._lock:
                self._fetches.pop(node_id, None)
                self._session_epochs.pop(node_id, None)  # a lost connection takes the share session with it
                log.debug("ShareFetch from node %s failed: %s", node_id, exc)
                self._outcome(sent, _as_kafka_error(exc))
        return failed

    def _outcome(self, sent: Mapping[TopicPartition, set[int]],
                 errors: KafkaError | Mapping[TopicPartition, KafkaError]) -> dict[TopicPartition, KafkaError | None]:
        """Each partition's outcome (``errors``: one for all, or those of the failed partitions), queued for
        the acknowledgement commit callback."""
        results = {tp: errors if isinstance(errors, KafkaError) else errors.get(tp) for tp in sent}
        for tp, offsets in sent.items():
            if offsets:
                self._ack_outcomes.append(({tp: set(offsets)}, results[tp]))
        return results

    def _take_completed(self) -> list[ShareConsumerRecord[K, V]]:
        out: list[ShareConsumerRecord[K, V]] = []
        cluster = self._metadata.fetch()
        completed, self._completed = self._completed, []
        for response in completed:
            for topic in response.responses:
                name = cluster.topic_name(topic.topic_id)
                if name is None:
                    self._metadata.request_update()
                    continue
                for p in topic.partitions:
                    tp = TopicPartition(name, p.partition_index)
                    if p.error_code:
                        if p.error_code in _LEADERSHIP_ERRORS:
                            self._metadata.request_update()
                        log.debug("ShareFetch of %s: %s", tp, for_code(p.error_code).__name__)
                        continue
                    out.extend(self._records(tp, p))
        return out

    def _records(self, tp: TopicPartition, p: ShareFetchResponse.PartitionData) -> list[ShareConsumerRecord[K, V]]:
        counts = {o: r.delivery_count for r in p.acquired_records for o in range(r.first_offset, r.last_offset + 1)}
        if not counts:
            return []
        out: list[ShareConsumerRecord[K, V]] = []
        if isinstance(p.records, (bytes, bytearray, memoryview)):  # a FileRegion is only ever sent by a broker
            memory = MemoryRecords(p.records, check_crcs=self.config["check.crcs"])
            control: set[int] = set()
            for batch in memory.batches():
                if batch.is_control:
                    control.update(range(batch.base_offset, batch.last_offset + 1))
            for r in memory.records():
                if r.offset in control:
                    continue
                count = counts.pop(r.offset, None)
                if count is None:
                    continue
                out.append(self._record(tp, r.offset, r.timestamp, int(r.timestamp_type), r.key, r.value,
                                        r.headers, count))
        self._acks.delivered(tp, (r.offset for r in out))
        if counts:  # acquired offsets without a record to deliver (markers, compacted away): gaps
            self._acks.gaps(tp, counts)
        return out

    def _record(self, tp: TopicPartition, offset: int, timestamp: int, ts_type: int, key: bytes | None,
                value: bytes | None, headers: list[tuple[str, bytes | None]], count: int) -> ShareConsumerRecord[K, V]:
        record: ShareConsumerRecord[K, V] = ShareConsumerRecord(
            tp.topic, tp.partition, offset, timestamp, TimestampType(ts_type),
            self._key_deserializer.deserialize(tp.topic, key, headers),
            self._value_deserializer.deserialize(tp.topic, value, headers),
            headers, None, -1 if key is None else len(key), -1 if value is None else len(value))
        record.delivery_count = count
        return record

    # -- acknowledging -----------------------------------------------------------------------------

    def _send_acknowledge(self, node_id: int, node: Node, acks: Mapping[TopicPartition, tuple[Any, list[Any]]],
                          final: bool, results: dict[TopicPartition, KafkaError | None] | None
                          ) -> RequestFuture[ClientResponse] | None:
        """Send a ShareAcknowledge (``final``: closing the share session); its outcome is queued for the callback
        and, when given, written to ``results``."""
        epoch = self._session_epochs.get(node_id)
        if epoch is None:  # no share session: ShareAcknowledge cannot open one; the locks expire instead
            if acks:
                log.warning("cannot acknowledge %s: no share session with node %s (the records return to the "
                            "group when their acquisition lock expires)", sorted(acks), node_id)
            return None
        topics: dict[Any, list[ShareAcknowledgeRequest.AcknowledgePartition]] = {}
        for tp, (topic_id, batches) in acks.items():
            topics.setdefault(topic_id, []).append(ShareAcknowledgeRequest.AcknowledgePartition(
                partition_index=tp.partition, acknowledgement_batches=[
                    ShareAcknowledgeRequest.AcknowledgementBatch(f, last, [t]) for f, last, t in batches]))
        request = ShareAcknowledgeRequest(
            group_id=self.group_id, member_id=self._membership.member_id,
            share_session_epoch=_FINAL_SHARE_SESSION_EPOCH if final else epoch,
            topics=[ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=t, partitions=ps) for t, ps in topics.items()])
        if final:
            self._session_epochs.pop(node_id, None)
        else:
            self._session_epochs[node_id] = _next_epoch(epoch)
        sent = {tp: _offsets(batches) for tp, (_, batches) in acks.items()}
        into = results if results is not None else {}

        def done(response: ClientResponse) -> None:
            with self._lock:
                into.update(self._outcome(sent, self._acknowledge_errors(response.response_body)))

        def failed(exc: BaseException) -> None:
            with self._lock:
                into.update(self._outcome(sent, _as_kafka_error(exc)))

        future = self._client.send(node, request)
        future.add_callbacks(done, failed)
        return future

    def _send_acknowledgements(self, timer: Timer, final: bool) -> dict[TopicPartition, KafkaError | None]:
        targets = self._acknowledgement_targets()
        if final:  # every node with a session gets its closing request
            cluster_nodes = {n.id: n for n in self._metadata.fetch().nodes}
            for node_id in self._session_epochs:
                if node_id not in targets and node_id in cluster_nodes:
                    targets[node_id] = (cluster_nodes[node_id], {})
        results: dict[TopicPartition, KafkaError | None] = {}
        sent = [(future, acks) for node_id, (node, acks) in targets.items()
                if (future := self._send_acknowledge(node_id, node, acks, final, results)) is not None]
        for future, acks in sent:
            with self._released():
                self._client.poll_future(future, timer)
            if not future.is_done():
                for tp in acks:
                    results[tp] = KafkaError(f"the acknowledgement of {tp} got no answer within the timeout; its "
                                             "records return to the group when their acquisition lock expires")
        return results

    def _acknowledge_errors(self, body: Any) -> KafkaError | dict[TopicPartition, KafkaError]:
        if not isinstance(body, ShareAcknowledgeResponse):
            return KafkaError(f"unexpected ShareAcknowledge response {type(body).__name__}")
        if body.error_code:
            return for_code(body.error_code)(body.error_message)
        cluster = self._metadata.fetch()
        return {TopicPartition(name, p.partition_index): for_code(p.error_code)(p.error_message)
                for t in body.responses if (name := cluster.topic_name(t.topic_id)) is not None
                for p in t.partitions if p.error_code}
