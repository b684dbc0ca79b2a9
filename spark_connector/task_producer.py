"""One write task's producer: our KafkaProducer (idempotent; transactional for the exactly-once sink) that
sends every row of the task's Arrow batches, remembers the first delivery error and fails the task with it
(checked after every Arrow batch and after the final flush), so ``write()`` returns only once every record is
acknowledged. The built-in sink does the same with Java's producer (KafkaWriteTask)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pykafka_client import KafkaProducer
from spark_connector.arrow_records import NULL_TOPIC_MESSAGE, records, timestamp_ms_column
from spark_connector.write_options import KafkaWriteOptionError, WriteOptions
from spark_connector.write_schema import WriteColumns

log = logging.getLogger(__name__)

#: seconds a task waits for its records to be acknowledged before failing (delivery.timeout.ms bounds each)
FLUSH_TIMEOUT_S = 600.0


class KafkaWriteTaskError(RuntimeError):
    """A record of the task could not be written: the task fails (Spark retries it or fails the job)."""


class InjectedWriteFault(RuntimeError):
    """Raised by the ``testing.failAfterRecords`` fault injection (tests only): the task dies mid-write."""


def task_context() -> tuple[int, int]:
    """(partition id, attempt number) of the running Spark task; (0, 0) outside Spark."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, 0
    return ctx.partitionId(), ctx.attemptNumber()


class TaskProducer:
    def __init__(self, options: WriteOptions, columns: WriteColumns, extra_config: dict[str, str] | None = None) -> None:
        self.options = options
        self.columns = columns
        config: dict[str, Any] = dict(options.producer_config)
        config.update(extra_config or {})
        self.producer = KafkaProducer(config)
        self.records = 0
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def _on_delivery(self, metadata: object, exc: BaseException | None) -> None:
        if exc is not None and self._error is None:
            with self._lock:
                if self._error is None:
                    self._error = exc

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise KafkaWriteTaskError(
                f"Writing to Kafka failed after {self.records} record(s) were handed to the producer: {self._error!r}"
            ) from self._error

    def send_all(self, batches: Iterator[pa.RecordBatch]) -> int:
        """Send every row; raises the first delivery error; returns the number of records sent.

        Without a headers column, each Arrow batch goes to ``KafkaProducer.send_batch`` (its columns straight
        into record batches): one call per topic (the ``topic`` option, or each value of the topic column) and,
        with a partition column, per partition (rows of a topic-partition keep their order; a null partition
        sends the batch row by row); with a headers column (per-row headers), row by row through ``send``."""
        send = self.producer.send
        on_delivery = self._on_delivery
        topic_option = self.options.topic
        fail_after = self._fault_threshold()
        columns = self.columns
        whole = columns.headers is None
        for batch in batches:
            if whole and (columns.partition is None or batch.column(columns.partition).null_count == 0):
                if fail_after is not None and self.records + batch.num_rows >= fail_after:
                    batch = batch.slice(0, fail_after - self.records)
                self._send_batch(batch)
                if fail_after is not None and self.records >= fail_after:
                    self.flush()
                    raise InjectedWriteFault(f"injected fault after {self.records} records (testing.failAfterRecords)")
                self._raise_if_failed()
                continue
            for topic, key, value, headers, partition, timestamp in records(batch, columns, topic_option):
                send(topic, value, key, partition, timestamp, headers, on_delivery)
                self.records += 1
                if fail_after is not None and self.records >= fail_after:
                    self.flush()
                    raise InjectedWriteFault(f"injected fault after {self.records} records (testing.failAfterRecords)")
            self._raise_if_failed()
        self.flush()
        return self.records

    def _send_batch(self, batch: pa.RecordBatch) -> None:
        columns = self.columns
        topic_option = self.options.topic
        if topic_option is not None:
            by_topic: list[tuple[str, pa.RecordBatch]] = [(topic_option, batch)]
        else:
            assert columns.topic is not None
            if batch.column(columns.topic).null_count:  # before any row of the batch is sent, as the row path
                raise KafkaWriteOptionError(NULL_TOPIC_MESSAGE)
            by_topic = _split(batch, columns.topic)
        for topic, rows in by_topic:
            self._send_topic_rows(topic, rows)
        self.records += batch.num_rows

    def _send_topic_rows(self, topic: str, batch: pa.RecordBatch) -> None:
        columns = self.columns
        if columns.partition is None:
            parts: list[tuple[int | None, pa.RecordBatch]] = [(None, batch)]
        else:
            parts = _split(batch, columns.partition)
        for partition, rows in parts:
            future = self.producer.send_batch(
                topic,
                rows.column(columns.value),
                rows.column(columns.key) if columns.key else None,
                partition=partition,
                timestamps=timestamp_ms_column(rows.column(columns.timestamp)) if columns.timestamp else None,
            )
            future.add_done_callback(self._on_batch_done)

    def _on_batch_done(self, future: Future[Any]) -> None:
        exc = future.exception()
        if exc is not None:
            self._on_delivery(None, exc)

    def flush(self) -> None:
        self.producer.flush(FLUSH_TIMEOUT_S)
        self._raise_if_failed()

    def _fault_threshold(self) -> int | None:
        """The record count at which this task dies, for the first task that gets there (the marker file is
        created exclusively, so a retried or replayed task writes normally)."""
        o = self.options
        if o.fail_after_records is None or o.failure_marker is None:
            return None
        if os.path.exists(o.failure_marker):
            return None
        try:
            fd = os.open(o.failure_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return None
        os.close(fd)
        return o.fail_after_records

    def close(self, timeout: float | None = 30.0) -> None:
        self.producer.close(timeout)


def _split(batch: pa.RecordBatch, column_name: str) -> list[tuple[Any, pa.RecordBatch]]:
    """The rows of ``batch`` for each distinct value of a column without nulls, each value's rows in their order;
    by Arrow, no Python object per row: the batch as is for one value (a constant topic or partition), else one
    stable sort by the column and a zero-copy slice per value."""
    column = batch.column(column_name)
    distinct = pc.unique(column)
    if len(distinct) == 1:
        return [(distinct[0].as_py(), batch)]
    ordered = batch.take(pc.sort_indices(column))
    counts = pc.value_counts(ordered.column(column_name))  # in order of appearance: the sorted order
    out: list[tuple[Any, pa.RecordBatch]] = []
    start = 0
    for value, count in zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True):
        out.append((value, ordered.slice(start, count)))
        start += count
    return out
