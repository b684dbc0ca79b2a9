"""One configuration vocabulary: the broker's keys, the topic configs, the log config and the Spark connector's
options are parsed by the client's config machinery (:mod:`pykafka_client.config`): one boolean parser, one
error type (:class:`ConfigurationError`, a ``ValueError``)."""

from __future__ import annotations

import pytest

from mini_broker.config import KafkaConfig
from mini_broker.config_def import CONFIG_DEF
from mini_broker.log.log_config import LogConfig
from mini_broker.server.topic_configs import validate_topic_config
from pykafka_client import config as client_config
from pykafka_client.errors import ConfigurationError, InvalidConfigurationError
from spark_connector.options import parse_read_options
from spark_connector.write_options import KafkaWriteOptionError, parse_write_options


def test_broker_keys_are_client_config_keys() -> None:
    assert CONFIG_DEF, "the broker defines keys"
    assert all(isinstance(k, client_config.ConfigKey) for k in CONFIG_DEF.values())
    assert CONFIG_DEF["auto.create.topics.enable"].type is client_config.ConfigType.BOOLEAN
    assert CONFIG_DEF["ssl.key.password"].sensitive


@pytest.mark.parametrize("raw", ["yes", "1", ""])
def test_one_boolean_parser_one_message(raw: str) -> None:
    """The broker, the source and the sink reject the same non-boolean with the same words."""
    with pytest.raises(ConfigurationError, match=r"Invalid value .* for configuration auto\.create\.topics\.enable: "
                                                 r"must be true or false"):
        KafkaConfig({"auto.create.topics.enable": raw})
    with pytest.raises(ConfigurationError, match=r"for option 'failOnDataLoss': must be true or false"):
        parse_read_options({"subscribe": "t", "kafka.bootstrap.servers": "x:1", "failOnDataLoss": raw},
                           streaming=False)
    with pytest.raises(KafkaWriteOptionError, match=r"for option 'exactlyOnce': must be true or false") as info:
        parse_write_options({"kafka.bootstrap.servers": "x:1", "exactlyOnce": raw}, streaming=True)
    assert isinstance(info.value, ConfigurationError) and isinstance(info.value, ValueError)


def test_booleans_parse_the_same_everywhere() -> None:
    assert KafkaConfig({"auto.create.topics.enable": " FALSE "}).get("auto.create.topics.enable") is False
    opts = parse_read_options({"subscribe": "t", "kafka.bootstrap.servers": "x:1", "failOnDataLoss": " False"},
                              streaming=False)
    assert opts.fail_on_data_loss is False
    assert validate_topic_config("preallocate", " TRUE ") == "true"


def test_spark_option_errors_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match=r"Invalid value '2x' for option 'minPartitions': expected an integer"):
        parse_read_options({"subscribe": "t", "kafka.bootstrap.servers": "x:1", "minPartitions": "2x"},
                           streaming=False)
    with pytest.raises(ConfigurationError, match="One of the following options must be specified"):
        parse_read_options({"kafka.bootstrap.servers": "x:1"}, streaming=False)
    with pytest.raises(ConfigurationError, match=r"kafka\.enable\.idempotence"):
        parse_write_options({"kafka.bootstrap.servers": "x:1", "exactlyOnce": "true",
                             "kafka.enable.idempotence": "nope"}, streaming=True)


def test_broker_bounds_and_numbers_use_the_client_validators() -> None:
    with pytest.raises(ConfigurationError, match=r"num\.io\.threads: must be at least 1"):
        KafkaConfig({"num.io.threads": "0"})
    with pytest.raises(ConfigurationError, match=r"num\.io\.threads: expected an integer"):
        KafkaConfig({"num.io.threads": "many"})
    with pytest.raises(ConfigurationError, match=r"segment\.bytes: expected an integer"):
        LogConfig.from_props({"segment.bytes": "big"})


def test_topic_configs_keep_kafkas_wire_messages() -> None:
    """Parsed by the client's parser, reported as INVALID_CONFIG with Kafka's text."""
    with pytest.raises(InvalidConfigurationError, match="Expected value to be either true or false"):
        validate_topic_config("preallocate", "yes")
    with pytest.raises(InvalidConfigurationError, match="Not a number of type LONG"):
        validate_topic_config("retention.ms", "soon")
    with pytest.raises(InvalidConfigurationError, match="Not a number of type INT"):
        validate_topic_config("segment.bytes", str(2**31))
    with pytest.raises(InvalidConfigurationError, match="Value must be at least 14"):
        validate_topic_config("segment.bytes", "13")
    assert validate_topic_config("cleanup.policy", " compact , delete ") == "compact,delete"
    assert validate_topic_config("min.cleanable.dirty.ratio", "1") == "1.0"
