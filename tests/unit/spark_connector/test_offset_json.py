"""Kafka-format offset JSON: parsing (Spark's JsonUtils) and the checkpoint form of streaming offsets."""

from __future__ import annotations

import json

import pytest

from pykafka_client.structs import TopicPartition
from spark_connector import offset_json


def test_partition_offsets_round_trip_through_json() -> None:
    offsets = {TopicPartition("b", 10): 7, TopicPartition("a", 2): 5, TopicPartition("a", 0): -2}
    as_dict = offset_json.to_offset_dict(offsets)
    assert as_dict == {"a": {"0": -2, "2": 5}, "b": {"10": 7}}
    # Spark round-trips offsets through JSON: the keys must already be strings, the order stable
    assert json.loads(json.dumps(as_dict)) == as_dict
    assert offset_json.from_offset_dict(json.loads(json.dumps(as_dict))) == offsets
    assert offset_json.to_json(offsets) == '{"a":{"0":-2,"2":5},"b":{"10":7}}'
    assert offset_json.partition_offsets(offset_json.to_json(offsets)) == offsets


def test_partitions_and_timestamps() -> None:
    assert offset_json.partitions('{"t":[1,0],"u":[]}') == [TopicPartition("t", 1), TopicPartition("t", 0)]
    assert offset_json.partition_timestamps('{"t": {"3": 1700000000000}}') == {TopicPartition("t", 3): 1700000000000}


@pytest.mark.parametrize("text", ["", "[]", '{"t": 1}', '{"t": {"x": 1}}', '{"t": {"0": "1"}}', '{"t": {"0": true}}'])
def test_bad_offsets_json(text: str) -> None:
    with pytest.raises(ValueError, match=r"Expected e\.g\."):
        offset_json.partition_offsets(text)


@pytest.mark.parametrize("text", ['{"t": 0}', '{"t": ["0"]}', '{"t": [true]}'])
def test_bad_partitions_json(text: str) -> None:
    with pytest.raises(ValueError, match=r"Expected e\.g\."):
        offset_json.partitions(text)
