"""A Spark Structured Streaming pipeline on the ``pykafka`` data source: read one topic, transform, write
another, exactly once.

    .venv/bin/python examples/spark_pipeline.py                          # against a local mini_broker process
    .venv/bin/python examples/spark_pipeline.py --bootstrap host:9092    # against a running cluster

The query reads ``example-spark-words`` from the earliest offset (``readStream.format("pykafka")``), upper-cases
each value, and writes the result to ``example-spark-upper`` with the exactly-once sink (``exactlyOnce=true``:
each micro-batch is committed in Kafka transactions when Spark commits it). It runs with
``trigger(availableNow=True)`` so it stops once it has caught up; a read_committed consumer then checks that
every input record arrived exactly once. Needs pyspark, pyarrow and Java 17+ (``pip install '.[spark]'``).

Run it again against the same broker: the topics are reused, the query starts at the offsets where this
run's input begins (``startingOffsets`` as JSON), and the output is checked from where it ended when the run
started.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.append(str(Path(__file__).resolve().parents[1]))  # `python examples/x.py` too: the checkout holds `examples`

from examples.local_broker import bootstrap_servers
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import NewTopic, OffsetSpec
from pykafka_client.errors import TopicExistsError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INPUT, OUTPUT, PARTITIONS = "example-spark-words", "example-spark-upper", 3


def run_pipeline(spark: SparkSession, servers: str, checkpoint: str, starting: dict[TopicPartition, int]) -> None:
    """Copy ``INPUT`` from the ``starting`` offsets (upper-cased) to ``OUTPUT``, exactly once."""
    from pyspark.sql import functions as F

    starting_json = json.dumps({INPUT: {str(tp.partition): offset for tp, offset in starting.items()}})
    words = (spark.readStream.format("pykafka")
             .option("kafka.bootstrap.servers", servers)
             .option("subscribe", INPUT)
             .option("startingOffsets", starting_json)  # or "earliest": the whole topic
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


def end_offsets(admin: AdminClient, topic: str) -> dict[TopicPartition, int]:
    ends = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)})
    return {tp: info.offset for tp, info in ends.items()}


def read_committed(servers: str, start: dict[TopicPartition, int]) -> list[str]:
    """The committed output from ``start`` on."""
    tps = list(start)
    reader: KafkaConsumer[bytes | None, bytes | None]
    with KafkaConsumer({"bootstrap.servers": servers, "isolation.level": "read_committed"}) as reader:
        reader.assign(tps)
        for tp, offset in start.items():
            reader.seek(tp, offset)
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
            try:
                admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in (INPUT, OUTPUT)])
            except TopicExistsError:
                print(f"{INPUT} and {OUTPUT} exist (an earlier run): reusing them")
            input_start, output_start = end_offsets(admin, INPUT), end_offsets(admin, OUTPUT)
        with KafkaProducer({"bootstrap.servers": servers, "key.serializer": "str", "value.serializer": "str"}) as p:
            for i in range(args.records):
                p.send(INPUT, f"word-{i}", key=f"k{i % 30}")

        session = spark if spark is not None else _session()
        with tempfile.TemporaryDirectory(prefix="spark-pipeline-") as checkpoint:
            run_pipeline(session, servers, checkpoint, input_start)
        output = read_committed(servers, output_start)
        exactly_once = sorted(output) == sorted(f"WORD-{i}" for i in range(args.records))
        print(f"{len(output)} records written to {OUTPUT}")
        print(f"read_committed sees every input record exactly once: {exactly_once}")
    return 0 if exactly_once else 1


if __name__ == "__main__":
    raise SystemExit(main())
