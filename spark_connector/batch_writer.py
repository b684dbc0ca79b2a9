"""The batch sink (``df.write.format("pykafka").mode("append").save()``): at-least-once, as Spark's built-in
Kafka sink. Each task writes its rows with one idempotent producer and returns once all are acknowledged;
``commit`` only logs (records are visible as soon as written), ``abort`` cannot take records back."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from spark_connector.task_producer import TaskProducer, task_context
from spark_connector.write_options import WriteOptions
from spark_connector.write_schema import WriteColumns

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KafkaWriteCommitMessage(WriterCommitMessage):
    partition_id: int
    records: int


def write_task(options: WriteOptions, columns: WriteColumns, batches: Iterator[pa.RecordBatch]) -> KafkaWriteCommitMessage:
    """One at-least-once task: send, flush, close; the first delivery error fails the task."""
    partition_id, _ = task_context()
    task = TaskProducer(options, columns)
    try:
        count = task.send_all(batches)
    except BaseException:
        task.close(0)
        raise
    task.close()
    return KafkaWriteCommitMessage(partition_id, count)


def total_records(messages: Sequence[object | None]) -> int:
    return sum(getattr(m, "records", 0) for m in messages if m is not None)


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: WriteOptions, columns: WriteColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaWriteCommitMessage:
        return write_task(self.options, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("pykafka sink: %d record(s) written", total_records(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning(
            "pykafka sink: the write failed; %d record(s) written by successful tasks stay in Kafka (at-least-once)",
            total_records(messages),
        )
