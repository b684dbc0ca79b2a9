"""A Spark Structured Streaming pipeline on the ``pykafka`` data source: read one topic, transform, write
another, exactly once.

    .venv/bin/python examples/spark_pipeline.py                          # against a local mini_broker process
    .venv/bin/python examples/spark_pipeline.py --bootstrap host:9092    # against a running cluster

The query reads ``example-spark-words`` from the earliest offset (``readStream.format("pykafka")``), upper-cases
each value, and writes the result to ``example-spark-upper`` with the exactly-once sink (``exactlyOnce=true``:
each micro-batch is committed in Kafka transactions when Spark commits it). It runs with
``trigger(availableNow=True)`` so it stops once it has caught up; a read_committed consumer then checks that
every input record arrived exactly once. Needs pyspark, pyarrow and Java 17+ (``pip install '.[spark]'``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.append(str(Path(__file__).resolve().parents[1]))  # `python examples/x.py` too: the checkout holds `examples`

from examples.local_broker import bootstrap_servers
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import NewTopic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INPUT, OUTPUT, PARTITIONS = "example-spark-words", "example-spark-upper", 3


def run_pipeline(spark: SparkSession, servers: str, checkpoint: str) -> None:
    from pyspark.sql import functions as F

    words = (spark.readStream.format("pykafka")
             .option("kafka.bootstrap.servers", servers)
             .option("subscribe", INPUT)
             .option("startingOffsets", "earliest")
             .load())
    upper = words.select(F.col("key"), F.upper(F.col("value").cast("string")).alias("value"))
    query = (upper.writeStream.format("pykafka")
             .option("kafka.bootstrap.servers", servers)
             .option("topic", OUTPUT)
             .option("exactlyOnce", "true")
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True)
             .start())
    query.awaitTermination()


def read_committed(servers: str) -> list[str]:
    tps = [TopicPartition(OUTPUT, p) for p in range(PARTITIONS)]
    with KafkaConsumer({"bootstrap.servers": servers, "isolation.level": "read_committed"}) as reader:
        reader.assign(tps)
        reader.seek_to_beginning(tps)
        end = reader.end_offsets(tps, timeout=10)
        values: list[str] = []
        while any(reader.position(tp) < end[tp] for tp in tps):
            values += [r.value.decode() for r in reader.poll(0.5) if r.value is not None]
        return values


def _session() -> SparkSession:
    from pyspark.sql import SparkSession

    from spark_connector.source import KafkaDataSource

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this interpreter's packages
    spark = (SparkSession.builder.master("local[2]").appName("pykafka-pipeline")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.dataSource.register(KafkaDataSource)  # not needed once the package is installed (pyspark_pykafka)
    return spark


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", help="host:port of a Kafka broker (default: start a mini_broker)")
    ap.add_argument("--records", type=int, default=1000)
    args = ap.parse_args(argv)

    with bootstrap_servers(args.bootstrap) as servers:
        with AdminClient({"bootstrap.servers": servers}) as admin:
            admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in (INPUT, OUTPUT)])
        with KafkaProducer({"bootstrap.servers": servers, "key.serializer": "str", "value.serializer": "str"}) as p:
            for i in range(args.records):
                p.send(INPUT, f"word-{i}", key=f"k{i % 30}")

        session = spark if spark is not None else _session()
        with tempfile.TemporaryDirectory(prefix="spark-pipeline-") as checkpoint:
            run_pipeline(session, servers, checkpoint)
        output = read_committed(servers)
        exactly_once = sorted(output) == sorted(f"WORD-{i}" for i in range(args.records))
        print(f"{len(output)} records written to {OUTPUT}")
        print(f"read_committed sees every input record exactly once: {exactly_once}")
    return 0 if exactly_once else 1


if __name__ == "__main__":
    raise SystemExit(main())
