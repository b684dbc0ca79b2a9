"""Fetch (key 1): read from the logs, long-poll through DelayedFetch when fewer than ``min_bytes`` are there.

Fetch sessions (KIP-227, v7+) are handled with :mod:`mini_broker.server.fetch_session`: a full fetch at epoch 0
opens a session, incremental fetches name only changed partitions and get only partitions with news. v13+ name
topics by id (unknown id -> UNKNOWN_TOPIC_ID). Records are the log's FileRegion, written with sendfile by the
transport (zero copy); an empty partition carries empty records, never null (librdkafka rejects null).
isolation_level=1 (read_committed) reads up to the last stable offset; every response carries
``last_stable_offset`` and, for read_committed, the aborted transactions overlapping the read (an empty list
when there are none, null for read_uncommitted, as Kafka).

Authorization as Kafka: a follower's fetch (replica id >= 0) needs CLUSTER_ACTION on the cluster, a consumer's READ
on each topic; the partitions of the others answer TOPIC_AUTHORIZATION_FAILED (and stay in the fetch session).
"""

from __future__ import annotations

import uuid

from mini_broker.log.log_offset_metadata import FetchIsolation
from mini_broker.network.request_channel import Request
from mini_broker.purgatory import FetchParams
from mini_broker.server.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSession,
)
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.metadata_cache import ZERO_UUID
from mini_broker.server.replica_manager import LogReadResult
from mini_broker.server.replication_strategy import FetchPartitionInfo
from pykafka_client.errors import (
    FetchSessionIdNotFoundError,
    InvalidFetchSessionEpochError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
)
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import FetchRequest, FetchResponse
from pykafka_client.structs import TopicPartition

TopicResp = FetchResponse.FetchableTopicResponse
PartData = FetchResponse.PartitionData


def _resolve(apis: KafkaApis, version: int, name: str, topic_id: uuid.UUID) -> tuple[str | None, uuid.UUID]:
    cache = apis.broker.metadata_cache
    if version >= 13:
        md = cache.topic_by_id(topic_id) if topic_id != ZERO_UUID else None
        return (md.name if md is not None else None), topic_id
    md = cache.get_topic(name)
    return name, (md.topic_id if md is not None else ZERO_UUID)


def _requested(apis: KafkaApis, body: FetchRequest, version: int) -> list[CachedPartition]:
    out: list[CachedPartition] = []
    for t in body.topics:
        name, topic_id = _resolve(apis, version, t.topic, t.topic_id)
        for p in t.partitions:
            out.append(CachedPartition(name, topic_id, p.partition, p.fetch_offset, p.partition_max_bytes,
                                       p.log_start_offset, p.current_leader_epoch))
    return out


def handle(apis: KafkaApis, request: Request) -> FetchResponse | None:
    body = request.body
    assert isinstance(body, FetchRequest)
    version = request.context.api_version
    sessions = apis.broker.replica_manager.fetch_sessions
    parts = _requested(apis, body, version)
    session: FetchSession | None = None
    incremental = False
    if version >= 7:
        sid, epoch = body.session_id, body.session_epoch
        if epoch == FINAL_EPOCH:
            if sid != INVALID_SESSION_ID:
                sessions.remove(sid)
        elif epoch == INITIAL_EPOCH:
            if sid != INVALID_SESSION_ID:
                sessions.remove(sid)
            session = sessions.create(uses_topic_ids=version >= 13)
            if session is not None:
                with session.lock:
                    for p in parts:
                        session.upsert(p)
                    parts = list(session.partitions.values())
        else:
            session = sessions.get(sid)
            if session is None:
                return FetchResponse(error_code=FetchSessionIdNotFoundError.code, session_id=0, responses=[])
            with session.lock:
                if session.epoch != epoch:
                    return FetchResponse(error_code=InvalidFetchSessionEpochError.code, session_id=0, responses=[])
                session.epoch += 1
                for p in parts:
                    session.upsert(p)
                for ft in body.forgotten_topics_data:
                    name, topic_id = _resolve(apis, version, ft.topic, ft.topic_id)
                    for partition in ft.partitions:
                        session.forget(name, topic_id, partition)
                parts = list(session.partitions.values())
                # names may have changed (topic deleted / re-created) since the partition joined the session
                for p in parts:
                    p.topic, p.topic_id = _resolve(apis, version, p.topic or "", p.topic_id)
            incremental = True

    replica_id = body.replica_state.replica_id if version >= 15 else body.replica_id
    denied = _unauthorized(apis, request, replica_id >= 0, parts)
    isolation = FetchIsolation.TXN_COMMITTED if body.isolation_level == 1 else FetchIsolation.HIGH_WATERMARK
    if replica_id >= 0 and apis.broker.replica_manager.replication.accepts_follower_fetches:
        isolation = FetchIsolation.LOG_END  # a follower replicates up to the leader's log end
    else:
        replica_id = -1
    params = FetchParams(max_wait_ms=body.max_wait_ms, min_bytes=body.min_bytes,
                         max_bytes=body.max_bytes if version >= 3 else 2**31 - 1, isolation=isolation,
                         replica_id=replica_id)
    infos = [(TopicPartition(p.topic, p.partition),
              FetchPartitionInfo(p.fetch_offset, p.max_bytes, p.current_leader_epoch, p.log_start_offset))
             for p in parts if p.topic is not None and p.topic not in denied]

    def respond(results: list[tuple[TopicPartition, LogReadResult]]) -> None:
        apis.send_response(request, _build(apis, parts, dict(results), session, incremental, denied,
                                                 request.context.listener_name))

    apis.broker.replica_manager.fetch_messages(params, infos, respond)
    return None


def _unauthorized(apis: KafkaApis, request: Request, from_follower: bool, parts: list[CachedPartition]) -> frozenset[str]:
    """The topics whose partitions answer TOPIC_AUTHORIZATION_FAILED, as Kafka: all of them for a follower's fetch
    without CLUSTER_ACTION on the cluster, else those the principal may not READ."""
    auth = apis.broker.auth(request)
    if not auth.enabled:
        return frozenset()
    names = {p.topic for p in parts if p.topic is not None}
    if from_follower:
        return frozenset(names) if not auth.cluster(AclOperation.CLUSTER_ACTION) else frozenset()
    return frozenset(names - auth.topics(AclOperation.READ, names))


def _build(apis: KafkaApis, parts: list[CachedPartition], results: dict[TopicPartition, LogReadResult], session: FetchSession | None,
           incremental: bool, denied: frozenset[str] = frozenset(), listener_name: str | None = None) -> FetchResponse:
    topics: list[TopicResp] = []
    index: dict[tuple[str | None, uuid.UUID], TopicResp] = {}
    with_records: list[CachedPartition] = []
    hinted: set[int] = set()

    def add(p: CachedPartition, pd: PartData) -> None:
        key = (p.topic, p.topic_id)
        tr = index.get(key)
        if tr is None:
            tr = index[key] = TopicResp(topic=p.topic or "", topic_id=p.topic_id, partitions=[])
            topics.append(tr)
        tr.partitions.append(pd)

    lock = session.lock if session is not None else None
    if lock is not None:
        lock.acquire()
    try:
        for p in parts:
            if p.topic is None:
                add(p, PartData(partition_index=p.partition, error_code=UnknownTopicIdError.code, high_watermark=-1,
                                last_stable_offset=-1, log_start_offset=-1, records=b""))
                continue
            if p.topic in denied:
                add(p, PartData(partition_index=p.partition, error_code=TopicAuthorizationFailedError.code,
                                high_watermark=-1, last_stable_offset=-1, log_start_offset=-1, records=b""))
                continue
            r = results[TopicPartition(p.topic, p.partition)]
            report = p.must_report(r.error_code, r.records_size, r.high_watermark, r.last_stable_offset,
                                   r.log_start_offset)
            if incremental and not report:
                continue
            pd = PartData(partition_index=p.partition, error_code=r.error_code, high_watermark=r.high_watermark,
                          last_stable_offset=r.last_stable_offset, log_start_offset=r.log_start_offset,
                          aborted_transactions=_aborted(r.aborted_transactions), preferred_read_replica=-1,
                          records=r.records)
            if r.error_code != 0:
                leader_id, leader_epoch = apis.broker.replica_manager.current_leader(p.topic, p.partition)
                pd.current_leader = FetchResponse.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=leader_epoch)
                if leader_id >= 0 and leader_id != apis.broker.node_id:
                    hinted.add(leader_id)
            if r.records_size > 0:
                with_records.append(p)
            add(p, pd)
        if session is not None:
            for p in with_records:  # fairness: partitions that got data go last next time
                session.move_to_end(p)
    finally:
        if lock is not None:
            lock.release()
    session_id = session.id if session is not None else INVALID_SESSION_ID
    endpoints = []
    for node in sorted(hinted):  # KIP-951: where the new leaders are
        ep = apis.broker.metadata_cache.broker_endpoint(node, listener_name)
        if ep is not None:
            endpoints.append(FetchResponse.NodeEndpoint(node_id=node, host=ep[0], port=ep[1], rack=None))
    return FetchResponse(throttle_time_ms=0, error_code=0, session_id=session_id, responses=topics,
                         node_endpoints=endpoints)


def _aborted(aborted: list[tuple[int, int]] | None) -> list[FetchResponse.AbortedTransaction] | None:
    if aborted is None:
        return None
    return [FetchResponse.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in aborted]


API = ApiSpec(ApiKey.FETCH, 4, 16, handle)
