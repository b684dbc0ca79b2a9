"""The exactly-once streaming sink (``exactlyOnce=true``): a task killed mid-write (fault injection) and a
micro-batch replayed after the driver lost Spark's commit log are both seen exactly once by a read_committed
consumer, while the log (read_uncommitted) holds the aborted copies; a commit a driver left half done is
completed on recovery; the writers pickle."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from mini_broker.broker import MiniBroker
from tests.spark.kafka_io import create_topic, read_topic, values_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]


def _lines(directory: Path, name: str, values: list[str]) -> None:
    directory.mkdir(exist_ok=True)
    (directory / name).write_text("".join(v + "\n" for v in values))


def _run_eos_query(spark: SparkSession, bootstrap: str, source: Path, topic: str, checkpoint: Path,
                   **extra: str) -> BaseException | None:
    writer = (spark.readStream.text(str(source)).repartition(2).writeStream.format("pykafka")
              .option("kafka.bootstrap.servers", bootstrap).option("topic", topic).option("exactlyOnce", "true")
              .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True))
    for k, v in extra.items():
        writer = writer.option(k, v)
    query = writer.start()
    try:
        query.awaitTermination(180)
    except Exception as e:
        return e
    return query.exception()


def test_task_killed_mid_write_is_seen_exactly_once(spark: SparkSession, spark_broker: MiniBroker, tmp_path: Path) -> None:
    bootstrap = spark_broker.bootstrap_servers
    topic = "eos-killed"
    create_topic(bootstrap, topic, 2)
    values = [f"row-{i:03d}" for i in range(200)]
    _lines(tmp_path / "in", "a.txt", values)
    fault = {"testing.failAfterRecords": "20", "testing.failureMarker": str(tmp_path / "fault-fired")}

    error = _run_eos_query(spark, bootstrap, tmp_path / "in", topic, tmp_path / "cp", **fault)
    assert error is not None and "injected fault after 20 records" in str(error)
    assert len(read_topic(bootstrap, topic, 2)) >= 20  # the dead task's records are in the log, uncommitted

    assert _run_eos_query(spark, bootstrap, tmp_path / "in", topic, tmp_path / "cp", **fault) is None  # restart
    committed = read_topic(bootstrap, topic, 2, "read_committed")
    assert sorted(values_of(committed)) == [v.encode() for v in values]
    assert len(read_topic(bootstrap, topic, 2)) > len(values)  # the aborted copies are still in the log


def test_batch_replayed_after_driver_restart_is_not_written_twice(
    spark: SparkSession, spark_broker: MiniBroker, tmp_path: Path
) -> None:
    bootstrap = spark_broker.bootstrap_servers
    topic = "eos-replay"
    create_topic(bootstrap, topic, 2)
    values = [f"r{i}" for i in range(40)]
    _lines(tmp_path / "in", "a.txt", values)
    checkpoint = tmp_path / "cp"
    assert _run_eos_query(spark, bootstrap, tmp_path / "in", topic, checkpoint) is None
    assert json.loads((checkpoint / "pykafka-sink" / "last_committed.json").read_text()) == {"batch_id": 0}

    # the driver died after the sink committed batch 0 but before Spark wrote its commit log: Spark replays 0
    (checkpoint / "commits" / "0").unlink()
    for crc in (checkpoint / "commits").glob(".0.crc"):
        crc.unlink()
    assert _run_eos_query(spark, bootstrap, tmp_path / "in", topic, checkpoint) is None

    assert len(read_topic(bootstrap, topic, 2)) == 2 * len(values)  # the replay was written, then aborted
    committed = read_topic(bootstrap, topic, 2, "read_committed")
    assert sorted(values_of(committed)) == sorted(v.encode() for v in values)


def test_commit_left_half_done_is_completed_on_recovery(spark_broker: MiniBroker, tmp_path: Path) -> None:
    """Outside Spark: a task's open transaction, an intent file as a driver that died mid-commit leaves it;
    creating the stream writer (what the next run's driver does first) commits it."""
    import pyarrow as pa
    from pyspark.sql.types import StringType, StructField, StructType

    from spark_connector.exactly_once import SinkState, write_in_transaction
    from spark_connector.write_options import parse_write_options
    from spark_connector.write_schema import validate_write_schema
    from spark_connector.writer import create_stream_writer

    bootstrap = spark_broker.bootstrap_servers
    create_topic(bootstrap, "eos-recover", 1)
    options = {"kafka.bootstrap.servers": bootstrap, "topic": "eos-recover", "exactlyOnce": "true",
               "checkpointlocation": str(tmp_path / "cp")}
    schema = StructType([StructField("value", StringType())])
    write_options = parse_write_options(options, streaming=True)
    columns = validate_write_schema(schema, "eos-recover")
    batch = pa.RecordBatch.from_pydict({"value": pa.array(["a", "b", "c"])})
    message = write_in_transaction(write_options, columns, "eos-recover-txn", iter([batch]))
    assert message.records == 3 and message.producer_id >= 0
    assert [r.value for r in read_topic(bootstrap, "eos-recover", 1)] == [b"a", b"b", b"c"]

    state = SinkState(str(tmp_path / "cp" / "pykafka-sink"))
    from dataclasses import asdict

    state.write_intent(7, [asdict(message)])
    create_stream_writer(options, schema, False)
    assert state.intent() is None and state.last_committed() == 7
    assert [r.value for r in read_topic(bootstrap, "eos-recover", 1, "read_committed")] == [b"a", b"b", b"c"]


def test_writer_state_pickles(tmp_path: Path) -> None:
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    from spark_connector.exactly_once import TransactionCommitMessage
    from spark_connector.writer import create_batch_writer, create_stream_writer

    schema = StructType([StructField("topic", StringType()), StructField("value", BinaryType())])
    options = {"kafka.bootstrap.servers": "localhost:1", "checkpointlocation": str(tmp_path)}
    writers = [
        create_batch_writer(options, schema, False),
        create_stream_writer(options, schema, False),
        create_stream_writer({**options, "exactlyOnce": "true"}, schema, True),
    ]
    for w in writers:
        clone = pickle.loads(pickle.dumps(w))
        assert vars(clone) == vars(w)
    message = TransactionCommitMessage(1, 5, "t-1", 1000, 3)
    assert pickle.loads(pickle.dumps(message)) == message
    shutil.rmtree(tmp_path, ignore_errors=True)
