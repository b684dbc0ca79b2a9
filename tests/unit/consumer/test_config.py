from __future__ import annotations

import pytest

from pykafka_client.consumer.config import CONSUMER_CONFIG, ConsumerConfig
from pykafka_client.errors import ConfigurationError

pytestmark = pytest.mark.timeout(60)


def test_defaults_follow_java() -> None:
    cfg = ConsumerConfig({"group.id": "g"})
    assert cfg["auto.offset.reset"] == "latest"
    assert cfg["enable.auto.commit"] is True
    assert cfg["auto.commit.interval.ms"] == 5000
    assert cfg["session.timeout.ms"] == 45000
    assert cfg["heartbeat.interval.ms"] == 3000
    assert cfg["max.poll.interval.ms"] == 300000
    assert cfg["max.poll.records"] == 500
    assert cfg["fetch.min.bytes"] == 1
    assert cfg["fetch.max.bytes"] == 52428800
    assert cfg["fetch.max.wait.ms"] == 500
    assert cfg["max.partition.fetch.bytes"] == 1048576
    assert cfg["isolation.level"] == "read_uncommitted"
    assert cfg["partition.assignment.strategy"] == ["range", "cooperative-sticky"]
    assert cfg["check.crcs"] is True
    assert cfg["rebalance.timeout.ms"] == 300000


def test_unknown_key_names_the_key() -> None:
    with pytest.raises(ConfigurationError, match=r"fetch\.min\.byte"):
        ConsumerConfig({"fetch.min.byte": 1})


def test_strings_are_parsed_like_properties() -> None:
    cfg = ConsumerConfig(
        {"group.id": "g", "enable.auto.commit": "false", "max.poll.records": "7", "bootstrap.servers": "a:1, b:2"}
    )
    assert cfg["enable.auto.commit"] is False
    assert cfg["max.poll.records"] == 7
    assert cfg["bootstrap.servers"] == ["a:1", "b:2"]


def test_keyword_overrides_use_underscores() -> None:
    cfg = ConsumerConfig(group_id="g", max_poll_records=3)
    assert cfg["max.poll.records"] == 3


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max.poll.records", 0),
        ("max.poll.records", "many"),
        ("max.poll.records", True),
        ("auto.offset.reset", "smallest"),
        ("isolation.level", "serializable"),
        ("enable.auto.commit", "yes"),
        ("fetch.max.wait.ms", -1),
        ("group.protocol", "share"),
    ],
)
def test_invalid_values_name_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=key.replace(".", r"\.")):
        ConsumerConfig({"group.id": "g", key: value})


def test_heartbeat_must_be_below_session_timeout() -> None:
    with pytest.raises(ConfigurationError, match="heartbeat"):
        ConsumerConfig({"group.id": "g", "session.timeout.ms": 3000, "heartbeat.interval.ms": 3000})


def test_auto_commit_without_group() -> None:
    assert ConsumerConfig({})["enable.auto.commit"] is False
    with pytest.raises(ConfigurationError, match=r"enable\.auto\.commit"):
        ConsumerConfig({"enable.auto.commit": True})


def test_empty_group_instance_id_rejected() -> None:
    with pytest.raises(ConfigurationError, match=r"group\.instance\.id"):
        ConsumerConfig({"group.id": "g", "group.instance.id": ""})


def test_case_insensitive_enums_are_normalised() -> None:
    assert ConsumerConfig({"auto.offset.reset": "EARLIEST"})["auto.offset.reset"] == "earliest"


def test_every_key_has_a_default() -> None:
    cfg = ConsumerConfig({})
    for name in CONSUMER_CONFIG.names():
        cfg[name]  # no KeyError, no missing required key


def test_assignors_as_list_or_objects() -> None:
    from pykafka_client.consumer.assignors import RangeAssignor

    r = RangeAssignor()
    assert ConsumerConfig({"partition.assignment.strategy": [r, "sticky"]})["partition.assignment.strategy"] == [
        r,
        "sticky",
    ]
    with pytest.raises(ConfigurationError, match="assignor"):
        ConsumerConfig({"partition.assignment.strategy": ""})
