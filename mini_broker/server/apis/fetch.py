"""Fetch (key 1): read from the logs, long-poll through DelayedFetch when fewer than ``min_bytes`` are there.

Sessionless only (no KIP-227 sessions yet): a full fetch (session id 0) is answered with session id 0,
which tells clients to keep sending full fetches; an incremental fetch (session id != 0) gets
FETCH_SESSION_ID_NOT_FOUND. v13+ name topics by id (unknown id -> UNKNOWN_TOPIC_ID). Records are the log's
FileRegion, written with sendfile by the transport (zero copy).
"""

from __future__ import annotations

import uuid

from mini_broker.log.log_offset_metadata import FetchIsolation
from mini_broker.network.request_channel import Request
from mini_broker.purgatory import FetchParams
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.metadata_cache import ZERO_UUID
from mini_broker.server.replica_manager import LEADER_EPOCH, FetchPartitionInfo, LogReadResult, TopicPartition
from pykafka_client.errors import FetchSessionIdNotFoundError, UnknownTopicIdError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import FetchRequest, FetchResponse

TopicResp = FetchResponse.FetchableTopicResponse
PartData = FetchResponse.PartitionData


def handle(apis: KafkaApis, request: Request) -> FetchResponse | None:
    body = request.body
    assert isinstance(body, FetchRequest)
    version = request.context.api_version
    broker = apis.broker
    if version >= 7 and body.session_id != 0:
        return FetchResponse(error_code=FetchSessionIdNotFoundError.code, session_id=0, responses=[])
    isolation = FetchIsolation.TXN_COMMITTED if body.isolation_level == 1 else FetchIsolation.HIGH_WATERMARK
    params = FetchParams(max_wait_ms=body.max_wait_ms, min_bytes=body.min_bytes,
                         max_bytes=body.max_bytes if version >= 3 else 2**31 - 1, isolation=isolation)
    # (topic name or None, topic id, partition, info) in request order
    order: list[tuple[str | None, uuid.UUID, int]] = []
    infos: list[tuple[TopicPartition, FetchPartitionInfo]] = []
    for t in body.topics:
        if version >= 13:
            md = broker.metadata_cache.topic_by_id(t.topic_id) if t.topic_id != ZERO_UUID else None
            name = md.name if md is not None else None
            topic_id = t.topic_id
        else:
            name = t.topic
            md = broker.metadata_cache.get_topic(name)
            topic_id = md.topic_id if md is not None else ZERO_UUID
        for p in t.partitions:
            order.append((name, topic_id, p.partition))
            if name is not None:
                infos.append((TopicPartition(name, p.partition), FetchPartitionInfo(
                    p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch, p.log_start_offset)))

    def respond(results: list[tuple[TopicPartition, LogReadResult]]) -> None:
        apis.send_response(request, _build(version, order, dict(results)))

    broker.replica_manager.fetch_messages(params, infos, respond)
    return None


def _build(version: int, order: list[tuple[str | None, uuid.UUID, int]],
           results: dict[TopicPartition, LogReadResult]) -> FetchResponse:
    topics: list[TopicResp] = []
    index: dict[tuple[str | None, uuid.UUID], TopicResp] = {}
    for name, topic_id, partition in order:
        key = (name, topic_id)
        tr = index.get(key)
        if tr is None:
            tr = TopicResp(topic=name or "", topic_id=topic_id, partitions=[])
            index[key] = tr
            topics.append(tr)
        if name is None:
            tr.partitions.append(PartData(partition_index=partition, error_code=UnknownTopicIdError.code,
                                          high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
                                          records=b""))
            continue
        r = results[TopicPartition(name, partition)]
        pd = PartData(partition_index=partition, error_code=r.error_code, high_watermark=r.high_watermark,
                      last_stable_offset=r.last_stable_offset, log_start_offset=r.log_start_offset,
                      aborted_transactions=None, preferred_read_replica=-1, records=r.records)
        if version >= 12 and r.error_code != 0:
            pd.current_leader = FetchResponse.LeaderIdAndEpoch(leader_id=0, leader_epoch=LEADER_EPOCH)
        tr.partitions.append(pd)
    return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=topics)


API = ApiSpec(ApiKey.FETCH, 4, 16, handle)
