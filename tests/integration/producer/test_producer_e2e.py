"""KafkaProducer against an in-process MiniBroker; records read back with kafka-python's consumer (oracle)."""

from __future__ import annotations

import gc
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaProducer, RecordMetadata
from pykafka_client.errors import (
    BufferExhaustedError,
    ConfigurationError,
    IllegalStateError,
    KafkaTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
    SerializationError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.producer.partitioner import partition_for_key

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

kafka = pytest.importorskip("kafka")


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker({"num.partitions": 6}) as b:
        yield b


def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def producer(broker: MiniBroker, **overrides: Any) -> KafkaProducer:
    cfg: dict[str, Any] = {"bootstrap.servers": broker.bootstrap_servers, "max.block.ms": 10_000}
    cfg.update(overrides)
    return KafkaProducer(cfg)


def consume(broker: MiniBroker, topic: str, partitions: int, expected: int) -> list[Any]:
    c = kafka.KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest", consumer_timeout_ms=2000,
        fetch_max_bytes=50 * 1024 * 1024, max_partition_fetch_bytes=10 * 1024 * 1024,
    )
    try:
        c.assign([kafka.TopicPartition(topic, p) for p in range(partitions)])
        out: list[Any] = []
        deadline = time.monotonic() + 20
        while len(out) < expected and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out.extend(recs)
        return out
    finally:
        c.close()


def test_send_and_read_back_with_headers_and_callback(broker: MiniBroker) -> None:
    topic = topic_name()
    seen: list[tuple[RecordMetadata | None, BaseException | None]] = []
    done = threading.Event()

    def cb(md: RecordMetadata | None, exc: BaseException | None) -> None:
        seen.append((md, exc))
        done.set()

    with producer(broker, **{"value.serializer": "str", "key.serializer": "str"}) as p:
        f = p.send(topic, "hello", key="k1", headers=[("h1", b"v1"), ("h2", None)], timestamp=1234, on_delivery=cb)
        md = f.result(10)
        assert done.wait(10)
    assert md.topic == topic and md.offset == 0 and md.timestamp == 1234
    assert (md.serialized_key_size, md.serialized_value_size) == (2, 5)
    assert md.partition == partition_for_key(b"k1", 6)
    assert seen == [(md, None)]
    (rec,) = consume(broker, topic, 6, 1)
    assert (rec.key, rec.value, rec.timestamp) == (b"k1", b"hello", 1234)
    assert rec.headers == [("h1", b"v1"), ("h2", None)]


def test_keyed_partitioning_matches_kafka_python(broker: MiniBroker) -> None:
    from kafka.partitioner.default import DefaultPartitioner

    class Cluster:
        def topics(self) -> set[str]:
            return {topic}

        def partitions_for_topic(self, t: str) -> set[int]:
            return set(range(6))

        def available_partitions_for_topic(self, t: str) -> set[int]:
            return set(range(6))

    topic = topic_name()
    with producer(broker) as p:
        futures = {k: p.send(topic, b"v", key=k) for k in (b"a", b"bb", b"key-%d" % 7, b"\x00\xff", b"")}
        p.flush(10)
    for k, f in futures.items():
        assert f.result(0).partition == DefaultPartitioner().partition(topic, k, k, None, None, Cluster())


def test_ordering_per_partition_with_five_in_flight(broker: MiniBroker) -> None:
    topic = topic_name()
    n = 3000
    with producer(broker, **{"linger.ms": 0, "batch.size": 512}) as p:
        fs = [p.send(topic, b"%06d" % i, partition=1) for i in range(n)]
        p.flush(30)
        assert p.metrics()["request-total"] > 10
    assert [f.result(0).offset for f in fs] == list(range(n))
    recs = consume(broker, topic, 2, n)
    assert [r.value for r in recs if r.partition == 1] == [b"%06d" % i for i in range(n)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_all_codecs(broker: MiniBroker, codec: str) -> None:
    topic = topic_name()
    with producer(broker, **{"compression.type": codec, "linger.ms": 20}) as p:
        fs = [p.send(topic, b"value-%d" % i * 10, partition=0) for i in range(200)]
        p.flush(10)
    assert fs[-1].result(0).offset == 199
    recs = consume(broker, topic, 1, 200)
    assert [r.value for r in recs] == [b"value-%d" % i * 10 for i in range(200)]


def test_one_megabyte_record(broker: MiniBroker) -> None:
    topic = topic_name()
    value = b"x" * 1_000_000
    with producer(broker) as p:
        assert p.send(topic, value, partition=0).result(20).offset == 0
        too_big = p.send(topic, b"y" * 1_100_000, partition=0)
        assert isinstance(too_big.exception(5), RecordTooLargeError)
    (rec,) = consume(broker, topic, 1, 1)
    assert rec.value == value


def test_broker_rejects_record_over_message_max_bytes(broker: MiniBroker) -> None:
    topic = topic_name()
    with producer(broker, **{"max.request.size": 3_000_000}) as p:
        f = p.send(topic, b"z" * 2_000_000, partition=0)
        assert isinstance(f.exception(20), RecordTooLargeError)


def test_many_partitions_and_threads(broker: MiniBroker) -> None:
    topic = topic_name()
    n_threads, per_thread = 4, 1500
    with producer(broker) as p:
        futures: list[Any] = []
        lock = threading.Lock()

        def work(t: int) -> None:
            local = [p.send(topic, b"%d-%d" % (t, i), key=b"%d" % (i % 50)) for i in range(per_thread)]
            with lock:
                futures.extend(local)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        p.flush(30)
    metas = [f.result(0) for f in futures]
    assert len(metas) == n_threads * per_thread
    assert {m.partition for m in metas} == set(range(6))
    by_partition: dict[int, list[int]] = {}
    for m in metas:
        by_partition.setdefault(m.partition, []).append(m.offset)
    for offs in by_partition.values():
        assert sorted(offs) == list(range(len(offs)))  # every offset exactly once


def test_unkeyed_records_are_sticky_then_spread(broker: MiniBroker) -> None:
    topic = topic_name()
    with producer(broker, **{"batch.size": 1024, "linger.ms": 50}) as p:
        fs = [p.send(topic, b"v" * 100) for _ in range(600)]
        p.flush(10)
    parts = [f.result(0).partition for f in fs]
    assert len(set(parts[:5])) == 1
    assert len(set(parts)) > 1


def test_partitions_for_and_metrics(broker: MiniBroker) -> None:
    topic = topic_name()
    with producer(broker) as p:
        infos = p.partitions_for(topic)
        assert [i.partition for i in infos] == list(range(6))
        p.send(topic, b"v").result(10)
        m = p.metrics()
        assert m["record-send-total"] == 1 and m["buffer-available-bytes"] == m["buffer-total-bytes"]


def test_send_after_close_raises_promptly(broker: MiniBroker) -> None:
    p = producer(broker)
    p.close()
    start = time.monotonic()
    with pytest.raises(ProducerClosedError):
        p.send(topic_name(), b"v")
    assert time.monotonic() - start < 1
    p.close()  # idempotent


def test_serialization_and_config_errors_raise(broker: MiniBroker) -> None:
    with pytest.raises(ConfigurationError, match="bootstrap"):
        KafkaProducer({})
    with pytest.raises(ConfigurationError, match=r"linger\.ms"):
        KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": -5})
    with producer(broker, **{"value.serializer": "int"}) as p:
        with pytest.raises(SerializationError):
            p.send(topic_name(), "not an int")
        assert p.send(topic_name(), 7).result(10).serialized_value_size == 4


def test_metadata_wait_times_out_for_missing_partition(broker: MiniBroker) -> None:
    with producer(broker, **{"max.block.ms": 300}) as p:
        f = p.send(topic_name(), b"v", partition=99)
        exc = f.exception(5)
        assert isinstance(exc, KafkaTimeoutError) and "Partition 99" in str(exc)


def test_delivery_timeout_and_buffer_exhaustion_when_broker_is_gone() -> None:
    b = MiniBroker().start()
    topic = topic_name()
    cfg = {
        "bootstrap.servers": b.bootstrap_servers,
        "request.timeout.ms": 500,
        "delivery.timeout.ms": 1500,
        "linger.ms": 0,
        "buffer.memory": 64 * 1024,
        "batch.size": 16 * 1024,
        "max.block.ms": 300,
        "reconnect.backoff.max.ms": 100,
        # keep the dead broker's partitions known so sends queue up (rebootstrap, Kafka 4's default, would
        # forget them and make every send wait max.block.ms for metadata instead)
        "metadata.recovery.strategy": "none",
    }
    p = KafkaProducer(cfg)
    try:
        p.send(topic, b"v", partition=0).result(10)
        b.shutdown()
        start = time.monotonic()
        first = p.send(topic, b"w" * 1000, partition=0)
        futures = [p.send(topic, b"w" * 1000, partition=p_) for p_ in range(1) for _ in range(200)]
        exhausted = [f for f in futures if f.done() and isinstance(f.exception(0), BufferExhaustedError)]
        assert exhausted, "a full buffer must fail sends after max.block.ms"
        assert isinstance(first.exception(10), KafkaTimeoutError)
        assert time.monotonic() - start < 8
    finally:
        p.close(0)
        b.shutdown()


def test_close_zero_fails_pending_records() -> None:
    b = MiniBroker().start()
    topic = topic_name()
    p = KafkaProducer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 60_000, "delivery.timeout.ms": 120_000})
    try:
        p.send(topic, b"v", partition=0)  # metadata
        f = p.send(topic, b"pending", partition=0)
        p.close(0)
        assert isinstance(f.exception(5), ProducerClosedError)
    finally:
        b.shutdown()


def test_idempotent_producer_gets_an_id(broker: MiniBroker) -> None:
    with producer(broker) as p:
        p.send(topic_name(), b"v").result(10)
        assert p.transaction_manager is not None
        pid, epoch = p.transaction_manager.producer_id_and_epoch()
        assert pid >= 0 and epoch == 0


def test_acks_zero_and_max_in_flight_one(broker: MiniBroker) -> None:
    topic = topic_name()
    with producer(broker, **{"acks": "0", "enable.idempotence": False}) as p:
        fs = [p.send(topic, b"%d" % i, partition=0) for i in range(500)]
        p.flush(10)
        assert all(f.result(0).offset == -1 for f in fs)
    with producer(broker, **{"max.in.flight.requests.per.connection": 1, "linger.ms": 0, "batch.size": 200}) as p:
        fs = [p.send(topic, b"%d" % i, partition=1) for i in range(500)]
        p.flush(10)
        assert [f.result(0).offset for f in fs] == list(range(500))
    assert len(consume(broker, topic, 1, 500)) == 500  # the acks=0 records did arrive


def test_custom_partitioner(broker: MiniBroker) -> None:
    class LastPartition:
        def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any, value_bytes: bytes | None, cluster: Any) -> int:
            n: int = cluster.partition_count_for_topic(topic)
            return n - 1

    with producer(broker, **{"partitioner.class": LastPartition}) as p:
        assert p.send(topic_name(), b"v", key=b"k").result(10).partition == 5
    with producer(broker, **{"partitioner.class": "round_robin"}) as p:
        topic = topic_name()
        p.partitions_for(topic)
        assert [p.send(topic, b"v").result(10).partition for _ in range(6)] == [0, 1, 2, 3, 4, 5]


def test_transactional_misuse(broker: MiniBroker) -> None:
    with pytest.raises(ConfigurationError, match="transactional"):
        producer(broker, **{"transactional.id": "tx", "enable.idempotence": False})
    with producer(broker) as p, pytest.raises(IllegalStateError, match="transactional"):
        p.begin_transaction()


def test_close_while_other_threads_send(broker: MiniBroker) -> None:
    topic = topic_name()
    p = producer(broker, **{"linger.ms": 1})
    p.partitions_for(topic)
    futures: list[Any] = []
    raised: list[BaseException] = []
    lock = threading.Lock()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                f = p.send(topic, b"x" * 50)
            except KafkaError as e:  # send after close, or closed during the append
                with lock:
                    raised.append(e)
                return
            with lock:
                futures.append(f)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    p.close(10)
    stop.set()
    for t in threads:
        t.join(10)
        assert not t.is_alive()
    assert futures and all(f.done() for f in futures)
    ok = sum(1 for f in futures if f.exception(0) is None)
    assert ok > 0
    assert all(isinstance(e, KafkaError) for e in raised)


def test_custom_serializer_errors_become_serialization_errors(broker: MiniBroker) -> None:
    class Broken:
        def serialize(self, topic: str, data: Any, headers: Any = None) -> bytes:
            raise ValueError("nope")

    with producer(broker, **{"value.serializer": Broken()}) as p:
        with pytest.raises(SerializationError, match="nope"):
            p.send(topic_name(), 1)


def test_batches_over_the_broker_limit_are_split_until_they_fit() -> None:
    with MiniBroker({"message.max.bytes": 5000}) as b:
        topic = topic_name()
        # max.in.flight=1: with 5 in flight, order after a split relies on the broker's sequence checks
        # (OUT_OF_ORDER_SEQUENCE_NUMBER for the batch behind), which mini_broker does not apply until
        # mini_broker.producer_state is wired into Log.append.
        cfg = {"bootstrap.servers": b.bootstrap_servers, "linger.ms": 100, "max.block.ms": 10_000,
               "max.in.flight.requests.per.connection": 1}
        with KafkaProducer(cfg) as p:
            fs = [p.send(topic, b"%03d" % i + b"x" * 497, partition=0) for i in range(40)]
            p.flush(20)
            assert p.metrics()["batch-split-total"] > 0
        assert [f.result(0).offset for f in fs] == list(range(40))


def test_invalid_topic_name_fails_the_future(broker: MiniBroker) -> None:
    with producer(broker, **{"max.block.ms": 3000}) as p:
        f = p.send("bad topic name!", b"v")
        assert type(f.exception(10)).__name__ == "InvalidTopicError"
        assert p.send(topic_name(), b"v").result(10).offset == 0  # other topics unaffected


def test_flush_frees_each_batch_once_it_completed(broker: MiniBroker) -> None:
    """flush() waits for the batches incomplete when it began without keeping them: a batch completed during the
    flush frees its records (and their delivery callbacks) while the flush still waits for later batches."""
    topic = topic_name()
    partitions = 6
    completed: list[int] = []
    still_referenced: list[int] = []

    class Callback:  # weak-referenceable, one per record: the batch's pending record holds it
        def __init__(self, index: int) -> None:
            self.index = index

        def __call__(self, md: RecordMetadata | None, exc: BaseException | None) -> None:
            completed.append(self.index)
            gc.collect()
            # the batch completed just before may still be referenced by the I/O thread's last request; earlier not
            still_referenced.extend(i for i in completed[:-2] if refs[i]() is not None)

    refs: list[weakref.ref[Callback]] = []
    # one record per batch, one batch per produce request, nothing sent before flush() (linger): every batch is
    # incomplete when the flush begins, and they complete one request after another during it
    with producer(broker, **{"linger.ms": 60_000, "batch.size": 200, "max.request.size": 300,
                             "max.in.flight.requests.per.connection": 1}) as p:
        p.partitions_for(topic)
        for i in range(partitions):
            cb = Callback(i)
            refs.append(weakref.ref(cb))
            p.send(topic, b"v" * 100, partition=i, on_delivery=cb)
            del cb
        p.flush(30)
    assert sorted(completed) == list(range(partitions))
    assert not still_referenced, f"batches completed earlier still referenced while the flush waited: {still_referenced}"
