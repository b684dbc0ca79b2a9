"""The group and transaction coordinators of a cluster broker follow the leadership of their internal partitions
(Kafka: ``GroupCoordinator.onElection/onResignation`` and ``TransactionCoordinator.onElection/onResignation``,
called by ``ReplicaManager`` when it applies a leadership change of a ``__consumer_offsets`` /
``__transaction_state`` partition), partition by partition: a broker serves the groups and transactional ids of
the partitions it leads, so they spread over the brokers, and a failover moves only the failed broker's
partitions. Their answers wait for the ISR (Kafka appends internal records with acks=-1).

* :class:`CoordinatorPartitions` gets every leadership change of an internal partition from
  :class:`~mini_broker.cluster.replication.ClusterReplication` and hands it, in order, on one loader thread
  (``coordinator-loader-<id>``), to the :class:`~mini_broker.coordinator.runtime.CoordinatorRuntime` hosting
  the partition's topic (one runtime per internal topic, :data:`~mini_broker.coordinator.internal_topics.INTERNAL_TOPICS`):
  becoming leader loads the state of the partition's keys from its replicated log (their requests meanwhile get
  COORDINATOR_LOAD_IN_PROGRESS), losing it unloads them (NOT_COORDINATOR); the other partitions' keys are
  served throughout.
* :class:`CoordinatorAppendGate` holds the answers of the APIs that append to an internal partition
  (:data:`GATED_API_KEYS`) until the high watermark of the internal partitions the request may have written
  reached their log end as it was when the answer was ready: a client is told "done" only for what the ISR has,
  so a coordinator failover loses nothing acknowledged. The share coordinator's APIs write only the
  ``__share_group_state`` partitions of the share partitions they name, and wait only for those (Kafka: a write
  waits for its own partition), so a share state write never waits for another coordinator's partition (one
  whose ISR is still catching up after a failover, say); the other APIs wait for every internal partition this
  broker leads. The wait is a ``DelayedProduce`` in the produce purgatory,
  completed by follower fetches like an acks=all produce; it fails with the partition's error (no longer
  leader, ISR below ``min.insync.replicas``) or REQUEST_TIMED_OUT after ``offsets.commit.timeout.ms``, which
  the answer then carries as Kafka's coordinators map it (per partition / per group where it has no top-level
  error code; see coordinator_errors).

The transaction coordinator also waits with a transition's markers and answers (``when_replicated`` is its
``replication_barrier``); the group coordinator keeps offset commits pending and applies markers to pending
transactional offsets only once replicated (``when_topic_replicated`` for ``__consumer_offsets``).

An answer to a request received before a resignation that left records off the ISR (the new leader may
truncate them) fails with NOT_COORDINATOR, since the wait no longer covers that partition.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING

from mini_broker.cluster.coordinator_errors import fail_answer, offsets_append_error, txn_append_error
from mini_broker.coordinator.internal_topics import INTERNAL_TOPIC_NAMES
from mini_broker.coordinator.partitioning import partition_for
from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.log.unified_log import Log
from mini_broker.purgatory import TopicPartitionOperationKey
from mini_broker.server.delayed_produce import DelayedProduce, ProducePartitionStatus
from mini_broker.share.share_coordinator import SHARE_GROUP_STATE_TOPIC_NAME, share_key
from pykafka_client.errors import NotLeaderOrFollowerError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    WriteShareGroupStateRequest,
)
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, Time

if TYPE_CHECKING:
    from mini_broker.cluster.replication import ClusterReplication
    from mini_broker.network.request_channel import Request
    from pykafka_client.protocol.types import Message

log = logging.getLogger(__name__)

INTERNAL_TOPICS = INTERNAL_TOPIC_NAMES

#: The APIs whose handling may append to an internal partition: their answers wait for the ISR.
GATED_API_KEYS: frozenset[int] = frozenset(int(k) for k in (
    ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.LEAVE_GROUP,
    ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE, ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN,
    ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN, ApiKey.WRITE_TXN_MARKERS,
    # the share coordinator's (a read may record a newer leader epoch)
    ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE, ApiKey.WRITE_SHARE_GROUP_STATE,
    ApiKey.DELETE_SHARE_GROUP_STATE))

#: the share coordinator's APIs: each writes only the ``__share_group_state`` partitions of the share partitions
#: its request names
SHARE_STATE_API_KEYS: frozenset[int] = frozenset(int(k) for k in (
    ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE, ApiKey.WRITE_SHARE_GROUP_STATE,
    ApiKey.DELETE_SHARE_GROUP_STATE))

#: (partition, leader epoch and log when this broker became its leader; None when it stopped leading)
_Change = tuple[TopicPartition, "tuple[int, Log] | None"]


class CoordinatorPartitions:
    """Loads and unloads the coordinators on leadership changes of their partitions (see the module doc)."""

    def __init__(self, cluster: ClusterReplication, runtimes: Iterable[CoordinatorRuntime],
                 gate: CoordinatorAppendGate | None = None) -> None:
        self._cluster = cluster
        self._gate = gate
        #: internal topic -> the runtime hosting its coordinator (the runtime's name is its partition's topic)
        self._runtimes = {runtime.name: runtime for runtime in runtimes}
        self._queue: queue.Queue[_Change | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"coordinator-loader-{cluster.broker_id}",
                                         daemon=True)
        self._thread.start()

    def on_leadership_change(self, tp: TopicPartition, leader_epoch: int, lg: Log | None) -> None:
        """From the image's application: ``lg`` set when this broker became the leader of ``tp`` at
        ``leader_epoch``, None when it no longer leads it."""
        runtime = self._runtimes.get(tp.topic)
        if runtime is None:
            return
        if self._gate is not None:
            self._gate.on_leadership_change(tp, leader_epoch, lg)
        md = self._cluster.cache.get_topic(tp.topic)
        if md is not None:  # the topic's partition count says which partition a key maps to
            runtime.set_num_partitions(md.num_partitions)
        if lg is not None:
            runtime.expect_election(tp.partition)
        self._queue.put((tp, None if lg is None else (leader_epoch, lg)))

    def shutdown(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            change = self._queue.get()
            if change is None:
                return
            tp, elected = change
            try:
                if elected is None:
                    self._resign(tp)
                else:
                    self._elect(tp, *elected)
            except Exception:
                log.exception("event=coordinator_load_failed partition=%s msg=\"this broker answers "
                              "NOT_COORDINATOR for it; the clients go to the next leader after a failover\"", tp)

    def _elect(self, tp: TopicPartition, leader_epoch: int, lg: Log) -> None:
        def append(records: bytes) -> None:
            self._cluster.append_internal(tp, lg, records)

        log.info("event=coordinator_election partition=%s leader_epoch=%d", tp, leader_epoch)
        self._runtimes[tp.topic].on_election(lg, append, leader_epoch, tp.partition)

    def _resign(self, tp: TopicPartition) -> None:
        log.info("event=coordinator_resignation partition=%s", tp)
        self._runtimes[tp.topic].on_resignation(tp.partition)


class CoordinatorAppendGate:
    """Holds coordinator answers until the ISR has the internal records (see the module doc)."""

    api_keys = GATED_API_KEYS

    def __init__(self, cluster: ClusterReplication, timeout_ms: int, time: Time = SYSTEM_TIME) -> None:
        self._cluster = cluster
        self._timeout_ms = timeout_ms
        self._time = time
        self._lock = threading.Lock()
        #: internal partition -> when (``time.nanoseconds()``) this broker last stopped leading it with records
        #: not on its ISR (which the new leader may truncate)
        self._unsafe_resignations: dict[TopicPartition, int] = {}
        #: the internal partitions this broker leads (as told by :meth:`on_leadership_change`)
        self._led: set[TopicPartition] = set()

    def on_leadership_change(self, tp: TopicPartition, leader_epoch: int, lg: Log | None) -> None:
        """From the image's application, before the coordinators hear of it: a resignation (``lg`` None) of an
        internal partition whose high watermark is below its log end is remembered (see :meth:`hold`)."""
        if tp.topic not in INTERNAL_TOPICS:
            return
        with self._lock:
            if lg is not None:
                self._led.add(tp)
                return
            if tp not in self._led:
                return  # a follower's change: it had nothing to acknowledge
            self._led.discard(tp)
        old = self._cluster.rm.log_manager.get_log(tp.topic, tp.partition)
        if old is not None and old.high_watermark < old.log_end_offset:
            with self._lock:
                self._unsafe_resignations[tp] = self._time.nanoseconds()

    def hold(self, request: Request, body: Message, release: Callable[[], None]) -> None:
        """:class:`~mini_broker.server.kafka_apis.ResponseGate`: ``release()`` once the ISR has the internal
        records; when the wait failed, ``body`` first carries the coordinator's error for it
        (:func:`~mini_broker.cluster.coordinator_errors.fail_answer`). A request received before this broker
        resigned a partition that had records not on its ISR fails as NOT_LEADER_OR_FOLLOWER on it (-> NOT_COORDINATOR):
        its records may be among those the new leader truncates, and the wait no longer covers that partition."""
        api_key = request.context.api_key
        received_ns = request.start_time_ns
        written = self.written_partitions(request)

        def done(errors: dict[TopicPartition, int]) -> None:
            with self._lock:
                lost = [tp for tp, at in self._unsafe_resignations.items()
                        if at >= received_ns and (written is None or tp in written)]
            for tp in lost:
                errors.setdefault(tp, int(NotLeaderOrFollowerError.code))
            if errors:
                fail_answer(api_key, body, errors)
            release()

        self._wait(done, written)

    def written_partitions(self, request: Request) -> frozenset[TopicPartition] | None:
        """The internal partitions ``request`` may have appended to, when its API says (the share coordinator's:
        the ``__share_group_state`` partitions of the share partitions it names); None: any this broker leads."""
        if request.context.api_key not in SHARE_STATE_API_KEYS:
            return None
        md = self._cluster.cache.get_topic(SHARE_GROUP_STATE_TOPIC_NAME)
        body = request.body
        if md is None or not isinstance(body, (InitializeShareGroupStateRequest, ReadShareGroupStateRequest,
                                               WriteShareGroupStateRequest, DeleteShareGroupStateRequest)):
            return None
        group_id = str(body.group_id)
        return frozenset(
            TopicPartition(SHARE_GROUP_STATE_TOPIC_NAME,
                           partition_for(share_key((group_id, topic.topic_id, p.partition)), md.num_partitions))
            for topic in body.topics for p in topic.partitions)

    def when_replicated(self, callback: Callable[[int], None]) -> None:
        """``callback(0)`` once every internal partition this broker leads has its current log end under its
        high watermark (at once when it already has), else ``callback(error)`` with the transaction
        coordinator's error for the failed append (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE)."""
        self._wait(lambda errors: callback(txn_append_error(next(iter(errors.values()))) if errors else 0))

    def when_topic_replicated(self, topic: str, callback: Callable[[int], None]) -> None:
        """As :meth:`when_replicated`, but fails only when a partition of ``topic`` did (the group coordinator's
        barrier: a stuck ``__transaction_state`` does not hold back offset commits)."""
        def done(errors: dict[TopicPartition, int]) -> None:
            codes = [code for tp, code in errors.items() if tp.topic == topic]
            callback(offsets_append_error(codes[0]) if codes else 0)

        self._wait(done)

    def _wait(self, callback: Callable[[dict[TopicPartition, int]], None],
              only: frozenset[TopicPartition] | None = None) -> None:
        """``callback(produce error per internal partition whose wait failed)``, empty when all succeeded; waits
        for the partitions in ``only`` (None: every internal partition this broker leads)."""
        required = self._cluster.unreplicated_internal_offsets(INTERNAL_TOPICS)
        if only is not None:
            required = {tp: offset for tp, offset in required.items() if tp in only}
        if not required:
            callback({})
            return
        statuses: dict[Hashable, ProducePartitionStatus] = {
            tp: ProducePartitionStatus(offset, 0, False) for tp, offset in required.items()}

        def done(final: dict[Hashable, ProducePartitionStatus]) -> None:
            errors = {tp: s.error_code for tp, s in final.items() if s.error_code != 0
                      and isinstance(tp, TopicPartition)}
            if errors:
                log.warning("event=coordinator_append_not_replicated errors=%s msg=\"the request is answered with "
                            "the coordinator's error for it; the client retries (after finding the coordinator "
                            "again)\"", errors)
            callback(errors)

        rm = self._cluster.rm
        op = DelayedProduce(self._timeout_ms, statuses, rm.check_enough_replicas, done)
        rm.produce_purgatory.try_complete_else_watch(
            op, [TopicPartitionOperationKey(tp.topic, tp.partition) for tp in required])
