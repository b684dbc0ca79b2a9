"""The Spark sink's write task (``TaskProducer.send_all``) against MiniBroker without Spark: with the topic option
and no headers or partition column each Arrow batch goes through ``send_batch``; otherwise row by row. Both
write the same records; the fault injection still stops after exactly ``failAfterRecords`` records."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer, TopicPartition

pa = pytest.importorskip("pyarrow")

from spark_connector.task_producer import InjectedWriteFault, TaskProducer  # noqa: E402
from spark_connector.write_options import WriteOptions  # noqa: E402
from spark_connector.write_schema import WriteColumns  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker({"num.partitions": 2}) as b:
        yield b


def _batches(n: int) -> list[Any]:
    out = []
    for start in range(0, n, 700):
        rows = range(start, min(n, start + 700))
        out.append(pa.record_batch({
            "key": pa.array([None if i % 3 == 0 else f"k{i % 11}" for i in rows]),
            "value": pa.array([f"v{i}".encode() if i % 50 else None for i in rows], pa.binary()),
            "timestamp": pa.array([1_600_000_000_000_000 + i for i in rows], pa.timestamp("us")),
            "topic": pa.array(["ignored"] * len(rows)),
            "partition": pa.array([i % 2 for i in rows], pa.int32()),
        }))
    return out


def _read(broker: MiniBroker, topic: str, n: int) -> list[tuple[int, bytes | None, bytes | None, int]]:
    c = KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, p) for p in range(2)])
        got: list[tuple[int, bytes | None, bytes | None, int]] = []
        for _ in range(100):
            # an unkeyed record's partition is the sticky partitioner's random pick: not compared
            got.extend((-1 if r.key is None else r.partition, r.key, r.value, r.timestamp) for r in c.poll(0.2))
            if len(got) >= n:
                break
        return sorted(got, key=lambda r: (r[3], r[2] or b"", r[1] or b"", r[0]))
    finally:
        c.close()


def _task(broker: MiniBroker, topic: str | None, columns: WriteColumns, **extra: Any) -> TaskProducer:
    options = WriteOptions({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": "2"}, topic, **extra)
    return TaskProducer(options, columns)


def test_batch_path_writes_what_the_row_path_writes(broker: MiniBroker) -> None:
    n = 2500
    by_batch, by_row = f"tb-{uuid.uuid4().hex[:8]}", f"tr-{uuid.uuid4().hex[:8]}"
    task = _task(broker, by_batch, WriteColumns("value", key="key", timestamp="timestamp"))
    calls: list[int] = []
    send_batch = task.producer.send_batch

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return send_batch(*args, **kwargs)

    task.producer.send_batch = counting  # type: ignore[method-assign]
    try:
        assert task.send_all(iter(_batches(n))) == n
        assert len(calls) == len(_batches(n))
    finally:
        task.close()
    # a topic column instead of the option: the row path
    rows = [b.set_column(3, "topic", pa.array([by_row] * b.num_rows)) for b in _batches(n)]
    _check_partitioned(broker)
    task = _task(broker, None, WriteColumns("value", key="key", timestamp="timestamp", topic="topic"))
    try:
        assert task.send_all(iter(rows)) == n
    finally:
        task.close()
    assert _read(broker, by_batch, n) == _read(broker, by_row, n)


def test_fault_injection_stops_after_the_configured_record(broker: MiniBroker, tmp_path: Path) -> None:
    topic = f"tf-{uuid.uuid4().hex[:8]}"
    task = _task(
        broker, topic, WriteColumns("value"), fail_after_records=1000, failure_marker=str(tmp_path / "marker")
    )
    try:
        with pytest.raises(InjectedWriteFault):
            task.send_all(iter(_batches(2500)))
    finally:
        task.close()
    assert len(_read(broker, topic, 1000)) == 1000


def _check_partitioned(broker: MiniBroker) -> None:
    """With a partition column: one send_batch per partition, rows in the partition and order the row path gives."""
    n = 1500
    by_batch, by_row = f"pb-{uuid.uuid4().hex[:8]}", f"pr-{uuid.uuid4().hex[:8]}"
    columns = WriteColumns("value", key="key", timestamp="timestamp", partition="partition")
    task = _task(broker, by_batch, columns)
    try:
        assert task.send_all(iter(_batches(n))) == n
    finally:
        task.close()
    rows = [b.set_column(3, "topic", pa.array([by_row] * b.num_rows)) for b in _batches(n)]
    task = _task(broker, None, WriteColumns("value", key="key", timestamp="timestamp", partition="partition", topic="topic"))
    try:
        assert task.send_all(iter(rows)) == n
    finally:
        task.close()
    assert _read_exact(broker, by_batch, n) == _read_exact(broker, by_row, n)


def _read_exact(broker: MiniBroker, topic: str, n: int) -> list[tuple[int, int, bytes | None, bytes | None, int]]:
    c = KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, p) for p in range(2)])
        got: list[tuple[int, int, bytes | None, bytes | None, int]] = []
        for _ in range(100):
            got.extend((r.partition, r.offset, r.key, r.value, r.timestamp) for r in c.poll(0.2))
            if len(got) >= n:
                break
        return sorted(got, key=lambda r: (r[0], r[1]))
    finally:
        c.close()
