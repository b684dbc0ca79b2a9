"""Read options: parsed and checked as Spark's Kafka source does, with its messages (no JVM, no broker)."""

from __future__ import annotations

from typing import Any

import pytest

from pykafka_client.errors import ConfigurationError
from pykafka_client.structs import TopicPartition
from spark_connector.options import (
    kafka_params,
    lower_keys,
    parse_read_options,
    time_string_as_ms,
)

BASE = {"kafka.bootstrap.servers": "localhost:9092"}


def batch(**options: Any) -> Any:
    return parse_read_options({**BASE, **options}, streaming=False)


def stream(**options: Any) -> Any:
    return parse_read_options({**BASE, **options}, streaming=True)


def test_option_names_are_case_insensitive_and_values_strings() -> None:
    opts = parse_read_options({"KAFKA.Bootstrap.Servers": "h:1", "SubScribe": "a, b,,", "INCLUDEHEADERS": True,
                               "minPartitions": 3}, streaming=False)
    assert opts.strategy.topics == ("a", "b")
    assert opts.include_headers is True
    assert opts.min_partitions == 3
    assert opts.kafka == {"bootstrap.servers": "h:1"}
    assert lower_keys({"A": 1, "B": False}) == {"a": "1", "b": "false"}
    assert kafka_params({"kafka.Group.Id": "g", "subscribe": "t"}) == {"group.id": "g"}


def test_defaults_match_spark() -> None:
    b = batch(subscribe="t")
    assert (b.starting.kind, b.ending.kind) == ("earliest", "latest")
    assert b.fail_on_data_loss and not b.include_headers
    assert (b.fetch_offset_num_retries, b.fetch_offset_retry_interval_ms, b.poll_timeout_ms) == (3, 10, 120_000)
    assert b.group_id.startswith("spark-kafka-relation-")
    s = stream(subscribe="t")
    assert s.starting.kind == "latest"
    assert s.max_trigger_delay_ms == 15 * 60_000
    assert s.group_id.startswith("spark-kafka-source-")
    assert stream(subscribe="t", groupIdPrefix="mine").group_id.startswith("mine-")


@pytest.mark.parametrize(("options", "message"), [
    ({}, "One of the following options must be specified for Kafka source: subscribe, subscribepattern, assign. "
         "See the docs for more details."),
    ({"subscribe": "a", "assign": '{"a":[0]}'},
     "Only one of the following options can be specified for Kafka source: subscribe, subscribepattern, assign."),
    ({"subscribe": " , "}, "No topics to subscribe to as specified value for option 'subscribe' is ' , '"),
    ({"subscribePattern": "  "}, "Pattern to subscribe is empty as specified value for option 'subscribePattern'"),
    ({"assign": "a:0"}, "No topicpartitions to assign as specified value for option 'assign' is 'a:0'"),
    ({"assign": "{bad"}, 'Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got {bad'),
    ({"subscribe": "t", "minPartitions": "0"}, "minPartitions must be positive"),
    ({"subscribe": "t", "maxRecordsPerPartition": "-1"}, "maxrecordsperpartition must be positive"),
    ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "Kafka option 'auto.offset.reset' is not supported."),
    ({"subscribe": "t", "kafka.key.deserializer": "x"}, "Kafka option 'key.deserializer' is not supported as keys"),
    ({"subscribe": "t", "kafka.value.deserializer": "x"}, "Kafka option 'value.deserializer' is not supported as"),
    ({"subscribe": "t", "kafka.enable.auto.commit": "true"}, "Kafka option 'enable.auto.commit' is not supported"),
    ({"subscribe": "t", "kafka.interceptor.classes": "x"}, "Kafka option 'interceptor.classes' is not supported"),
    ({"subscribe": "t", "startingOffsets": "latest"}, "starting offset can't be latest for batch queries on Kafka"),
    ({"subscribe": "t", "startingOffsets": '{"t":{"0":-1}}'},
     "startingOffsets for t-0 can't be latest for batch queries on Kafka"),
    ({"subscribe": "t", "endingOffsets": "earliest"}, "ending offset can't be earliest for batch queries on Kafka"),
    ({"subscribe": "t", "endingOffsets": '{"t":{"0":-2}}'},
     "ending offset for t-0 can't be earliest for batch queries on Kafka"),
    ({"subscribe": "t", "startingOffsets": "{nope"},
     'Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {nope'),
    ({"subscribe": "t", "startingOffsets": '{"t":{"0":5}}', "endingOffsets": '{"t":{"1":9}}'},
     "[MISMATCHED_TOPIC_PARTITIONS_BETWEEN_START_OFFSET_AND_END_OFFSET] The specified start offset and end offset "
     "should have the same topic-partitions. Topic-partitions for start offset: Set(t-0), topic-partitions for "
     "end offset: Set(t-1)."),
    ({"subscribe": "t", "startingOffsets": '{"t":{"0":5}}', "endingOffsets": '{"t":{"0":3}}'},
     "[UNRESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET] The specified start offset 5 is greater than the end "
     "offset 3 for topic t partition 0."),
    ({"subscribe": "t", "startingOffsetsByTimestamp": '{"t":{"0":50}}', "endingOffsetsByTimestamp": '{"t":{"0":9}}'},
     "[UNRESOLVED_START_TIMESTAMP_GREATER_THAN_END_TIMESTAMP] The specified start timestamp 50 is greater than"),
    ({"subscribe": "t", "startingTimestamp": "soon"}, "Expected a single long value, got soon"),
    ({"subscribe": "t", "startingOffsetsByTimestamp": "[1]"}, 'Expected e.g. {"topicA": {"0": 123456789'),
    ({"subscribe": "t", "startingOffsetsByTimestampStrategy": "closest"},
     "Invalid value 'closest' for option 'startingOffsetsByTimestampStrategy'"),
    ({"subscribe": "t", "failOnDataLoss": "maybe"}, "Invalid value 'maybe' for option 'failOnDataLoss'"),
])
def test_invalid_batch_options_fail_with_sparks_message(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as e:
        batch(**options)
    assert message in str(e.value)


def test_bootstrap_servers_required() -> None:
    with pytest.raises(ValueError, match=r"Option 'kafka\.bootstrap\.servers' must be specified for configuring "
                                         "Kafka consumer"):
        parse_read_options({"subscribe": "t"}, streaming=False)


def test_unknown_kafka_key_is_named_with_a_suggestion() -> None:
    with pytest.raises(ConfigurationError, match=r"isolation\.level"):
        batch(subscribe="t", **{"kafka.isolation.levl": "read_committed"})
    assert batch(subscribe="t", **{"kafka.isolation.level": "read_committed"}).kafka["isolation.level"] == \
        "read_committed"


@pytest.mark.parametrize(("options", "message"), [
    ({"endingOffsets": "latest"}, "ending offset not valid in streaming queries"),
    ({"endingOffsetsByTimestamp": '{"t":{"0":1}}'}, "ending timestamp not valid in streaming queries"),
    ({"endingTimestamp": "1"}, "ending timestamp not valid in streaming queries"),
    ({"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"},
     "The value of minOffsetPerTrigger(10) is higher than the maxOffsetsPerTrigger(5)."),
    ({"maxTriggerDelay": "5 weeks"}, "Invalid time string '5 weeks'"),
])
def test_invalid_stream_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as e:
        stream(subscribe="t", **options)
    assert message in str(e.value)


def test_stream_accepts_latest_and_rate_options() -> None:
    s = stream(subscribe="t", startingOffsets="latest", maxOffsetsPerTrigger="100", minOffsetsPerTrigger="10",
               maxTriggerDelay="30s")
    assert (s.max_offsets_per_trigger, s.min_offsets_per_trigger, s.max_trigger_delay_ms) == (100, 10, 30_000)


def test_timestamp_options_take_precedence_over_offsets() -> None:
    both = batch(subscribe="t", startingOffsets="earliest", startingOffsetsByTimestamp='{"t":{"0":7}}',
                 startingTimestamp="42", startingOffsetsByTimestampStrategy="LATEST")
    assert (both.starting.kind, both.starting.timestamp, both.starting.strategy_latest) == ("timestamp", 42, True)
    per_partition = batch(subscribe="t", startingOffsets="earliest", startingOffsetsByTimestamp='{"t":{"0":7}}')
    assert per_partition.starting.kind == "timestamps"
    assert per_partition.starting.offsets == {TopicPartition("t", 0): 7}
    assert batch(subscribe="t", endingTimestamp="9").ending.timestamp == 9


def test_assign_and_pattern_strategies() -> None:
    a = batch(assign='{"x":[0,2],"y":[1]}')
    assert a.strategy.partitions == (TopicPartition("x", 0), TopicPartition("x", 2), TopicPartition("y", 1))
    assert batch(subscribePattern=" top.* ").strategy.pattern == "top.*"
    with pytest.raises(ValueError, match="Invalid subscribePattern"):
        batch(subscribePattern="(")


def test_time_strings() -> None:
    assert [time_string_as_ms(t) for t in ("15m", "10s", "100ms", "2h", "1d", "250", "1min")] == \
        [900_000, 10_000, 100, 7_200_000, 86_400_000, 250, 60_000]
