"""Configs Kafka 3.x deprecated but still accepts: ``message.format.version`` (ignored: records are always v2),
``message.timestamp.difference.max.ms`` (the fallback of before/after.max.ms) and their broker synonyms, plus
``inter.broker.protocol.version``. Accepted with Kafka's validation, described with Kafka's defaults."""

from __future__ import annotations

import pytest

from mini_broker.config import KafkaConfig
from mini_broker.log.log_config import LogConfig
from mini_broker.log.log_validator import AppendChecks, AppendOrigin, analyze_and_validate
from mini_broker.metadata_version import from_version_string
from mini_broker.server.topic_configs import (
    DEFAULT_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
    ConfigSynonym,
    describe_broker_configs,
    describe_topic_config,
    describe_topic_configs,
    validate_topic_config,
    validate_topic_configs,
)
from pykafka_client.errors import ConfigurationError, InvalidConfigurationError, InvalidTimestampError
from pykafka_client.protocol.records import MemoryRecordsBuilder

STRING, LONG = 2, 5
NOW = 1_700_000_000_000
LONG_MAX = str(2**63 - 1)


@pytest.mark.parametrize(("text", "version"), [
    ("0.10.0", "0.10.0-IV1"),      # a release name is its latest internal version
    ("0.10.0-IV0", "0.10.0-IV0"),
    ("0.10.0.1", "0.10.0-IV1"),    # bug-fix numbers are ignored
    ("0.8.2.2", "0.8.2"),
    ("2.8", "2.8-IV1"),
    ("2.8.1", "2.8-IV1"),
    ("3.0-IV1", "3.0-IV1"),
    ("3.9", "3.9-IV0"),
])
def test_kafka_version_names(text: str, version: str) -> None:
    assert from_version_string(text).version == version


@pytest.mark.parametrize("value", ["0.10.0", "0.9.0", "1.0", "2.8.1", "3.0-IV1", "3.9"])
def test_message_format_version_any_kafka_version_is_accepted_as_given(value: str) -> None:
    assert validate_topic_config("message.format.version", f" {value} ") == value
    assert validate_topic_configs({"message.format.version": value, "retention.ms": "1000"}) == {
        "message.format.version": value, "retention.ms": "1000"}


@pytest.mark.parametrize("value", ["0.7", "banana", "3.10", "", "4.0-IV9"])
def test_message_format_version_unknown_version_is_invalid_config(value: str) -> None:
    with pytest.raises(InvalidConfigurationError,
                       match=rf"Invalid value {value} for configuration message.format.version: "
                             rf"Version {value} is not a valid version"):
        validate_topic_config("message.format.version", value)


def test_old_message_format_version_is_accepted_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    validate_topic_config("message.format.version", "3.0")
    assert "ignored" not in caplog.text
    validate_topic_config("message.format.version", "0.10.2")
    assert "message.format.version=0.10.2 is ignored" in caplog.text


def test_message_timestamp_difference_max_ms_is_a_long_at_least_zero() -> None:
    assert validate_topic_config("message.timestamp.difference.max.ms", "60000") == "60000"
    with pytest.raises(InvalidConfigurationError, match="Value must be at least 0"):
        validate_topic_config("message.timestamp.difference.max.ms", "-1")
    with pytest.raises(InvalidConfigurationError, match="Not a number of type LONG"):
        validate_topic_config("message.timestamp.difference.max.ms", "soon")


def test_describe_defaults_overrides_synonyms_and_deprecation_docs() -> None:
    broker = KafkaConfig()
    mfv = describe_topic_config(broker, {}, "message.format.version", include_synonyms=True)
    assert (mfv.value, mfv.source, mfv.config_type, mfv.read_only) == ("3.0-IV1", DEFAULT_CONFIG, STRING, False)
    assert mfv.synonyms == [ConfigSynonym("log.message.format.version", "3.0-IV1", DEFAULT_CONFIG)]
    assert mfv.documentation is not None and mfv.documentation.startswith("[DEPRECATED]")

    mfv = describe_topic_config(broker, {"message.format.version": "0.10.0"}, "message.format.version", True)
    assert (mfv.value, mfv.source, mfv.read_only) == ("0.10.0", DYNAMIC_TOPIC_CONFIG, False)
    assert mfv.synonyms == [ConfigSynonym("message.format.version", "0.10.0", DYNAMIC_TOPIC_CONFIG),
                            ConfigSynonym("log.message.format.version", "3.0-IV1", DEFAULT_CONFIG)]

    diff = describe_topic_config(broker, {}, "message.timestamp.difference.max.ms", include_synonyms=True)
    assert (diff.value, diff.source, diff.config_type) == (LONG_MAX, DEFAULT_CONFIG, LONG)
    assert diff.synonyms == [ConfigSynonym("log.message.timestamp.difference.max.ms", LONG_MAX, DEFAULT_CONFIG)]
    assert diff.documentation is not None and diff.documentation.startswith("[DEPRECATED]")

    # configs that are not deprecated have no documentation here
    assert describe_topic_config(broker, {}, "retention.ms").documentation is None
    # both are listed when every config is described
    names = {e.name for e in describe_topic_configs(broker, {})}
    assert {"message.format.version", "message.timestamp.difference.max.ms", "message.downconversion.enable"} <= names


def test_broker_synonyms_set_in_server_properties() -> None:
    broker = KafkaConfig({"log.message.format.version": "2.8", "log.message.timestamp.difference.max.ms": "5000"})
    mfv = describe_topic_config(broker, {}, "message.format.version", include_synonyms=True)
    assert (mfv.value, mfv.source) == ("2.8", STATIC_BROKER_CONFIG)
    assert mfv.synonyms[0] == ConfigSynonym("log.message.format.version", "2.8", STATIC_BROKER_CONFIG)
    diff = describe_topic_config(broker, {}, "message.timestamp.difference.max.ms")
    assert (diff.value, diff.source) == ("5000", STATIC_BROKER_CONFIG)


def test_broker_configs_accept_and_check_the_deprecated_version_keys() -> None:
    broker = KafkaConfig({"log.message.format.version": "0.10.0", "inter.broker.protocol.version": "3.5"})
    described = {e.name: e for e in describe_broker_configs(
        broker, ["log.message.format.version", "inter.broker.protocol.version",
                 "log.message.timestamp.difference.max.ms"])}
    assert described["log.message.format.version"].value == "0.10.0"
    assert described["log.message.format.version"].source == STATIC_BROKER_CONFIG
    assert described["inter.broker.protocol.version"].value == "3.5"
    assert described["log.message.timestamp.difference.max.ms"].value == LONG_MAX
    assert described["log.message.timestamp.difference.max.ms"].source == DEFAULT_CONFIG
    assert all(e.read_only for e in described.values())
    assert KafkaConfig().get("inter.broker.protocol.version") == "3.9-IV0"
    with pytest.raises(ConfigurationError, match=r"Version 0\.7 is not a valid version"):
        KafkaConfig({"log.message.format.version": "0.7"})
    # any Kafka version is taken and ignored (a server.properties written for an older broker still starts; Kafka
    # 4 no longer has the key), but not a name that is no version
    assert KafkaConfig({"inter.broker.protocol.version": "2.8"}).get("inter.broker.protocol.version") == "2.8"
    with pytest.raises(ConfigurationError, match=r"Version 0\.7 is not a valid version"):
        KafkaConfig({"inter.broker.protocol.version": "0.7"})


def test_log_config_takes_them_from_topic_and_broker() -> None:
    cfg = LogConfig.from_props({"message.format.version": "0.10.0", "message.timestamp.difference.max.ms": "1000"})
    assert cfg.to_props()["message.format.version"] == "0.10.0"
    assert (cfg.timestamp_before_max_ms, cfg.timestamp_after_max_ms) == (1000, 1000)
    # before/after, once set, win over the deprecated difference (Kafka 3.6+)
    cfg = LogConfig.from_props({"message.timestamp.difference.max.ms": "1000", "message.timestamp.after.max.ms": "7"})
    assert (cfg.timestamp_before_max_ms, cfg.timestamp_after_max_ms) == (1000, 7)
    broker = KafkaConfig({"log.message.timestamp.difference.max.ms": "2000", "log.message.format.version": "2.0"})
    cfg = LogConfig.from_broker(lambda n: broker.get(n) if broker.is_set(n) else None)
    assert (cfg.timestamp_before_max_ms, cfg.timestamp_after_max_ms) == (2000, 2000)
    assert cfg.to_props()["message.format.version"] == "2.0"
    assert LogConfig().timestamp_before_max_ms == 2**63 - 1


def test_appends_are_checked_against_message_timestamp_difference_max_ms() -> None:
    def batch(ts: int) -> bytearray:
        builder = MemoryRecordsBuilder()
        builder.append(ts, b"k", b"v")
        return bytearray(builder.build())

    cfg = LogConfig.from_props({"message.timestamp.difference.max.ms": "1000"})
    analyze_and_validate(batch(NOW - 1000), AppendOrigin.CLIENT, AppendChecks.of(cfg), NOW)
    analyze_and_validate(batch(NOW + 1000), AppendOrigin.CLIENT, AppendChecks.of(cfg), NOW)
    with pytest.raises(InvalidTimestampError):
        analyze_and_validate(batch(NOW - 1001), AppendOrigin.CLIENT, AppendChecks.of(cfg), NOW)
    with pytest.raises(InvalidTimestampError):
        analyze_and_validate(batch(NOW + 1001), AppendOrigin.CLIENT, AppendChecks.of(cfg), NOW)
    # message.format.version changes nothing: v2 batches (headers, producer ids) are taken as they are
    analyze_and_validate(batch(NOW - 10**9), AppendOrigin.CLIENT, AppendChecks.of(LogConfig.from_props({"message.format.version": "0.9.0"})), NOW)
