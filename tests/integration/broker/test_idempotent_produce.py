"""Idempotent producers end to end against a real MiniBroker whose Produce responses are lost after the
append (the TEST-ONLY ``FaultInjector``): every retried batch must be recognised as a duplicate, so each
partition holds every record exactly once, in send order. Producers: ours, librdkafka (confluent-kafka)
and kafka-python 3. Records are read back with confluent-kafka's consumer; log end offsets are checked too.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.server.faults import FaultInjector
from pykafka_client import KafkaProducer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ck = pytest.importorskip("confluent_kafka")

PARTITIONS = 3


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker(num_network_threads=2, num_io_threads=2, fault_injector=FaultInjector()) as b:
        yield b


def new_topic(broker: MiniBroker) -> str:
    name = f"idem-{uuid.uuid4().hex[:8]}"
    assert broker.replica_manager is not None
    broker.replica_manager.create_topic(name, PARTITIONS, {})
    return name


def faults(broker: MiniBroker) -> FaultInjector:
    assert broker.faults is not None
    return broker.faults


def consume_all(broker: MiniBroker, topic: str, counts: list[int]) -> dict[int, list[bytes]]:
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "idem-no-join",
                     "enable.auto.commit": False, "enable.partition.eof": False})
    try:
        c.assign([ck.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + 20
        while sum(len(v) for v in out.values()) < sum(counts) and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert m.error() is None, m.error()
                out[m.partition()].append(m.value())
        return out
    finally:
        c.close()


def check_exactly_once_in_order(broker: MiniBroker, topic: str, sent: dict[int, list[bytes]]) -> None:
    assert broker.replica_manager is not None
    for p in range(PARTITIONS):
        lg = broker.replica_manager.log_manager.get_log(topic, p)
        assert lg is not None
        assert lg.log_end_offset == len(sent[p]), f"partition {p}: duplicates or losses in the log"
    got = consume_all(broker, topic, [len(sent[p]) for p in range(PARTITIONS)])
    for p in range(PARTITIONS):
        assert got[p] == sent[p], f"partition {p}: order or content differs"


# (acks must stay "all": as in Java, an explicit acks=1 turns the default idempotence off)
@pytest.mark.parametrize(("batch_size", "drops_in_a_row"), [(4096, 1), (1024, 3)])
def test_our_producer_no_duplicates_no_reordering_when_acks_are_lost(
        broker: MiniBroker, batch_size: int, drops_in_a_row: int) -> None:
    topic = new_topic(broker)
    before = faults(broker).dropped_produce_responses
    sent: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    futures: list[tuple[int, int, Any]] = []
    drops = 0
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 2,
                        "batch.size": batch_size, "max.in.flight.requests.per.connection": 5,
                        "retry.backoff.ms": 20, "max.block.ms": 10_000}) as producer:
        for i in range(20_000):
            if i % 4000 == 1000:
                # spread the faults over the stream: arm the next one once the sender got close to here
                futures[-200][2].result(20)
                faults(broker).drop_produce_responses(drops_in_a_row, topic=topic)
                drops += drops_in_a_row
            p = i % PARTITIONS
            value = b"%d" % i
            futures.append((p, len(sent[p]), producer.send(topic, value, partition=p)))
            sent[p].append(value)
        producer.flush(30)
        for p, index, fut in futures:
            md = fut.result(0)
            assert (md.partition, md.offset) == (p, index)  # a duplicate is answered with the original offsets
    assert faults(broker).dropped_produce_responses - before == drops == 5 * drops_in_a_row
    check_exactly_once_in_order(broker, topic, sent)


def test_librdkafka_idempotent_producer_no_duplicates_when_acks_are_lost(broker: MiniBroker) -> None:
    topic = new_topic(broker)
    before = faults(broker).dropped_produce_responses
    sent: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    errors: list[Any] = []
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                            "linger.ms": 2, "batch.num.messages": 200, "retry.backoff.ms": 20})

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for i in range(20_000):
        if i % 4000 == 1000:
            producer.flush(10)  # let the batches before go out, so each drop hits a different request
            faults(broker).drop_produce_responses(1, topic=topic)
        p = i % PARTITIONS
        value = b"%d" % i
        while True:
            try:
                producer.produce(topic, value, partition=p, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        sent[p].append(value)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []
    assert faults(broker).dropped_produce_responses - before == 5
    check_exactly_once_in_order(broker, topic, sent)


def test_kafka_python_idempotent_producer_no_duplicates_when_acks_are_lost(broker: MiniBroker) -> None:
    kafka = pytest.importorskip("kafka")
    topic = new_topic(broker)
    before = faults(broker).dropped_produce_responses
    sent: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True,
                                   acks="all", linger_ms=2, batch_size=4096, retry_backoff_ms=20)
    try:
        futures = []
        for i in range(3000):
            if i % 1000 == 500:
                producer.flush(10)
                faults(broker).drop_produce_responses(1, topic=topic)
            p = i % PARTITIONS
            value = b"%d" % i
            futures.append(producer.send(topic, value, partition=p))
            sent[p].append(value)
        producer.flush(30)
        for f in futures:
            f.get(0)
    finally:
        producer.close(5)
    assert faults(broker).dropped_produce_responses - before == 3
    check_exactly_once_in_order(broker, topic, sent)
