"""The exactly-once streaming sink (option ``exactlyOnce=true``): a two-phase commit over Kafka transactions,
shaped after Flink's Kafka sink.

* Task (executor), :func:`write_in_transaction`: a transactional producer with the transactional id
  ``<prefix>-<hash of the checkpoint location>-<Spark partition id>``; ``init_transactions`` fences any earlier
  attempt of the same task (its open transaction is aborted by the coordinator), then the task's rows are
  written in one transaction, flushed, and the transaction is left open: the producer is closed forcefully
  (a graceful close would abort it). The commit message carries the transactional id, producer id and epoch.
* Driver, :meth:`ExactlyOnceCommitter.commit`: for batch ``b``, (1) when the sink state says ``b`` is already
  committed (a replay after a driver restart), abort the new transactions and stop; (2) write the intent
  ``{batch, transactions}`` durably; (3) for each transaction, a fresh producer ``resume_transaction(pid,
  epoch)`` + ``commit_transaction()`` (EndTxn commit with exactly that pid/epoch; committing again an already
  committed one answers NONE); (4) record ``b`` as the last committed batch and drop the intent.
  :meth:`abort` resumes and aborts them.
* Recovery, :meth:`ExactlyOnceCommitter.recover` (called when the driver creates the stream writer, before a
  batch's tasks run): an intent left by a driver that died in step 3 is committed again, then recorded.

The sink state lives in ``<checkpointLocation>/pykafka-sink/`` (or ``exactlyOnce.stateDir``): two small JSON
files replaced atomically (``last_committed.json``, ``commit_intent.json``). It must be on a filesystem the
driver can reach with plain file I/O (local or mounted): other checkpoint schemes need ``exactlyOnce.stateDir``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from pykafka_client import KafkaProducer
from spark_connector.write_options import KafkaWriteOptionError, WriteOptions
from spark_connector.write_schema import WriteColumns

log = logging.getLogger(__name__)

#: seconds the driver waits for one EndTxn
END_TXN_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class TransactionCommitMessage(WriterCommitMessage):
    """What an exactly-once task hands the driver: its still-open transaction (``records`` 0: none)."""

    partition_id: int
    records: int
    transactional_id: str = ""
    producer_id: int = -1
    epoch: int = -1


def state_dir_for(options: WriteOptions) -> str:
    if options.state_dir:
        return options.state_dir
    checkpoint = options.extra.get("checkpointlocation", "")
    if not checkpoint:
        raise KafkaWriteOptionError(
            "Option 'exactlyOnce' needs a checkpoint location (option checkpointLocation or "
            "spark.sql.streaming.checkpointLocation)"
        )
    if checkpoint.startswith("file://"):
        checkpoint = checkpoint[len("file://"):]
    elif checkpoint.startswith("file:"):
        checkpoint = checkpoint[len("file:"):]
    elif "://" in checkpoint:
        raise KafkaWriteOptionError(
            f"Option 'exactlyOnce' keeps its commit state next to the checkpoint, but {checkpoint!r} is not a local "
            "path: set option exactlyOnce.stateDir to a directory the driver can write (local or mounted)"
        )
    return os.path.join(checkpoint, "pykafka-sink")


def transactional_id_base(options: WriteOptions) -> str:
    """``<prefix>-<16 hex digits of the checkpoint location's hash>``: one per query, stable across restarts."""
    checkpoint = options.extra.get("checkpointlocation", "") or (options.state_dir or "")
    digest = hashlib.sha256(checkpoint.encode("utf-8")).hexdigest()[:16]
    return f"{options.transactional_id_prefix}-{digest}"


class SinkState:
    """The last committed batch id and the commit in progress, in a directory (atomic file replaces)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def _read(self, name: str) -> Any:
        try:
            with open(self._path(name), encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def _write(self, name: str, data: Any) -> None:
        os.makedirs(self.directory, exist_ok=True)
        tmp = self._path(name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path(name))

    def last_committed(self) -> int | None:
        data = self._read("last_committed.json")
        return None if data is None else int(data["batch_id"])

    def intent(self) -> dict[str, Any] | None:
        data: dict[str, Any] | None = self._read("commit_intent.json")
        return data

    def write_intent(self, batch_id: int, transactions: list[dict[str, Any]]) -> None:
        self._write("commit_intent.json", {"batch_id": batch_id, "transactions": transactions})

    def mark_committed(self, batch_id: int) -> None:
        self._write("last_committed.json", {"batch_id": batch_id})
        try:
            os.remove(self._path("commit_intent.json"))
        except FileNotFoundError:
            pass


def _end_transaction(producer_config: dict[str, str], txn: dict[str, Any], commit: bool) -> None:
    config: dict[str, Any] = dict(producer_config)
    config["transactional.id"] = txn["transactional_id"]
    producer = KafkaProducer(config)
    try:
        producer.resume_transaction(int(txn["producer_id"]), int(txn["epoch"]))
        if commit:
            producer.commit_transaction(END_TXN_TIMEOUT_S)
        else:
            producer.abort_transaction(END_TXN_TIMEOUT_S)
    finally:
        producer.close(0)


def _open_transactions(messages: Sequence[object | None]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        if isinstance(m, TransactionCommitMessage) and m.records > 0:
            out.append(asdict(m))
    return out


class ExactlyOnceCommitter:
    """The driver half (commit, abort, recovery); built from plain options, nothing kept between calls."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options
        self.state = SinkState(state_dir_for(options))

    def recover(self) -> None:
        intent = self.state.intent()
        if intent is None:
            return
        batch_id = int(intent["batch_id"])
        log.warning("exactly-once sink: completing the commit of batch %d left by a previous driver", batch_id)
        self._commit_all(batch_id, intent["transactions"])
        self.state.mark_committed(batch_id)

    def commit(self, messages: Sequence[object | None], batch_id: int) -> None:
        self.recover()
        transactions = _open_transactions(messages)
        last = self.state.last_committed()
        if last is not None and batch_id <= last:
            log.warning(
                "exactly-once sink: batch %d was already committed (last committed %d); aborting its replay",
                batch_id, last,
            )
            self._abort_all(transactions)
            return
        self.state.write_intent(batch_id, transactions)
        self._commit_all(batch_id, transactions)
        self.state.mark_committed(batch_id)

    def abort(self, messages: Sequence[object | None], batch_id: int) -> None:
        self._abort_all(_open_transactions(messages))

    def _commit_all(self, batch_id: int, transactions: list[dict[str, Any]]) -> None:
        for txn in transactions:
            try:
                _end_transaction(self.options.producer_config, txn, commit=True)
            except Exception as e:
                raise RuntimeError(
                    f"exactly-once sink: committing the transaction {txn['transactional_id']} (producer id "
                    f"{txn['producer_id']}, epoch {txn['epoch']}) of batch {batch_id} failed: {e!r}. If it was fenced "
                    "or timed out, its records were aborted by the broker (raise kafka.transaction.timeout.ms); the "
                    f"commit is retried when the query restarts (state in {self.state.directory})"
                ) from e

    def _abort_all(self, transactions: list[dict[str, Any]]) -> None:
        for txn in transactions:
            try:
                _end_transaction(self.options.producer_config, txn, commit=False)
            except Exception as e:  # already fenced or aborted by a newer attempt: nothing left to abort
                log.warning("exactly-once sink: aborting transaction %s failed (%r)", txn["transactional_id"], e)


def write_in_transaction(
    options: WriteOptions, columns: WriteColumns, txn_id_base: str, batches: Iterator[pa.RecordBatch]
) -> TransactionCommitMessage:
    """The task half: write the task's rows in a transaction left open for the driver (see the module doc)."""
    from spark_connector.task_producer import InjectedWriteFault, TaskProducer, task_context

    partition_id, _attempt = task_context()
    transactional_id = f"{txn_id_base}-{partition_id}"
    task = TaskProducer(options, columns, {"transactional.id": transactional_id})
    try:
        task.producer.init_transactions(END_TXN_TIMEOUT_S)  # fences an earlier attempt of this task
        task.producer.begin_transaction()
        try:
            count = task.send_all(batches)
        except InjectedWriteFault:
            raise  # a killed task does not clean up: its open transaction is left to be fenced
        except BaseException:
            try:
                task.producer.abort_transaction(30)
            except Exception as e:
                log.warning("could not abort transaction %s after a failed write (%r)", transactional_id, e)
            raise
        producer_id, epoch = task.producer.producer_id_and_epoch()
    finally:
        task.close(0)  # forced: a graceful close would abort the open transaction
    return TransactionCommitMessage(partition_id, count, transactional_id, producer_id, epoch)
