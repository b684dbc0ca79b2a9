"""KafkaConsumer in assign() mode against an in-process MiniBroker; topics filled by our producer
(falls back to confluent-kafka's producer if ours fails)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from pykafka_client.errors import (
    ConcurrentModificationError,
    CorruptRecordError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidGroupIdError,
    NoOffsetForPartitionError,
    WakeupException,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker({"num.partitions": 3}) as b:
        yield b


def topic_name() -> str:
    return f"c-{uuid.uuid4().hex[:10]}"


def fill(
    broker: MiniBroker, topic: str, n: int, partitions: int = 3, compression: str = "none", size: int = 20
) -> None:
    p = KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": compression, "linger.ms": 5})
    try:
        futures = [
            p.send(
                topic,
                key=b"k%d" % i,
                value=(b"v%d-" % i).ljust(size, b"x"),
                partition=i % partitions,
                headers=[("h", b"%d" % i)],
            )
            for i in range(n)
        ]
        p.flush(30)
        for f in futures:
            f.result(timeout=10)
    finally:
        p.close(10)


def consumer(broker: MiniBroker, **overrides: Any) -> KafkaConsumer[Any, Any]:
    cfg: dict[str, Any] = {"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"}
    cfg.update(overrides)
    return KafkaConsumer(cfg)


def drain(c: KafkaConsumer[Any, Any], expected: int, deadline_s: float = 20.0) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + deadline_s
    while len(out) < expected and time.monotonic() < deadline:
        out.extend(c.poll(0.5))
    return out


@pytest.mark.parametrize("compression", ["none", "lz4", "gzip", "zstd", "snappy"])
def test_assign_consumes_everything_in_order(broker: MiniBroker, compression: str) -> None:
    topic = topic_name()
    fill(broker, topic, 300, compression=compression)
    with consumer(broker, **{"max.poll.records": 50}) as c:
        c.assign([TopicPartition(topic, p) for p in range(3)])
        recs = drain(c, 300)
    assert len(recs) == 300
    for p in range(3):
        offsets = [r.offset for r in recs if r.partition == p]
        assert offsets == list(range(100))
    r = next(r for r in recs if r.partition == 1 and r.offset == 0)
    assert (r.topic, r.key, r.value[:3], r.headers) == (topic, b"k1", b"v1-", (("h", b"1"),))
    assert r.timestamp > 0 and r.leader_epoch is not None


def test_max_poll_records_and_grouping(broker: MiniBroker) -> None:
    topic = topic_name()
    fill(broker, topic, 60)
    with consumer(broker, **{"max.poll.records": 7}) as c:
        c.assign([TopicPartition(topic, 0)])
        first: list[Any] = []
        deadline = time.monotonic() + 10
        while not first and time.monotonic() < deadline:
            batch = c.poll(0.5)
            first = list(batch)
            assert batch.count() <= 7
            assert batch.partitions() <= {TopicPartition(topic, 0)}


def test_latest_reset_and_seek_apis(broker: MiniBroker) -> None:
    topic = topic_name()
    fill(broker, topic, 30)
    tp = TopicPartition(topic, 0)
    with consumer(broker, **{"auto.offset.reset": "latest"}) as c:
        c.assign([tp])
        assert c.position(tp, timeout=10) == 10
        assert c.beginning_offsets([tp], 10) == {tp: 0}
        assert c.end_offsets([tp], 10) == {tp: 10}
        c.seek(tp, 4)
        recs = drain(c, 6)
        assert [r.offset for r in recs] == list(range(4, 10))
        c.seek_to_beginning([tp])
        assert c.position(tp, timeout=10) == 0
        c.seek_to_end()
        assert c.position(tp, timeout=10) == 10
        with pytest.raises(IllegalArgumentError):
            c.seek(tp, -1)
        with pytest.raises(IllegalStateError):
            c.seek(TopicPartition(topic, 2), 0)
        found = c.offsets_for_times({tp: 0}, 10)
        assert found[tp] is not None and found[tp].offset == 0  # type: ignore[union-attr]
        assert c.offsets_for_times({tp: 2**62}, 10)[tp] is None


def test_pause_resume(broker: MiniBroker) -> None:
    topic = topic_name()
    fill(broker, topic, 30)
    t0, t1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with consumer(broker) as c:
        c.assign([t0, t1])
        c.pause([t0])
        assert c.paused() == {t0}
        recs = drain(c, 10, 5)
        assert {r.partition for r in recs} == {1}
        c.resume([t0])
        recs = drain(c, 10, 10)
        assert {r.partition for r in recs} == {0}


def test_no_reset_policy_raises(broker: MiniBroker) -> None:
    topic = topic_name()
    fill(broker, topic, 3)
    with consumer(broker, **{"auto.offset.reset": "none"}) as c:
        c.assign([TopicPartition(topic, 0)])
        with pytest.raises(NoOffsetForPartitionError):
            c.poll(1.0)


def test_metadata_apis(broker: MiniBroker) -> None:
    topic = topic_name()
    fill(broker, topic, 3)
    with consumer(broker) as c:
        topics = c.list_topics(10)
        assert [p.partition for p in topics[topic]] == [0, 1, 2]
        assert [p.partition for p in c.partitions_for(topic, 10)] == [0, 1, 2]


def test_bad_usage_errors(broker: MiniBroker) -> None:
    c = consumer(broker)
    with pytest.raises(IllegalStateError, match="not subscribed"):
        c.poll(0)
    with pytest.raises(InvalidGroupIdError):
        c.subscribe(["x"])
    with pytest.raises(InvalidGroupIdError):
        c.commit_sync()
    c.close()
    with pytest.raises(IllegalStateError, match="closed"):
        c.poll(0)
    c.close()  # idempotent


def test_wakeup_from_another_thread(broker: MiniBroker) -> None:
    topic = topic_name()
    fill(broker, topic, 1)
    with consumer(broker, **{"auto.offset.reset": "latest"}) as c:
        c.assign([TopicPartition(topic, 0)])
        threading.Timer(0.3, c.wakeup).start()
        start = time.monotonic()
        with pytest.raises(WakeupException):
            c.poll(10.0)
        assert time.monotonic() - start < 5


def test_concurrent_use_is_refused(broker: MiniBroker) -> None:
    topic = topic_name()
    fill(broker, topic, 1)
    with consumer(broker, **{"auto.offset.reset": "latest"}) as c:
        c.assign([TopicPartition(topic, 0)])
        errors: list[BaseException] = []

        def other() -> None:
            time.sleep(0.5)  # the main thread is inside poll(3.0) by then
            try:
                c.assignment()
            except BaseException as e:
                errors.append(e)

        t = threading.Thread(target=other)
        t.start()
        c.poll(3.0)
        t.join()
        assert len(errors) == 1 and isinstance(errors[0], ConcurrentModificationError)


def test_iteration(broker: MiniBroker) -> None:
    topic = topic_name()
    fill(broker, topic, 9)
    with consumer(broker) as c:
        c.assign([TopicPartition(topic, p) for p in range(3)])
        got = []
        for r in c:
            got.append(r)
            if len(got) == 9:
                break
        assert sorted((r.partition, r.offset) for r in got) == [(p, o) for p in range(3) for o in range(3)]


def test_manual_commit_requires_coordinator(broker: MiniBroker) -> None:
    """The group coordinator may not exist on the broker yet: commits then time out or fail, but
    offsets for unassigned partitions are refused before any I/O."""
    topic = topic_name()
    with consumer(broker, **{"group.id": "g-" + topic, "enable.auto.commit": False}) as c:
        c.assign([TopicPartition(topic, 0)])
        with pytest.raises(IllegalStateError, match="not assigned"):
            c.commit_sync({TopicPartition(topic, 1): OffsetAndMetadata(1)}, timeout=1)


def test_offsets_of_topics_outside_the_assignment(broker: MiniBroker) -> None:
    topic, other = topic_name(), topic_name()
    fill(broker, topic, 3)
    fill(broker, other, 6)
    with consumer(broker) as c:
        assert c.end_offsets([TopicPartition(other, 0), TopicPartition(other, 1)], 10) == {
            TopicPartition(other, 0): 2,
            TopicPartition(other, 1): 2,
        }
        c.assign([TopicPartition(topic, 0)])
        assert c.beginning_offsets([TopicPartition(other, 2)], 10) == {TopicPartition(other, 2): 0}


def test_survives_broker_restart(tmp_path: Any) -> None:
    """Polls while the broker is down return nothing (no error); after a restart on the same port
    consumption resumes where it stopped, with no gap and no duplicate."""
    b = MiniBroker({"num.partitions": 1}, data_dir=str(tmp_path)).start()
    port = b.port
    try:
        fill(b, "r", 10, partitions=1)
        c = consumer(b, **{"reconnect.backoff.max.ms": 200})
        c.assign([TopicPartition("r", 0)])
        got = drain(c, 10)
        b.shutdown()
        for _ in range(3):
            assert c.poll(0.3).count() == 0
        b = MiniBroker({"num.partitions": 1}, data_dir=str(tmp_path), listeners=f"PLAINTEXT://127.0.0.1:{port}").start()
        fill(b, "r", 10, partitions=1)
        got.extend(drain(c, 10))
        assert [r.offset for r in got] == list(range(20))
        c.close()
    finally:
        b.shutdown()


def test_corrupt_batch_on_the_broker_is_reported_not_skipped(tmp_path: Any) -> None:
    """A batch corrupted on the broker's disk (after its append-time validation) reaches the consumer:
    the records before it are returned, then CorruptRecordError names the partition and offset, again
    on every poll, until the application seeks past it."""
    import glob
    import struct

    with MiniBroker({"num.partitions": 1}, data_dir=str(tmp_path)) as b:
        p = KafkaProducer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 0})
        for i in range(6):  # one batch per record
            p.send("bad", value=b"value-%d" % i).result(10)
        p.close(10)
        (segment,) = glob.glob(str(tmp_path / "bad-0" / "*.log"))
        with open(segment, "r+b") as f:
            data = f.read()
            first_len = struct.unpack_from(">i", data, 8)[0] + 12
            second_len = struct.unpack_from(">i", data, first_len + 8)[0] + 12
            pos = first_len + second_len - 3  # inside the value of the record at offset 1
            f.seek(pos)
            f.write(bytes([data[pos] ^ 0xFF]))
        tp = TopicPartition("bad", 0)
        with consumer(b) as c:
            c.assign([tp])
            got: list[Any] = []
            raised: list[CorruptRecordError] = []
            deadline = time.monotonic() + 10
            while len(raised) < 2 and time.monotonic() < deadline:
                try:
                    got.extend(c.poll(0.3))
                except CorruptRecordError as e:
                    raised.append(e)
            assert [r.offset for r in got] == [0]
            assert len(raised) == 2 and all(e.offset == 1 and "bad-0" in str(e) for e in raised)  # type: ignore[attr-defined]
            assert c.position(tp) == 1
            c.seek(tp, 2)
            assert [r.offset for r in drain(c, 4)] == [2, 3, 4, 5]
