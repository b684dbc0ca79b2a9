"""partitions_for / list_topics through TopicMetadataFetcher, on the real ConsumerNetworkClient over
MockClient (Java: TopicMetadataFetcherTest, KafkaConsumerTest.testPartitionsFor*)."""

from __future__ import annotations

from typing import Any

import pytest

from pykafka_client import KafkaConsumer
from pykafka_client.errors import InvalidTopicError, KafkaTimeoutError, TopicAuthorizationFailedError
from pykafka_client.protocol.messages.metadata_request import MetadataRequest
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient
from tests.doubles.responses import metadata_response, nodes
from tests.unit.consumer.helpers import ConsumerEnv, metadata_with

pytestmark = pytest.mark.timeout(60)

UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
INVALID_TOPIC = 17
TOPIC_AUTHORIZATION_FAILED = 29


def make(**cfg: Any) -> tuple[KafkaConsumer[Any, Any], MockClient, MockTime]:
    time = MockTime()
    md = metadata_with({"known": 2})
    env = ConsumerEnv(time, md)
    client, cnc = env.client, env.cnc
    consumer: KafkaConsumer[Any, Any] = KafkaConsumer(cfg, time=time, client=cnc, metadata=md)
    return consumer, client, time


def metadata_requests(client: MockClient) -> list[MetadataRequest]:
    return [r.body for r in client.sent if isinstance(r.body, MetadataRequest)]


def test_partitions_for_a_known_topic_answers_from_the_cache() -> None:
    c, client, _ = make()
    assert [p.partition for p in c.partitions_for("known")] == [0, 1]
    assert metadata_requests(client) == []


def test_partitions_for_an_unknown_topic_is_empty_after_one_round_trip() -> None:
    c, client, time = make()
    start = time.milliseconds()
    client.prepare_response(metadata_response(nodes(1), topic_errors={"nope": UNKNOWN_TOPIC_OR_PARTITION}))
    assert c.partitions_for("nope", timeout=60) == []
    assert len(metadata_requests(client)) == 1
    assert time.milliseconds() - start < 1000


def test_partitions_for_asks_with_allow_auto_create_topics_from_the_config() -> None:
    """Java sends ``allow.auto.create.topics`` (default true); the consumer used to send false."""
    for setting, expected in ((None, True), (False, False)):
        cfg = {} if setting is None else {"allow.auto.create.topics": setting}
        c, client, _ = make(**cfg)
        client.prepare_response(metadata_response(nodes(1), {"new": 1}))
        c.partitions_for("new")
        assert metadata_requests(client)[0].allow_auto_topic_creation is expected


def test_partitions_for_retries_while_the_leader_is_not_available() -> None:
    """A topic being created answers LEADER_NOT_AVAILABLE first: retry (Java) instead of returning
    partitions without leaders."""
    c, client, _ = make()
    client.prepare_response(metadata_response(nodes(1), topic_errors={"new": LEADER_NOT_AVAILABLE}))
    client.prepare_response(metadata_response(nodes(1), {"new": 2}))
    parts = c.partitions_for("new", timeout=5)
    assert [(p.partition, p.leader is not None) for p in parts] == [(0, True), (1, True)]
    assert len(metadata_requests(client)) == 2


def test_partitions_for_keeps_retrying_a_retriable_error_until_the_timeout() -> None:
    c, client, _ = make()
    for _ in range(100):
        client.prepare_response(metadata_response(nodes(1), topic_errors={"new": LEADER_NOT_AVAILABLE}))
    with pytest.raises(KafkaTimeoutError, match="fetching topic metadata"):
        c.partitions_for("new", timeout=1)


def test_partitions_for_an_unauthorized_topic_raises_naming_it() -> None:
    c, client, _ = make()
    client.prepare_response(metadata_response(nodes(1), topic_errors={"secret": TOPIC_AUTHORIZATION_FAILED}))
    with pytest.raises(TopicAuthorizationFailedError, match="secret"):
        c.partitions_for("secret")


def test_partitions_for_an_invalid_topic_raises() -> None:
    c, client, _ = make()
    client.prepare_response(metadata_response(nodes(1), topic_errors={"bad topic": INVALID_TOPIC}))
    with pytest.raises(InvalidTopicError, match="bad topic"):
        c.partitions_for("bad topic")


def test_list_topics_leaves_out_unknown_and_internal_topics() -> None:
    c, client, _ = make()
    response = metadata_response(nodes(1), {"a": 1, "__consumer_offsets": 1})
    for t in response.topics:
        t.is_internal = t.name == "__consumer_offsets"
    client.prepare_response(response)
    assert sorted(c.list_topics()) == ["a"]
    assert metadata_requests(client)[0].topics is None


def test_list_topics_retries_after_a_disconnect() -> None:
    c, client, _ = make()
    client.prepare_response(None, disconnected=True)
    client.prepare_response(metadata_response(nodes(1), {"a": 3}))
    assert [p.partition for p in c.list_topics(timeout=5)["a"]] == [0, 1, 2]
