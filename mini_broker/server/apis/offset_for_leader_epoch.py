"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, for consumers validating their position
after a leader change (KIP-320) and for truncation detection.

One broker leads every partition at epoch 0 from its creation, so epoch 0 ends at the log end offset; an
epoch above the current one, or -1, has no end offset (-1/-1, as Kafka's leader epoch cache answers).
``current_leader_epoch`` is checked like Fetch does (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH).
Authorization as Kafka: CLUSTER_ACTION on the cluster (a replica) or DESCRIBE on each topic, else
TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import TopicAuthorizationFailedError
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from pykafka_client.structs import TopicPartition

TopicResult = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
EpochEndOffset = OffsetForLeaderEpochResponse.EpochEndOffset


def handle(apis: KafkaApis, request: Request) -> OffsetForLeaderEpochResponse:
    body = request.body
    assert isinstance(body, OffsetForLeaderEpochRequest)
    rm = apis.broker.replica_manager
    auth = apis.broker.auth(request)
    names = [t.topic for t in body.topics]
    described = set(names) if auth.cluster(AclOperation.CLUSTER_ACTION) else auth.topics(AclOperation.DESCRIBE, names)
    topics: list[TopicResult] = []
    for t in body.topics:
        parts: list[EpochEndOffset] = []
        for p in t.partitions:
            try:
                if t.topic not in described:
                    raise TopicAuthorizationFailedError(f"DESCRIBE on topic {t.topic!r} is not allowed")
                epoch, end = rm.end_offset_for_epoch(TopicPartition(t.topic, p.partition), p.leader_epoch,
                                                     p.current_leader_epoch)
                parts.append(EpochEndOffset(error_code=0, partition=p.partition, leader_epoch=epoch, end_offset=end))
            except BrokerResponseError as e:
                parts.append(EpochEndOffset(error_code=e.code, partition=p.partition, leader_epoch=-1, end_offset=-1))
        topics.append(TopicResult(topic=t.topic, partitions=parts))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)


API = ApiSpec(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4, handle)
