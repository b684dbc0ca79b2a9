"""DescribeProducers (key 61, KIP-664): the active producers of each partition from its log's producer state:
producer id and epoch, last sequence (-1 when no batch is cached), last timestamp, coordinator epoch (-1 before
any marker) and the first offset of its open transaction (-1 when none). Unknown partitions get
UNKNOWN_TOPIC_OR_PARTITION. READ on the topic is needed (else TOPIC_AUTHORIZATION_FAILED), as Kafka."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.api_error import error_code, error_message
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import TopicAuthorizationFailedError
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeProducersRequest, DescribeProducersResponse
from pykafka_client.structs import TopicPartition

PartResp = DescribeProducersResponse.PartitionResponse


def handle(apis: KafkaApis, request: Request) -> DescribeProducersResponse:
    body = request.body
    assert isinstance(body, DescribeProducersRequest)
    rm = apis.broker.replica_manager
    readable = apis.broker.auth(request).topics(AclOperation.READ, (t.name for t in body.topics))
    topics: list[DescribeProducersResponse.TopicResponse] = []
    for t in body.topics:
        parts: list[PartResp] = []
        for index in t.partition_indexes:
            try:
                if t.name not in readable:
                    raise TopicAuthorizationFailedError(f"READ on topic {t.name!r} is needed to describe its producers")
                entries = rm.describe_producers(TopicPartition(t.name, index))
            except BrokerResponseError as e:
                parts.append(PartResp(partition_index=index, error_code=error_code(e), error_message=error_message(e),
                                      active_producers=[]))
                continue
            parts.append(PartResp(partition_index=index, error_code=0, active_producers=[
                DescribeProducersResponse.ProducerState(
                    producer_id=e.producer_id, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
                    last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                    current_txn_start_offset=-1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
                for e in sorted(entries, key=lambda e: e.producer_id)]))
        topics.append(DescribeProducersResponse.TopicResponse(name=t.name, partitions=parts))
    return DescribeProducersResponse(throttle_time_ms=0, topics=topics)


API = ApiSpec(ApiKey.DESCRIBE_PRODUCERS, 0, 0, handle)
