"""Transaction markers on a cluster (Kafka: ``TransactionMarkerChannelManager``): the coordinator's COMMIT/ABORT
markers go to each partition's *leader* (for ``__consumer_offsets``, its group coordinator). Partitions this
broker leads are written in process; the others are grouped per leader and sent as WriteTxnMarkers requests
from a short-lived sender thread. Every marker is appended with acks=-1 and a marker on ``__consumer_offsets``
waits for the ISR through the :class:`~mini_broker.cluster.coordinator_partitions.CoordinatorAppendGate`: the
answer (local or remote) comes once the partition's ISR has it, so the coordinator completes the transaction
only when every in-sync replica holds every marker (Kafka's rule). An answer completed by a follower fetch (under
the purgatory operation's lock on the fetch thread) reaches the coordinator on a thread of its own. A partition
whose leader is unknown or unreachable answers NOT_LEADER_OR_FOLLOWER, which the coordinator retries after
``marker_retry_backoff_ms``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from mini_broker.cluster.broker_connection import BrokerConnection
from mini_broker.server.context import BrokerContext
from mini_broker.server.txn_marker_writer import MARKER_APPEND_TIMEOUT_MS, write_markers
from pykafka_client.errors import NotLeaderOrFollowerError
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse

if TYPE_CHECKING:
    from mini_broker.cluster.coordinator_partitions import CoordinatorAppendGate
    from mini_broker.cluster.replication import ClusterReplication

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_VERSION = 1
Marker = WriteTxnMarkersRequest.WritableTxnMarker
MarkerTopic = WriteTxnMarkersRequest.WritableTxnMarkerTopic


def split_by_leader(request: WriteTxnMarkersRequest, leader_of: Callable[[str, int], int]
                    ) -> dict[int, WriteTxnMarkersRequest]:
    """The request's markers regrouped per destination broker (``leader_of(topic, partition)``)."""
    out: dict[int, dict[int, Marker]] = {}
    for i, marker in enumerate(request.markers):
        for t in marker.topics:
            for p in t.partition_indexes:
                dest = leader_of(t.name, p)
                m = out.setdefault(dest, {}).get(i)
                if m is None:
                    m = out[dest][i] = Marker(producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
                                              transaction_result=marker.transaction_result, topics=[],
                                              coordinator_epoch=marker.coordinator_epoch)
                topic = next((x for x in m.topics if x.name == t.name), None)
                if topic is None:
                    topic = MarkerTopic(name=t.name, partition_indexes=[])
                    m.topics.append(topic)
                topic.partition_indexes.append(p)
    return {dest: WriteTxnMarkersRequest(markers=list(ms.values())) for dest, ms in out.items()}


def failed_response(request: WriteTxnMarkersRequest, code: int) -> WriteTxnMarkersResponse:
    R = WriteTxnMarkersResponse
    return R(markers=[R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
        R.WritableTxnMarkerTopicResult(name=t.name, partitions=[
            R.WritableTxnMarkerPartitionResult(partition_index=p, error_code=code) for p in t.partition_indexes])
        for t in m.topics]) for m in request.markers])


def merge(responses: list[WriteTxnMarkersResponse]) -> WriteTxnMarkersResponse:
    """One response from several (markers of the same producer id joined)."""
    R = WriteTxnMarkersResponse
    by_pid: dict[int, WriteTxnMarkersResponse.WritableTxnMarkerResult] = {}
    for resp in responses:
        for m in resp.markers:
            into = by_pid.setdefault(m.producer_id, R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[]))
            into.topics.extend(m.topics)
    return R(markers=list(by_pid.values()))


class ClusterTxnMarkerWriter:
    """The :class:`~mini_broker.transaction.seams.TxnMarkerWriter` of a cluster broker."""

    def __init__(self, context: BrokerContext, cluster: ClusterReplication, gate: CoordinatorAppendGate) -> None:
        self._context = context
        self._cluster = cluster
        self._gate = gate

    def _destination(self, topic: str, partition: int) -> int:
        me = self._cluster.broker_id
        leader = self._cluster.current_leader(topic, partition)[0]
        return me if leader < 0 else leader

    def _endpoint_of(self, broker_id: int) -> Callable[[], tuple[str, int] | None]:
        return lambda: self._cluster.broker_endpoint(broker_id)

    def write_txn_markers(self, request: WriteTxnMarkersRequest,
                          on_complete: Callable[[WriteTxnMarkersResponse], None]) -> None:
        parts = split_by_leader(request, self._destination)
        local = parts.pop(self._cluster.broker_id, None)
        lock = threading.Lock()
        responses: list[WriteTxnMarkersResponse] = []
        remaining = [(1 if local is not None else 0) + (1 if parts else 0)]
        caller, inline = threading.get_ident(), [True]

        def part_done(resps: list[WriteTxnMarkersResponse], on_sender: bool = False) -> None:
            with lock:
                responses.extend(resps)
                remaining[0] -= 1
                last = remaining[0] == 0
            if not last:
                return
            response = merge(responses)
            if on_sender or (inline[0] and threading.get_ident() == caller):
                on_complete(response)
            else:  # completed by a follower fetch, under the purgatory op's lock: the coordinator runs elsewhere
                threading.Thread(target=on_complete, args=(response,), name="txn-marker-complete", daemon=True).start()

        def local_written(resp: WriteTxnMarkersResponse) -> None:
            assert local is not None
            # the partitions' markers are on their ISR (acks=-1); those on __consumer_offsets wait for it here
            self._gate.when_replicated(lambda error: part_done(
                [resp if error == 0 else failed_response(local, NotLeaderOrFollowerError.code)]))

        if remaining[0] == 0:
            on_complete(WriteTxnMarkersResponse(markers=[]))
            return
        if local is not None:
            write_markers(self._context, local, local_written)
        inline[0] = False
        if not parts:
            return

        def send_remote() -> None:
            remote: list[WriteTxnMarkersResponse] = []
            for dest, req in parts.items():
                conn = BrokerConnection(self._endpoint_of(dest), f"broker-{self._cluster.broker_id}-txn-markers",
                                        self._cluster.inter_broker_security)
                try:
                    # the leader answers once its ISR has the markers (at most MARKER_APPEND_TIMEOUT_MS)
                    resp = conn.send_and_receive(req, WRITE_TXN_MARKERS_VERSION, MARKER_APPEND_TIMEOUT_MS / 1000 + 30)
                    assert isinstance(resp, WriteTxnMarkersResponse)
                    remote.append(resp)
                except (OSError, KafkaError) as e:
                    log.warning("event=txn_markers_send_failed broker=%d error=%r msg=\"the coordinator retries\"",
                                dest, e)
                    remote.append(failed_response(req, NotLeaderOrFollowerError.code))
                finally:
                    conn.close()
            part_done(remote, on_sender=True)

        threading.Thread(target=send_remote, name="txn-marker-sender", daemon=True).start()
