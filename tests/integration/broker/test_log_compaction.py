"""Log compaction end to end: a compacted topic on a real MiniBroker, updates of many keys, the cleaner's threads
compacting it, and our consumer, confluent-kafka and kafka-python reading back exactly the latest value per key at its
original offset, under both isolation levels; a kill -9 of a broker process in the middle of a clean loses
nothing."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.broker.broker_process import BrokerProcess, ck, ck_admin

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(600)]

TOPIC = "compacted"
ROLL_KEY = b"~roll"
TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "65536",
    "segment.ms": "500",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "3600000",
}


def create_compacted_topic(bootstrap: str, replication_factor: int = 1) -> None:
    admin = ck_admin.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([ck_admin.NewTopic(TOPIC, 1, replication_factor, config=TOPIC_CONFIGS)])[TOPIC].result(15)


def produce_updates(bootstrap: str, keys: int, rounds: int, aborted: list[int] | None = None
                    ) -> dict[bytes, tuple[int, bytes | None]]:
    """``rounds`` updates of each key (idempotent producer), a tombstone for every 13th key, then one record after ``segment.ms`` that rolls the
    segment holding the last round; the (offset, value) of the latest record per key. ``aborted`` (when given)
    gets the offsets of the records of the aborted transaction written between the two."""
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    errors: list[object] = []

    def on_delivery(err: object, msg: ck.Message) -> None:
        if err is not None:
            errors.append(err)
        else:
            if msg.offset() > latest.get(msg.key(), (-1, None))[0]:
                latest[msg.key()] = (msg.offset(), msg.value())

    p = ck.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for r in range(rounds):
        for k in range(keys):
            while True:
                try:
                    p.produce(TOPIC, key=f"key-{k}".encode(), value=f"value-{k}-{r}".encode(), on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.05)
        p.poll(0)
    assert p.flush(60) == 0
    for k in range(0, keys, 13):  # tombstones: kept (delete.retention.ms is an hour), read as null values
        p.produce(TOPIC, key=f"key-{k}".encode(), value=None, on_delivery=on_delivery)
    assert p.flush(60) == 0
    # an aborted transaction over some keys: the cleaner drops its records (read_uncommitted sees them before)
    txn = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "compaction-aborter"})
    txn.init_transactions(30)
    txn.begin_transaction()
    for k in range(0, keys, 7):
        txn.produce(TOPIC, key=f"key-{k}".encode(), value=b"aborted",
                    on_delivery=lambda err, msg: aborted.append(msg.offset()) if aborted is not None and err is None
                    else None)
    assert txn.flush(30) == 0  # in the log before the abort (else librdkafka drops them unsent)
    txn.abort_transaction(30)
    time.sleep(0.6)  # past segment.ms: the next append rolls the segment
    p.produce(TOPIC, key=ROLL_KEY, value=b"roll", on_delivery=on_delivery)
    assert p.flush(30) == 0
    assert not errors, errors[:5]
    return latest


def read_ours(bootstrap: str, isolation: str) -> list[tuple[int, bytes | None, bytes | None]]:
    from pykafka_client import KafkaConsumer, TopicPartition

    tp = TopicPartition(TOPIC, 0)
    with KafkaConsumer({"bootstrap.servers": bootstrap, "isolation.level": isolation,
                        "enable.auto.commit": False}) as c:
        c.assign([tp])
        c.seek_to_beginning([tp])
        end = c.end_offsets([tp], timeout=20)[tp]
        out: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 60
        while c.position(tp, timeout=20) < end:
            assert time.monotonic() < deadline, f"our consumer stuck at {c.position(tp)} of {end}"
            out += [(r.offset, r.key, r.value) for r in c.poll(0.5)]
        return out


def read_confluent(bootstrap: str, isolation: str) -> list[tuple[int, bytes | None, bytes | None]]:
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"compaction-{isolation}",
                     "enable.auto.commit": False, "isolation.level": isolation, "enable.partition.eof": True,
                     "check.crcs": True})
    try:
        c.assign([ck.TopicPartition(TOPIC, 0, ck.OFFSET_BEGINNING)])
        out: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == ck.KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(f"confluent-kafka reading {TOPIC}: {m.error()}")
            out.append((m.offset(), m.key(), m.value()))
        raise AssertionError("confluent-kafka did not reach the end of the compacted topic")
    finally:
        c.close()


def read_kafka_python(bootstrap: str, isolation: str) -> list[tuple[int, bytes | None, bytes | None]]:
    kafka = pytest.importorskip("kafka")
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False)
    try:
        tp = kafka.TopicPartition(TOPIC, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        end = c.end_offsets([tp])[tp]
        out: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 60
        while c.position(tp) < end:
            assert time.monotonic() < deadline, f"kafka-python stuck at {c.position(tp)} of {end}"
            for records in c.poll(timeout_ms=500).values():
                out += [(r.offset, r.key, r.value) for r in records]
        return out
    finally:
        c.close()


def wait_until(predicate: object, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting until {what}"
        time.sleep(0.1)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[object]:
    from mini_broker.broker import MiniBroker

    b = MiniBroker({"log.cleaner.backoff.ms": 50}, data_dir=str(tmp_path / "data"))
    b.start()
    try:
        yield b
    finally:
        b.shutdown()


def _cleaned_past(broker: object, offset: int) -> bool:
    """The cleaner's checkpoint is past ``offset`` (the last record it drops: see the cluster test for why not
    "up to the active segment")."""
    manager = broker.replica_manager.log_manager  # type: ignore[attr-defined]
    log = manager.get_log(TOPIC, 0)
    checkpoint = manager.cleaner.manager.checkpoint_of(log)
    return checkpoint is not None and checkpoint > offset


def _empty_batches(broker: object) -> int:
    from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
    from pykafka_client.protocol.records.memory_records import MemoryRecords

    log = broker.replica_manager.log_manager.get_log(TOPIC, 0)  # type: ignore[attr-defined]
    count = 0
    for segment in log.segments:
        for batch in MemoryRecords(segment.read_bytes(0, segment.size)).batches():
            count += isinstance(batch, DefaultRecordBatch) and batch.records_count == 0
    return count


def check_compacted(broker: object, keys: int) -> None:
    bootstrap = f"127.0.0.1:{broker.port}"  # type: ignore[attr-defined]
    create_compacted_topic(bootstrap)
    aborted: list[int] = []
    latest = produce_updates(bootstrap, keys, rounds=10, aborted=aborted)
    assert aborted
    wait_until(lambda: _cleaned_past(broker, max(aborted)), "the cleaner has cleaned past the aborted transaction")
    metrics = broker.metrics  # type: ignore[attr-defined]
    assert metrics.gauge_value("kafka_log_LogCleaner_cleaner_bytes_read_total") > 0
    assert metrics.gauge_value("kafka_log_LogCleanerManager_uncleanable_partitions_count") == 0
    expected = sorted((offset, key, value) for key, (offset, value) in latest.items())
    assert len(expected) == keys + 1
    # the aborting producer's last batch stays as a header with no records (its sequence and epoch): readers must
    # step over it
    assert _empty_batches(broker), "expected an emptied batch kept for a producer's state"
    for isolation in ("read_uncommitted", "read_committed"):
        assert read_ours(bootstrap, isolation) == expected, f"our consumer, {isolation}"
        assert read_confluent(bootstrap, isolation) == expected, f"confluent-kafka, {isolation}"
        assert read_kafka_python(bootstrap, isolation) == expected, f"kafka-python, {isolation}"


def test_compacted_topic_reads_back_latest_value_per_key_at_its_offset(broker: object) -> None:
    """10 updates of each of 10,000 keys (about 7 s on an idle core)."""
    check_compacted(broker, keys=10_000)


def _cleaned_files(data_dir: Path) -> list[str]:
    part = data_dir / f"{TOPIC}-0"
    return [n for n in os.listdir(part) if n.endswith((".cleaned", ".swap"))] if part.exists() else []


@pytest.mark.slow
def test_kill9_during_a_clean_loses_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # a slow cleaner (throttled I/O), so that the kill lands while a .cleaned segment is being written
    overrides: dict[str, object] = {"log.cleaner.io.max.bytes.per.second": 200_000, "log.cleaner.backoff.ms": 50}
    broker = BrokerProcess(data_dir, overrides=overrides)
    try:
        create_compacted_topic(broker.bootstrap)
        latest = produce_updates(broker.bootstrap, keys=3000, rounds=5)
        wait_until(lambda: bool(_cleaned_files(data_dir)), "the cleaner writes a .cleaned segment", timeout=60)
        broker.kill9()
        assert _cleaned_files(data_dir)  # killed mid-clean
        broker = BrokerProcess(data_dir, overrides={"log.cleaner.backoff.ms": 50})
        expected = sorted((offset, key, value) for key, (offset, value) in latest.items())
        # every latest value is there at once (cleaned or not), and once the cleaner is done, only those
        for isolation in ("read_uncommitted", "read_committed"):
            got = read_confluent(broker.bootstrap, isolation)
            by_key = {k: (o, v) for o, k, v in got}
            assert {k: (o, v) for o, k, v in expected} == by_key
        wait_until(lambda: sorted(read_confluent(broker.bootstrap, "read_uncommitted")) == expected,
                   "the restarted broker's cleaner has compacted the topic")
    finally:
        broker.ensure_dead()
