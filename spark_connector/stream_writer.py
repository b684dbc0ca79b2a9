"""The streaming sinks: at-least-once by default (as the built-in sink: every micro-batch's tasks write and
flush, commit/abort do nothing), exactly-once with ``exactlyOnce=true`` (:mod:`spark_connector.exactly_once`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from spark_connector.batch_writer import KafkaWriteCommitMessage, total_records, write_task
from spark_connector.exactly_once import ExactlyOnceCommitter, TransactionCommitMessage, write_in_transaction
from spark_connector.write_options import WriteOptions
from spark_connector.write_schema import WriteColumns

log = logging.getLogger(__name__)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """At-least-once: a replayed micro-batch is written again (as Spark's built-in Kafka sink)."""

    def __init__(self, options: WriteOptions, columns: WriteColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaWriteCommitMessage:
        return write_task(self.options, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to do: every task flushed its records before its ``write`` returned."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # the records of the tasks that succeeded are in Kafka already; Spark replays the batch
        log.warning("pykafka sink: micro-batch %d failed; %d record(s) written by successful tasks stay in Kafka "
                    "and are written again when the batch is replayed (at-least-once; exactlyOnce=true avoids "
                    "this)", batchId, total_records(messages))


class ExactlyOnceStreamWriter(DataSourceStreamArrowWriter):
    """Each micro-batch becomes visible to read_committed consumers exactly once (two-phase commit)."""

    def __init__(self, options: WriteOptions, columns: WriteColumns, transactional_id_base: str) -> None:
        self.options = options
        self.columns = columns
        self.transactional_id_base = transactional_id_base

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TransactionCommitMessage:
        return write_in_transaction(self.options, self.columns, self.transactional_id_base, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        ExactlyOnceCommitter(self.options).commit(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        ExactlyOnceCommitter(self.options).abort(messages, batchId)
