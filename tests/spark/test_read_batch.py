"""Batch reads through ``spark.read.format("pykafka")`` on the shared local[2] session against MiniBroker,
checked record by record against what was produced."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from pykafka_client import TopicPartition
from pykafka_client.admin import AdminClient
from tests.spark.read_helpers import create_topic, expected, fresh_topic, numbered, produce, rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from mini_broker.broker import MiniBroker

pytestmark = [pytest.mark.spark]


def read(spark: SparkSession, broker: MiniBroker, **options: Any) -> DataFrame:
    return spark.read.format("pykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers) \
        .options(**options).load()


def error_of(action: Callable[[], object]) -> str:
    with pytest.raises(Exception) as e:  # Spark wraps the connector's error in its own classes
        action()
    return str(e.value)


def test_rows_match_the_produced_records(spark: SparkSession, spark_broker: MiniBroker) -> None:
    topic = fresh_topic()
    create_topic(spark_broker, topic, 3)
    records: list[dict[str, Any]] = [
        {"topic": topic, "partition": 0, "key": b"a", "value": b"1", "timestamp": 1_600_000_000_123,
         "headers": [("h1", b"x"), ("h2", None), ("h1", b"again")]},
        {"topic": topic, "partition": 0, "key": None, "value": b"no key", "timestamp": 1_600_000_000_124},
        {"topic": topic, "partition": 1, "key": b"tombstone", "value": None, "timestamp": 1_600_000_000_125,
         "headers": [("only", b"")]},
        {"topic": topic, "partition": 2, "key": b"\x00\xff", "value": bytes(range(256)), "timestamp": 5},
        *numbered(topic, 20, 3, start=10),
    ]
    produced = produce(spark_broker, records)
    df = read(spark, spark_broker, subscribe=topic, includeHeaders="true")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"), ("offset", "bigint"),
        ("timestamp", "timestamp"), ("timestampType", "int"), ("headers", "array<struct<key:string,value:binary>>")]
    assert rows(df, include_headers=True) == expected(produced, include_headers=True)
    plain = read(spark, spark_broker, subscribe=topic)
    assert "headers" not in plain.columns
    assert rows(plain) == expected(produced)


def test_log_append_time_topic(spark: SparkSession, spark_broker: MiniBroker) -> None:
    topic = fresh_topic()
    create_topic(spark_broker, topic, 1, **{"message.timestamp.type": "LogAppendTime"})
    produced = produce(spark_broker, numbered(topic, 5, 1, base_ts=1000), log_append_time=True)
    assert all(p.timestamp > 1_600_000_000_000 for p in produced)  # the broker's clock, not the 1000s sent
    assert rows(read(spark, spark_broker, subscribe=topic)) == expected(produced)


def test_starting_and_ending_offsets_and_timestamps(spark: SparkSession, spark_broker: MiniBroker) -> None:
    topic = fresh_topic()
    create_topic(spark_broker, topic, 2)
    produced = produce(spark_broker, numbered(topic, 20, 2, base_ts=10_000))  # offsets 0-9 per partition
    by = {(p.partition, p.offset): p for p in produced}

    def pick(pred: Callable[[Any], bool]) -> list[Any]:
        return expected([p for p in by.values() if pred(p)])

    df = read(spark, spark_broker, subscribe=topic, startingOffsets=f'{{"{topic}":{{"0":3,"1":-2}}}}',
              endingOffsets=f'{{"{topic}":{{"0":-1,"1":4}}}}')
    assert rows(df) == pick(lambda p: (p.partition == 0 and p.offset >= 3) or (p.partition == 1 and p.offset < 4))
    # timestamps: partition 0 holds 10000, 10002, ...; partition 1 holds 10001, 10003, ...
    assert rows(read(spark, spark_broker, subscribe=topic, startingTimestamp="10010",
                     endingTimestamp="10015")) == pick(lambda p: 10_010 <= p.timestamp < 10_015)
    df = read(spark, spark_broker, subscribe=topic, startingOffsetsByTimestamp=f'{{"{topic}":{{"0":10016,"1":0}}}}',
              endingOffsetsByTimestamp=f'{{"{topic}":{{"0":99999,"1":10005}}}}')
    assert rows(df) == pick(lambda p: (p.partition == 0 and p.timestamp >= 10_016)
                            or (p.partition == 1 and p.timestamp < 10_005))
    # no offset at or after the timestamp: an error by default, latest (nothing) with the "latest" strategy
    message = error_of(lambda: read(spark, spark_broker, subscribe=topic, startingTimestamp="99999").collect())
    assert f"No offset matched from request of topic-partition {topic}-0 and timestamp 99999." in message
    assert read(spark, spark_broker, subscribe=topic, startingTimestamp="99999",
                startingOffsetsByTimestampStrategy="latest").count() == 0


def test_assign_and_subscribe_pattern(spark: SparkSession, spark_broker: MiniBroker) -> None:
    prefix = fresh_topic("pattern")
    a, b, other = f"{prefix}-a", f"{prefix}-b", fresh_topic("other")
    for name in (a, b, other):
        create_topic(spark_broker, name, 2)
    produced = [*produce(spark_broker, numbered(a, 6, 2)), *produce(spark_broker, numbered(b, 4, 2)),
                *produce(spark_broker, numbered(other, 3, 2))]
    by_pattern = read(spark, spark_broker, subscribePattern=f"{prefix}-.*")
    assert rows(by_pattern) == expected([p for p in produced if p.topic in (a, b)])
    assigned = read(spark, spark_broker, assign=f'{{"{a}":[1],"{other}":[0]}}')
    assert rows(assigned) == expected([p for p in produced if (p.topic, p.partition) in ((a, 1), (other, 0))])
    several = read(spark, spark_broker, subscribe=f"{b}, {other}, no-such-topic")
    assert rows(several) == expected([p for p in produced if p.topic in (b, other)])


def test_min_partitions_and_max_records_per_partition(spark: SparkSession, spark_broker: MiniBroker) -> None:
    topic = fresh_topic()
    create_topic(spark_broker, topic, 2)
    produced = produce(spark_broker, numbered(topic, 40, 2))
    assert read(spark, spark_broker, subscribe=topic).rdd.getNumPartitions() == 2
    split = read(spark, spark_broker, subscribe=topic, minPartitions="5")
    assert split.rdd.getNumPartitions() == 6  # 2.5 parts per partition rounds up to 3, as on the JVM
    assert rows(split) == expected(produced)
    capped = read(spark, spark_broker, subscribe=topic, maxRecordsPerPartition="7")
    assert capped.rdd.getNumPartitions() == 6  # ceil(20 / 7) = 3 tasks per partition
    assert rows(capped) == expected(produced)


def test_read_committed_skips_aborted_records_and_markers(spark: SparkSession, spark_broker: MiniBroker) -> None:
    topic = fresh_topic()
    create_topic(spark_broker, topic, 1)
    committed = produce(spark_broker, numbered(topic, 3, 1))
    from pykafka_client import KafkaProducer

    txn_records = []
    with KafkaProducer(bootstrap_servers=spark_broker.bootstrap_servers, transactional_id=f"{topic}-txn") as producer:
        producer.init_transactions()
        for batch, commit in ((range(3, 6), True), (range(6, 9), False), (range(9, 11), True)):
            producer.begin_transaction()
            futures = [producer.send(**r) for r in numbered(topic, len(batch), 1, start=batch.start)]
            producer.flush()
            txn_records.append((commit, [f.result() for f in futures]))
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    kept = {m.offset for commit, metas in txn_records if commit for m in metas}
    aborted = {m.offset for commit, metas in txn_records if not commit for m in metas}
    every = {m.offset for _, metas in txn_records for m in metas}
    committed_rows = read(spark, spark_broker, subscribe=topic, **{"kafka.isolation.level": "read_committed"})
    got = [r[4] for r in rows(committed_rows)]
    assert got == sorted({p.offset for p in committed} | kept)
    assert not aborted & set(got)
    # read_uncommitted returns the aborted records too, never a transaction marker
    uncommitted = [r[4] for r in rows(read(spark, spark_broker, subscribe=topic))]
    assert uncommitted == sorted({p.offset for p in committed} | every)
    # offsets have gaps where the markers sit, and the read still ends exactly at the end offset
    assert max(uncommitted) + 1 < _latest(spark_broker, topic)


def _latest(broker: MiniBroker, topic: str) -> int:
    from pykafka_client.admin.types import OffsetSpec

    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        return admin.list_offsets({(topic, 0): OffsetSpec.latest()})[TopicPartition(topic, 0)].offset


def test_deleted_records_and_fail_on_data_loss(spark: SparkSession, spark_broker: MiniBroker) -> None:
    topic = fresh_topic()
    create_topic(spark_broker, topic, 1)
    produced = produce(spark_broker, numbered(topic, 10, 1))
    with AdminClient(bootstrap_servers=spark_broker.bootstrap_servers) as admin:
        admin.delete_records({(topic, 0): 4})
    # earliest now starts after the deleted records: no data loss
    assert rows(read(spark, spark_broker, subscribe=topic)) == expected(produced[4:])
    # asking for the deleted offsets is data loss
    from_zero = {"subscribe": topic, "startingOffsets": f'{{"{topic}":{{"0":0}}}}'}
    message = error_of(lambda: read(spark, spark_broker, **from_zero).collect())
    assert "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE" in message
    assert f"Could not read records in offset [0, 10) for topic partition {topic}-0" in message
    lenient = read(spark, spark_broker, failOnDataLoss="false", **from_zero)
    assert rows(lenient) == expected(produced[4:])


def test_errors_surface_at_load(spark: SparkSession, spark_broker: MiniBroker) -> None:
    from pyspark.sql.types import StringType, StructField, StructType

    message = error_of(lambda: spark.read.format("pykafka").option("kafka.bootstrap.servers", "x:1").load())
    assert "One of the following options must be specified for Kafka source: subscribe, subscribepattern, assign" \
        in message
    custom = StructType([StructField("value", StringType())])
    message = error_of(lambda: spark.read.format("pykafka").schema(custom).options(
        **{"kafka.bootstrap.servers": spark_broker.bootstrap_servers, "subscribe": "x"}).load().collect())
    assert "Kafka source has a fixed schema and cannot be set with a custom one" in message
    topic = fresh_topic()
    create_topic(spark_broker, topic, 1)
    produce(spark_broker, numbered(topic, 3, 1))
    message = error_of(lambda: read(spark, spark_broker, subscribe=topic,
                                    startingOffsets=f'{{"{topic}":{{"0":2}}}}', endingTimestamp="1").collect())
    assert "[RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET] The resolved start offset 2 is greater than the " \
           f"resolved end offset 0 for topic {topic} partition 0." in message
    message = error_of(lambda: read(spark, spark_broker, subscribe=topic,
                                    startingOffsets='{"nope":{"0":0}}').collect())
    assert "[KAFKA_START_OFFSET_DOES_NOT_MATCH_ASSIGNED]" in message


def test_ending_offset_past_the_log_waits_poll_timeout_then_is_data_loss(
        spark: SparkSession, spark_broker: MiniBroker) -> None:
    topic = fresh_topic()
    create_topic(spark_broker, topic, 1)
    produced = produce(spark_broker, numbered(topic, 3, 1))
    past = {"subscribe": topic, "endingOffsets": f'{{"{topic}":{{"0":8}}}}', "kafkaConsumer.pollTimeoutMs": "700"}
    message = error_of(lambda: read(spark, spark_broker, **past).collect())
    assert f"Could not read records in offset [3, 8) for topic partition {topic}-0" in message
    assert rows(read(spark, spark_broker, failOnDataLoss="false", **past)) == expected(produced)
