"""ShareFetch (key 78, KIP-932): acknowledge (optionally), then acquire records of the share session's
partitions for the member and return them with their acquired ranges and delivery counts.

Order, as Kafka: the share session is opened (epoch 0), continued (adding the request's partitions, dropping the
forgotten ones) or closed (epoch -1); the request's acknowledgements are applied; then each session partition is
read from its share partition's next fetch offset (the lowest available in-flight offset, else its end offset; a
new share partition starts where ``share.auto.offset.reset`` points; one that can take nothing, its in-flight
records all locked at ``group.share.partition.max.record.locks``, waits at the log end) through the replica manager's fetch, so
``max_wait_ms`` / ``min_bytes`` long-poll in the fetch purgatory; what is read is acquired (up to
``max_records``, whole batches), and only the batches holding acquired offsets are returned. A request with
``max_records`` 0 (v1+) or epoch -1 only acknowledges. The state writes of the acknowledgements and of the
acquisitions are made together just before the answer (one write per share partition carries both), with no
share-partition manager lock held.

A fetch parked in the purgatory is also watched under its share partitions' ``DelayedShareFetchGroupKey``: when
records below where it waits become acquirable again (released, their locks expired), it completes and reads them
from the share partition's new next fetch offset instead of waiting out ``max_wait_ms``.

``share.isolation.level=read_committed`` reads up to the last stable offset and skips (archives) the records of
aborted transactions, as it skips control batches.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

from mini_broker.log.fetch_data_info import FetchDataInfo
from mini_broker.log.log_offset_metadata import UNKNOWN_OFFSET_METADATA, FetchIsolation
from mini_broker.network.request_channel import Request
from mini_broker.purgatory import DelayedShareFetchGroupKey, FetchParams
from mini_broker.server.api_error import error_code, error_message
from mini_broker.server.apis.share_api_util import acknowledge, share_partitions, share_request_error
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.replica_manager import LogReadResult
from mini_broker.server.replication_strategy import FetchPartitionInfo
from mini_broker.share.partition_manager import (
    FINAL_EPOCH,
    PendingWrite,
    SessionError,
    SharePartitionManager,
    TopicIdPartition,
)
from mini_broker.share.share_partition import AcquiredRange
from pykafka_client.errors import KafkaError, TopicAuthorizationFailedError, UnknownTopicIdError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ShareFetchRequest, ShareFetchResponse
from pykafka_client.protocol.records import MemoryRecords
from pykafka_client.protocol.types import FileRegion, RecordsLike
from pykafka_client.structs import TopicPartition

Response = ShareFetchResponse
PartData = ShareFetchResponse.PartitionData
#: records per ShareFetch when the request does not say (v0)
DEFAULT_MAX_RECORDS = 500
_EARLIEST, _LATEST = -2, -1


def _bytes(records: RecordsLike) -> bytes:
    if isinstance(records, FileRegion):
        return FetchDataInfo(UNKNOWN_OFFSET_METADATA, records).to_bytes()
    return bytes(records)


def _acquire(partitions: SharePartitionManager, group_id: str, member_id: str, tp: TopicIdPartition,
             result: LogReadResult, max_records: int, deferred: list[PendingWrite]) -> tuple[bytes, list[AcquiredRange]]:
    """Acquire what the read returned; the bytes of the batches holding acquired offsets, and the ranges. Control
    batches, and under read_committed the batches of aborted transactions (``result.aborted_transactions``),
    are skipped: archived, never delivered. The state write goes to ``deferred``."""
    buf = _bytes(result.records)
    #: (first offset, producer id) of the aborted transactions, by first offset; a producer's batches are
    #: skipped from its aborted transaction's first offset up to its next control batch (the ABORT marker)
    pending = sorted((first, pid) for pid, first in result.aborted_transactions or ())
    aborting: set[int] = set()
    batches: list[tuple[int, int, bool, int, int]] = []
    pos = 0
    for batch in MemoryRecords(buf).batches():
        while pending and pending[0][0] <= batch.base_offset:
            aborting.add(pending.pop(0)[1])
        skip = batch.is_control or (batch.is_transactional and batch.producer_id in aborting)
        if batch.is_control:
            aborting.discard(batch.producer_id)
        batches.append((batch.base_offset, batch.last_offset, skip, pos, pos + batch.size_in_bytes))
        pos += batch.size_in_bytes
    ranges = partitions.acquire(group_id, member_id, tp, [(b[0], b[1], b[2]) for b in batches], max_records,
                                deferred)
    kept = [buf[start:end] for first, last, _, start, end in batches
            if any(r.first_offset <= last and r.last_offset >= first for r in ranges)]
    return b"".join(kept), ranges


class _Fetch:
    """One ShareFetch's partitions: what to read, and the response once read."""

    def __init__(self, apis: KafkaApis, request: Request, body: ShareFetchRequest) -> None:
        self.apis = apis
        self.request = request
        self.body = body
        self.group_id, self.member_id = str(body.group_id), str(body.member_id)
        self.partitions = share_partitions(apis)
        #: the group's share config (the broker's with the group's overrides)
        self.config = self.partitions.group_config(self.group_id)
        #: partition -> (acknowledge error, message) for the partitions that carried acknowledgements
        self.ack_results: dict[TopicIdPartition, tuple[int, str | None]] = {}
        #: partition -> (error, message) for partitions answered without a read
        self.errors: dict[TopicIdPartition, tuple[int, str | None]] = {}
        self.names: dict[uuid.UUID, str] = {}
        #: the state writes of the acknowledgements and acquisitions, made once before the answer (one write per
        #: share partition carries both)
        self.pending_writes: list[PendingWrite] = []

    def acknowledge(self) -> None:
        for topic in self.body.topics:
            for p in topic.partitions:
                if p.acknowledgement_batches:
                    tp = (topic.topic_id, p.partition_index)
                    self.ack_results[tp] = acknowledge(self.partitions, self.group_id, self.member_id, tp,
                                                       p.acknowledgement_batches, self.pending_writes)

    def write_states(self) -> None:
        """Make the deferred state writes (raises the persister's error: the answer must not say done)."""
        pending, self.pending_writes = self.pending_writes, []
        self.partitions.write_states(pending)

    def resolve(self, session_partitions: list[TopicIdPartition]) -> list[TopicIdPartition]:
        """The session's partitions that can be read (the others get their error in ``errors``)."""
        metadata = self.apis.broker.metadata_cache
        auth = self.apis.broker.auth(self.request)
        for topic_id in {t for t, _ in session_partitions}:
            md = metadata.topic_by_id(topic_id)
            if md is not None:
                self.names[topic_id] = md.name
        readable = auth.topics(AclOperation.READ, self.names.values())
        out = []
        for tp in session_partitions:
            name = self.names.get(tp[0])
            if name is None:
                self.errors[tp] = (int(UnknownTopicIdError.code), f"no topic has id {tp[0]}")
            elif name not in readable:
                self.errors[tp] = (int(TopicAuthorizationFailedError.code), f"READ on topic {name} is not allowed")
            else:
                out.append(tp)
        return out

    def fetch_info(self, tp: TopicIdPartition, isolation_level: int) -> FetchPartitionInfo | None:
        replicas = self.apis.broker.replica_manager
        topic_partition = TopicPartition(self.names[tp[0]], tp[1])
        reset = _EARLIEST if self.config.auto_offset_reset == "earliest" else _LATEST
        try:
            _, log_start, _ = replicas.fetch_offset_for_timestamp(topic_partition, _EARLIEST, isolation_level)

            def log_end() -> int:
                return replicas.fetch_offset_for_timestamp(topic_partition, _LATEST, isolation_level)[1]

            offset = self.partitions.fetch_offset(self.group_id, tp, lambda: log_start if reset == _EARLIEST
                                                  else log_end(), log_start)
            if offset is None:  # nothing to acquire: wait at the log end (max_wait_ms) instead of reading
                offset = log_end()
        except KafkaError as e:
            self.errors[tp] = (error_code(e), error_message(e))
            return None
        return FetchPartitionInfo(offset, self.body.max_bytes)

    def response(self, session_partitions: list[TopicIdPartition],
                 read: dict[TopicIdPartition, tuple[bytes, list[AcquiredRange], LogReadResult]]) -> ShareFetchResponse:
        topics: dict[uuid.UUID, Response.ShareFetchableTopicResponse] = {}
        requested = {(t.topic_id, p.partition_index) for t in self.body.topics for p in t.partitions}
        full = self.body.share_session_epoch == 0
        for tp in [*session_partitions, *(tp for tp in self.ack_results if tp not in session_partitions)]:
            ack_code, ack_message = self.ack_results.get(tp, (0, None))
            code, message = self.errors.get(tp, (0, None))
            records, ranges, result = read.get(tp, (b"", [], None))
            if result is not None and result.error_code:
                code, message = result.error_code, result.error_message
            if not (full or tp in requested or ranges or code or ack_code):
                continue  # an incremental response names only partitions with news
            pd = PartData(partition_index=tp[1], error_code=code, error_message=message,
                          acknowledge_error_code=ack_code, acknowledge_error_message=ack_message, records=records,
                          acquired_records=[Response.AcquiredRecords(first_offset=r.first_offset,
                                                                     last_offset=r.last_offset,
                                                                     delivery_count=r.delivery_count)
                                            for r in ranges])
            if code:
                leader_id, leader_epoch = self.apis.broker.replica_manager.current_leader(
                    self.names.get(tp[0], ""), tp[1])
                pd.current_leader = Response.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=leader_epoch)
            topic = topics.get(tp[0])
            if topic is None:
                topic = topics[tp[0]] = Response.ShareFetchableTopicResponse(topic_id=tp[0], partitions=[])
            topic.partitions.append(pd)
        return Response(error_code=0, acquisition_lock_timeout_ms=self.config.record_lock_duration_ms,
                        responses=list(topics.values()))


def handle(apis: KafkaApis, request: Request) -> ShareFetchResponse | None:
    body = request.body
    assert isinstance(body, ShareFetchRequest)
    refused = share_request_error(apis, request, body.group_id, body.member_id)
    if refused is not None:
        return Response(error_code=refused[0], error_message=refused[1])
    fetch = _Fetch(apis, request, body)
    added = [(t.topic_id, p.partition_index) for t in body.topics for p in t.partitions]
    forgotten = [(t.topic_id, p) for t in body.forgotten_topics_data for p in t.partitions]
    try:
        session = fetch.partitions.session(fetch.group_id, fetch.member_id, body.share_session_epoch, added,
                                           forgotten, request.connection_id)
    except SessionError as e:
        return Response(error_code=e.code, error_message=str(e))
    fetch.acknowledge()
    session_partitions = list(session.partitions)
    max_records = body.max_records if request.context.api_version >= 1 else DEFAULT_MAX_RECORDS
    if body.share_session_epoch == FINAL_EPOCH:
        fetch.write_states()
        fetch.partitions.close_session(fetch.group_id, fetch.member_id)
        return fetch.response([], {})
    if max_records <= 0:
        fetch.write_states()
        return fetch.response(session_partitions, {})
    committed = fetch.config.isolation_level == "read_committed"
    infos: list[tuple[TopicPartition, FetchPartitionInfo]] = []
    by_tp: dict[TopicPartition, TopicIdPartition] = {}
    for tp in fetch.resolve(session_partitions):
        info = fetch.fetch_info(tp, 1 if committed else 0)
        if info is not None:
            topic_partition = TopicPartition(fetch.names[tp[0]], tp[1])
            infos.append((topic_partition, info))
            by_tp[topic_partition] = tp
    params = FetchParams(max_wait_ms=body.max_wait_ms, min_bytes=body.min_bytes, max_bytes=body.max_bytes,
                         isolation=FetchIsolation.TXN_COMMITTED if committed else FetchIsolation.HIGH_WATERMARK)

    def respond(results: list[tuple[TopicPartition, LogReadResult]]) -> None:
        read: dict[TopicIdPartition, tuple[bytes, list[AcquiredRange], LogReadResult]] = {}
        left = max_records
        for topic_partition, result in results:
            tp = by_tp[topic_partition]
            moved = released_below_wait(topic_partition)
            if moved is not None and not result.error_code:
                # woken by records released below where the fetch waited: read from where they are
                result = replicas.read_from_local_log(params, [(topic_partition, FetchPartitionInfo(
                    moved, body.max_bytes))])[0][1]
            records, ranges = b"", list[AcquiredRange]()
            if not result.error_code and result.records_size and left > 0:
                records, ranges = _acquire(fetch.partitions, fetch.group_id, fetch.member_id, tp, result, left,
                                           fetch.pending_writes)
                left -= sum(r.last_offset - r.first_offset + 1 for r in ranges)
            read[tp] = (records, ranges, result)
        fetch.write_states()  # the acknowledgements and the acquisitions are in the log before the answer
        apis.send_response(request, fetch.response(session_partitions, read))

    def released_below_wait(topic_partition: TopicPartition) -> int | None:
        """The share partition's next fetch offset if records below where this fetch read became acquirable."""
        offset = fetch.partitions.next_fetch_offset(fetch.group_id, by_tp[topic_partition])
        return offset if offset is not None and offset < offsets[topic_partition] else None

    def acquirable_below_wait() -> bool:
        return any(released_below_wait(topic_partition) is not None for topic_partition in by_tp)

    if not infos:
        fetch.write_states()
        return fetch.response(session_partitions, {})
    replicas = apis.broker.replica_manager
    offsets = {topic_partition: info.fetch_offset for topic_partition, info in infos}
    send: Callable[[list[tuple[TopicPartition, LogReadResult]]], None] = respond
    state = apis.broker.share_state
    if state is not None and state.remote_writes:  # the acquisitions' state write waits for other brokers (the
        # share coordinator's ISR): not on a thread that completes a delayed fetch, which a follower fetch may be
        def respond_or_fail(results: list[tuple[TopicPartition, LogReadResult]]) -> None:
            try:
                respond(results)
            except KafkaError as e:  # the state write failed (e.g. FENCED_LEADER_EPOCH: leadership moved)
                apis.send_response(request, Response(error_code=error_code(e), error_message=error_message(e)))

        def send(results: list[tuple[TopicPartition, LogReadResult]]) -> None:
            threading.Thread(target=respond_or_fail, args=(results,), name="share-fetch-respond", daemon=True).start()
    replicas.fetch_messages(params, infos, send, ready=acquirable_below_wait,
                            also_watch=[DelayedShareFetchGroupKey(fetch.group_id, *tp) for tp in by_tp.values()])
    return None


API = ApiSpec(ApiKey.SHARE_FETCH, 0, 1, handle)
