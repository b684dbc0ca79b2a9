"""Produce (key 0): append record batches, answer per acks.

acks=0: no response; if any partition failed the connection is closed (Kafka's behaviour, so the client
notices), otherwise a NoOpResponse unmutes the channel. acks=1: answer after the local append. acks=-1:
answer when the DelayedProduce completes (at once on one broker). acks outside {-1,0,1} ->
INVALID_REQUIRED_ACKS for every partition. Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION,
INVALID_TOPIC_EXCEPTION, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD (with record errors), ...
Only v2 record batches are accepted (v3+), as Kafka 4 does. Batches of idempotent producers are checked
by the partition log's producer state: a retried batch (same epoch and sequence range among the producer's
last 5) answers NONE with its original offsets and is not written again; OUT_OF_ORDER_SEQUENCE_NUMBER and
INVALID_PRODUCER_EPOCH otherwise, as Kafka. TEST-ONLY: an armed ``FaultInjector`` closes the connection
instead of answering (after the append).
"""

from __future__ import annotations

import logging

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.replica_manager import PartitionResponse
from pykafka_client.errors import InvalidRequestError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ProduceRequest, ProduceResponse
from pykafka_client.structs import TopicPartition

log = logging.getLogger(__name__)

TopicResp = ProduceResponse.TopicProduceResponse
PartResp = ProduceResponse.PartitionProduceResponse


def _build(version: int, order: list[TopicPartition], results: dict[TopicPartition, PartitionResponse]) -> ProduceResponse:
    topics: dict[str, list[PartResp]] = {}
    for tp in order:
        r = results[tp]
        topics.setdefault(tp.topic, []).append(PartResp(
            index=tp.partition, error_code=r.error_code, base_offset=r.base_offset,
            log_append_time_ms=r.log_append_time_ms, log_start_offset=r.log_start_offset,
            record_errors=[ProduceResponse.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                           for i, m in r.record_errors] if version >= 8 else [],
            error_message=r.error_message if version >= 8 else None,
        ))
    return ProduceResponse(responses=[TopicResp(name=n, partition_responses=ps) for n, ps in topics.items()],
                           throttle_time_ms=0)


def handle(apis: KafkaApis, request: Request) -> None:
    body = request.body
    assert isinstance(body, ProduceRequest)
    version = request.context.api_version
    rm = apis.broker.replica_manager
    order: list[TopicPartition] = []
    entries: list[tuple[TopicPartition, object]] = []
    duplicate = False
    for t in body.topic_data:
        for p in t.partition_data:
            tp = TopicPartition(t.name, p.index)
            if tp in order:
                duplicate = True
                continue
            order.append(tp)
            entries.append((tp, p.records))
    if duplicate:
        results = {tp: PartitionResponse(error_code=InvalidRequestError.code,
                                         error_message="Duplicate partition in produce request") for tp in order}
        _respond(apis, request, body.acks, version, order, results)
        return
    if body.transactional_id is not None:
        # Transactions come with a later issue; InitProducerId is not advertised, so no client gets here.
        results = {tp: PartitionResponse(error_code=InvalidRequestError.code,
                                         error_message="Transactional produce is not supported yet") for tp in order}
        _respond(apis, request, body.acks, version, order, results)
        return

    def respond(results: dict[TopicPartition, PartitionResponse]) -> None:
        _respond(apis, request, body.acks, version, order, results)

    rm.append_records(body.timeout_ms, body.acks, entries, respond)


def _respond(apis: KafkaApis, request: Request, acks: int, version: int, order: list[TopicPartition],
             results: dict[TopicPartition, PartitionResponse]) -> None:
    if acks == 0:
        failed = [(tp, r.error_code) for tp, r in results.items() if r.error_code != 0]
        if failed:
            log.info("event=acks0_produce_failed connection=%s errors=%s action=close_connection",
                     request.connection_id, ",".join(f"{tp}:{code}" for tp, code in failed))
            apis.close_connection(request)
        else:
            apis.send_no_op_response(request)
        return
    faults = apis.broker.faults
    if faults is not None and faults.should_drop_produce_response(tp.topic for tp in order):
        log.info("event=fault_injected connection=%s action=close_before_produce_response", request.connection_id)
        apis.close_connection(request)
        return
    apis.send_response(request, _build(version, order, results))


API = ApiSpec(ApiKey.PRODUCE, 3, 11, handle)
