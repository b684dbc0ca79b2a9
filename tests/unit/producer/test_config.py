from __future__ import annotations

import logging

import pytest

from pykafka_client.config import ConfigDef, ConfigType, at_least
from pykafka_client.errors import ConfigurationError
from pykafka_client.producer.config import ProducerConfig


def test_java_defaults() -> None:
    c = ProducerConfig({"bootstrap.servers": "localhost:9092"})
    assert c["acks"] == -1
    assert c["enable.idempotence"] is True
    assert c["linger.ms"] == 5
    assert c["batch.size"] == 16384
    assert c["buffer.memory"] == 33554432
    assert c["max.block.ms"] == 60000
    assert c["delivery.timeout.ms"] == 120000
    assert c["request.timeout.ms"] == 30000
    assert c["retries"] == 2**31 - 1
    assert c["max.in.flight.requests.per.connection"] == 5
    assert c["max.request.size"] == 1048576
    assert c["retry.backoff.ms"] == 100
    assert c["retry.backoff.max.ms"] == 1000
    assert c["compression.type"] == "none"
    assert c["bootstrap.servers"] == ["localhost:9092"]


def test_unknown_key_is_named() -> None:
    with pytest.raises(ConfigurationError, match="lingerms"):
        ProducerConfig({"lingerms": 5})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("linger.ms", -1),
        ("batch.size", "abc"),
        ("acks", "2"),
        ("compression.type", "brotli"),
        ("enable.idempotence", "yes"),
        ("retries", -1),
        ("max.in.flight.requests.per.connection", 0),
        ("buffer.memory", True),
        ("batch.size", 2**31),
    ],
)
def test_invalid_values_name_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=key.replace(".", r"\.")):
        ProducerConfig({key: value})


def test_strings_accepted_like_properties_file() -> None:
    c = ProducerConfig({"linger.ms": "20", "enable.idempotence": "false", "acks": "1", "bootstrap.servers": "a:1, b:2"})
    assert c["linger.ms"] == 20
    assert c["enable.idempotence"] is False
    assert c["acks"] == 1
    assert c["bootstrap.servers"] == ["a:1", "b:2"]


@pytest.mark.parametrize(
    ("key", "value"),
    [("acks", "1"), ("acks", 0), ("retries", 0), ("max.in.flight.requests.per.connection", 6)],
)
def test_explicit_idempotence_rejects_conflicts(key: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=key.replace(".", r"\.")):
        ProducerConfig({"enable.idempotence": True, key: value})


@pytest.mark.parametrize(
    ("key", "value"),
    [("acks", "1"), ("retries", 0), ("max.in.flight.requests.per.connection", 6)],
)
def test_default_idempotence_is_disabled_by_conflicts(key: str, value: object) -> None:
    c = ProducerConfig({key: value})
    assert c["enable.idempotence"] is False


@pytest.mark.parametrize(
    ("key", "value", "needed"),
    [("acks", "1", "acks=all"), ("acks", 0, "acks=all"), ("retries", 0, "retries > 0"),
     ("max.in.flight.requests.per.connection", 6, "max.in.flight.requests.per.connection <= 5")],
)
def test_default_idempotence_disabled_by_a_conflict_is_logged_at_info(
    caplog: pytest.LogCaptureFixture, key: str, value: object, needed: str
) -> None:
    """As Java's ProducerConfig: the user asked for acks=1 and idempotence quietly went away; say so once."""
    caplog.set_level(logging.INFO, logger="pykafka_client")
    ProducerConfig({key: value})
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert record.getMessage().startswith(f"idempotence is disabled because {key} is set to {value}")
    assert f"needs {needed}" in record.getMessage()


@pytest.mark.parametrize("config", [{"acks": "1", "enable.idempotence": False}, {"acks": "all"}, {}])
def test_no_idempotence_line_when_nothing_was_turned_off_behind_the_users_back(
    caplog: pytest.LogCaptureFixture, config: dict[str, object]
) -> None:
    caplog.set_level(logging.INFO, logger="pykafka_client")
    ProducerConfig(config)
    assert not [r for r in caplog.records if "idempotence" in r.getMessage()]


def test_idempotence_kept_with_compatible_explicit_values() -> None:
    c = ProducerConfig({"enable.idempotence": True, "acks": "all", "max.in.flight.requests.per.connection": 5, "retries": 3})
    assert c.idempotence_enabled


def test_delivery_timeout_lower_bound() -> None:
    with pytest.raises(ConfigurationError, match=r"delivery\.timeout\.ms"):
        ProducerConfig({"delivery.timeout.ms": 1000, "linger.ms": 5, "request.timeout.ms": 30000})
    c = ProducerConfig({"request.timeout.ms": 200000})
    assert c["delivery.timeout.ms"] == 200005


def test_transactional_id_requires_idempotence() -> None:
    with pytest.raises(ConfigurationError, match=r"transactional\.id"):
        ProducerConfig({"transactional.id": "t", "enable.idempotence": False})


def test_config_def_required_and_nullable() -> None:
    d = ConfigDef().define("a.b", ConfigType.INT, validator=at_least(1)).define("c", ConfigType.STRING, None)
    with pytest.raises(ConfigurationError, match=r"a\.b"):
        d.parse({})
    assert d.parse({"a.b": "3"}) == {"a.b": 3, "c": None}
    with pytest.raises(ConfigurationError, match=r"a\.b"):
        d.parse({"a.b": None})
    with pytest.raises(ValueError):
        d.define("a.b", ConfigType.INT, 1)


def test_password_not_shown() -> None:
    d = ConfigDef().define("sasl.password", ConfigType.PASSWORD, None)
    with pytest.raises(ConfigurationError) as ei:
        d.parse({"sasl.password": 12345})
    assert "12345" not in str(ei.value)
