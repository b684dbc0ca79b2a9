"""End to end on mini_broker: a confluent-kafka (librdkafka) transactional producer commits one transaction and
aborts another and leaves a third open; our read_committed KafkaConsumer and confluent-kafka's see exactly the
committed records up to the LSO, our read_uncommitted one sees everything, and committing the open
transaction releases the LSO."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.consumer.kafka_consumer import KafkaConsumer
from pykafka_client.structs import TopicPartition

ck = pytest.importorskip("confluent_kafka")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TP = TopicPartition("txn-e2e", 0)


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """commit/abort_transaction return once the coordinator made the outcome durable; the markers are written
    just after (Kafka's order), so the log reflects them a moment later."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def consume(bootstrap: str, isolation: str, end: int) -> list[bytes]:
    consumer: KafkaConsumer[bytes | None, bytes | None] = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                                          auto_offset_reset="earliest")
    try:
        consumer.assign([TP])
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while consumer.position(TP) < end and time.monotonic() < deadline:
            seen += [r.value for r in consumer.poll(0.5) if r.value is not None]
        return seen
    finally:
        consumer.close()


def consume_confluent(bootstrap: str, end: int) -> list[bytes]:
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "rc-interop", "isolation.level": "read_committed",
                     "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition(TP.topic, 0, ck.OFFSET_BEGINNING)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                seen.append(m.value())
            elif c.position([ck.TopicPartition(TP.topic, 0)])[0].offset >= end:
                break
        return seen
    finally:
        c.close()


def test_confluent_transactions_read_committed_by_our_consumer() -> None:
    with MiniBroker(num_network_threads=1, num_io_threads=2) as broker:
        assert broker.context is not None and broker.replica_manager is not None
        assert broker.context.transaction_verifier is not None  # the broker's transaction coordinator
        broker.replica_manager.create_topic(TP.topic, 1, {})
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "e2e-tx",
                                "linger.ms": 5})
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(5):
            producer.produce(TP.topic, value=b"committed-%d" % i, partition=0)
        producer.commit_transaction(30)
        producer.begin_transaction()
        for i in range(3):
            producer.produce(TP.topic, value=b"aborted-%d" % i, partition=0)
        producer.flush(30)
        producer.abort_transaction(30)
        producer.begin_transaction()
        producer.produce(TP.topic, value=b"open", partition=0)
        producer.flush(30)  # written, its transaction left open: holds the LSO back

        rm = broker.replica_manager
        lg = rm.log_manager.get_log(TP.topic, 0)
        assert lg is not None
        wait_until(lambda: lg.high_watermark == 11, "the ABORT marker and the open transaction's record")
        lso, hw = lg.last_stable_offset, lg.high_watermark
        assert lso < hw  # 5 data + COMMIT + 3 data + ABORT = 10; "open" at 10
        assert lso == 10
        assert consume(broker.bootstrap_servers, "read_committed", lso) == [b"committed-%d" % i for i in range(5)]
        assert consume_confluent(broker.bootstrap_servers, lso) == [b"committed-%d" % i for i in range(5)]
        uncommitted = consume(broker.bootstrap_servers, "read_uncommitted", hw)
        assert uncommitted == [b"committed-%d" % i for i in range(5)] + [b"aborted-%d" % i for i in range(3)] + [b"open"]
        producer.commit_transaction(30)
        wait_until(lambda: lg.last_stable_offset == lg.high_watermark == 12, "the COMMIT marker")
        assert consume(broker.bootstrap_servers, "read_committed", 12)[-1] == b"open"
