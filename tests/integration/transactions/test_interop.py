"""Transactions across clients and brokers. Each producer writes the same pattern to a 1-partition topic: a
committed transaction (c0-c4), an aborted one whose records did reach the log (a0-a2), a committed one (c5).
A read_committed reader must see exactly c0-c5, a read_uncommitted one all nine.

Producers: confluent-kafka, kafka-python 3, aiokafka and ours; readers: ours and confluent-kafka. Each runs on
mini_broker and on noida-db (an independent implementation of transactions: proves the test itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from tests.integration.transactions.harness import (
    TxnProducer,
    create_topic,
    read_partition_confluent,
    read_partition_ours,
)

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(120)]

TOPIC = "txn-interop"
COMMITTED = [b"c%d" % i for i in range(6)]
ALL = [b"c0", b"c1", b"c2", b"c3", b"c4", b"a0", b"a1", b"a2", b"c5"]


def _with_txn_producer(client: str, bootstrap: str) -> None:
    """ours / confluent through the shared adapter."""
    p = TxnProducer(client, bootstrap, f"interop-{client}")
    try:
        p.init()
        p.begin()
        for v in ALL[:5]:
            p.send(TOPIC, v)
        p.commit()
        p.begin()
        for v in ALL[5:8]:
            p.send(TOPIC, v)
        p.flush()  # in the log before the abort
        p.abort()
        p.begin()
        p.send(TOPIC, b"c5")
        p.commit()
    finally:
        p.close()


def _with_kafka_python(bootstrap: str) -> None:
    import kafka

    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id="interop-kafka-python", linger_ms=5)
    try:
        p.init_transactions()
        p.begin_transaction()
        for v in ALL[:5]:
            p.send(TOPIC, v, partition=0)
        p.commit_transaction()
        p.begin_transaction()
        for v in ALL[5:8]:
            p.send(TOPIC, v, partition=0)
        p.flush(20)
        p.abort_transaction()
        p.begin_transaction()
        p.send(TOPIC, b"c5", partition=0)
        p.commit_transaction()
    finally:
        p.close(5)


def _with_aiokafka(bootstrap: str) -> None:
    import aiokafka

    async def main() -> None:
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="interop-aiokafka", linger_ms=5)
        await p.start()
        try:
            async with p.transaction():
                for v in ALL[:5]:
                    await p.send(TOPIC, v, partition=0)
            await p.begin_transaction()
            futures = [await p.send(TOPIC, v, partition=0) for v in ALL[5:8]]
            await asyncio.gather(*futures)  # acknowledged: in the log
            await p.abort_transaction()
            async with p.transaction():
                await p.send(TOPIC, b"c5", partition=0)
        finally:
            await p.stop()

    asyncio.run(main())


PRODUCERS: dict[str, Callable[[str], None]] = {
    "ours": lambda b: _with_txn_producer("ours", b),
    "confluent": lambda b: _with_txn_producer("confluent", b),
    "kafka-python": _with_kafka_python,
    "aiokafka": _with_aiokafka,
}
READERS = {"ours": read_partition_ours, "confluent": read_partition_confluent}


@pytest.mark.parametrize(("producer", "reader"), [
    ("confluent", "ours"), ("confluent", "confluent"), ("kafka-python", "ours"), ("aiokafka", "ours"),
    ("ours", "confluent"), ("ours", "ours"),
])
def test_transactional_producer_read_committed(txn_broker: str, producer: str, reader: str) -> None:
    create_topic(txn_broker, TOPIC, 1)
    PRODUCERS[producer](txn_broker)
    read = READERS[reader]
    assert read(txn_broker, TOPIC, 0, "read_committed") == COMMITTED
    assert read(txn_broker, TOPIC, 0, "read_uncommitted") == ALL
