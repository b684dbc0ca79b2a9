"""Batch and streaming writes through the ``pykafka`` sink on the shared local[2] session, read back with our
consumer: byte-exact keys, values, headers, partitions and timestamps; Spark's checks and messages for invalid
options and columns; a delivery error fails the task."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mini_broker.broker import MiniBroker
from tests.spark.kafka_io import create_topic, read_topic, values_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]

HEADERS_DDL = "array<struct<key:string,value:binary>>"
FULL_DDL = f"topic string, key binary, value binary, headers {HEADERS_DDL}, partition int, timestamp timestamp"


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)


def test_batch_write_reads_back_byte_exact(spark: SparkSession, spark_broker: MiniBroker) -> None:
    topic = "write-exact"
    create_topic(spark_broker.bootstrap_servers, topic, 3)
    rows: list[tuple[Any, ...]] = []
    for i in range(60):
        key = None if i % 7 == 0 else bytes([i, 0, 255]) + b"k%d" % i
        value = None if i % 11 == 0 else bytes(range(i % 256)) + b"\x00v"
        headers = None if i % 5 == 0 else [("h1", b"\x00\x01" * (i % 3)), ("h2", None if i % 2 else b"x")]
        rows.append((topic, key, value, headers, i % 3, _utc(1_700_000_000_000 + i)))
    df = spark.createDataFrame(rows, FULL_DDL).repartition(2)
    df.write.format("pykafka").option("kafka.bootstrap.servers", spark_broker.bootstrap_servers).mode("append").save()

    got = read_topic(spark_broker.bootstrap_servers, topic, 3)
    assert len(got) == 60
    seen = {(r.partition, r.key, r.value, r.headers, r.timestamp) for r in got}
    expected = {(p, k, v, tuple(h or ()), int(ts.timestamp() * 1000)) for _, k, v, h, p, ts in rows}
    assert seen == expected


def test_string_columns_and_topic_option_override(spark: SparkSession, spark_broker: MiniBroker) -> None:
    create_topic(spark_broker.bootstrap_servers, "write-option-topic", 1)
    df = spark.createDataFrame([("ignored-topic", "k\u00e9", "v\u2603"), ("ignored-topic", None, "")],
                               "topic string, key string, value string")
    (df.write.format("pykafka").option("kafka.bootstrap.servers", spark_broker.bootstrap_servers)
     .option("topic", "write-option-topic").mode("append").save())
    got = read_topic(spark_broker.bootstrap_servers, "write-option-topic", 1)
    assert sorted((r.key, r.value) for r in got if r.key) == [("k\u00e9".encode(), "v\u2603".encode())]
    assert [(r.key, r.value) for r in got if r.key is None] == [(None, b"")]


INVALID: dict[str, tuple[str, dict[str, str], str]] = {
    "no topic": ("value binary", {}, "topic option required when no 'topic' attribute is present"),
    "no value": ("topic string, key binary", {}, "Required attribute 'value' not found"),
    "value int": ("topic string, value int", {}, "value attribute unsupported type int"),
    "key int": ("topic string, key int, value binary", {}, "key attribute unsupported type int"),
    "topic int": ("topic int, value binary", {}, "topic attribute unsupported type int. topic must be a(n) string"),
    "partition long": ("topic string, value binary, partition bigint", {}, "partition attribute unsupported type bigint"),
    "headers": ("topic string, value binary, headers array<string>", {}, "headers attribute unsupported type array<string>"),
    "timestamp": ("topic string, value binary, timestamp string", {}, "timestamp attribute unsupported type string"),
    "key.serializer": ("topic string, value binary", {"kafka.key.serializer": "x"}, "Kafka option 'key.serializer' is not supported"),
    "value.serializer": ("topic string, value binary", {"kafka.value.serializer": "x"}, "Kafka option 'value.serializer' is not supported"),
    "exactlyOnce batch": ("topic string, value binary", {"exactlyOnce": "true"}, "applies to streaming writes only"),
    "bad flag": ("topic string, value binary", {"exactlyOnce": "yes"}, "must be true or false"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_write_rejected_at_save(spark: SparkSession, spark_broker: MiniBroker, case: str) -> None:
    from pyspark.errors import AnalysisException

    ddl, options, message = INVALID[case]
    df = spark.createDataFrame([], ddl)
    writer = df.write.format("pykafka").option("kafka.bootstrap.servers", spark_broker.bootstrap_servers).mode("append")
    for k, v in options.items():
        writer = writer.option(k, v)
    with pytest.raises(AnalysisException, match=re.escape(message)):
        writer.save()


def test_missing_bootstrap_and_overwrite_rejected(spark: SparkSession) -> None:
    from pyspark.errors import AnalysisException

    df = spark.createDataFrame([], "topic string, value binary")
    with pytest.raises(AnalysisException, match=r"Option 'kafka\.bootstrap\.servers' must be specified"):
        df.write.format("pykafka").mode("append").save()
    with pytest.raises(AnalysisException, match="Save mode Overwrite not allowed for Kafka"):
        df.write.format("pykafka").option("kafka.bootstrap.servers", "localhost:1").mode("overwrite").save()


def test_null_topic_fails_the_task_with_sparks_message(spark: SparkSession, spark_broker: MiniBroker) -> None:
    df = spark.createDataFrame([(None, b"v")], "topic string, value binary")
    with pytest.raises(Exception, match="null topic present in the data"):
        df.write.format("pykafka").option("kafka.bootstrap.servers", spark_broker.bootstrap_servers).mode("append").save()


def test_first_delivery_error_fails_the_task(spark: SparkSession, spark_broker: MiniBroker) -> None:
    create_topic(spark_broker.bootstrap_servers, "write-one-partition", 1)
    df = spark.createDataFrame([("write-one-partition", b"v", 5)], "topic string, value binary, partition int")
    with pytest.raises(Exception, match=r"Writing to Kafka failed.*Partition 5 of topic write-one-partition"):
        (df.write.format("pykafka").option("kafka.bootstrap.servers", spark_broker.bootstrap_servers)
         .option("kafka.max.block.ms", "500").mode("append").save())


def test_streaming_write_at_least_once(spark: SparkSession, spark_broker: MiniBroker, tmp_path: Path) -> None:
    topic = "write-stream"
    create_topic(spark_broker.bootstrap_servers, topic, 2)
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.txt").write_text("".join(f"line-{i}\n" for i in range(50)))
    query = (spark.readStream.text(str(source)).writeStream.format("pykafka")
             .option("kafka.bootstrap.servers", spark_broker.bootstrap_servers).option("topic", topic)
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    got = read_topic(spark_broker.bootstrap_servers, topic, 2)
    assert sorted(values_of(got)) == sorted(f"line-{i}".encode() for i in range(50))


def test_streaming_start_rejects_missing_value(spark: SparkSession, spark_broker: MiniBroker, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.txt").write_text("x\n")
    stream = spark.readStream.text(str(source)).withColumnRenamed("value", "payload")
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        query = (stream.writeStream.format("pykafka").option("kafka.bootstrap.servers", spark_broker.bootstrap_servers)
                 .option("topic", "t").option("checkpointLocation", str(tmp_path / "cp"))
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
        if query.exception() is not None:
            raise Exception(str(query.exception()))
