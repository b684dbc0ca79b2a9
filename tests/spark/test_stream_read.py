"""Streaming reads through ``spark.readStream.format("pykafka")`` on the shared local[2] session: availableNow
with a rate limit and a restart from the checkpoint, a processing-time trigger on a growing topic, a topic
deleted mid-stream with failOnDataLoss true and false. Rows reach the test through foreachBatch."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pykafka_client.admin import AdminClient
from pykafka_client.admin.types import NewPartitions
from tests.spark.read_helpers import Produced, create_topic, expected, fresh_topic, numbered, produce, rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from mini_broker.broker import MiniBroker

pytestmark = [pytest.mark.spark]


class Collected:
    """Rows of every micro-batch, appended by foreachBatch (on a py4j callback thread)."""

    def __init__(self, include_headers: bool = False) -> None:
        self.include_headers = include_headers
        self.batches: list[list[tuple[Any, ...]]] = []
        self._lock = threading.Lock()

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        got = rows(df, self.include_headers)
        with self._lock:
            self.batches.append(got)

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        with self._lock:
            return sorted((r for b in self.batches for r in b), key=lambda t: (t[2], t[3], t[4]))


def stream(spark: SparkSession, broker: MiniBroker, **options: str) -> DataFrame:
    return spark.readStream.format("pykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers) \
        .options(**options).load()


def wait_until(condition: Callable[[], bool], what: str, query: StreamingQuery | None = None,
               timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if query is not None and query.exception() is not None:
            raise AssertionError(f"query failed while waiting for {what}: {query.exception()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture
def queries() -> Iterator[list[StreamingQuery]]:
    started: list[StreamingQuery] = []
    yield started
    for q in started:
        if q.isActive:
            q.stop()


def test_available_now_rate_limited_then_restart_reads_only_new_records(
        spark: SparkSession, spark_broker: MiniBroker, tmp_path: Path) -> None:
    prefix = fresh_topic("avail")
    a, b = f"{prefix}-a", f"{prefix}-b"
    create_topic(spark_broker, a, 2)
    first = produce(spark_broker, numbered(a, 25, 2))
    options = {"subscribePattern": f"{prefix}-.*", "startingOffsets": "earliest", "maxOffsetsPerTrigger": "10"}
    checkpoint = str(tmp_path / "checkpoint")

    def run() -> tuple[Collected, StreamingQuery]:
        sink = Collected()
        query = stream(spark, spark_broker, **options).writeStream.foreachBatch(sink) \
            .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
        assert query.awaitTermination(120)
        assert query.exception() is None
        return sink, query

    sink, query = run()
    assert sink.rows == expected(first)
    assert len([b for b in sink.batches if b]) == 3  # 25 records, at most 10 per trigger
    assert max(len(b) for b in sink.batches) <= 10
    progress = query.lastProgress
    assert progress is not None
    assert json.loads(progress["sources"][0]["latestOffset"]) == {a: {"0": 13, "1": 12}}
    # meanwhile: more records, a new partition, a new topic matching the pattern
    with AdminClient(bootstrap_servers=spark_broker.bootstrap_servers) as admin:
        admin.create_partitions({a: NewPartitions(3)})
    create_topic(spark_broker, b, 1)
    second = produce(spark_broker, [*numbered(a, 6, 3, start=100), *numbered(b, 4, 1, start=200)])
    sink, _ = run()
    assert sink.rows == expected(second)  # only the new records, new partitions and topics from their start


def _new_records(topic: str, start: int, count: int) -> list[dict[str, Any]]:
    return [{**r, "headers": [("n", b"%d" % i)] if i % 2 else None}
            for i, r in enumerate(numbered(topic, count, 2, start=start))]


def test_processing_time_trigger_on_a_growing_topic(
        spark: SparkSession, spark_broker: MiniBroker, tmp_path: Path, queries: list[StreamingQuery]) -> None:
    topic = fresh_topic("grow")
    create_topic(spark_broker, topic, 2)
    produce(spark_broker, numbered(topic, 4, 2))  # before the query: skipped (startingOffsets=latest)
    sink = Collected(include_headers=True)
    query = stream(spark, spark_broker, subscribe=topic, includeHeaders="true").writeStream.foreachBatch(sink) \
        .option("checkpointLocation", str(tmp_path / "cp")).trigger(processingTime="500 milliseconds").start()
    queries.append(query)
    wait_until(lambda: query.lastProgress is not None, "the first trigger", query)
    produced: list[Produced] = []
    for wave in range(3):
        produced += produce(spark_broker, _new_records(topic, 100 + 10 * wave, 6))
        wanted = len(produced)
        wait_until(lambda: len(sink.rows) >= wanted, f"wave {wave}", query)  # noqa: B023 (called at once)
    time.sleep(1)  # a few more triggers: nothing may be read twice
    assert sink.rows == expected(produced, include_headers=True)
    query.stop()


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_topic_deleted_mid_stream(spark: SparkSession, spark_broker: MiniBroker, tmp_path: Path,
                                  queries: list[StreamingQuery], fail_on_data_loss: bool) -> None:
    keep, gone = fresh_topic("keep"), fresh_topic("gone")
    create_topic(spark_broker, keep, 1)
    create_topic(spark_broker, gone, 1)
    before = produce(spark_broker, [*numbered(keep, 3, 1), *numbered(gone, 3, 1)])
    sink = Collected()
    query = stream(spark, spark_broker, subscribe=f"{keep},{gone}", startingOffsets="earliest",
                   failOnDataLoss=str(fail_on_data_loss).lower()).writeStream.foreachBatch(sink) \
        .option("checkpointLocation", str(tmp_path / "cp")).trigger(processingTime="500 milliseconds").start()
    queries.append(query)
    wait_until(lambda: len(sink.rows) == len(before), "the records produced before", query)
    with AdminClient(bootstrap_servers=spark_broker.bootstrap_servers) as admin:
        admin.delete_topics([gone])
    after = produce(spark_broker, numbered(keep, 2, 1, start=50))
    if fail_on_data_loss:
        with pytest.raises(Exception) as e:  # StreamingQueryException
            query.awaitTermination(90)
        assert "KAFKA_DATA_LOSS.PARTITIONS_DELETED" in str(e.value)
        assert f"Partitions Set({gone}-0) have been deleted" in str(e.value)
    else:
        wait_until(lambda: len(sink.rows) == len(before) + len(after), "the records after the deletion", query)
        assert sink.rows == expected(before + after)
        assert query.isActive


def test_batch_only_options_are_rejected_by_a_stream(spark: SparkSession, spark_broker: MiniBroker,
                                                     tmp_path: Path) -> None:
    with pytest.raises(Exception) as e:  # at start() or as the query's first failure, by Spark's timing
        query = stream(spark, spark_broker, subscribe="x", endingOffsets="latest").writeStream.format("noop") \
            .option("checkpointLocation", str(tmp_path / "cp")).start()
        query.awaitTermination(60)
    assert "ending offset not valid in streaming queries" in str(e.value)
