"""DeleteRecords (key 21): move each partition's log start offset up (offset -1 = the high watermark).

Unknown partition -> UNKNOWN_TOPIC_OR_PARTITION; an offset above the high watermark -> OFFSET_OUT_OF_RANGE.
Completes at once on a single broker; on a cluster the leader answers once its in-sync followers moved their log
start offsets too (``mini_broker.cluster.delayed_delete_records``, Kafka's DelayedDeleteRecords), or
REQUEST_TIMED_OUT after the request's ``timeout_ms``; a follower answers NOT_LEADER_OR_FOLLOWER. DELETE on the topic is
needed (else TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import functools
import threading

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import TopicAuthorizationFailedError
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse
from pykafka_client.structs import TopicPartition

TopicResult = DeleteRecordsResponse.DeleteRecordsTopicResult
PartResult = DeleteRecordsResponse.DeleteRecordsPartitionResult


def handle(apis: KafkaApis, request: Request) -> DeleteRecordsResponse | None:
    body = request.body
    assert isinstance(body, DeleteRecordsRequest)
    rm = apis.broker.replica_manager
    results: dict[TopicPartition, tuple[int, int]] = {}  # partition -> (low watermark, error code)
    order: list[TopicPartition] = []
    deletable = apis.broker.auth(request).topics(AclOperation.DELETE, (t.name for t in body.topics))
    for t in body.topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            order.append(tp)
            if t.name not in deletable:
                results[tp] = -1, TopicAuthorizationFailedError.code
                continue
            try:
                results[tp] = rm.delete_records(tp, p.offset), 0
            except BrokerResponseError as e:
                results[tp] = -1, e.code
    waiting = [tp for tp in order if results[tp][1] == 0]
    lock = threading.Lock()
    remaining = [len(waiting) + 1]  # + this handler's own hold: whoever lets go last answers

    def release() -> bool:
        with lock:
            remaining[0] -= 1
            return remaining[0] == 0

    def answered(tp: TopicPartition, low: int, error: int) -> None:
        with lock:
            results[tp] = low, error
        if release():
            apis.send_response(request, _response(order, results))

    for tp in waiting:
        rm.replication.wait_for_delete_records(tp, results[tp][0], body.timeout_ms, functools.partial(answered, tp))
    if release():
        return _response(order, results)  # every wait completed at once (a single broker)
    return None


def _response(order: list[TopicPartition], results: dict[TopicPartition, tuple[int, int]]) -> DeleteRecordsResponse:
    topics: dict[str, list[PartResult]] = {}
    for tp in order:
        low, error = results[tp]
        topics.setdefault(tp.topic, []).append(PartResult(partition_index=tp.partition, low_watermark=low,
                                                          error_code=error))
    return DeleteRecordsResponse(throttle_time_ms=0, topics=[TopicResult(name=n, partitions=ps)
                                                             for n, ps in topics.items()])


API = ApiSpec(ApiKey.DELETE_RECORDS, 0, 2, handle)
