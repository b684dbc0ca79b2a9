"""ListOffsets (key 2): earliest (-2), latest (-1: the high watermark, or the LSO for read_committed),
max timestamp (-3, v7+), earliest local (-4, v8+), latest tiered (-5, v9+: none, so -1), or the first
offset whose timestamp is >= the given one (-1/-1 when there is none).
DESCRIBE on the topic is needed (else TOPIC_AUTHORIZATION_FAILED for its partitions).
"""

from __future__ import annotations

from collections import Counter

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import InvalidRequestError, TopicAuthorizationFailedError, UnsupportedVersionError
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from pykafka_client.structs import TopicPartition

TopicResp = ListOffsetsResponse.ListOffsetsTopicResponse
PartResp = ListOffsetsResponse.ListOffsetsPartitionResponse

MIN_VERSION_FOR_SPECIAL = {-3: 7, -4: 8, -5: 9}


def handle(apis: KafkaApis, request: Request) -> ListOffsetsResponse:
    body = request.body
    assert isinstance(body, ListOffsetsRequest)
    version = request.context.api_version
    rm = apis.broker.replica_manager
    described = apis.broker.auth(request).topics(AclOperation.DESCRIBE, (t.name for t in body.topics))
    counts = Counter((t.name, p.partition_index) for t in body.topics for p in t.partitions)
    topics: list[TopicResp] = []
    for t in body.topics:
        parts: list[PartResp] = []
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            try:
                if t.name not in described:
                    raise TopicAuthorizationFailedError(f"DESCRIBE on topic {t.name!r} is not allowed")
                if counts[(t.name, p.partition_index)] > 1:
                    raise InvalidRequestError("Duplicate partition in ListOffsets request")
                need = MIN_VERSION_FOR_SPECIAL.get(p.timestamp)
                if need is not None and version < need:
                    raise UnsupportedVersionError(f"timestamp {p.timestamp} needs ListOffsets v{need}")
                if p.timestamp < -5:
                    raise InvalidRequestError(f"invalid timestamp {p.timestamp}")
                ts, offset, epoch = rm.fetch_offset_for_timestamp(tp, p.timestamp, body.isolation_level,
                                                                   p.current_leader_epoch, body.replica_id == -1)
                if version == 0:
                    parts.append(PartResp(partition_index=p.partition_index, error_code=0,
                                          old_style_offsets=[offset] if offset >= 0 else []))
                else:
                    parts.append(PartResp(partition_index=p.partition_index, error_code=0, timestamp=ts,
                                          offset=offset, leader_epoch=epoch))
            except BrokerResponseError as e:
                parts.append(PartResp(partition_index=p.partition_index, error_code=e.code, timestamp=-1, offset=-1,
                                      leader_epoch=-1))
        topics.append(TopicResp(name=t.name, partitions=parts))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)


API = ApiSpec(ApiKey.LIST_OFFSETS, 1, 10, handle)
