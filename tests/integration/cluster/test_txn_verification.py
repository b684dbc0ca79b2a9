"""KIP-890 verification on every partition leader of a 3-broker MiniCluster: a leader that is not the
transaction coordinator's broker asks the coordinator (verify-only AddPartitionsToTxn over an inter-broker
connection) before a producer's first transactional batch opens a transaction on its partition, and refuses
the batch when the partition is not in the producer's ongoing transaction."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client.errors import InvalidTxnStateError, TransactionAbortableError
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.protocol.messages import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    ProduceRequest,
)
from pykafka_client.structs import TopicPartition
from tests.integration.cluster.helpers import conn, transaction_coordinator
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOPIC = "kip890"
PARTITIONS = 3
#: "not in the ongoing transaction": INVALID_TXN_STATE, or TRANSACTION_ABORTABLE from verifiers that know it
NOT_IN_TRANSACTION = {InvalidTxnStateError.code, TransactionAbortableError.code}


def txn_batch(partition: int, pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    b = ProducerBatch(TopicPartition(TOPIC, partition), 1 << 20, 0)
    now = int(time.time() * 1000)
    for v in values:
        assert b.try_append(now, None, v, [], None, 0) is not None
    b.set_producer_state(pid, epoch, seq, True)
    return b.records()


def produce(c: Conn, transactional_id: str, partition: int, records: bytes) -> Any:
    req = ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=10_000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    return c.call(req, 9).responses[0].partition_responses[0]


def log_end(c: Conn, partition: int) -> int:
    req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=-1)])])
    return int(c.call(req, 7).topics[0].partitions[0].offset)


def test_a_leader_other_than_the_coordinators_refuses_a_partition_not_in_the_transaction(
        cluster: MiniCluster) -> None:
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    txn = "kip890-tx"
    coordinator = transaction_coordinator(cluster, txn)
    remote = [p for p in range(PARTITIONS) if cluster.leader(TOPIC, p) != coordinator]
    assert remote, "no partition led by a broker other than the transaction coordinator's"
    p = remote[0]
    leader = cluster.leader(TOPIC, p)
    with conn(cluster, coordinator) as co, conn(cluster, leader) as lc:
        init = co.call(InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000), 4)
        assert init.error_code == 0
        pid, epoch = init.producer_id, init.producer_epoch
        before = log_end(lc, p)
        # no AddPartitionsToTxn: the leader asks the coordinator, which knows of no ongoing transaction
        refused = produce(lc, txn, p, txn_batch(p, pid, epoch, 0, [b"never"]))
        assert refused.error_code in NOT_IN_TRANSACTION, refused
        assert log_end(lc, p) == before, "the refused transactional batch was written"
        # with the partition added, the same producer's batch is verified and written
        added = co.call(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[p])]), 3)
        assert [r.partition_error_code for t in added.results_by_topic_v3_and_below
                for r in t.results_by_partition] == [0]
        accepted = produce(lc, txn, p, txn_batch(p, pid, epoch, 0, [b"in the transaction"]))
        assert accepted.error_code == 0, accepted
        assert accepted.base_offset == before
        # another partition of that leader, not added, is still refused while the transaction is open
        others = [q for q in range(PARTITIONS) if q != p and cluster.leader(TOPIC, q) == leader]
        for q in others:
            assert produce(lc, txn, q, txn_batch(q, pid, epoch, 0, [b"never"])).error_code in NOT_IN_TRANSACTION
        end = co.call(EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=False), 3)
        assert end.error_code == 0
