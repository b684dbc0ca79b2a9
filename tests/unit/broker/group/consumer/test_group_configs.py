"""KIP-848 group configs (the GROUP config resource): Kafka's ``GroupConfig`` keys ``consumer.session.timeout.ms``
and ``consumer.heartbeat.interval.ms`` validated against the broker's ``group.consumer.min/max.*`` bounds (and
the heartbeat interval below the session timeout), applied to the group's members, and kept in the group's
records (MockTime, inline timers)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from mini_broker.group.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupHeartbeatParams,
    records,
)
from mini_broker.group.consumer import group_configs as gc
from mini_broker.group.consumer.model import TopicInfo, TopicsImage
from pykafka_client.errors import InvalidConfigurationError, UnknownMemberIdError
from tests.unit.broker.group.consumer.helpers import heartbeat
from tests.unit.broker.group.harness import Harness

TOPICS = TopicsImage.of([TopicInfo(uuid.UUID(int=7), "t", 2)])
CONFIG = ConsumerGroupConfig()  # Kafka's defaults: session 45 s in [45 s, 60 s], heartbeat 5 s in [5 s, 15 s]


@pytest.mark.parametrize(("proposed", "message"), [
    ({gc.CONSUMER_SESSION_TIMEOUT_MS: "44999"}, "group.consumer.min.session.timeout.ms"),
    ({gc.CONSUMER_SESSION_TIMEOUT_MS: "60001"}, "group.consumer.max.session.timeout.ms"),
    ({gc.CONSUMER_HEARTBEAT_INTERVAL_MS: "4999"}, "group.consumer.min.heartbeat.interval.ms"),
    ({gc.CONSUMER_HEARTBEAT_INTERVAL_MS: "15001"}, "group.consumer.max.heartbeat.interval.ms"),
    ({gc.CONSUMER_HEARTBEAT_INTERVAL_MS: "abc"}, "Not a number"),
    ({"consumer.unknown": "1"}, "Unknown group config"),
])
def test_values_outside_the_broker_bounds_are_invalid(proposed: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=message):
        gc.validate(proposed, CONFIG)


def test_the_heartbeat_interval_must_stay_below_the_session_timeout() -> None:
    config = ConsumerGroupConfig(min_heartbeat_interval_ms=1000, max_heartbeat_interval_ms=100_000)
    with pytest.raises(InvalidConfigurationError, match="must be less than consumer"):
        gc.validate({gc.CONSUMER_HEARTBEAT_INTERVAL_MS: "50000", gc.CONSUMER_SESSION_TIMEOUT_MS: "50000"}, config)
    assert gc.validate({gc.CONSUMER_HEARTBEAT_INTERVAL_MS: "6000"}, CONFIG) == {gc.CONSUMER_HEARTBEAT_INTERVAL_MS: 6000}


@pytest.fixture
def setup() -> Iterator[tuple[Harness, ConsumerGroupCoordinator]]:
    h = Harness()
    consumer = ConsumerGroupCoordinator(CONFIG, h.coordinator.runtime, lambda: TOPICS, h.time)
    h.coordinator.consumer_groups = consumer
    consumer.startup()
    yield h, consumer
    h.close()


def test_a_group_config_applies_to_the_group_and_is_replayed(setup: tuple[Harness, ConsumerGroupCoordinator]) -> None:
    """The members get the group's heartbeat interval, and lose their session after the group's timeout."""
    h, consumer = setup
    consumer.alter_group_configs("g", {gc.CONSUMER_HEARTBEAT_INTERVAL_MS: "7000",
                                       gc.CONSUMER_SESSION_TIMEOUT_MS: "50000"}, validate_only=False)
    r = heartbeat(consumer, ConsumerGroupHeartbeatParams("g", "m", 0, rebalance_timeout_ms=1000,
                                                         subscribed_topic_names=("t",), owned_partitions={}))
    assert r.heartbeat_interval_ms == 7000
    other = heartbeat(consumer, ConsumerGroupHeartbeatParams("other", "o", 0, rebalance_timeout_ms=1000,
                                                             subscribed_topic_names=("t",), owned_partitions={}))
    assert other.heartbeat_interval_ms == CONFIG.heartbeat_interval_ms
    h.time.sleep(CONFIG.session_timeout_ms + 1)  # the broker's 45 s: not yet the group's 50 s
    consumer.expire_members()
    assert heartbeat(consumer, ConsumerGroupHeartbeatParams("g", "m", r.member_epoch)).error_code == 0
    h.time.sleep(50_001)
    consumer.expire_members()
    assert heartbeat(consumer, ConsumerGroupHeartbeatParams("g", "m", r.member_epoch)).error_code == \
        UnknownMemberIdError.code
    described = {e.name: (e.value, e.is_group_value) for e in consumer.describe_group_configs("g")}
    assert described == {gc.CONSUMER_HEARTBEAT_INTERVAL_MS: ("7000", True),
                         gc.CONSUMER_SESSION_TIMEOUT_MS: ("50000", True)}
    key, value = records.group_config_record("g", {gc.CONSUMER_HEARTBEAT_INTERVAL_MS: 7000})
    assert value is not None
    assert records.replay_group_configs([(key, value)]) == {"g": {gc.CONSUMER_HEARTBEAT_INTERVAL_MS: 7000}}
    assert records.replay([(key, value)]) == {}  # configs are not a group


def test_validate_only_and_delete(setup: tuple[Harness, ConsumerGroupCoordinator]) -> None:
    _, consumer = setup
    consumer.alter_group_configs("g", {gc.CONSUMER_HEARTBEAT_INTERVAL_MS: "7000"}, validate_only=True)
    assert not any(e.is_group_value for e in consumer.describe_group_configs("g"))
    consumer.alter_group_configs("g", {gc.CONSUMER_HEARTBEAT_INTERVAL_MS: "7000"}, validate_only=False)
    consumer.alter_group_configs("g", {gc.CONSUMER_HEARTBEAT_INTERVAL_MS: None}, validate_only=False)
    assert [(e.value, e.is_group_value) for e in consumer.describe_group_configs(
        "g", [gc.CONSUMER_HEARTBEAT_INTERVAL_MS])] == [(str(CONFIG.heartbeat_interval_ms), False)]
