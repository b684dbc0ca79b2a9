"""The baseline of bench/spark.py: a Python data source on confluent-kafka in the style of the existing
third-party Kafka data sources (lakehq/sail's: assign one partition per task, consume in batches of 10000,
build Arrow record batches from Python lists; ``enable.partition.eof`` ends a range early), plus an Arrow
writer producing with confluent-kafka's Producer (poll on BufferError, flush at the end, first error fails the
task). Name ``confluent_baseline``; options ``bootstrap``, ``topic``. Not part of the connector."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

SCHEMA = StructType([
    StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
    StructField("partition", IntegerType()), StructField("offset", LongType()),
    StructField("timestamp", TimestampType()), StructField("timestampType", IntegerType()),
])
ARROW_SCHEMA = pa.schema([
    ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
])
BATCH = 10000


@dataclass
class Range(InputPartition):  # type: ignore[misc]
    topic: str
    partition: int
    start: int
    end: int


class ConfluentBaselineSource(DataSource):  # type: ignore[misc]
    @classmethod
    def name(cls) -> str:
        return "confluent_baseline"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return ConfluentReader(self.options["bootstrap"], self.options["topic"])

    def writer(self, schema: StructType, overwrite: bool) -> ConfluentWriter:
        return ConfluentWriter(self.options["bootstrap"], self.options["topic"])


class ConfluentReader(DataSourceReader):  # type: ignore[misc]
    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic

    def partitions(self) -> list[Range]:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "baseline-planner"})
        try:
            meta = c.list_topics(self.topic, timeout=20).topics[self.topic]
            out = []
            for p in sorted(meta.partitions):
                low, high = c.get_watermark_offsets(TopicPartition(self.topic, p), timeout=20)
                if high > low:
                    out.append(Range(self.topic, p, low, high))
            return out
        finally:
            c.close()

    def read(self, partition: Range) -> Iterator[pa.RecordBatch]:
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "baseline-reader",
                      "enable.auto.commit": False, "auto.offset.reset": "error", "enable.partition.eof": True})
        try:
            c.assign([TopicPartition(partition.topic, partition.partition, partition.start)])
            last = partition.end - 1
            done = False
            while not done:
                keys: list[Any] = []
                values: list[Any] = []
                offsets: list[int] = []
                timestamps: list[Any] = []
                types: list[int] = []
                for m in c.consume(BATCH, 1.0):
                    err = m.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            done = True
                            break
                        raise RuntimeError(str(err))
                    if m.offset() > last:
                        done = True
                        break
                    keys.append(m.key())
                    values.append(m.value())
                    offsets.append(m.offset())
                    ts_type, ts = m.timestamp()
                    timestamps.append(dt.datetime.fromtimestamp(ts / 1000, tz=dt.timezone.utc))
                    types.append(ts_type - 1)  # librdkafka 1/2 -> Java 0/1
                    if m.offset() >= last:
                        done = True
                        break
                n = len(values)
                if n:
                    yield pa.RecordBatch.from_arrays([
                        pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                        pa.array([partition.topic] * n, pa.string()), pa.array([partition.partition] * n, pa.int32()),
                        pa.array(offsets, pa.int64()), pa.array(timestamps, pa.timestamp("us", tz="UTC")),
                        pa.array(types, pa.int32()),
                    ], schema=ARROW_SCHEMA)
        finally:
            c.close()


@dataclass
class Written(WriterCommitMessage):  # type: ignore[misc]
    records: int


class ConfluentWriter(DataSourceArrowWriter):  # type: ignore[misc]
    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        from confluent_kafka import Producer

        errors: list[Any] = []

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None and not errors:
                errors.append(err)

        p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        n = 0
        for batch in iterator:
            values = batch.column("value").to_pylist()
            keys = batch.column("key").to_pylist() if "key" in batch.schema.names else [None] * len(values)
            parts = batch.column("partition").to_pylist() if "partition" in batch.schema.names else [-1] * len(values)
            for k, v, part in zip(keys, values, parts, strict=True):
                while True:
                    try:
                        p.produce(self.topic, v, k, partition=-1 if part is None else part, on_delivery=on_delivery)
                        break
                    except BufferError:
                        p.poll(0.05)
                n += 1
            p.poll(0)
            if errors:
                raise RuntimeError(f"delivery failed: {errors[0]}")
        if p.flush(600) != 0 or errors:
            raise RuntimeError(f"delivery failed: {errors[:1]}")
        return Written(n)
