"""What a producer waiting ``max.block.ms`` for a topic's metadata says when the wait runs out (issue 22
item 2): Java's sentence, then why — no broker reachable (addresses and causes) or the topic does not exist
(and how to create it)."""

from __future__ import annotations

from pykafka_client.errors import LeaderNotAvailableError, UnknownTopicOrPartitionError
from pykafka_client.network.metadata import Metadata
from pykafka_client.producer.metadata_wait import topic_not_present_message
from tests.doubles.responses import metadata_response, nodes
from tests.unit.network.harness import Harness

UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5


def test_metadata_keeps_each_topics_last_error_until_a_response_names_it_without_error() -> None:
    md = Metadata(100, 1000)
    md.update(0, metadata_response(nodes(1), {"ok": 1}, topic_errors={"gone": UNKNOWN_TOPIC_OR_PARTITION}), False, 1)
    assert md.topic_error("gone") is UnknownTopicOrPartitionError
    assert md.topic_error("ok") is None and md.topic_error("never-asked") is None
    # a partial update that does not name "gone" keeps its error; one that names it replaces it
    md.update(0, metadata_response(nodes(1), {"other": 1}), True, 2)
    assert md.topic_error("gone") is UnknownTopicOrPartitionError
    md.update(0, metadata_response(nodes(1), {}, topic_errors={"gone": LEADER_NOT_AVAILABLE}), True, 3)
    assert md.topic_error("gone") is LeaderNotAvailableError
    md.update(0, metadata_response(nodes(1), {"gone": 1}), True, 4)
    assert md.topic_error("gone") is None


def test_unreachable_brokers_are_named_with_their_errors() -> None:
    h = Harness(n_nodes=1)
    h.selector.refused.add(("127.0.0.1", h.node.port))
    h.client.ready(h.node, h.now)
    text = topic_not_present_message("t", 1000, h.metadata, h.client, ["localhost:9092"])
    assert text == (
        "Topic t not present in metadata after 1000 ms: could not connect to any broker: "
        "localhost:9092 (127.0.0.1:9092): connection refused. Check that a broker is running there and that "
        "bootstrap.servers names its listener (host:port, and security.protocol matching the listener)."
    )


def test_a_topic_the_broker_says_does_not_exist_gets_the_way_to_create_it() -> None:
    h = Harness(n_nodes=1)
    h.await_ready()
    h.metadata.update(0, metadata_response(h.nodes, {}, topic_errors={"t": UNKNOWN_TOPIC_OR_PARTITION}), True, h.now)
    text = topic_not_present_message("t", 1500, h.metadata, h.client, ["b1:9092", "b2:9092"])
    assert text.startswith("Topic t not present in metadata after 1500 ms: the topic does not exist")
    assert "auto.create.topics.enable is false" in text
    assert "`pykafka topics create t --partitions N --bootstrap-server b1:9092,b2:9092`" in text
    assert "AdminClient.create_topics([NewTopic('t', N, replication_factor)])" in text


def test_without_a_known_reason_the_message_is_javas() -> None:
    h = Harness(n_nodes=1)
    h.await_ready()
    assert topic_not_present_message("t", 0, h.metadata, h.client, "b:1") == "Topic t not present in metadata after 0 ms."
