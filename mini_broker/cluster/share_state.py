"""Share-partition state on a cluster (KIP-932): the share coordinator follows the leadership of the
``__share_group_state`` partitions like the group and transaction coordinators, and a share-partition leader
reads and writes its state through it, wherever it runs (Kafka: ``ShareCoordinatorService`` and
``DefaultStatePersister``).

* :class:`ClusterShareCoordinator` hosts one :class:`~mini_broker.share.share_coordinator.ShareCoordinatorShard`
  per ``__share_group_state`` partition (created on first election, through
  :class:`~mini_broker.cluster.coordinator_partitions.CoordinatorPartitions`): leading a partition loads its
  shard from the replicated log, losing it unloads it. The APIs ReadShareGroupState, WriteShareGroupState,
  InitializeShareGroupState and DeleteShareGroupState reach it here; their answers wait for the ISR (the append
  gate), so a failover of the share coordinator keeps every state a leader was told was written.
* :class:`RemoteSharePersister` is the share-partition leader's side: the share coordinator of a share
  partition is the leader of ``__share_group_state`` partition ``partition_for("group:topicId:partition", n)``
  (:func:`~mini_broker.server.coordinator_lookup.coordinator_for`, key type SHARE; the first lookup creates the
  topic with ``share.coordinator.state.topic.*``). A request goes over the inter-broker listener (to this broker
  too: one path, and the answer waits for the ISR); NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
  COORDINATOR_NOT_AVAILABLE and connection errors are retried after a new lookup until ``timeout_ms``. A write
  carries what changed since the state the coordinator acknowledged last (Kafka's WriteShareGroupState): the
  records whose state or delivery count differ, and the start offset; after a failed write the next one carries
  the whole state. Requests for different share partitions are in flight together: each takes an idle
  connection to the coordinator's broker from a pool (a new one when all are busy) and gives it back after the
  answer, so one slow write (a coordinator waiting for its ISR) never holds back the others. The share-partition
  leader orders the writes of one share partition (:mod:`mini_broker.share.partition_manager`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from mini_broker.cluster.broker_connection import BrokerConnection
from mini_broker.coordinator.partition import CoordinatorPartition
from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.server.coordinator_lookup import SHARE_KEY_TYPE, coordinator_for
from mini_broker.share.share_coordinator import (
    DEFAULT_RECORDS_PER_SNAPSHOT,
    SHARE_GROUP_STATE_TOPIC_NAME,
    ShareCoordinatorShard,
    SharePartitionKey,
    persisted_records,
    runs_of,
    share_key,
    state_batches,
)
from mini_broker.share.share_partition import InFlightRecord, RecordState, ShareState
from mini_broker.share.state_admin import StateSummary
from mini_broker.timer.system_timer import SystemTimer
from pykafka_client.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    RequestTimedOutError,
    for_code,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.messages import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest,
)
from pykafka_client.protocol.types import Message
from pykafka_client.utils.time import SYSTEM_TIME, Time

if TYPE_CHECKING:
    from mini_broker.cluster.replication import ClusterReplication

log = logging.getLogger(__name__)

#: the errors after which the request goes to the share coordinator found by a new lookup
_RETRIABLE = frozenset(int(e.code) for e in (NotCoordinatorError, CoordinatorLoadInProgressError,
                                             CoordinatorNotAvailableError, RequestTimedOutError))
_RETRY_BACKOFF_MS = 50
#: ReadShareGroupStateSummary v1 answers the leader epoch and the delivery-complete count (KIP-1226)
SUMMARY_VERSION = 1


class ClusterShareCoordinator:
    """The share coordinator of a cluster broker: one :class:`ShareCoordinatorShard` on a runtime following the
    leadership of the ``__share_group_state`` partitions (see the module docstring)."""

    def __init__(self, time: Time = SYSTEM_TIME, records_per_snapshot: int = DEFAULT_RECORDS_PER_SNAPSHOT) -> None:
        self.timer = SystemTimer("share-coordinator", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
        self.shard = ShareCoordinatorShard(SHARE_GROUP_STATE_TOPIC_NAME, CoordinatorPartition(None), self.timer, time,
                                           records_per_snapshot)
        self.runtime: CoordinatorRuntime = self.shard.runtime
        self.runtime.startup(follow_partition_leadership=True)
        self.remote_writes = True

    def shard_for(self, key: SharePartitionKey) -> ShareCoordinatorShard:
        """The shard serving ``key`` (its operations raise NOT_COORDINATOR when this broker does not lead the
        key's ``__share_group_state`` partition)."""
        return self.shard

    def shutdown(self) -> None:
        self.runtime.shutdown()
        self.timer.close()


class RemoteSharePersister:
    """A cluster broker's :class:`~mini_broker.share.partition_manager.SharePersister` (see the module doc).
    ``create_topic()`` creates ``__share_group_state`` when a lookup finds none."""

    def __init__(self, cluster: ClusterReplication, create_topic: Callable[[], None], timeout_ms: int = 20000,
                 client_id: str | None = None, time: Time = SYSTEM_TIME) -> None:
        self._cluster = cluster
        self._time = time
        self._timeout_ms = timeout_ms
        self._create_topic = create_topic
        self._timeout_s = timeout_ms / 1000
        self._client_id = client_id or f"broker-{cluster.broker_id}-share-persister"
        #: guards the pool of idle connections (held only to take or give back one, never across a request)
        self._lock = threading.Lock()
        #: broker id -> its idle connections
        self._idle: dict[int, list[BrokerConnection]] = {}
        self._closed = False
        #: share partition -> the state epoch its leader read
        self._state_epochs: dict[SharePartitionKey, int] = {}
        #: share partition -> (start offset, records) as the coordinator has them (the last read or write)
        self._acknowledged: dict[SharePartitionKey, tuple[int, dict[int, tuple[RecordState, int]]]] = {}

    def states(self) -> Mapping[SharePartitionKey, ShareState]:
        return {}  # a cluster broker reads each share partition's state when it leads its topic partition

    def read_state(self, key: SharePartitionKey, leader_epoch: int = -1) -> ShareState | None:
        group, topic_id, partition = key
        R = ReadShareGroupStateRequest
        request = R(group_id=group, topics=[R.ReadStateData(topic_id=topic_id, partitions=[
            R.PartitionData(partition=partition, leader_epoch=leader_epoch)])])
        response = self._send(key, request)
        assert isinstance(response, ReadShareGroupStateResponse)
        result = response.results[0].partitions[0]
        self._state_epochs[key] = result.state_epoch  # (no state: a deleted one's epoch, to write the new one)
        if result.start_offset < 0:
            return None
        state = ShareState(result.start_offset, result.start_offset, {})
        for b in result.state_batches:
            for offset in range(max(b.first_offset, state.start_offset), b.last_offset + 1):
                state.records[offset] = InFlightRecord(RecordState(b.delivery_state), b.delivery_count)
        end = max(state.records, default=state.start_offset - 1) + 1
        for offset in range(state.start_offset, end):
            state.records.setdefault(offset, InFlightRecord())
        state.end_offset = max(end, state.start_offset)
        self._acknowledged[key] = (state.start_offset, persisted_records(state))
        return state

    def write_state(self, key: SharePartitionKey, state: ShareState, leader_epoch: int = -1) -> None:
        group, topic_id, partition = key
        records = persisted_records(state)
        known = self._acknowledged.pop(key, None)
        if known is None:
            batches = state_batches(state)
        else:  # only what changed since the coordinator's state
            batches = runs_of(records, [o for o in sorted(records) if known[1].get(o) != records[o]])
        state_epoch = self._state_epochs.get(key, 0)
        W = WriteShareGroupStateRequest
        request = W(group_id=group, topics=[W.WriteStateData(topic_id=topic_id, partitions=[W.PartitionData(
            partition=partition, state_epoch=state_epoch, leader_epoch=leader_epoch,
            start_offset=state.start_offset,
            state_batches=[W.StateBatch(first_offset=first, last_offset=last, delivery_state=int(kind),
                                        delivery_count=count) for first, last, kind, count in batches])])])
        self._send(key, request)  # raises: the next write carries the whole state
        if self._state_epochs.get(key, 0) == state_epoch:  # else an admin's reset started it afresh meanwhile
            self._acknowledged[key] = (state.start_offset, records)

    def delete_state(self, key: SharePartitionKey) -> None:
        group, topic_id, partition = key
        D = DeleteShareGroupStateRequest
        self._state_epochs.pop(key, None)
        self._acknowledged.pop(key, None)
        self._send(key, D(group_id=group, topics=[D.DeleteStateData(topic_id=topic_id, partitions=[
            D.PartitionData(partition=partition)])]))

    def initialize_state(self, key: SharePartitionKey, start_offset: int) -> None:
        self.read_state(key, -1)  # the current state epoch (this broker may not lead the topic partition)
        epoch = self._state_epochs.get(key, -1) + 1
        group, topic_id, partition = key
        I = InitializeShareGroupStateRequest  # noqa: E741
        self._send(key, I(group_id=group, topics=[I.InitializeStateData(topic_id=topic_id, partitions=[
            I.PartitionData(partition=partition, state_epoch=epoch, start_offset=start_offset)])]))
        self._state_epochs[key] = epoch
        self._acknowledged[key] = (start_offset, {})

    # -- ShareStateAdmin (the group coordinator's calls; the leader's epochs and states here stay as they are,
    # so that this broker's writes of an old state are fenced and it reads the new one) ---------------------
    def read_state_summary(self, key: SharePartitionKey) -> StateSummary | None:
        group, topic_id, partition = key
        S = ReadShareGroupStateSummaryRequest
        response = self._send(key, S(group_id=group, topics=[S.ReadStateSummaryData(topic_id=topic_id, partitions=[
            S.PartitionData(partition=partition, leader_epoch=-1)])]), SUMMARY_VERSION)
        assert isinstance(response, ReadShareGroupStateSummaryResponse)
        result = response.results[0].partitions[0]
        if result.start_offset < 0 and result.state_epoch == 0:
            return None
        return StateSummary(result.state_epoch, result.leader_epoch, result.start_offset,
                            result.delivery_complete_count)

    def initialize_group_state(self, key: SharePartitionKey, start_offset: int) -> None:
        found = self.read_state_summary(key)
        group, topic_id, partition = key
        I = InitializeShareGroupStateRequest  # noqa: E741
        self._send(key, I(group_id=group, topics=[I.InitializeStateData(topic_id=topic_id, partitions=[
            I.PartitionData(partition=partition, state_epoch=0 if found is None else found.state_epoch + 1,
                            start_offset=start_offset)])]))

    def delete_group_state(self, key: SharePartitionKey) -> None:
        group, topic_id, partition = key
        D = DeleteShareGroupStateRequest
        self._send(key, D(group_id=group, topics=[D.DeleteStateData(topic_id=topic_id, partitions=[
            D.PartitionData(partition=partition)])]))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for idle in self._idle.values():
                for conn in idle:
                    conn.close()
            self._idle.clear()

    # -- internals -----------------------------------------------------------------------------------------
    def _send(self, key: SharePartitionKey, request: Message, version: int = 0) -> Message:
        """The response of the share coordinator of ``key`` (retried as the module doc says); raises the
        partition's error, or the last retriable one when ``timeout_ms`` passed."""
        deadline = self._time.hi_res_clock_ms() + self._timeout_ms
        last: KafkaError | None = None
        while True:
            code, message, response = self._attempt(key, request, version)
            if code == 0:
                assert response is not None
                return response
            last = for_code(code)(f"share state of {share_key(key)}: {message}")
            if code not in _RETRIABLE or self._time.hi_res_clock_ms() >= deadline:
                raise last
            self._time.sleep(_RETRY_BACKOFF_MS)

    def _attempt(self, key: SharePartitionKey, request: Message, version: int = 0) -> tuple[int, str, Message | None]:
        found = coordinator_for(self._cluster.cache, SHARE_KEY_TYPE, share_key(key))
        if found.error_code and found.partition < 0:
            try:
                self._create_topic()
            except KafkaError as e:
                return int(CoordinatorNotAvailableError.code), f"creating {SHARE_GROUP_STATE_TOPIC_NAME}: {e}", None
            found = coordinator_for(self._cluster.cache, SHARE_KEY_TYPE, share_key(key))
        if found.error_code:
            return found.error_code, found.error_message or "no share coordinator", None
        node = found.node_id
        conn = self._take_connection(node)
        try:
            response = conn.send_and_receive(request, version, self._timeout_s)
        except (OSError, KafkaError) as e:  # the connection closed itself: not given back
            return int(CoordinatorNotAvailableError.code), f"broker {node} unreachable ({e!r})", None
        self._give_back(node, conn)
        code, message = _partition_error(response)
        return code, message, response

    def _take_connection(self, node: int) -> BrokerConnection:
        """An idle connection to broker ``node``, else a new one (connected on its first request)."""
        with self._lock:
            idle = self._idle.get(node)
            if idle:
                return idle.pop()
        return BrokerConnection(lambda: self._cluster.broker_endpoint(node), self._client_id,
                                self._cluster.inter_broker_security)

    def _give_back(self, node: int, conn: BrokerConnection) -> None:
        with self._lock:
            if not self._closed:
                self._idle.setdefault(node, []).append(conn)
                return
        conn.close()


def _partition_error(response: Message) -> tuple[int, str]:
    """The error of the one partition a share state response carries (0: none)."""
    for result in getattr(response, "results", ()):
        for p in result.partitions:
            if p.error_code:
                return int(p.error_code), str(p.error_message or "")
    return 0, ""

