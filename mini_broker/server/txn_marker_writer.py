"""The WriteTxnMarkers path (Kafka ``KafkaApis.handleWriteTxnMarkersRequest``), shared by the API handler and
the in-process :class:`ReplicaTxnMarkerWriter` the transaction coordinator of this broker writes through.

Each marker becomes one control batch ``EndTransactionMarker(COMMIT|ABORT, coordinatorEpoch)`` of the
producer id and epoch, appended to each of its partitions through the replica manager with the COORDINATOR
origin: the partition's producer state ends the transaction (coordinator epoch fenced, aborted transactions
indexed), the last stable offset moves and waiting read_committed fetches are completed. Partitions of
``__consumer_offsets`` are the group coordinator's: it appends the marker to its own log and materializes or
drops the producer's pending transactional offsets (:class:`TxnOffsetsListener`). Errors are per partition
(UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED, ...).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

from mini_broker.group.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from mini_broker.log.unified_log import AppendOrigin
from mini_broker.server.api_error import error_code
from mini_broker.server.context import BrokerContext
from mini_broker.server.replica_manager import PartitionResponse
from pykafka_client.errors import CoordinatorNotAvailableError
from pykafka_client.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from pykafka_client.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from pykafka_client.structs import TopicPartition

log = logging.getLogger(__name__)

MarkerResult = WriteTxnMarkersResponse.WritableTxnMarkerResult
TopicResult = WriteTxnMarkersResponse.WritableTxnMarkerTopicResult
PartitionResult = WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult

#: how long a marker append waits for the ISR (Kafka: the broker's request.timeout.ms, 30 s)
MARKER_APPEND_TIMEOUT_MS = 30_000


def marker_batch(marker: WriteTxnMarkersRequest.WritableTxnMarker, timestamp: int) -> bytes:
    kind = ControlRecordType.COMMIT if marker.transaction_result else ControlRecordType.ABORT
    return build_end_transaction_marker(EndTransactionMarker(kind, marker.coordinator_epoch),
                                        producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
                                        timestamp=timestamp)


def _write_offsets_markers(context: BrokerContext, marker: WriteTxnMarkersRequest.WritableTxnMarker,
                           partitions: list[int], records: bytes) -> int:
    coordinator = context.group_coordinator
    if coordinator is None:
        return int(CoordinatorNotAvailableError.code)
    try:
        coordinator.write_txn_marker(marker.producer_id, bool(marker.transaction_result), partitions, records)
    except Exception as e:
        log.warning("event=txn_marker_failed topic=%s producer_id=%d error=%r", GROUP_METADATA_TOPIC_NAME,
                    marker.producer_id, e)
        return error_code(e)
    return 0


def write_markers(context: BrokerContext, request: WriteTxnMarkersRequest,
                  on_complete: Callable[[WriteTxnMarkersResponse], None]) -> None:
    """Append every marker of ``request`` with acks=-1 (Kafka's marker writes wait for the ISR, so the
    coordinator completes a transaction only once every in-sync replica has its markers) and answer with the
    per-partition errors through ``on_complete``: at once on a single broker, when the high watermark passes
    the markers on a cluster (from the thread that moved it), REQUEST_TIMED_OUT after
    :data:`MARKER_APPEND_TIMEOUT_MS` (the coordinator retries)."""
    rm = context.replica_manager
    results: list[MarkerResult | None] = [None] * len(request.markers)
    lock = threading.Lock()
    remaining = [len(request.markers)]

    def marker_done(i: int, result: MarkerResult) -> None:
        with lock:
            results[i] = result
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            on_complete(WriteTxnMarkersResponse(markers=[r for r in results if r is not None]))

    if not request.markers:
        on_complete(WriteTxnMarkersResponse(markers=[]))
        return
    for i, marker in enumerate(request.markers):
        records = marker_batch(marker, context.time.milliseconds())
        entries: list[tuple[TopicPartition, object]] = []
        offsets_partitions: list[int] = []
        for t in marker.topics:
            for p in t.partition_indexes:
                if t.name == GROUP_METADATA_TOPIC_NAME:
                    offsets_partitions.append(p)
                else:
                    entries.append((TopicPartition(t.name, p), records))
        offsets_error = _write_offsets_markers(context, marker, offsets_partitions, records) if offsets_partitions else 0
        done = _marker_answer(marker, offsets_error, functools.partial(marker_done, i))
        if entries:
            rm.append_records(MARKER_APPEND_TIMEOUT_MS, -1, entries, done, origin=AppendOrigin.COORDINATOR)
        else:
            done({})


def _marker_answer(marker: WriteTxnMarkersRequest.WritableTxnMarker, offsets_error: int,
                   then: Callable[[MarkerResult], None]) -> Callable[[dict[TopicPartition, PartitionResponse]], None]:
    """The callback of one marker's append: its per-partition result to ``then``."""
    def answer(appended: dict[TopicPartition, PartitionResponse]) -> None:
        topics: list[TopicResult] = []
        for t in marker.topics:
            parts = [PartitionResult(partition_index=p, error_code=offsets_error if t.name == GROUP_METADATA_TOPIC_NAME
                                     else appended[TopicPartition(t.name, p)].error_code)
                     for p in t.partition_indexes]
            topics.append(TopicResult(name=t.name, partitions=parts))
        for tp, r in appended.items():
            if r.error_code:
                log.warning("event=txn_marker_failed partition=%s producer_id=%d error_code=%d message=%s "
                            "msg=\"the coordinator retries\"", tp, marker.producer_id, r.error_code, r.error_message)
        then(MarkerResult(producer_id=marker.producer_id, topics=topics))

    return answer


class ReplicaTxnMarkerWriter:
    """The in-process :class:`~mini_broker.transaction.seams.TxnMarkerWriter` of a single broker: writes at once,
    on the caller's thread, and calls ``on_complete`` before returning (the high watermark follows the append)."""

    def __init__(self, context: BrokerContext) -> None:
        self._context = context

    def write_txn_markers(self, request: WriteTxnMarkersRequest,
                          on_complete: Callable[[WriteTxnMarkersResponse], None]) -> None:
        write_markers(self._context, request, on_complete)
