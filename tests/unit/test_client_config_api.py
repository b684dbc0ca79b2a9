"""Configuration a Python user can type (issue 9 item 4): ``acks`` in every form, keyword arguments that
behave the same in the three clients, did-you-mean for unknown keys, and TypeErrors that say what a
public method expected. No broker: bootstrap points at a port nothing listens on, nothing is sent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer
from pykafka_client.admin.config import AdminClientConfig
from pykafka_client.config import merge_config
from pykafka_client.consumer.config import ConsumerConfig
from pykafka_client.errors import ConfigurationError, IllegalArgumentError
from pykafka_client.producer.config import PRODUCER_CONFIG_DEF, ProducerConfig
from pykafka_client.structs import TopicPartition

pytestmark = pytest.mark.timeout(60)

NOWHERE = "127.0.0.1:1"


@pytest.fixture
def producer() -> Iterator[KafkaProducer]:
    p = KafkaProducer(bootstrap_servers=NOWHERE, max_block_ms=0)
    try:
        yield p
    finally:
        p.close(0)


@pytest.fixture
def admin() -> Iterator[AdminClient]:
    with AdminClient(bootstrap_servers=NOWHERE) as a:
        yield a


@pytest.fixture
def consumer() -> Iterator[KafkaConsumer[bytes | None, bytes | None]]:
    c: KafkaConsumer[bytes | None, bytes | None] = KafkaConsumer(bootstrap_servers=NOWHERE, group_id="g")
    try:
        yield c
    finally:
        c.close(timeout=0)


# --- acks --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [(0, 0), (1, 1), (-1, -1), ("all", -1), ("ALL", -1), ("0", 0), ("1", 1), ("-1", -1), (" 1 ", 1)],
)
def test_acks_forms_are_normalised_to_java_ints(given: Any, expected: int) -> None:
    assert ProducerConfig({"acks": given})["acks"] == expected
    assert ProducerConfig(acks=given)["acks"] == expected


@pytest.mark.parametrize("bad", [2, -2, "none", "", True, 1.0, "leader"])
def test_bad_acks_are_rejected_naming_the_forms(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"acks: must be one of 0, 1, -1, 'all'"):
        ProducerConfig({"acks": bad})


def test_acks_default_and_idempotence_rules_still_apply() -> None:
    assert ProducerConfig()["acks"] == -1
    relaxed = ProducerConfig(acks=1)
    assert relaxed["enable.idempotence"] is False  # default idempotence yields to an explicit acks=1
    with pytest.raises(ConfigurationError, match="acks"):
        ProducerConfig(acks=0, enable_idempotence=True)


# --- keyword arguments -------------------------------------------------------------------------------


def test_all_three_clients_take_snake_case_keyword_arguments(
    producer: KafkaProducer, admin: AdminClient, consumer: KafkaConsumer[bytes | None, bytes | None]
) -> None:
    assert producer.config["bootstrap.servers"] == [NOWHERE]
    assert producer.config["max.block.ms"] == 0
    assert admin.config["bootstrap.servers"] == [NOWHERE]
    assert consumer.config["bootstrap.servers"] == [NOWHERE]
    assert consumer.config["group.id"] == "g"


@pytest.mark.parametrize("cls", [ProducerConfig, ConsumerConfig, AdminClientConfig])
def test_keywords_win_over_the_mapping_and_count_as_set(cls: Any) -> None:
    cfg = cls({"client.id": "from-map", "retry.backoff.ms": 5}, client_id="from-kwarg")
    assert cfg["client.id"] == "from-kwarg"
    assert cfg["retry.backoff.ms"] == 5
    assert cfg.was_set("client.id") and not cfg.was_set("request.timeout.ms")


def test_constructor_keywords_are_the_same_keys_in_every_client() -> None:
    p = KafkaProducer({"bootstrap.servers": NOWHERE}, client_id="p", request_timeout_ms=1234, linger_ms=0)
    try:
        assert p.client_id == "p" and p.config["request.timeout.ms"] == 1234
        assert p.client.default_request_timeout_ms == 1234
    finally:
        p.close(0)
    with AdminClient({"bootstrap.servers": NOWHERE}, client_id="a", request_timeout_ms=1234) as a:
        assert a.network_client.client_id == "a" and a.network_client.default_request_timeout_ms == 1234
    c: KafkaConsumer[bytes, bytes] = KafkaConsumer({"bootstrap.servers": NOWHERE}, client_id="c", request_timeout_ms=1234)
    try:
        assert c.client_id == "c" and c.config["request.timeout.ms"] == 1234
    finally:
        c.close(timeout=0)


def test_the_network_client_gets_every_shared_key_in_every_client() -> None:
    settings: dict[str, Any] = dict(
        bootstrap_servers=NOWHERE,
        reconnect_backoff_ms=7,
        send_buffer_bytes=4096,
        receive_buffer_bytes=8192,
        metadata_recovery_strategy="none",
        metadata_recovery_rebootstrap_trigger_ms=1234,
    )
    p = KafkaProducer(**settings)
    c: KafkaConsumer[bytes, bytes] = KafkaConsumer(**settings)
    a = AdminClient(**settings)
    try:
        for nc in (p.client, c._network_client, a.network_client):
            assert nc is not None
            assert nc.reconnect_backoff_ms == 7
            assert nc.socket_send_buffer_bytes == 4096 and nc.socket_receive_buffer_bytes == 8192
            assert nc.metadata_recovery_strategy.value == "none"
            # the producer and the consumer did not pass the rebootstrap trigger to their NetworkClient
            assert nc.rebootstrap_trigger_ms == 1234
    finally:
        p.close(0)
        c.close(timeout=0)
        a.close()


def test_missing_bootstrap_servers_is_a_configuration_error_in_every_client() -> None:
    with pytest.raises(ConfigurationError, match=r"bootstrap\.servers"):
        KafkaProducer()
    with pytest.raises(ConfigurationError, match=r"bootstrap\.servers"):
        AdminClient()
    with pytest.raises(ConfigurationError, match=r"bootstrap\.servers"):
        KafkaConsumer()
    with pytest.raises(ConfigurationError, match=r"bootstrap\.servers"):
        KafkaProducer(bootstrap_servers="host:70000")


def test_config_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match="config must be a mapping"):
        KafkaProducer("localhost:9092")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="config must be a mapping"):
        AdminClient(["localhost:9092"])  # type: ignore[arg-type]


# --- did you mean ------------------------------------------------------------------------------------


def test_unknown_dotted_key_suggests_the_closest_known_key() -> None:
    with pytest.raises(ConfigurationError) as e:
        ProducerConfig({"bootstrap.server": NOWHERE})
    assert str(e.value) == "Unknown configuration 'bootstrap.server'; did you mean 'bootstrap.servers'?"


def test_unknown_keyword_suggests_in_snake_case() -> None:
    with pytest.raises(ConfigurationError) as e:
        KafkaProducer(bootstrap_server=NOWHERE)
    assert str(e.value) == (
        "Unknown configuration keyword argument 'bootstrap_server'; did you mean 'bootstrap_servers'?"
    )
    with pytest.raises(ConfigurationError, match="did you mean 'group_id'"):
        KafkaConsumer(bootstrap_servers=NOWHERE, groupid="g")
    with pytest.raises(ConfigurationError, match="did you mean 'request_timeout_ms'"):
        AdminClient(bootstrap_servers=NOWHERE, request_timeout=5)


def test_snake_case_key_in_the_mapping_points_to_the_dotted_name() -> None:
    with pytest.raises(ConfigurationError, match=r"'bootstrap_servers'; did you mean 'bootstrap\.servers'\?"):
        AdminClientConfig({"bootstrap_servers": NOWHERE})


def test_unknown_key_with_nothing_close_has_no_suggestion() -> None:
    with pytest.raises(ConfigurationError) as e:
        ConsumerConfig({"zzzz": 1})
    assert str(e.value) == "Unknown configuration 'zzzz'"


def test_every_unknown_key_is_listed() -> None:
    with pytest.raises(ConfigurationError, match=r"also unknown: 'b\.b'"):
        ConsumerConfig({"a.a": 1, "b.b": 2})


def test_merge_config_rejects_non_string_keys() -> None:
    with pytest.raises(ConfigurationError, match="keys must be strings"):
        merge_config(PRODUCER_CONFIG_DEF, {1: "x"}, {})  # type: ignore[dict-item]


# --- TypeErrors on public methods --------------------------------------------------------------------


def test_admin_create_topics_with_a_name_says_it_needs_new_topics(admin: AdminClient) -> None:
    with pytest.raises(TypeError, match=r"create_topics\(\) expects new_topics as a list of NewTopic.*got str 'name'"):
        admin.create_topics("name")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="an element is str 'name'"):
        admin.create_topics(["name"])  # type: ignore[list-item]


def test_admin_topic_name_lists(admin: AdminClient) -> None:
    with pytest.raises(TypeError, match=r"delete_topics\(\) expects topics as a list of topic names.*got str 'name'"):
        admin.delete_topics("name")
    with pytest.raises(TypeError, match=r"describe_topics\(\) expects topics"):
        admin.describe_topics("name")
    with pytest.raises(TypeError, match="an element is int 3"):
        admin.delete_topics([3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"describe_configs\(\) expects resources as a list of ConfigResource"):
        admin.describe_configs("topic")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"create_partitions\(\) expects new_partitions as a mapping"):
        admin.create_partitions(["t"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"list_offsets\(\) expects specs as a mapping"):
        admin.list_offsets([TopicPartition("t", 0)])  # type: ignore[arg-type]


def test_consumer_subscribe_and_assign_say_what_they_take(consumer: KafkaConsumer[bytes | None, bytes | None]) -> None:
    with pytest.raises(TypeError, match=r"subscribe\(\) expects topics as a list of topic names.*got str 'topic'"):
        consumer.subscribe("topic")
    with pytest.raises(TypeError, match="an element is int 1"):
        consumer.subscribe(["ok", 1])  # type: ignore[list-item]
    with pytest.raises(IllegalArgumentError):
        consumer.subscribe(["ok", ""])
    with pytest.raises(TypeError, match=r"assign\(\) expects partitions as a list of TopicPartition.*got str 't'"):
        consumer.assign("t")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="an element is str 't'"):
        consumer.assign(["t"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"assign\(\) expects partitions"):
        consumer.assign([("t", 0, 1)])  # type: ignore[list-item]
    consumer.assign([("t", 0)])  # type: ignore[list-item]  # a (topic, partition) tuple is a TopicPartition
    assert consumer.assignment() == {TopicPartition("t", 0)}


def test_producer_send_says_the_topic_is_a_str(producer: KafkaProducer) -> None:
    with pytest.raises(TypeError, match=r"send\(\) expects the topic name as a str, got int 123"):
        producer.send(123)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="partition as an int"):
        producer.send("t", b"v", partition="0")  # type: ignore[arg-type]
    with pytest.raises(IllegalArgumentError, match="empty"):
        producer.send("", b"v")
