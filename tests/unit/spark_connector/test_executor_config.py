"""What the executors' consumer and the driver's AdminClient are given, and fetchOffset retries."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pykafka_client.errors import KafkaTimeoutError, LeaderNotAvailableError, UnknownTopicOrPartitionError
from pykafka_client.structs import TopicPartition
from spark_connector.offset_reader import OffsetReader, admin_config
from spark_connector.options import parse_read_options
from spark_connector.partition_reader import executor_consumer_config

BASE = {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}


def test_executor_consumer_config_forces_what_spark_forces() -> None:
    opts = parse_read_options({**BASE, "kafka.isolation.level": "read_committed", "groupIdPrefix": "p"},
                              streaming=False)
    config = executor_consumer_config(opts)
    assert config["auto.offset.reset"] == "none" and config["enable.auto.commit"] == "false"
    assert config["isolation.level"] == "read_committed"
    assert config["group.id"] == f"{opts.group_id}-executor" and opts.group_id.startswith("p-")
    assert config["allow.auto.create.topics"] == "false"
    fixed = executor_consumer_config(parse_read_options({**BASE, "kafka.group.id": "mine"}, streaming=False))
    assert fixed["group.id"] == "mine"
    # consumer-only keys do not reach the AdminClient (it would reject them)
    assert admin_config(opts) == {"bootstrap.servers": "h:1"}


def test_fetch_offset_retries() -> None:
    opts = parse_read_options({**BASE, "fetchOffset.numRetries": "3", "fetchOffset.retryIntervalMs": "0"},
                              streaming=False)
    reader = OffsetReader(opts)
    calls = []

    def flaky() -> int:
        calls.append(1)
        if len(calls) < 3:
            raise LeaderNotAvailableError("not yet")
        return 7

    assert reader._with_retries("test", flaky) == 7
    calls.clear()

    def broken() -> int:
        calls.append(1)
        raise LeaderNotAvailableError("never")

    with pytest.raises(LeaderNotAvailableError):
        reader._with_retries("test", broken)
    assert len(calls) == 3


def test_a_timeout_is_not_retried() -> None:
    """The AdminClient already retried for its whole timeout: retrying would make a read against a dead
    broker wait numRetries times the timeout (180 s by default) before failing (issue 22 item 2)."""
    opts = parse_read_options({**BASE, "fetchOffset.numRetries": "3", "fetchOffset.retryIntervalMs": "0"},
                              streaming=False)
    calls = []

    def dead() -> int:
        calls.append(1)
        raise KafkaTimeoutError("timed out after 60000 ms waiting for a broker")

    with pytest.raises(KafkaTimeoutError, match="waiting for a broker"):
        OffsetReader(opts)._with_retries("test", dead)
    assert len(calls) == 1


class _DeletingAdmin:
    """An admin whose topic ``gone`` is deleted between the first partition lookup and the offsets request."""

    def __init__(self) -> None:
        self.topics = {"keep", "gone"}
        self.offset_requests: list[set[str]] = []

    def list_topics(self) -> set[str]:
        return set(self.topics)

    def describe_topics(self, names: list[str]) -> dict[str, Any]:
        return {n: SimpleNamespace(partitions=[SimpleNamespace(partition=0)]) for n in names}

    def list_offsets(self, specs: dict[tuple[str, int], Any], isolation_level: Any = None) -> dict[Any, Any]:
        asked = {topic for topic, _ in specs}
        self.offset_requests.append(asked)
        self.topics.discard("gone")  # the deletion completes while the first request is on its way
        if "gone" in asked:
            raise UnknownTopicOrPartitionError("topic 'gone' does not exist")
        return {tp: SimpleNamespace(offset=5) for tp in specs}


def test_latest_offsets_look_the_partitions_up_again_on_a_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A subscribed topic deleted between the partition lookup and the offsets request: the retry asks for the
    partitions that exist now (as Spark's offset reader does) instead of failing the query three times on the
    deleted one."""
    opts = parse_read_options({"kafka.bootstrap.servers": "h:1", "subscribe": "keep,gone",
                               "fetchOffset.numRetries": "3", "fetchOffset.retryIntervalMs": "0"}, streaming=True)
    admin = _DeletingAdmin()
    monkeypatch.setattr(OffsetReader, "admin", property(lambda self: admin))
    assert OffsetReader(opts).latest_of_subscription() == {TopicPartition("keep", 0): 5}
    assert admin.offset_requests == [{"keep", "gone"}, {"keep"}]
