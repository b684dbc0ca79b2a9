"""Our transactional producer against noida-db (an independent broker that implements transactions) and
against MiniBroker (skipped on a MiniBroker without the transaction APIs), read back by confluent-kafka
consumers: read_committed sees committed records only, read_uncommitted
shows that the aborted ones were really written; an older producer with the same transactional.id is
fenced and nothing of its open transaction ever becomes visible."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from pykafka_client import KafkaProducer
from pykafka_client.errors import InvalidProducerEpochError, ProducerFencedError
from pykafka_client.errors_base import KafkaError

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(180)]

ck = pytest.importorskip("confluent_kafka")


@pytest.fixture(params=["noida", "mini_broker"])
def txn_broker(request: pytest.FixtureRequest) -> Any:
    if request.param == "mini_broker":
        return request.getfixturevalue("mini_broker_server")
    return request.getfixturevalue("noida_broker")


def create_topic(bootstrap: str, partitions: int) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # re-exported from cimpl without __all__

    name = f"txn-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(20)
    return name


def read_values(bootstrap: str, topic: str, partitions: int, isolation: str, settle_s: float = 3.0) -> list[bytes]:
    """Every value a consumer with ``isolation`` reads, polling until nothing new arrives for ``settle_s``."""
    c = ck.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "isolation.level": isolation,
    })
    try:
        c.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[bytes] = []
        quiet_since = time.monotonic()
        deadline = time.monotonic() + 30
        while time.monotonic() - quiet_since < settle_s and time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is None or msg.error():
                continue
            out.append(msg.value())
            quiet_since = time.monotonic()
        return out
    finally:
        c.close()


def producer(bootstrap: str, txn_id: str) -> KafkaProducer:
    return KafkaProducer({
        "bootstrap.servers": bootstrap, "transactional.id": txn_id, "max.block.ms": 30_000, "linger.ms": 5,
    })


def test_commit_visible_abort_not(txn_broker: Any) -> None:
    bootstrap = txn_broker.bootstrap
    topic = create_topic(bootstrap, 3)
    with producer(bootstrap, f"t-{uuid.uuid4().hex[:8]}") as p:
        p.init_transactions()
        p.begin_transaction()
        committed = [p.send(topic, b"c%d" % i, key=b"k%d" % i) for i in range(30)]
        p.commit_transaction()
        assert all(f.done() and f.exception() is None for f in committed), "commit flushes every record"
        p.begin_transaction()
        aborted = [p.send(topic, b"a%d" % i, key=b"k%d" % i) for i in range(30)]
        p.flush()  # written to the log, then aborted
        p.abort_transaction()
        assert all(f.exception() is None for f in aborted)
        p.begin_transaction()
        p.send(topic, b"after-abort", key=b"k0")
        p.commit_transaction()
    seen = read_values(bootstrap, topic, 3, "read_committed")
    assert sorted(seen) == sorted([b"c%d" % i for i in range(30)] + [b"after-abort"])
    everything = read_values(bootstrap, topic, 3, "read_uncommitted")
    assert {b"a%d" % i for i in range(30)} <= set(everything), "the aborted records really were written"


def test_older_producer_is_fenced(txn_broker: Any) -> None:
    bootstrap = txn_broker.bootstrap
    topic = create_topic(bootstrap, 1)
    txn_id = f"t-{uuid.uuid4().hex[:8]}"
    old = producer(bootstrap, txn_id)
    new = producer(bootstrap, txn_id)
    try:
        old.init_transactions()
        old.begin_transaction()
        old.send(topic, b"zombie-1")
        old.flush()
        new.init_transactions()  # fences the old producer and aborts its open transaction
        new.begin_transaction()
        new.send(topic, b"fresh")
        new.commit_transaction()
        # As Java: the zombie's next write fails and its commit refuses. Kafka (KIP-588), noida-db and MiniBroker
        # answer that write INVALID_PRODUCER_EPOCH (abortable), and the abort the zombie must then call is
        # answered PRODUCER_FENCED by the coordinator.
        with pytest.raises(InvalidProducerEpochError):
            old.send(topic, b"zombie-2").result(20)
        with pytest.raises(KafkaError):
            old.commit_transaction()
        with pytest.raises(ProducerFencedError):
            old.abort_transaction()
        with pytest.raises(ProducerFencedError):
            old.begin_transaction()
    finally:
        old.close(5)
        new.close(5)
    assert read_values(bootstrap, topic, 1, "read_committed") == [b"fresh"]


def test_consume_transform_produce_commits_offsets_in_the_transaction(txn_broker: Any) -> None:
    """KIP-447: our consumer in a group, our producer sending its offsets with ``group_metadata()``: after a
    commit the group's committed offsets and the output move together; after an abort neither does."""
    from pykafka_client import KafkaConsumer, TopicPartition

    bootstrap = txn_broker.bootstrap
    src, dst = create_topic(bootstrap, 1), create_topic(bootstrap, 1)
    group = f"copier-{uuid.uuid4().hex[:8]}"
    seed = ck.Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        seed.produce(src, b"in%d" % i)
    seed.flush(20)
    consumer = KafkaConsumer({
        "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "isolation.level": "read_committed",
    })
    p = producer(bootstrap, f"t-{uuid.uuid4().hex[:8]}")
    try:
        consumer.subscribe([src])
        records: list[Any] = []
        deadline = time.monotonic() + 30
        while len(records) < 10 and time.monotonic() < deadline:
            records.extend(consumer.poll(0.5))
        assert len(records) == 10
        p.init_transactions()
        tp = TopicPartition(src, 0)
        # an aborted copy of the first half: neither output nor offsets
        p.begin_transaction()
        for r in records[:5]:
            p.send(dst, r.value.upper())
        p.send_offsets_to_transaction({tp: records[4].offset + 1}, consumer.group_metadata())
        p.abort_transaction()
        assert consumer.committed({tp}).get(tp) is None
        # the committed copy of everything
        p.begin_transaction()
        for r in records:
            p.send(dst, r.value.upper())
        p.send_offsets_to_transaction({tp: records[-1].offset + 1}, consumer.group_metadata())
        p.commit_transaction()
        committed = consumer.committed({tp}).get(tp)
        assert committed is not None and committed.offset == records[-1].offset + 1
    finally:
        p.close(5)
        consumer.close()
    assert read_values(bootstrap, dst, 1, "read_committed") == [b"IN%d" % i for i in range(10)]


def test_read_committed_consumer_of_ours(txn_broker: Any) -> None:
    """Our consumer (issue 11 item 5, client side): read_committed skips aborted records and control
    batches, its position moves past the markers, and an open transaction holds back its end offset (the
    LSO) while read_uncommitted reads to the high watermark."""
    from pykafka_client import KafkaConsumer, TopicPartition

    bootstrap = txn_broker.bootstrap
    topic = create_topic(bootstrap, 1)
    tp = TopicPartition(topic, 0)

    def consumer(isolation: str) -> KafkaConsumer[bytes, bytes]:
        c: KafkaConsumer[bytes, bytes] = KafkaConsumer(
            {"bootstrap.servers": bootstrap, "isolation.level": isolation, "auto.offset.reset": "earliest"}
        )
        c.assign([tp])
        return c

    def drain(c: KafkaConsumer[bytes, bytes], until: int) -> list[bytes]:
        out: list[bytes] = []
        deadline = time.monotonic() + 20
        while c.position(tp) < until and time.monotonic() < deadline:
            out.extend(r.value for r in c.poll(0.2))
        return out

    p = producer(bootstrap, f"t-{uuid.uuid4().hex[:8]}")
    committed_c, uncommitted_c = consumer("read_committed"), consumer("read_uncommitted")
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(3):
            p.send(topic, b"c%d" % i)
        p.commit_transaction()  # offsets 0-2, commit marker 3
        p.begin_transaction()
        for i in range(3):
            p.send(topic, b"a%d" % i)
        p.flush()
        p.abort_transaction()  # offsets 4-6, abort marker 7
        # The open transaction comes from another producer: noida-db answers a fetch from offset 8 with the
        # aborted transaction of offsets 4-7 as well (Kafka returns only those overlapping the fetched range),
        # which makes read_committed consumers (librdkafka's as ours) skip that producer's later records.
        p.close(5)
        p = producer(bootstrap, f"t-{uuid.uuid4().hex[:8]}")
        p.init_transactions()
        p.begin_transaction()
        open_records = [p.send(topic, b"o%d" % i) for i in range(2)]
        p.flush()  # offsets 8-9 in an open transaction
        first_open = open_records[0].result(10).offset
        assert committed_c.end_offsets([tp])[tp] == first_open, "read_committed ends at the LSO"
        hw = uncommitted_c.end_offsets([tp])[tp]
        assert hw == open_records[-1].result(10).offset + 1
        assert drain(committed_c, first_open) == [b"c0", b"c1", b"c2"]
        assert committed_c.position(tp) == first_open, "past the abort marker, held at the open transaction"
        assert drain(uncommitted_c, hw) == [b"c0", b"c1", b"c2", b"a0", b"a1", b"a2", b"o0", b"o1"]
        p.commit_transaction()
        end = committed_c.end_offsets([tp])[tp]
        assert end == hw + 1, "the commit marker moved the LSO past the transaction"
        assert drain(committed_c, end) == [b"o0", b"o1"]
        assert committed_c.position(tp) == end
    finally:
        p.close(5)
        committed_c.close()
        uncommitted_c.close()


def test_close_aborts_the_open_transaction(txn_broker: Any) -> None:
    """Statement 85 on a real broker: close() aborts an open transaction, so its records are never visible
    and the next producer with the same transactional.id starts without waiting for a timeout."""
    bootstrap = txn_broker.bootstrap
    topic = create_topic(bootstrap, 1)
    txn_id = f"t-{uuid.uuid4().hex[:8]}"
    p = producer(bootstrap, txn_id)
    p.init_transactions()
    p.begin_transaction()
    p.send(topic, b"never")
    p.flush()
    p.close(10)
    assert p.transaction_manager is not None and not p.transaction_manager.has_ongoing_transaction()
    with producer(bootstrap, txn_id) as again:
        started = time.monotonic()
        again.init_transactions(timeout=10)
        assert time.monotonic() - started < 5
        again.begin_transaction()
        again.send(topic, b"after")
        again.commit_transaction()
    assert read_values(bootstrap, topic, 1, "read_committed") == [b"after"]
