"""Produce (key 0): append record batches, answer per acks.

acks=0: no response; if any partition failed the connection is closed (Kafka's behaviour, so the client
notices), otherwise a NoOpResponse unmutes the channel. acks=1: answer after the local append. acks=-1:
answer when the DelayedProduce completes (at once on one broker). acks outside {-1,0,1} ->
INVALID_REQUIRED_ACKS for every partition. Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION,
INVALID_TOPIC_EXCEPTION, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD (with record errors), ...
Only v2 record batches are accepted (v3+), as Kafka 4 does. Batches of idempotent producers are checked
by the partition log's producer state: a retried batch (same epoch and sequence range among the producer's
last 5) answers NONE with its original offsets and is not written again; OUT_OF_ORDER_SEQUENCE_NUMBER and
INVALID_PRODUCER_EPOCH otherwise, as Kafka.

Transactional produce (``transactional_id`` set): served only when the broker has a transaction coordinator
(``context.transaction_verifier``); without one it is refused with INVALID_REQUEST as before transactions
existed (no client gets here: InitProducerId with a transactional id fails first). Transactional batches
without a transactional id are refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka does. A partition where the
producer has no open transaction yet is verified first (KIP-890: the coordinator's verify-only
AddPartitionsToTxn; on a cluster broker that is not the transactional id's coordinator, asked of the coordinator's
broker over an inter-broker connection by ``mini_broker.cluster.txn_verification`` while no handler thread
waits, an unreachable coordinator answering NOT_ENOUGH_REPLICAS so the producer retries); a partition not in the producer's transaction is refused with the verifier's error
(INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH for a fenced epoch, INVALID_PRODUCER_ID_MAPPING,
TRANSACTION_ABORTABLE) and nothing is written to it. Unlike Kafka's VerificationGuard the verification is not re-checked under the log lock: a
transaction aborted between the two could still get one batch (the log then holds it in an open transaction
the next marker of the producer ends). TEST-ONLY: an armed ``FaultInjector`` closes the connection
instead of answering (after the append).

Authorization as Kafka: WRITE on the transactional id when one is set (else every partition answers
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), WRITE on each topic (else TOPIC_AUTHORIZATION_FAILED for its partitions).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.produce_wire import encode_produce_response, read_produce_request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.replica_manager import PartitionResponse
from mini_broker.server.replication_strategy import ReplicationStrategy
from mini_broker.utils.positional_tuple import positional_tuple
from pykafka_client.errors import (
    FencedLeaderEpochError,
    InvalidProducerEpochError,
    InvalidRequestError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    ProducerFencedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.transport.positional_new import positional_new
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ProduceRequest, ProduceResponse
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.structs import TopicPartition

if TYPE_CHECKING:
    from mini_broker.server.context import BrokerContext
    from mini_broker.transaction.seams import TransactionVerifier

log = logging.getLogger(__name__)

#: v2 batch header: magic at byte 16, attributes (int16) at bytes 21-22; bit 4 is "transactional".
_MAGIC = 16
_ATTRIBUTES_END = 23
_TRANSACTIONAL_FLAG = 0x10

TopicResp = ProduceResponse.TopicProduceResponse
PartResp = ProduceResponse.PartitionProduceResponse
#: the response's objects built from every field's value (the last: no unknown tagged fields) without their Python
#: __init__ (one per partition, topic and response)
_new_part = positional_new(PartResp)
_new_leader = positional_new(ProduceResponse.LeaderIdAndEpoch)
_new_topic = positional_new(TopicResp)
_new_response = positional_new(ProduceResponse)
#: TopicPartition made without its Python-level __new__ (one per partition of every request)
_new_topic_partition = positional_tuple(TopicPartition)


#: errors that make a cluster broker name the partition's current leader in the response (KIP-951)
_LEADER_HINT_ERRORS = frozenset({NotLeaderOrFollowerError.code, FencedLeaderEpochError.code})


def _build(broker: BrokerContext, version: int, order: list[TopicPartition],
           results: dict[TopicPartition, PartitionResponse], listener_name: str) -> ProduceResponse:
    topics: dict[str, list[PartResp]] = {}
    hinted: set[int] | None = None
    with_messages = version >= 8
    for tp in order:
        r = results[tp]
        errors = r.record_errors
        code = r.error_code
        # index, error code, base offset, log append time, log start offset, record errors, error message, current
        # leader (the default's values, in an instance of its own: a hint below replaces it)
        part = _new_part(
            tp.partition, code, r.base_offset, r.log_append_time_ms, r.log_start_offset,
            [ProduceResponse.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
             for i, m in errors] if with_messages and errors else [],
            r.error_message if with_messages else None,
            _new_leader(-1, -1, None), None,
        )
        if code and version >= 10 and code in _LEADER_HINT_ERRORS:
            hint = broker.replica_manager.replication.leader_hint(tp)
            if hint is not None:
                leader_id, leader_epoch = hint
                part.current_leader = ProduceResponse.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=leader_epoch)
                if leader_id >= 0:
                    if hinted is None:
                        hinted = set()
                    hinted.add(leader_id)
        parts = topics.get(tp.topic)
        if parts is None:
            topics[tp.topic] = [part]
        else:
            parts.append(part)
    responses = []
    for name, parts in topics.items():
        responses.append(_new_topic(name, parts, None))
    # responses, throttle time, node endpoints, unknown tagged fields
    return _new_response(responses, 0, [] if hinted is None else _endpoints(broker, hinted, listener_name), None)


def _endpoints(broker: BrokerContext, hinted: set[int], listener_name: str) -> list[ProduceResponse.NodeEndpoint]:
    """KIP-951: the endpoints of the leaders the partitions' errors name, by node id."""
    endpoints = []
    for node in sorted(hinted):
        ep = broker.metadata_cache.broker_endpoint(node, listener_name)
        if ep is not None:
            endpoints.append(ProduceResponse.NodeEndpoint(node_id=node, host=ep[0], port=ep[1], rack=None))
    return endpoints


def handle(apis: KafkaApis, request: Request) -> None:
    body = request.body
    assert isinstance(body, ProduceRequest)
    version = request.context.api_version
    broker = apis.broker
    rm = broker.replica_manager
    appender = rm.client_appender
    if appender is not None and broker.authorizer is None and _native.kernel is not None:
        # a single broker's common request (one partition, no transaction, acks 1 or -1) appended in one compiled call
        # (see mini_broker.server.produce_append); declined (None): the reference below
        done = appender.append(body, rm, version, request.context.correlation_id)
        if done is not None:
            one, results, pending, frame = done
            if pending is None:
                # the appender's frame where no fault injector may drop the answer (test-only) and nothing would change
                # it on the way (send_frame declines: the reference's answer)
                if frame is None or broker.faults is not None or not apis.send_frame(request, frame):
                    _respond(apis, broker, request, body.acks, version, one, None, results)
            else:
                rm.delay_produce(body.timeout_ms, results, partial(
                    _respond, apis, broker, request, body.acks, version, one, None))
            return
    order: list[TopicPartition] = []
    entries: list[tuple[TopicPartition, object]] = []
    duplicate = False
    for t in body.topic_data:
        name = t.name
        for p in t.partition_data:
            tp = _new_topic_partition(name, p.index)
            if order and tp in order:
                duplicate = True
                continue
            order.append(tp)
            entries.append((tp, p.records))
    verifier = broker.transaction_verifier
    transactional_id = body.transactional_id
    request_error: tuple[int, str] | None = None
    # (no authorizer: every request is allowed, without a call; see BrokerContext.auth)
    authorization = {} if broker.authorizer is None else _unauthorized(broker, request, transactional_id, entries)
    denied = authorization if isinstance(authorization, dict) else {}
    if denied:
        entries = _without(entries, denied)
    # (the kernel's answer read here, without _any_transactional's frame: None when it declines or is not loaded)
    kernel = _native.kernel
    transactional = kernel.any_transactional(entries) if kernel is not None and transactional_id is None else None
    if isinstance(authorization, tuple):
        request_error = authorization
    elif duplicate:
        request_error = InvalidRequestError.code, "Duplicate partition in produce request"
    elif transactional_id is None and (transactional if transactional is not None else _any_transactional(entries)):
        request_error = (TransactionalIdAuthorizationError.code,
                         "transactional records need the producer's transactional id in the Produce request")
    elif transactional_id is not None and verifier is None:
        request_error = (InvalidRequestError.code,
                         "Transactional produce is not served: this broker has no transaction coordinator")
    if request_error is not None:
        _respond(apis, broker, request, body.acks, version, order, None, _all_failed(order, *request_error))
        return
    to_verify = _partitions_to_verify(apis, entries) if transactional_id is not None else None
    if not to_verify:
        _append(apis, broker, request, body, version, order, entries, denied, {})
        return
    assert transactional_id is not None and verifier is not None
    _verify(broker, transactional_id, verifier, to_verify,
            partial(_append, apis, broker, request, body, version, order, entries, denied))


# (the helpers below keep comprehensions and closures out of handle: each variable one captures is a cell made on
# every call)
def _without(entries: list[tuple[TopicPartition, object]], denied: dict[TopicPartition, PartitionResponse]
             ) -> list[tuple[TopicPartition, object]]:
    return [(tp, records) for tp, records in entries if tp not in denied]


def _all_failed(order: list[TopicPartition], code: int, message: str) -> dict[TopicPartition, PartitionResponse]:
    return {tp: PartitionResponse(error_code=code, error_message=message) for tp in order}


def _verify(broker: BrokerContext, transactional_id: str, verifier: TransactionVerifier,
            to_verify: dict[tuple[int, int], list[TopicPartition]],
            append: Callable[[dict[TopicPartition, PartitionResponse]], None]) -> None:
    """KIP-890: verify the partitions with the transaction coordinator (here or remotely), then ``append`` with the
    refused ones."""
    replication = broker.replica_manager.replication
    coordinator = replication.remote_transaction_coordinator(transactional_id)
    if coordinator is None:
        append(_refusals(transactional_id, {producer: verifier.verify_partitions(
            transactional_id, producer[0], producer[1], partitions) for producer, partitions in to_verify.items()}))
        return
    _verify_remotely(replication, coordinator, transactional_id, to_verify, append)


def _append(apis: KafkaApis, broker: BrokerContext, request: Request, body: ProduceRequest, version: int,
            order: list[TopicPartition], entries: list[tuple[TopicPartition, object]],
            denied: dict[TopicPartition, PartitionResponse], refused: dict[TopicPartition, PartitionResponse]) -> None:
    """Append the partitions of ``entries`` but the ``refused`` ones and answer for all of ``order`` (``denied`` and
    ``refused`` with their own results). (Module-level functions and a partial rather than closures: a closure's
    cells cost more than the rest of the dispatch on every request.)"""
    other = {**refused, **denied} if refused or denied else None
    remaining = [(tp, records) for tp, records in entries if tp not in refused] if refused else entries
    if not remaining:
        _respond(apis, broker, request, body.acks, version, order, None, other or {})
        return
    broker.replica_manager.append_records(body.timeout_ms, body.acks, remaining, partial(
        _respond, apis, broker, request, body.acks, version, order, other))


def _unauthorized(broker: BrokerContext, request: Request, transactional_id: str | None,
                  entries: list[tuple[TopicPartition, object]]) -> dict[TopicPartition, PartitionResponse] | tuple[int, str]:
    """Kafka's checks: WRITE on the transactional id (else the whole request fails with
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED, returned as (code, message)), then WRITE on each topic (the partitions of
    the others answer TOPIC_AUTHORIZATION_FAILED and are not written)."""
    auth = broker.auth(request)
    if not auth.enabled:
        return {}
    if transactional_id is not None and not auth.transactional_id(AclOperation.WRITE, transactional_id):
        return TransactionalIdAuthorizationError.code, f"WRITE on transactional id {transactional_id!r} is not allowed"
    writable = auth.topics(AclOperation.WRITE, (tp.topic for tp, _ in entries))
    return {tp: PartitionResponse(error_code=TopicAuthorizationFailedError.code,
                                  error_message=f"WRITE on topic {tp.topic!r} is not allowed")
            for tp, _ in entries if tp.topic not in writable}


def _verify_remotely(replication: ReplicationStrategy, coordinator: int, transactional_id: str,
                     to_verify: dict[tuple[int, int], list[TopicPartition]],
                     then: Callable[[dict[TopicPartition, PartitionResponse]], None]) -> None:
    """KIP-890 on a leader other than the coordinator's broker: ask it (verify-only AddPartitionsToTxn) without
    holding this handler thread; ``then`` runs on the verification sender's thread once every producer of the
    request was answered."""
    lock = threading.Lock()
    answers: dict[tuple[int, int], Mapping[TopicPartition, int]] = {}

    def answered(producer: tuple[int, int], errors: Mapping[TopicPartition, int]) -> None:
        with lock:
            answers[producer] = errors
            complete = len(answers) == len(to_verify)
        if complete:
            then(_refusals(transactional_id, answers))

    def answer_for(producer: tuple[int, int]) -> Callable[[dict[TopicPartition, int]], None]:
        return lambda errors: answered(producer, errors)

    for producer, partitions in to_verify.items():
        if coordinator < 0:
            answered(producer, {tp: NotEnoughReplicasError.code for tp in partitions})
        else:
            replication.verify_remotely(coordinator, transactional_id, producer[0], producer[1], partitions,
                                        answer_for(producer))


def _partitions_to_verify(apis: KafkaApis, entries: list[tuple[TopicPartition, object]]
                          ) -> dict[tuple[int, int], list[TopicPartition]]:
    """Per (producer id, epoch): the partitions whose transactional batches would open a transaction there."""
    rm = apis.broker.replica_manager
    to_verify: dict[tuple[int, int], list[TopicPartition]] = {}
    for tp, records in entries:
        producer = _transactional_producer(records)
        if producer is not None and not rm.has_ongoing_txn(tp, producer[0]):
            to_verify.setdefault(producer, []).append(tp)
    return to_verify


def _refusals(transactional_id: str, answers: Mapping[tuple[int, int], Mapping[TopicPartition, int]]
              ) -> dict[TopicPartition, PartitionResponse]:
    """The partitions to refuse, from the coordinator's verification answers (one per producer)."""
    refused: dict[TopicPartition, PartitionResponse] = {}
    for (producer_id, _), errors in answers.items():
        for tp, code in errors.items():
            if code == ProducerFencedError.code:
                # Produce has no PRODUCER_FENCED (KIP-588): a stale epoch is INVALID_PRODUCER_EPOCH here, as
                # Kafka answers a verification that found the producer fenced
                code = InvalidProducerEpochError.code
            if code == NotEnoughReplicasError.code:
                refused[tp] = PartitionResponse(error_code=code, error_message=(
                    f"the transaction coordinator of {transactional_id!r} could not verify partition {tp} now "
                    f"(unreachable or moving); retry"))
            elif code != 0:
                refused[tp] = PartitionResponse(error_code=code, error_message=(
                    f"partition {tp} is not in the ongoing transaction of producer {producer_id} "
                    f"(transactional id {transactional_id!r}): add it with AddPartitionsToTxn first"))
    return refused


def _any_transactional(entries: list[tuple[TopicPartition, object]]) -> bool:
    """Whether the first batch of any partition's records is transactional: its v2 header's transactional bit (read
    here, in one frame; the reference of the kernel's ``any_transactional``, which :func:`handle` asks first, where it
    is loaded and takes the records)."""
    for _, records in entries:
        if not isinstance(records, (bytes, bytearray, memoryview)) or len(records) < _ATTRIBUTES_END:
            continue
        view = records if records.__class__ is memoryview else memoryview(records)  # (a request's records are one)
        if view[_MAGIC] == 2 and view[_ATTRIBUTES_END - 1] & _TRANSACTIONAL_FLAG:
            return True
    return False


def _transactional_producer(records: object) -> tuple[int, int] | None:
    """(producer id, epoch) of the first transactional batch; None if none (bad bytes: the log refuses them)."""
    if not isinstance(records, (bytes, bytearray, memoryview)):
        return None
    try:
        for batch in MemoryRecords(records).batches():
            if isinstance(batch, DefaultRecordBatch) and batch.is_transactional and not batch.is_control:
                return batch.producer_id, batch.producer_epoch
    except KafkaError:
        return None
    return None


def _respond(apis: KafkaApis, broker: BrokerContext, request: Request, acks: int, version: int,
             order: list[TopicPartition], other: dict[TopicPartition, PartitionResponse] | None,
             results: dict[TopicPartition, PartitionResponse]) -> None:
    """Answer with the partitions' ``results`` and the ``other`` ones (refused, denied: None when there are none)."""
    if other:
        results = {**results, **other}
    if acks == 0:
        failed = [(tp, r.error_code) for tp, r in results.items() if r.error_code != 0]
        if failed:
            log.info("event=acks0_produce_failed connection=%s errors=%s action=close_connection",
                     request.connection_id, ",".join(f"{tp}:{code}" for tp, code in failed))
            apis.close_connection(request)
        else:
            apis.send_no_op_response(request)
        return
    faults = broker.faults
    if faults is not None and faults.should_drop_produce_response(tp.topic for tp in order):
        log.info("event=fault_injected connection=%s action=close_before_produce_response", request.connection_id)
        apis.close_connection(request)
        return
    kernel = _native.kernel
    if kernel is not None:
        # the usual answer's frame straight from the results (no response objects built) where nothing may change it
        # on the way (no response gate, no active quota: see KafkaApis.send_frame); the reference is what follows
        frame = kernel.produce_results_frame(order, results, version, request.context.correlation_id,
                                             _LEADER_HINT_ERRORS)
        if frame is not None and apis.send_frame(request, frame):
            return
    response = _build(broker, version, order, results, request.context.listener_name)
    apis.send_response(request, response, encoded=encode_produce_response(response, version,
                                                                          request.context.correlation_id))


API = ApiSpec(ApiKey.PRODUCE, 3, 11, handle, read_request=read_produce_request)
