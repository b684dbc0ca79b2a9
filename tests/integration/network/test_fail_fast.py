"""Calls that cannot succeed fail after one metadata round trip, not after a timeout (issue 9 item 3).

Each admin call runs with its default timeout (``default.api.timeout.ms``, 60 s) and must fail in under
5 s. Where the Java client waits on purpose (the producer waiting ``max.block.ms`` for a topic that may
still be created) the test pins that wait instead, with a short ``max.block.ms``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaProducer, TopicPartition
from pykafka_client.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic, OffsetSpec
from pykafka_client.errors import InvalidTopicError, KafkaTimeoutError, UnknownTopicOrPartitionError

pytestmark = pytest.mark.integration

FAST_S = 5.0


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    """A broker that does not auto-create topics on Metadata (so a missing topic stays missing)."""
    with MiniBroker({"auto.create.topics.enable": False}) as b:
        with AdminClient({"bootstrap.servers": b.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic("present", 1, 1)], timeout=10)
        yield b


@pytest.fixture(scope="module")
def auto_creating_broker() -> Iterator[MiniBroker]:
    with MiniBroker() as b:
        yield b


@pytest.fixture
def admin(broker: MiniBroker) -> Iterator[AdminClient]:
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as a:
        yield a


def _fails_fast(call: Callable[[], Any], error: type[BaseException], match: str) -> None:
    started = time.monotonic()
    with pytest.raises(error, match=match):
        call()
    elapsed = time.monotonic() - started
    assert elapsed < FAST_S, f"took {elapsed:.1f} s"


def test_list_offsets_of_an_unknown_topic_fails_fast(admin: AdminClient) -> None:
    _fails_fast(lambda: admin.list_offsets({("missing", 0): OffsetSpec.latest()}),
                UnknownTopicOrPartitionError, "missing")


def test_list_offsets_of_an_unknown_topic_fails_fast_when_the_broker_auto_creates(
    auto_creating_broker: MiniBroker,
) -> None:
    """The admin client never asks for auto-creation, whatever the broker's setting."""
    with AdminClient({"bootstrap.servers": auto_creating_broker.bootstrap_servers}) as a:
        _fails_fast(lambda: a.list_offsets({("never-created", 0): OffsetSpec.earliest()}),
                    UnknownTopicOrPartitionError, "never-created")
        assert "never-created" not in a.list_topics()


def test_list_offsets_of_a_partition_past_the_count_fails_fast(admin: AdminClient) -> None:
    _fails_fast(lambda: admin.list_offsets({("present", 0): OffsetSpec.latest(), ("present", 7): OffsetSpec.latest()}),
                UnknownTopicOrPartitionError, "present-7")


def test_list_offsets_of_a_known_partition_still_answers(admin: AdminClient) -> None:
    out = admin.list_offsets({("present", 0): OffsetSpec.latest()})
    assert out[TopicPartition("present", 0)].offset == 0


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda a: a.describe_topics(["missing"]), id="describe_topics"),
        pytest.param(lambda a: a.delete_topics(["missing"]), id="delete_topics"),
        pytest.param(lambda a: a.create_partitions({"missing": NewPartitions(3)}), id="create_partitions"),
        pytest.param(lambda a: a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "missing")]),
                     id="describe_configs"),
    ],
)
def test_other_admin_calls_on_an_unknown_topic_fail_fast(admin: AdminClient, call: Callable[[AdminClient], Any]) -> None:
    _fails_fast(lambda: call(admin), UnknownTopicOrPartitionError, "missing")


def test_describe_configs_of_an_unknown_broker_id_waits_as_java(admin: AdminClient) -> None:
    """Java waits for a broker id missing from the metadata (it may be starting): the timeout bounds it."""
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError):
        admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "99")], timeout=1.0)
    assert 0.9 <= time.monotonic() - started < FAST_S


def _producer(broker: MiniBroker, max_block_ms: int) -> KafkaProducer:
    return KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "max.block.ms": max_block_ms})


def test_producer_send_to_an_invalid_topic_name_fails_fast(broker: MiniBroker) -> None:
    """The broker answers INVALID_TOPIC_EXCEPTION: the topic can never exist (Java throws at once too)."""
    with _producer(broker, 60_000) as producer:
        started = time.monotonic()
        future = producer.send("not a valid name!", b"v")
        with pytest.raises(InvalidTopicError):
            future.result(timeout=FAST_S)
        assert time.monotonic() - started < FAST_S


def test_producer_send_to_a_missing_topic_waits_max_block_ms_as_java(broker: MiniBroker) -> None:
    """Java keeps waiting ``max.block.ms`` for a topic the broker does not know (it may be created
    meanwhile); so do we, and then fail the record with a timeout that names the topic."""
    with _producer(broker, 1500) as producer:
        started = time.monotonic()
        future = producer.send("missing", b"v")
        with pytest.raises(KafkaTimeoutError, match="Topic missing not present in metadata after 1500 ms"):
            future.result(timeout=FAST_S)
        assert 1.4 <= time.monotonic() - started < FAST_S
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="Topic missing not present in metadata after 1500 ms"):
            producer.partitions_for("missing")
        assert 1.4 <= time.monotonic() - started < FAST_S


def test_producer_send_to_a_partition_past_the_count_waits_max_block_ms_as_java(broker: MiniBroker) -> None:
    with _producer(broker, 1000) as producer:
        future = producer.send("present", b"v", partition=5)
        with pytest.raises(KafkaTimeoutError, match="Partition 5 of topic present with partition count 1"):
            future.result(timeout=FAST_S)
