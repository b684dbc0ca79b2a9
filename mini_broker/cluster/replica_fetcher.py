"""Followers fetching from leaders (Kafka: ``ReplicaFetcherManager`` / ``ReplicaFetcherThread``).

One thread per leader broker, each with a blocking connection speaking the Kafka protocol:

1. a partition that just became a follower (new leader or leader epoch) is first *truncated*: an
   OffsetForLeaderEpoch request (``replica_id`` set) for the latest epoch of the local log tells where that
   epoch ends on the leader; the local log is cut to ``min(that end, the local end of the epoch)`` (an
   undefined answer cuts to the high watermark), so records the old leader wrote but the new one never had
   are dropped before the log is extended again;
2. then Fetch (v12, ``replica_id`` = this broker, ``current_leader_epoch`` set) from the log end, long-polling
   ``replica.fetch.wait.max.ms``; the batches are appended as they are (offsets and leader epochs kept,
   ``AppendOrigin.REPLICATION``), the follower's high watermark becomes ``min(leader's, local log end)`` and
   its log start offset follows the leader's (at most up to its high watermark; segments below are deleted).

The fetch offset the follower sends is what the leader records as the follower's log end (ISR, high
watermark). OFFSET_OUT_OF_RANGE asks the leader's log start (ListOffsets earliest): a log end below it (records
deleted while this replica was away) empties the local log and starts it there; otherwise truncate again. FENCED_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER / UNKNOWN_LEADER_EPOCH mean the metadata is moving:
the partition waits for the next image. Connection errors back off and reconnect.
"""

from __future__ import annotations

import logging
import struct
import threading
from dataclasses import dataclass
from typing import Protocol

from mini_broker.cluster.broker_connection import BrokerConnection, BrokerDirectory
from mini_broker.log.unified_log import AppendOrigin
from mini_broker.purgatory import TopicPartitionOperationKey
from mini_broker.server.replica_manager import ReplicaManager
from pykafka_client.errors import OffsetOutOfRangeError
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.messages import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from pykafka_client.structs import TopicPartition

log = logging.getLogger(__name__)

FETCH_VERSION = 12
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
LIST_OFFSETS_VERSION = 4
EARLIEST_TIMESTAMP = -2
BACKOFF_S = 0.1
_SIZE = struct.Struct(">i")
#: a v2 batch header's base offset (int64 at 0) and last offset delta (int32 at 23)
_FIRST_BATCH_HEADER = struct.Struct(">q15xi")


@dataclass
class FetchState:
    leader_epoch: int
    truncating: bool = True


def whole_batches(records: bytes | bytearray | memoryview) -> memoryview:
    """The prefix of ``records`` made of whole batches (a fetch may end inside one)."""
    view = memoryview(records).cast("B")
    pos = 0
    n = len(view)
    while pos + 12 <= n:
        (length,) = _SIZE.unpack_from(view, pos + 8)
        if length <= 0 or pos + 12 + length > n:
            break
        pos += 12 + length
    return view[:pos]


def truncation_offset(requested_epoch: int, leader_epoch: int, leader_end: int, log_end: int, high_watermark: int,
                      local_end_of_leader_epoch: int) -> int:
    """Where a follower cuts its log after OffsetForLeaderEpoch (Kafka ``AbstractFetcherThread``'s rule).

    ``requested_epoch``: the follower's latest epoch; the leader answered ``(leader_epoch, leader_end)``
    (the largest epoch <= requested it knows and where it ends); ``local_end_of_leader_epoch``: where that
    epoch ends in the follower's own log. An undefined answer (-1) falls back to the high watermark.
    """
    if leader_end < 0:
        return min(high_watermark, log_end)
    if leader_epoch == requested_epoch:
        return min(leader_end, log_end)
    if local_end_of_leader_epoch < 0:
        return min(leader_end, high_watermark, log_end)
    return min(leader_end, local_end_of_leader_epoch, log_end)


class FetcherContext(BrokerDirectory, Protocol):
    """What a follower's fetchers use of the broker's replication: its id, the leaders' endpoints and the
    ReplicaManager whose logs they append to."""

    @property
    def rm(self) -> ReplicaManager: ...


class ReplicaFetcherThread:
    def __init__(self, cluster: FetcherContext, leader_id: int) -> None:
        self.cluster = cluster
        self.leader_id = leader_id
        self.partitions: dict[TopicPartition, FetchState] = {}
        self._lock = threading.Lock()
        self._wakeup = threading.Event()
        self._stop = threading.Event()
        self._conn = BrokerConnection(lambda: cluster.broker_endpoint(leader_id),
                                      f"broker-{cluster.broker_id}-fetcher", cluster.inter_broker_security)
        config = cluster.rm.config
        self.max_wait_ms = config.get_int("replica.fetch.wait.max.ms")
        self.max_bytes = config.get_int("replica.fetch.max.bytes")
        self._thread = threading.Thread(target=self._run, name=f"ReplicaFetcherThread-{cluster.broker_id}-{leader_id}",
                                        daemon=True)
        self._thread.start()

    def add(self, tp: TopicPartition, leader_epoch: int) -> None:
        with self._lock:
            self.partitions[tp] = FetchState(leader_epoch)
        self._wakeup.set()

    def remove(self, tp: TopicPartition) -> None:
        with self._lock:
            self.partitions.pop(tp, None)

    def shutdown(self) -> None:
        self._stop.set()
        self._wakeup.set()
        self._close()
        self._thread.join(timeout=5)

    def _close(self) -> None:
        self._conn.close()

    def _send(self, body: FetchRequest | OffsetForLeaderEpochRequest, version: int, timeout_s: float
              ) -> FetchResponse | OffsetForLeaderEpochResponse:
        resp = self._conn.send_and_receive(body, version, timeout_s)
        assert isinstance(resp, (FetchResponse, OffsetForLeaderEpochResponse))
        return resp

    # --- loop --------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                snapshot = dict(self.partitions)
            if not snapshot:
                self._wakeup.wait(0.5)
                self._wakeup.clear()
                continue
            try:
                truncating = {tp: st for tp, st in snapshot.items() if st.truncating}
                if truncating:
                    self._truncate(truncating)
                    continue
                self._fetch(snapshot)
            except (OSError, KafkaError, ValueError) as e:
                if not self._stop.is_set():
                    log.info("event=replica_fetch_failed leader=%d error=%r msg=\"reconnecting\"", self.leader_id, e)
                self._close()
                self._stop.wait(BACKOFF_S)
        self._close()

    def _current(self, tp: TopicPartition, st: FetchState) -> bool:
        with self._lock:
            return self.partitions.get(tp) is st

    def _truncate(self, parts: dict[TopicPartition, FetchState]) -> None:
        rm = self.cluster.rm
        topics: dict[str, list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition]] = {}
        requested: dict[TopicPartition, int] = {}
        for tp, st in parts.items():
            lg = rm.log_manager.get_log(tp.topic, tp.partition)
            if lg is None:
                continue
            latest = lg.leader_epoch_cache().latest_epoch()
            if latest < 0:  # nothing replicated yet: nothing to cut
                st.truncating = False
                continue
            requested[tp] = latest
            topics.setdefault(tp.topic, []).append(OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                partition=tp.partition, current_leader_epoch=st.leader_epoch, leader_epoch=latest))
        if not topics:
            return
        body = OffsetForLeaderEpochRequest(
            replica_id=self.cluster.broker_id,
            topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=t, partitions=ps) for t, ps in topics.items()])
        resp = self._send(body, OFFSET_FOR_LEADER_EPOCH_VERSION, 30.0)
        assert isinstance(resp, OffsetForLeaderEpochResponse)
        retry = False
        for t in resp.topics:
            for p in t.partitions:
                tp = TopicPartition(t.topic, p.partition)
                state = parts.get(tp)
                if state is None or not self._current(tp, state):
                    continue
                if p.error_code != 0:
                    retry = True
                    continue
                self._truncate_one(tp, requested[tp], p.leader_epoch, p.end_offset)
                state.truncating = False
        if retry:
            self._stop.wait(BACKOFF_S)

    def _truncate_one(self, tp: TopicPartition, requested_epoch: int, leader_epoch: int, leader_end: int) -> None:
        rm = self.cluster.rm
        lg = rm.log_manager.get_log(tp.topic, tp.partition)
        if lg is None:
            return
        leo = lg.log_end_offset
        hw = lg.high_watermark
        target = truncation_offset(requested_epoch, leader_epoch, leader_end, leo, hw,
                                   lg.leader_epoch_cache().end_offset_for(leader_epoch, leo)[1])
        if target < leo:
            lg = rm.log_manager.truncate_to(tp.topic, tp.partition, target)
            lg.update_high_watermark(min(hw, lg.log_end_offset))
            lg.leader_epoch_cache()
            log.warning("event=follower_truncated partition=%s leader=%d from=%d to=%d", tp, self.leader_id, leo,
                        lg.log_end_offset)

    def _fetch(self, parts: dict[TopicPartition, FetchState]) -> None:
        rm = self.cluster.rm
        topics: dict[str, list[FetchRequest.FetchPartition]] = {}
        for tp, st in parts.items():
            lg = rm.log_manager.get_log(tp.topic, tp.partition)
            if lg is None:
                continue
            topics.setdefault(tp.topic, []).append(FetchRequest.FetchPartition(
                partition=tp.partition, current_leader_epoch=st.leader_epoch, fetch_offset=lg.log_end_offset,
                log_start_offset=lg.log_start_offset, partition_max_bytes=self.max_bytes))
        if not topics:
            self._stop.wait(BACKOFF_S)
            return
        body = FetchRequest(replica_id=self.cluster.broker_id, max_wait_ms=self.max_wait_ms, min_bytes=1,
                            max_bytes=self.max_bytes * max(1, len(parts)), isolation_level=0, session_id=0,
                            session_epoch=-1,
                            topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()])
        resp = self._send(body, FETCH_VERSION, self.max_wait_ms / 1000 + 30.0)
        assert isinstance(resp, FetchResponse)
        if resp.error_code != 0:
            self._stop.wait(BACKOFF_S)
            return
        backoff = False
        out_of_range: dict[TopicPartition, FetchState] = {}
        for t in resp.responses:
            for p in t.partitions:
                tp = TopicPartition(t.topic, p.partition_index)
                state = parts.get(tp)
                if state is None or not self._current(tp, state):
                    continue
                if p.error_code == OffsetOutOfRangeError.code:
                    out_of_range[tp] = state
                elif p.error_code != 0:
                    backoff = True
                else:
                    self._append(tp, p)
        if out_of_range:
            self._handle_out_of_range(out_of_range)
        if backoff:
            self._stop.wait(BACKOFF_S)

    def _handle_out_of_range(self, parts: dict[TopicPartition, FetchState]) -> None:
        """OFFSET_OUT_OF_RANGE (Kafka ``AbstractFetcherThread.handleOutOfRangeError``): a log end below the
        leader's log start (DeleteRecords or retention moved it while this replica was away) empties the local
        log and starts it at the leader's log start; otherwise the logs diverged: truncate again."""
        rm = self.cluster.rm
        topics: dict[str, list[ListOffsetsRequest.ListOffsetsPartition]] = {}
        for tp, st in parts.items():
            topics.setdefault(tp.topic, []).append(ListOffsetsRequest.ListOffsetsPartition(
                partition_index=tp.partition, current_leader_epoch=st.leader_epoch, timestamp=EARLIEST_TIMESTAMP))
        body = ListOffsetsRequest(replica_id=self.cluster.broker_id, isolation_level=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()])
        resp = self._conn.send_and_receive(body, LIST_OFFSETS_VERSION, 30.0)
        assert isinstance(resp, ListOffsetsResponse)
        for t in resp.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                state = parts.get(tp)
                lg = rm.log_manager.get_log(tp.topic, tp.partition)
                if state is None or lg is None or not self._current(tp, state) or p.error_code != 0:
                    continue
                if lg.log_end_offset < p.offset:
                    lg = rm.log_manager.truncate_fully_and_start_at(tp.topic, tp.partition, p.offset)
                    lg.update_high_watermark(p.offset)
                else:
                    state.truncating = True

    def _append(self, tp: TopicPartition, p: FetchResponse.PartitionData) -> None:
        rm = self.cluster.rm
        lg = rm.log_manager.get_log(tp.topic, tp.partition)
        if lg is None:
            return
        records = p.records
        data = whole_batches(records) if isinstance(records, (bytes, bytearray, memoryview)) else memoryview(b"")
        if len(data) >= _FIRST_BATCH_HEADER.size:
            base, last_delta = _FIRST_BATCH_HEADER.unpack_from(data)
            if lg.log_end_offset == lg.log_start_offset and base < lg.log_end_offset <= base + last_delta:
                # an empty log started at the leader's log start, which falls inside this batch: start the log at
                # the batch (Kafka handles UnexpectedAppendOffsetException so); the log start moves up below
                lg = rm.log_manager.truncate_fully_and_start_at(tp.topic, tp.partition, base)
        if len(data):
            lg.append(data, origin=AppendOrigin.REPLICATION)
        lg.update_high_watermark(min(p.high_watermark, lg.log_end_offset))
        # the leader's log start offset (DeleteRecords, retention) moves this replica's too, up to its high
        # watermark, deleting the segments below it; the next fetch reports it (the leader's low watermark)
        new_start = min(p.log_start_offset, lg.high_watermark)
        if new_start > lg.log_start_offset:
            rm.log_manager.delete_records(tp.topic, tp.partition, new_start)
        if len(data):
            rm.fetch_purgatory.check_and_complete(TopicPartitionOperationKey(tp.topic, tp.partition))


class ReplicaFetcherManager:
    def __init__(self, cluster: FetcherContext) -> None:
        self.cluster = cluster
        self._lock = threading.Lock()
        self.threads: dict[int, ReplicaFetcherThread] = {}

    def add_partition(self, tp: TopicPartition, leader_id: int, leader_epoch: int) -> None:
        with self._lock:
            thread = self.threads.get(leader_id)
            if thread is None:
                thread = self.threads[leader_id] = ReplicaFetcherThread(self.cluster, leader_id)
        thread.add(tp, leader_epoch)

    def remove_partition(self, tp: TopicPartition) -> None:
        with self._lock:
            threads = list(self.threads.values())
        for t in threads:
            t.remove(tp)

    def shutdown(self) -> None:
        with self._lock:
            threads = list(self.threads.values())
            self.threads.clear()
        for t in threads:
            t.shutdown()
