"""DeleteRecords (key 21): move each partition's log start offset up (offset -1 = the high watermark).

Unknown partition -> UNKNOWN_TOPIC_OR_PARTITION; an offset above the high watermark -> OFFSET_OUT_OF_RANGE.
Completes at once on a single broker (Kafka parks it in a purgatory until followers catch up).
"""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse
from pykafka_client.structs import TopicPartition

TopicResult = DeleteRecordsResponse.DeleteRecordsTopicResult
PartResult = DeleteRecordsResponse.DeleteRecordsPartitionResult


def handle(apis: KafkaApis, request: Request) -> DeleteRecordsResponse:
    body = request.body
    assert isinstance(body, DeleteRecordsRequest)
    rm = apis.broker.replica_manager
    topics: list[TopicResult] = []
    for t in body.topics:
        parts: list[PartResult] = []
        for p in t.partitions:
            try:
                low = rm.delete_records(TopicPartition(t.name, p.partition_index), p.offset)
                parts.append(PartResult(partition_index=p.partition_index, low_watermark=low, error_code=0))
            except BrokerResponseError as e:
                parts.append(PartResult(partition_index=p.partition_index, low_watermark=-1, error_code=e.code))
        topics.append(TopicResult(name=t.name, partitions=parts))
    return DeleteRecordsResponse(throttle_time_ms=0, topics=topics)


API = ApiSpec(ApiKey.DELETE_RECORDS, 0, 2, handle)
