"""The Spark sink's write task (``TaskProducer.send_all``) against MiniBroker without Spark: without a headers
column each Arrow batch goes through ``send_batch`` (per topic of the topic option or column, per partition of a
partition column); with one, row by row. Both write the same records; the fault injection still stops after
exactly ``failAfterRecords`` records."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer, TopicPartition

pa = pytest.importorskip("pyarrow")

from spark_connector.arrow_records import NULL_TOPIC_MESSAGE  # noqa: E402
from spark_connector.task_producer import InjectedWriteFault, TaskProducer  # noqa: E402
from spark_connector.write_options import KafkaWriteOptionError, WriteOptions  # noqa: E402
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


HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string(), False), pa.field("value", pa.binary())]))


def _with_empty_headers(batch: Any) -> Any:
    return batch.append_column("headers", pa.array([[]] * batch.num_rows, HEADERS_TYPE))


def _counting(task: TaskProducer) -> tuple[list[int], list[int]]:
    """(send_batch calls, send calls) of the task's producer, counted from now on."""
    batch_calls: list[int] = []
    row_calls: list[int] = []
    send_batch, send = task.producer.send_batch, task.producer.send

    def counting_batch(*args: Any, **kwargs: Any) -> Any:
        batch_calls.append(1)
        return send_batch(*args, **kwargs)

    def counting_send(*args: Any, **kwargs: Any) -> Any:
        row_calls.append(1)
        return send(*args, **kwargs)

    task.producer.send_batch = counting_batch  # type: ignore[method-assign]
    task.producer.send = counting_send  # type: ignore[method-assign]
    return batch_calls, row_calls


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
    # a headers column (empty on every row: the same records): the row path
    rows = [_with_empty_headers(b.set_column(3, "topic", pa.array([by_row] * b.num_rows))) for b in _batches(n)]
    _check_partitioned(broker)
    task = _task(broker, None, WriteColumns("value", key="key", timestamp="timestamp", topic="topic", headers="headers"))
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
    rows = [_with_empty_headers(b.set_column(3, "topic", pa.array([by_row] * b.num_rows))) for b in _batches(n)]
    task = _task(broker, None, WriteColumns("value", key="key", timestamp="timestamp", partition="partition", topic="topic",
                                            headers="headers"))
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


def test_a_topic_column_goes_through_send_batch_per_topic_and_partition(broker: MiniBroker) -> None:
    """A topic column (no topic option): one send_batch per topic and partition of each Arrow batch, no row by row
    send; the records, their partitions and order are those the row path writes."""
    n = 1400  # two Arrow batches of 700 rows
    ours, ref = [f"tc{k}-{uuid.uuid4().hex[:8]}" for k in range(2)], [f"rc{k}-{uuid.uuid4().hex[:8]}" for k in range(2)]

    def with_topics(topics: list[str]) -> list[Any]:
        return [b.set_column(3, "topic", pa.array([topics[i % 3 == 0] for i in range(b.num_rows)])) for b in _batches(n)]

    columns = WriteColumns("value", key="key", timestamp="timestamp", partition="partition", topic="topic")
    task = _task(broker, None, columns)
    batch_calls, row_calls = _counting(task)
    try:
        assert task.send_all(iter(with_topics(ours))) == n
    finally:
        task.close()
    assert row_calls == [] and len(batch_calls) == 2 * 2 * 2  # Arrow batches x topics x partitions
    task = _task(broker, None, WriteColumns("value", key="key", timestamp="timestamp", partition="partition",
                                            topic="topic", headers="headers"))
    try:
        assert task.send_all(iter(_with_empty_headers(b) for b in with_topics(ref))) == n
    finally:
        task.close()
    second = sum(1 for b in _batches(n) for i in range(b.num_rows) if i % 3 == 0)  # rows of topics[1]
    for k, expected in ((0, n - second), (1, second)):
        got = _read_exact(broker, ours[k], expected)
        assert len(got) == expected and got == _read_exact(broker, ref[k], expected)


def test_a_null_in_the_topic_column_fails_before_the_batch_is_sent(broker: MiniBroker) -> None:
    topic = f"tn-{uuid.uuid4().hex[:8]}"
    batch = _batches(700)[0]
    batch = batch.set_column(3, "topic", pa.array([None if i == 500 else topic for i in range(batch.num_rows)]))
    task = _task(broker, None, WriteColumns("value", topic="topic"))
    batch_calls, row_calls = _counting(task)
    try:
        with pytest.raises(KafkaWriteOptionError, match="null topic present in the data"):
            task.send_all(iter([batch]))
    finally:
        task.close()
    assert NULL_TOPIC_MESSAGE.startswith("null topic") and batch_calls == [] and row_calls == []
