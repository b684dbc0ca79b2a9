"""AddPartitionsToTxn (key 24): partitions join a producer's transaction before it writes to them.

v0-3 carry one transaction (the client form). v4+ carry a batch of transactions (KIP-890), each either
added or, with ``verify_only``, checked: NONE for a partition already in the ongoing transaction,
TRANSACTION_ABORTABLE otherwise (INVALID_TXN_STATE at v4, which predates that error). A partition the broker does not host gets UNKNOWN_TOPIC_OR_PARTITION and
the others of its transaction OPERATION_NOT_ATTEMPTED, without the coordinator being asked. Authorization as Kafka:
v0-3 (clients) need WRITE on the transactional id and on each topic; v4+ (brokers) CLUSTER_ACTION on the cluster
(else CLUSTER_AUTHORIZATION_FAILED for the whole request).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping

from mini_broker.network.request_channel import Request
from mini_broker.security.auth_helper import RequestAuth
from mini_broker.server.apis.txn_api_util import (
    fenced_for_version,
    transaction_coordinator,
    unknown_partition_errors,
)
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.transaction.transaction_requests import AddPartitionsParams
from pykafka_client.errors import (
    ClusterAuthorizationFailedError,
    InvalidTxnStateError,
    OperationNotAttemptedError,
    TopicAuthorizationFailedError,
    TransactionAbortableError,
    TransactionalIdAuthorizationError,
)
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from pykafka_client.structs import TopicPartition

Response = AddPartitionsToTxnResponse


def _partitions(topics: Iterable[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic]) -> list[TopicPartition]:
    return [TopicPartition(t.name, p) for t in topics for p in t.partitions]


def _topic_results(errors: Mapping[TopicPartition, int]) -> list[Response.AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[Response.AddPartitionsToTxnPartitionResult]] = {}
    for tp, error in errors.items():
        by_topic.setdefault(tp.topic, []).append(
            Response.AddPartitionsToTxnPartitionResult(partition_index=tp.partition, partition_error_code=error))
    return [Response.AddPartitionsToTxnTopicResult(name=t, results_by_partition=r) for t, r in by_topic.items()]


def _add(apis: KafkaApis, version: int, transactional_id: str, producer_id: int, producer_epoch: int,
         partitions: list[TopicPartition], verify_only: bool,
         done: Callable[[dict[TopicPartition, int]], None]) -> None:
    """Answer one transaction of the request through ``done`` (maybe later, from another thread)."""
    errors = unknown_partition_errors(apis, partitions)
    if errors is not None:
        done(errors)
        return
    coordinator = transaction_coordinator(apis)
    if verify_only:
        errors = dict(coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions))
        if version < 5:  # TRANSACTION_ABORTABLE came with v5 (KIP-1050); older verifiers know INVALID_TXN_STATE
            errors = {tp: InvalidTxnStateError.code if e == TransactionAbortableError.code else e
                      for tp, e in errors.items()}
        done(errors)
        return
    coordinator.handle_add_partitions(AddPartitionsParams(transactional_id, producer_id, producer_epoch, partitions),
                                      lambda error: done({tp: fenced_for_version(error, version, 2) for tp in partitions}))


def handle(apis: KafkaApis, request: Request) -> Response | None:
    body = request.body
    assert isinstance(body, AddPartitionsToTxnRequest)
    auth = apis.broker.auth(request)
    if request.context.api_version < 4:
        denied = _authorization_errors(auth, body.v3_and_below_transactional_id, _partitions(body.v3_and_below_topics))
        if denied is not None:
            return Response(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(denied))
        _add(apis, request.context.api_version, body.v3_and_below_transactional_id, body.v3_and_below_producer_id,
             body.v3_and_below_producer_epoch, _partitions(body.v3_and_below_topics), False,
             lambda errors: apis.send_response(request, Response(throttle_time_ms=0,
                                                                 results_by_topic_v3_and_below=_topic_results(errors))))
        return None
    if not auth.cluster(AclOperation.CLUSTER_ACTION):  # v4+ come from brokers only
        return Response(throttle_time_ms=0, error_code=ClusterAuthorizationFailedError.code, results_by_transaction=[])
    transactions = list(body.transactions)
    results: list[Response.AddPartitionsToTxnResult | None] = [None] * len(transactions)
    lock = threading.Lock()
    remaining = [len(transactions)]

    def finish(i: int, transactional_id: str, errors: dict[TopicPartition, int]) -> None:
        with lock:
            results[i] = Response.AddPartitionsToTxnResult(transactional_id=transactional_id,
                                                           topic_results=_topic_results(errors))
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            apis.send_response(request, Response(throttle_time_ms=0, error_code=0,
                                                 results_by_transaction=[r for r in results if r is not None]))

    if not transactions:
        return Response(throttle_time_ms=0, error_code=0, results_by_transaction=[])

    def finisher(i: int, transactional_id: str) -> Callable[[dict[TopicPartition, int]], None]:
        return lambda errors: finish(i, transactional_id, errors)

    for i, txn in enumerate(transactions):
        _add(apis, request.context.api_version, txn.transactional_id, txn.producer_id, txn.producer_epoch, _partitions(txn.topics),
             txn.verify_only, finisher(i, txn.transactional_id))
    return None


def _authorization_errors(auth: RequestAuth, transactional_id: str, partitions: list[TopicPartition]
                          ) -> dict[TopicPartition, int] | None:
    """Kafka's checks of a client's (v0-3) request: WRITE on the transactional id (else
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition), WRITE on each topic (else TOPIC_AUTHORIZATION_FAILED,
    and OPERATION_NOT_ATTEMPTED for the others). None: all allowed."""
    if not auth.transactional_id(AclOperation.WRITE, transactional_id):
        return {tp: TransactionalIdAuthorizationError.code for tp in partitions}
    writable = auth.topics(AclOperation.WRITE, (tp.topic for tp in partitions))
    if all(tp.topic in writable for tp in partitions):
        return None
    return {tp: OperationNotAttemptedError.code if tp.topic in writable else TopicAuthorizationFailedError.code
            for tp in partitions}


API = ApiSpec(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, handle)
