"""Spark connector throughput: the ``pykafka`` data source vs a confluent-kafka baseline data source
(bench/spark_confluent_source.py) and our own client alone, in one run.

    .venv/bin/python bench/spark.py                     # 5M x 100-byte records over 8 partitions
    .venv/bin/python bench/spark.py --records 500000    # quicker
    .venv/bin/python bench/spark.py --skip-read         # the write side only
    .venv/bin/python bench/spark.py --topic-column      # the pykafka sink also from a ``topic`` column (no option)

local[2] SparkSession; a mini_broker in its own process. Writes (timed from job start to end, the rows cached
first): ``df.write.format(...)`` of N rows (value 100 B, ``partition`` = id % 8) with the pykafka sink and the
baseline sink, and our KafkaProducer alone sending the same records from one process (the connector's
overhead). Reads of the pykafka-written topic: ``count()`` and ``groupBy("partition").count()`` through each
data source, and our KafkaConsumer alone (assign the 8 partitions, poll to the end offsets). Each Spark
operation is warmed up once on a small topic first (the first Python data source job starts its workers).
Output: seconds, rows/s and the ratio to the confluent-kafka baseline.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, ROOT)
sys.path.insert(0, BENCH)

PARTITIONS = 8


def _session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, BENCH, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession
    from spark_confluent_source import ConfluentBaselineSource

    from spark_connector.source import KafkaDataSource

    spark = (SparkSession.builder.master("local[2]").appName("bench-spark").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(ConfluentBaselineSource)
    return spark


def _create_topic(bootstrap: str, topic: str) -> None:
    from pykafka_client.admin import AdminClient, NewTopic

    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)], timeout=30)


def _rows(spark: Any, n: int) -> Any:
    from pyspark.sql import functions as F

    df = spark.range(n, numPartitions=2).select(
        F.expr("cast(concat(repeat('x', 92), lpad(cast(id as string), 8, '0')) as binary)").alias("value"),
        (F.col("id") % PARTITIONS).cast("int").alias("partition"),
    ).cache()
    df.count()
    return df


#: extra producer settings for the pykafka sink (--kafka key=value)
SINK_OPTIONS: dict[str, str] = {}


def _write_pykafka(df: Any, bootstrap: str, topic: str) -> None:
    writer = df.write.format("pykafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
    for k, v in SINK_OPTIONS.items():
        writer = writer.option("kafka." + k, v)
    writer.mode("append").save()


def _write_pykafka_topic_column(df: Any, bootstrap: str, topic: str) -> None:
    """The pykafka sink with the topic in a ``topic`` column instead of the ``topic`` option."""
    from pyspark.sql import functions as F

    writer = df.withColumn("topic", F.lit(topic)).write.format("pykafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in SINK_OPTIONS.items():
        writer = writer.option("kafka." + k, v)
    writer.mode("append").save()


def _write_confluent(df: Any, bootstrap: str, topic: str) -> None:
    df.write.format("confluent_baseline").option("bootstrap", bootstrap).option("topic", topic).mode("append").save()


def _produce_ours(bootstrap: str, topic: str, n: int) -> None:
    from pykafka_client import KafkaProducer

    with KafkaProducer({"bootstrap.servers": bootstrap}) as p:
        send = p.send
        for i in range(n):
            send(topic, b"x" * 92 + b"%08d" % i, None, i % PARTITIONS)
        p.flush()


def _reader(spark: Any, fmt: str, bootstrap: str, topic: str) -> Any:
    if fmt == "pykafka":
        return (spark.read.format("pykafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
                .load())
    return spark.read.format("confluent_baseline").option("bootstrap", bootstrap).option("topic", topic).load()


def _consume_ours(bootstrap: str, topic: str) -> int:
    from pykafka_client import KafkaConsumer, TopicPartition

    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with KafkaConsumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False}) as c:
        c.assign(tps)
        c.seek_to_beginning(tps)
        ends = c.end_offsets(tps, timeout=20)
        n = 0
        while any(c.position(tp) < ends[tp] for tp in tps):
            n += c.poll(0.5).count()
        return n


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _print(op: str, impl: str, n: int, seconds: float | None, baseline: float | None, note: str = "") -> None:
    if seconds is None:
        print(f"{op:<28}{impl:<22}{'-':>9}{'-':>12}{'-':>12}  {note}", flush=True)
        return
    ratio = f"{baseline / seconds:.2f}x" if baseline else "-"
    print(f"{op:<28}{impl:<22}{seconds:>9.2f}{n / seconds:>12.0f}{ratio:>12}  {note}", flush=True)


def main() -> int:
    from examples.local_broker import mini_broker_process

    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--skip-read", action="store_true")
    ap.add_argument("--topic-column", action="store_true", help="also time the pykafka sink with a topic column")
    ap.add_argument("--kafka", action="append", default=[], metavar="KEY=VALUE",
                    help="a producer setting for the pykafka sink (repeatable), e.g. batch.size=262144")
    args = ap.parse_args()
    SINK_OPTIONS.update(kv.split("=", 1) for kv in args.kafka)
    n = args.records
    with mini_broker_process({"num.partitions": PARTITIONS}) as bootstrap:
        spark = _session()
        stamp = time.monotonic_ns()
        topics = {k: f"bench-spark-{k}-{stamp}" for k in ("warm", "ours", "ours-column", "confluent", "producer")}
        for t in topics.values():
            _create_topic(bootstrap, t)
        warm = _rows(spark, 2000)
        _write_pykafka(warm, bootstrap, topics["warm"])
        _write_confluent(warm, bootstrap, topics["warm"])
        df = _rows(spark, n)
        print(f"{n} records x 100 B over {PARTITIONS} partitions, local[2], mini_broker in its own process")
        print(f"{'operation':<28}{'implementation':<22}{'seconds':>9}{'rows/s':>12}{'vs baseline':>12}")
        base, _ = _timed(lambda: _write_confluent(df, bootstrap, topics["confluent"]))
        ours, _ = _timed(lambda: _write_pykafka(df, bootstrap, topics["ours"]))
        alone, _ = _timed(lambda: _produce_ours(bootstrap, topics["producer"], n))
        _print("write", "confluent baseline", n, base, base)
        _print("write", "pykafka", n, ours, base)
        if args.topic_column:
            _write_pykafka_topic_column(warm, bootstrap, topics["warm"])
            column, _ = _timed(lambda: _write_pykafka_topic_column(df, bootstrap, topics["ours-column"]))
            _print("write (topic column)", "pykafka", n, column, base)
        _print("write (no Spark)", "KafkaProducer alone", n, alone, base, "one process, one producer")
        if args.skip_read:
            return 0
        for label, action in (("count()", lambda d: d.count()),
                              ("groupBy(partition).count()", lambda d: d.groupBy("partition").count().collect())):
            results: dict[str, float | None] = {}
            for fmt in ("confluent", "pykafka"):
                try:
                    action(_reader(spark, fmt, bootstrap, topics["warm"]))  # warm-up
                    seconds, _ = _timed(lambda fmt=fmt, action=action: action(_reader(spark, fmt, bootstrap, topics["ours"])))
                    results[fmt] = seconds
                except Exception as e:  # the read side not merged yet, or a failure: say so, keep going
                    results[fmt] = None
                    lines = [ln for ln in str(e).splitlines() if "Error" in ln] or str(e).strip().splitlines()
                    print(f"read {label} {fmt}: failed: {lines[-1].strip()[:200]}")
            _print(f"read {label}", "confluent baseline", n, results["confluent"], results["confluent"])
            _print(f"read {label}", "pykafka", n, results["pykafka"], results["confluent"])
        seconds, count = _timed(lambda: _consume_ours(bootstrap, topics["ours"]))
        _print("read (no Spark)", "KafkaConsumer alone", count, seconds, None, "one process, one consumer")
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
