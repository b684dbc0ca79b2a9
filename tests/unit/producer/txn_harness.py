"""A transactional Sender on MockClient + MockTime, with builders for the transactional responses
(Java TransactionManagerTest setup: ``prepareFindCoordinatorResponse``, ``prepareInitPidResponse``...)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pykafka_client.producer.future_record_metadata import FutureRecordMetadata
from pykafka_client.producer.transaction_manager import TransactionManager
from pykafka_client.producer.transaction_state import State
from pykafka_client.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from pykafka_client.structs import Node, TopicPartition
from tests.unit.producer.sender_harness import PID, TP0, Harness, init_pid_response, produce_response

TXN_ID = "txn-1"
GROUP = "group-1"


def find_coordinator_response(node: Node, error_code: int = 0) -> FindCoordinatorResponse:
    return FindCoordinatorResponse(error_code=error_code, node_id=node.id, host=node.host, port=node.port)


def add_partitions_response(errors: dict[TopicPartition, int]) -> AddPartitionsToTxnResponse:
    by_topic: dict[str, list[AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult]] = {}
    for tp, code in errors.items():
        by_topic.setdefault(tp.topic, []).append(
            AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult(partition_index=tp.partition, partition_error_code=code)
        )
    return AddPartitionsToTxnResponse(
        results_by_topic_v3_and_below=[
            AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult(name=t, results_by_partition=ps) for t, ps in by_topic.items()
        ]
    )


def end_txn_response(error_code: int = 0) -> EndTxnResponse:
    return EndTxnResponse(error_code=error_code)


def add_offsets_response(error_code: int = 0) -> AddOffsetsToTxnResponse:
    return AddOffsetsToTxnResponse(error_code=error_code)


def txn_offset_commit_response(errors: dict[TopicPartition, int]) -> TxnOffsetCommitResponse:
    by_topic: dict[str, list[TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition]] = {}
    for tp, code in errors.items():
        by_topic.setdefault(tp.topic, []).append(
            TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition(partition_index=tp.partition, error_code=code)
        )
    return TxnOffsetCommitResponse(
        topics=[TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic(name=t, partitions=ps) for t, ps in by_topic.items()]
    )


def is_type(cls: type) -> Any:
    return lambda body: isinstance(body, cls)


def is_find_coordinator(key_type: int) -> Any:
    return lambda body: isinstance(body, FindCoordinatorRequest) and body.key_type == key_type


def is_end_txn(committed: bool) -> Any:
    return lambda body: isinstance(body, EndTxnRequest) and body.committed is committed


is_init_pid = is_type(InitProducerIdRequest)
is_add_partitions = is_type(AddPartitionsToTxnRequest)
is_add_offsets = is_type(AddOffsetsToTxnRequest)
is_txn_offset_commit = is_type(TxnOffsetCommitRequest)
is_produce = is_type(ProduceRequest)


class TxnHarness(Harness):
    """A Sender whose TransactionManager has a transactional id; the test plays the Sender thread, so
    invalid transitions from I/O-thread code poison the manager as they would there."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(transactional_id=TXN_ID, **kwargs)
        assert self.tm is not None
        self.txn: TransactionManager = self.tm

    def sent_bodies(self) -> list[Any]:
        return [r.body for r in self.client.sent]

    def sent_of(self, cls: type) -> list[Any]:
        return [b for b in self.sent_bodies() if isinstance(b, cls)]

    def init_transactions(self, pid: int = PID, epoch: int = 0) -> None:
        self.client.prepare_response(find_coordinator_response(self.node0), is_find_coordinator(1))
        self.client.prepare_response(init_pid_response(pid=pid, epoch=epoch), is_init_pid)
        result = self.txn.initialize_transactions()
        self.run_until(result.is_completed)
        result.await_(0)  # the application has seen it (KafkaProducer.init_transactions returned)
        assert self.txn.state is State.READY

    def send(self, tp: TopicPartition = TP0, value: bytes = b"value") -> FutureRecordMetadata:
        """KafkaProducer.send's order: the record is appended, then its partition added to the transaction."""
        (future,) = self.append(tp, value)
        self.txn.maybe_add_partition(tp)
        return future

    def send_and_add(self, tps: Iterable[TopicPartition] = (TP0,)) -> list[FutureRecordMetadata]:
        """Send one record per partition and let AddPartitionsToTxn succeed for them."""
        tps = list(tps)
        futures = [self.send(tp) for tp in tps]
        self.client.prepare_response(add_partitions_response(dict.fromkeys(tps, 0)), is_add_partitions)
        self.run_until(lambda: all(self.txn.is_partition_added(tp) for tp in tps))
        return futures

    def produce_ok(self, tps: Iterable[TopicPartition] = (TP0,), base_offset: int = 0) -> None:
        self.client.prepare_response(produce_response({tp: (0, base_offset) for tp in tps}), is_produce)
