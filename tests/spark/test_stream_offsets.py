"""The stream reader's offset logic driven directly against MiniBroker (no Spark job): cached initial offsets,
admission control with a controlled clock, new and deleted partitions, pickling after use."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

from pykafka_client.admin import AdminClient
from pykafka_client.admin.types import NewPartitions
from spark_connector.partition_reader import DataLossError
from spark_connector.read_schema import read_schema
from spark_connector.stream_reader import KafkaStreamReader, create_stream_reader
from tests.spark.read_helpers import create_topic, fresh_topic, numbered, produce

if TYPE_CHECKING:
    from mini_broker.broker import MiniBroker

pytestmark = [pytest.mark.spark]


@pytest.fixture
def make_reader(spark_broker: MiniBroker) -> Iterator[Any]:
    made: list[KafkaStreamReader] = []

    def make(**options: str) -> KafkaStreamReader:
        opts = {"kafka.bootstrap.servers": spark_broker.bootstrap_servers, **options}
        reader = create_stream_reader(opts, read_schema(opts))
        made.append(reader)
        return reader

    yield make
    for reader in made:
        reader.stop()


def test_initial_offset_is_cached(spark_broker: MiniBroker, make_reader: Any) -> None:
    topic = fresh_topic()
    create_topic(spark_broker, topic, 2)
    produce(spark_broker, numbered(topic, 6, 2))
    latest = make_reader(subscribe=topic)
    earliest = make_reader(subscribe=topic, startingOffsets="earliest")
    assert latest.initialOffset() == {topic: {"0": 3, "1": 3}}
    assert earliest.initialOffset() == {topic: {"0": 0, "1": 0}}
    produce(spark_broker, numbered(topic, 4, 2))
    # Spark calls initialOffset() more than once at start: "latest" must not move meanwhile
    assert latest.initialOffset() == {topic: {"0": 3, "1": 3}}
    by_time = make_reader(subscribe=topic, startingOffsetsByTimestamp=f'{{"{topic}":{{"0":1700000000002,"1":0}}}}')
    assert by_time.initialOffset() == {topic: {"0": 1, "1": 0}}


def test_max_offsets_per_trigger_split_by_backlog(spark_broker: MiniBroker, make_reader: Any) -> None:
    topic = fresh_topic()
    create_topic(spark_broker, topic, 2)
    produce(spark_broker, [{"topic": topic, "partition": 0 if i < 20 else 1, "value": b"x"} for i in range(30)])
    reader = make_reader(subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="6")
    assert reader.getDefaultReadLimit() == ReadMaxRows(6)
    start = reader.initialOffset()
    assert reader.latestOffset(start, ReadMaxRows(6)) == {topic: {"0": 4, "1": 2}}
    assert reader.reportLatestOffset() == {topic: {"0": 20, "1": 10}}
    # ReadAllAvailable (e.g. Trigger.Once) wins over the option
    assert reader.latestOffset(start, ReadAllAvailable()) == {topic: {"0": 20, "1": 10}}
    # availableNow fixes the end once: records produced later are left for the next run
    reader.prepareForTriggerAvailableNow()
    produce(spark_broker, [{"topic": topic, "partition": 1, "value": b"late"}])
    assert reader.latestOffset({topic: {"0": 18, "1": 10}}, ReadMaxRows(6)) == {topic: {"0": 20, "1": 10}}
    clone = pickle.loads(pickle.dumps(reader))
    assert clone._available_now == reader._available_now and clone.offset_reader._admin is None


def test_min_offsets_per_trigger_and_max_trigger_delay(spark_broker: MiniBroker, make_reader: Any) -> None:
    topic = fresh_topic()
    create_topic(spark_broker, topic, 1)
    produce(spark_broker, numbered(topic, 5, 1))
    reader = make_reader(subscribe=topic, startingOffsets="earliest", minOffsetsPerTrigger="10",
                         maxTriggerDelay="30s")
    assert reader.getDefaultReadLimit() == ReadMinRows(10)
    now = [1_000_000]
    reader.clock = lambda: now[0]
    start = reader.initialOffset()
    # the first trigger always fires
    first = reader.latestOffset(start, ReadMinRows(10))
    assert first == {topic: {"0": 5}}
    produce(spark_broker, numbered(topic, 3, 1))
    now[0] += 1_000
    assert reader.latestOffset(first, ReadMinRows(10)) == first  # 3 < 10 new records: skip the trigger
    produce(spark_broker, numbered(topic, 7, 1))
    now[0] += 1_000
    second = reader.latestOffset(first, ReadMinRows(10))
    assert second == {topic: {"0": 15}}  # 10 new records: fire
    produce(spark_broker, numbered(topic, 1, 1))
    now[0] += 29_000
    assert reader.latestOffset(second, ReadMinRows(10)) == second
    now[0] += 1_000  # maxTriggerDelay (30 s) since the last batch: fire with what there is
    assert reader.latestOffset(second, ReadMinRows(10)) == {topic: {"0": 16}}


def test_new_partitions_start_at_earliest_and_deleted_ones_are_data_loss(
        spark_broker: MiniBroker, make_reader: Any) -> None:
    prefix = fresh_topic("grow")
    a, b = f"{prefix}-a", f"{prefix}-b"
    create_topic(spark_broker, a, 1)
    produce(spark_broker, numbered(a, 4, 1))
    strict = make_reader(subscribePattern=f"{prefix}-.*", startingOffsets="earliest")
    lenient = make_reader(subscribePattern=f"{prefix}-.*", startingOffsets="earliest", failOnDataLoss="false")
    start = strict.initialOffset()
    assert start == {a: {"0": 0}}
    with AdminClient(bootstrap_servers=spark_broker.bootstrap_servers) as admin:
        admin.create_partitions({a: NewPartitions(2)})
    create_topic(spark_broker, b, 1)
    produce(spark_broker, [{"topic": a, "partition": 1, "value": b"new"}, *numbered(b, 2, 1)])
    end = strict.latestOffset(start, ReadAllAvailable())
    assert end == {a: {"0": 4, "1": 1}, b: {"0": 2}}
    ranges = [(r.topic, r.partition, r.from_offset, r.until_offset) for r in strict.plan(_tp(start), _tp(end))]
    assert ranges == [(a, 0, 0, 4), (a, 1, 0, 1), (b, 0, 0, 2)]
    with AdminClient(bootstrap_servers=spark_broker.bootstrap_servers) as admin:
        admin.delete_topics([b])
    later = strict.latestOffset(end, ReadAllAvailable())
    assert later == {a: {"0": 4, "1": 1}}
    with pytest.raises(DataLossError, match=r"KAFKA_DATA_LOSS\.PARTITIONS_DELETED.*Partitions Set\(" + b):
        strict.partitions(end, later)
    assert lenient.plan(_tp(end), _tp(later)) == []


def _tp(offsets: dict[str, dict[str, int]]) -> Any:
    from spark_connector.offset_json import from_offset_dict

    return from_offset_dict(offsets)
