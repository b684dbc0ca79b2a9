"""End to end with confluent-kafka (librdkafka) as the transactional producer against a real MiniBroker:
init_transactions, produce, commit_transaction, abort_transaction and send_offsets_to_transaction succeed,
the coordinator ends each transaction Complete*, and a read_committed confluent consumer sees exactly the
committed records. Needs the partition side's WriteTxnMarkers path (``BrokerContext.txn_marker_writer``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker

ck = pytest.importorskip("confluent_kafka")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "t"


@pytest.fixture
def broker() -> Iterator[MiniBroker]:
    with MiniBroker() as b:
        assert b.context is not None and b.replica_manager is not None
        b.replica_manager.create_topic(TOPIC, 2, {})
        yield b


def state_of(broker: MiniBroker, transactional_id: str) -> str:
    assert broker.transaction_coordinator is not None
    deadline = time.monotonic() + 10
    while True:
        _, d = broker.transaction_coordinator.handle_describe(transactional_id)
        assert d is not None
        if not d.state.startswith("Prepare") or time.monotonic() > deadline:
            return d.state
        time.sleep(0.01)


def test_confluent_transactional_producer(broker: MiniBroker) -> None:
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "ck-tx"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce(TOPIC, value=b"c%d" % i, partition=i % 2)
    p.commit_transaction(30)
    assert state_of(broker, "ck-tx") == "CompleteCommit"

    p.begin_transaction()
    for i in range(5):
        p.produce(TOPIC, value=b"a%d" % i, partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    assert state_of(broker, "ck-tx") == "CompleteAbort"

    p.begin_transaction()
    p.produce(TOPIC, value=b"o0", partition=0)
    group_metadata = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers,
                                  "group.id": "ck-group"}).consumer_group_metadata()
    p.send_offsets_to_transaction([ck.TopicPartition(TOPIC, 0, 3)], group_metadata, 30)
    p.commit_transaction(30)
    assert state_of(broker, "ck-tx") == "CompleteCommit"

    c = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "reader",
                     "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition(TOPIC, 0, 0), ck.TopicPartition(TOPIC, 1, 0)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(seen) < 11 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                seen.append(m.value())
        assert sorted(seen) == sorted([b"c%d" % i for i in range(10)] + [b"o0"])
    finally:
        c.close()
