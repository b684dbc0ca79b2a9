"""Transaction markers wait for the ISR (Kafka writes them with acks=-1): the coordinator completes a
transaction only once every in-sync replica of every partition has its marker.

A follower in the ISR is frozen (SIGSTOP) with the session and lag timeouts long enough that it stays in the
ISR; the transaction's commit stays in PrepareCommit while the follower cannot fetch the marker, and
completes once it fetches again."""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import KafkaProducer
from pykafka_client.protocol.messages import DescribeTransactionsRequest
from tests.integration.cluster.failover import wait_until
from tests.integration.cluster.helpers import conn, transaction_coordinator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: a frozen follower stays registered and in the ISR this long (the test needs a few seconds of it)
SLOW_DETECTION_MS = 60_000


@pytest.fixture(scope="module")
def slow_cluster() -> Iterator[MiniCluster]:
    with tempfile.TemporaryDirectory(prefix="txn-markers-isr-") as d, MiniCluster(3, data_dir=d, overrides={
            "broker.session.timeout.ms": SLOW_DETECTION_MS, "replica.lag.time.max.ms": SLOW_DETECTION_MS,
            # the coordinator's own records must not wait for the frozen broker: __transaction_state on one replica
            "transaction.state.log.replication.factor": 1}) as c:
        yield c


def transaction_state(cluster: MiniCluster, coordinator: int, transactional_id: str) -> str:
    with conn(cluster, coordinator) as c:
        resp: Any = c.call(DescribeTransactionsRequest(transactional_ids=[transactional_id]), 0)
    return str(resp.transaction_states[0].transaction_state)


def test_the_coordinator_completes_a_commit_only_when_the_isr_has_the_marker(slow_cluster: MiniCluster) -> None:
    cluster, topic, txn = slow_cluster, "markers-isr", "markers-isr-tx"
    cluster.create_topic(topic, partitions=3, replication_factor=2)
    coordinator = transaction_coordinator(cluster, txn)
    # a partition whose follower is not the coordinator's broker (that one is frozen below)
    p, follower = next((q, f) for q in range(3) for f in cluster.isr(topic, q)
                       if f != cluster.leader(topic, q) and f != coordinator)
    producer = KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn,
                              "acks": "all", "linger.ms": 0})
    try:
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.send(topic, value=b"committed", partition=p).result(60)
        os.kill(cluster.brokers[follower].pid, signal.SIGSTOP)
        try:
            producer.commit_transaction(60)  # answered once PrepareCommit is written; markers follow
            time.sleep(3)  # old behaviour: CompleteCommit within milliseconds of the leader's local append
            assert transaction_state(cluster, coordinator, txn) == "PrepareCommit", \
                "the coordinator completed the commit before the ISR had the marker"
            assert follower in cluster.isr(topic, p)
        finally:
            os.kill(cluster.brokers[follower].pid, signal.SIGCONT)
        wait_until(lambda: transaction_state(cluster, coordinator, txn) == "CompleteCommit", 60,
                   "the commit to complete once the follower fetched the marker")
    finally:
        producer.close(10)
