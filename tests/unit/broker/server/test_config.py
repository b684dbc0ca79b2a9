"""KafkaConfig: Kafka names and defaults, properties parsing, unknown keys, invalid values."""

from __future__ import annotations

import pytest

from mini_broker.config import KafkaConfig, load_properties, parse_listener
from pykafka_client.errors import ConfigurationError


def test_defaults_are_kafkas() -> None:
    c = KafkaConfig()
    assert c.num_network_threads == 3
    assert c.num_io_threads == 8
    assert c.queued_max_requests == 500
    assert c.socket_request_max_bytes == 104857600
    assert c.connections_max_idle_ms == 600000
    assert c.num_partitions == 1
    assert c.auto_create_topics_enable is True
    assert c.message_max_bytes == 1048588
    assert c.log_retention_ms == 168 * 3600_000
    assert c.log_roll_ms == 168 * 3600_000
    assert c.log_segment_bytes == 1073741824
    assert [ep.connection_string() for ep in c.listeners] == ["PLAINTEXT://127.0.0.1:9092"]
    assert c.originals() == {}


def test_retention_precedence_ms_over_minutes_over_hours() -> None:
    assert KafkaConfig({"log.retention.hours": "1"}).log_retention_ms == 3600_000
    assert KafkaConfig({"log.retention.hours": "1", "log.retention.minutes": "2"}).log_retention_ms == 120_000
    assert KafkaConfig({"log.retention.minutes": "2", "log.retention.ms": "5"}).log_retention_ms == 5


def test_properties_file_syntax() -> None:
    text = "# comment\n! also\nbroker.id=3\nlisteners = PLAINTEXT://127.0.0.1:0\nnum.partitions: 4\n" \
           "log.dirs /tmp/a,\\\n  /tmp/b\n\n"
    props = load_properties(text)
    assert props == {"broker.id": "3", "listeners": "PLAINTEXT://127.0.0.1:0", "num.partitions": "4",
                     "log.dirs": "/tmp/a,/tmp/b"}
    c = KafkaConfig(props)
    assert c.node_id == 3 and c.num_partitions == 4 and c.log_dirs == ["/tmp/a", "/tmp/b"]


def test_unknown_keys_warn_and_are_ignored() -> None:
    warnings: list[str] = []
    c = KafkaConfig({"no.such.key": "1", "num.partitions": "2"}, warn=warnings.append)
    assert c.num_partitions == 2
    assert len(warnings) == 1 and "no.such.key" in warnings[0]


@pytest.mark.parametrize(("key", "value"), [
    ("num.partitions", "zero"),
    ("num.partitions", "0"),
    ("auto.create.topics.enable", "yes"),
    ("num.io.threads", "99999999999"),
    ("listeners", "127.0.0.1:9092"),
    ("listeners", "PLAINTEXT://127.0.0.1:99999"),
    ("max.connections.per.ip.overrides", "a"),
    ("listeners", "CLIENT://127.0.0.1:0"),  # a listener name with no security protocol in the map
    ("listener.security.protocol.map", "nonsense"),
])
def test_invalid_values_name_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=key.replace(".", r"\.")):
        KafkaConfig({key: value})


def test_listener_parsing() -> None:
    ep = parse_listener("listeners", "PLAINTEXT://[::1]:9093")
    assert (ep.listener_name, ep.host, ep.port) == ("PLAINTEXT", "::1", 9093)
    assert parse_listener("listeners", "plaintext://:0").host == ""
    c = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "PLAINTEXT://example:9092"})
    assert c.advertised_listeners[0].host == "example"


def test_node_id_and_broker_id() -> None:
    assert KafkaConfig({"broker.id": "5"}).node_id == 5
    assert KafkaConfig({"node.id": "7"}).node_id == 7
    with pytest.raises(ConfigurationError, match=r"broker\.id"):
        KafkaConfig({"node.id": "1", "broker.id": "2"})


def test_named_listeners_map_to_protocols() -> None:
    c = KafkaConfig({"listeners": "CLIENT://127.0.0.1:0", "listener.security.protocol.map": "CLIENT:PLAINTEXT"})
    assert c.listeners[0].listener_name == "CLIENT"
    with pytest.raises(ConfigurationError, match=r"advertised\.listeners"):
        KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "OTHER://h:1"})


def test_inter_broker_listener_name() -> None:
    two = "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
    assert KafkaConfig({"listeners": two}).inter_broker_listener_name == "PLAINTEXT"
    assert KafkaConfig({"listeners": "SSL://127.0.0.1:0"}).inter_broker_listener_name == "SSL"  # the only one
    assert KafkaConfig({"listeners": two, "inter.broker.listener.name": "sasl_ssl"}).inter_broker_listener_name == \
        "SASL_SSL"
    assert KafkaConfig({"listeners": two, "security.inter.broker.protocol": "SASL_SSL"}).inter_broker_listener_name \
        == "SASL_SSL"
    both = KafkaConfig({"listeners": two, "inter.broker.listener.name": "SASL_SSL",
                        "security.inter.broker.protocol": "SASL_SSL"})
    with pytest.raises(ConfigurationError, match="set only one of them"):
        _ = both.inter_broker_listener_name
