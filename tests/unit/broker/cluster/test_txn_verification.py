"""KIP-890 verification asked of a remote coordinator: batching per request, the verify-only request, and how
the coordinator's answers become the Produce's per-partition errors."""

from __future__ import annotations

from mini_broker.cluster.txn_verification import Verification, answers_of, request_for, split_batch
from pykafka_client.errors import (
    ConcurrentTransactionsError,
    InvalidTxnStateError,
    NotCoordinatorError,
    NotEnoughReplicasError,
)
from pykafka_client.protocol.messages import AddPartitionsToTxnResponse as R
from pykafka_client.structs import TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def _v(txn: str, *partitions: TopicPartition) -> Verification:
    return Verification(txn, 7, 1, list(partitions), lambda errors: None)


def test_one_request_holds_one_question_per_transactional_id_in_order() -> None:
    queue = [_v("x", A0), _v("y", A1), _v("x", B0), _v("z", A0)]
    batch, rest = split_batch(queue)
    assert batch == [queue[0], queue[1], queue[3]] and rest == [queue[2]]
    assert split_batch(rest) == ([queue[2]], [])


def test_the_request_is_verify_only_with_partitions_grouped_by_topic() -> None:
    req = request_for([_v("x", A0, A1, B0)])
    [txn] = req.transactions
    assert (txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.verify_only) == ("x", 7, 1, True)
    assert {t.name: t.partitions for t in txn.topics} == {"a": [0, 1], "b": [0]}


def _result(txn: str, errors: dict[TopicPartition, int]) -> R.AddPartitionsToTxnResult:
    by_topic: dict[str, list[R.AddPartitionsToTxnPartitionResult]] = {}
    for tp, e in errors.items():
        by_topic.setdefault(tp.topic, []).append(R.AddPartitionsToTxnPartitionResult(
            partition_index=tp.partition, partition_error_code=e))
    return R.AddPartitionsToTxnResult(transactional_id=txn, topic_results=[
        R.AddPartitionsToTxnTopicResult(name=t, results_by_partition=ps) for t, ps in by_topic.items()])


def test_answers_map_refusals_through_and_retriable_coordinator_errors_to_not_enough_replicas() -> None:
    batch = [_v("x", A0, A1, B0), _v("y", A0)]
    resp = R(throttle_time_ms=0, error_code=0, results_by_transaction=[
        _result("x", {A0: 0, A1: InvalidTxnStateError.code}),  # B0 not answered
        _result("y", {A0: NotCoordinatorError.code}),
    ])
    assert answers_of(batch, resp) == [
        {A0: 0, A1: InvalidTxnStateError.code, B0: NotEnoughReplicasError.code},
        {A0: NotEnoughReplicasError.code},
    ]
    whole = R(throttle_time_ms=0, error_code=ConcurrentTransactionsError.code, results_by_transaction=[])
    assert answers_of(batch[:1], whole) == [{A0: NotEnoughReplicasError.code, A1: NotEnoughReplicasError.code,
                                             B0: NotEnoughReplicasError.code}]
