"""The shared client configuration (CommonClientConfigs): defined once, the same in every client, the
differences between the former three copies settled as Kafka documents them; and the one
``parse_bootstrap_servers``."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import pytest

from pykafka_client.admin.config import ADMIN_CONFIG, AdminClientConfig
from pykafka_client.client_utils import parse_bootstrap_servers
from pykafka_client.common_client_configs import COMMON_CLIENT_CONFIG_NAMES, security_config
from pykafka_client.config import AbstractConfig, ConfigDef
from pykafka_client.consumer.config import CONSUMER_CONFIG, ConsumerConfig
from pykafka_client.errors import ConfigurationError
from pykafka_client.network.transport.ssl_factory import create_ssl_context, hostname_verification_enabled
from pykafka_client.producer.config import PRODUCER_CONFIG_DEF, ProducerConfig

pytestmark = pytest.mark.timeout(60)

DEFINITIONS: dict[str, ConfigDef] = {"producer": PRODUCER_CONFIG_DEF, "consumer": CONSUMER_CONFIG, "admin": ADMIN_CONFIG}
CONFIGS: dict[str, Callable[..., AbstractConfig]] = {"producer": ProducerConfig, "consumer": ConsumerConfig, "admin": AdminClientConfig}

# Java gives these clients their own default for a shared key (ProducerConfig, AdminClientConfig).
CLIENT_DEFAULTS = {
    ("producer", "receive.buffer.bytes"): 32_768,
    ("admin", "connections.max.idle.ms"): 300_000,
    ("admin", "enable.metrics.push"): False,
}


def test_every_client_defines_every_common_key_with_the_same_default() -> None:
    for key in COMMON_CLIENT_CONFIG_NAMES:
        shared = {
            client: d.keys()[key].default
            for client, d in DEFINITIONS.items()
            if (client, key) not in CLIENT_DEFAULTS
        }
        assert len({repr(v) for v in shared.values()}) == 1, (key, shared)
        types = {d.keys()[key].type for d in DEFINITIONS.values()}
        assert len(types) == 1, (key, types)
    for (client, key), default in CLIENT_DEFAULTS.items():
        assert DEFINITIONS[client].keys()[key].default == default


def test_java_defaults_of_the_shared_keys() -> None:
    for client, cls in CONFIGS.items():
        cfg = cls({"bootstrap.servers": "h:1"})
        assert cfg["request.timeout.ms"] == 30_000, client
        assert cfg["retry.backoff.ms"] == 100 and cfg["retry.backoff.max.ms"] == 1000
        assert cfg["reconnect.backoff.ms"] == 50 and cfg["reconnect.backoff.max.ms"] == 1000
        assert cfg["socket.connection.setup.timeout.ms"] == 10_000
        assert cfg["socket.connection.setup.timeout.max.ms"] == 30_000
        assert cfg["metadata.max.age.ms"] == 300_000
        assert cfg["send.buffer.bytes"] == 131_072
        assert cfg["security.protocol"] == "PLAINTEXT"
        assert cfg["sasl.mechanism"] == "GSSAPI"
        assert cfg["ssl.endpoint.identification.algorithm"] == "https"
    assert ConsumerConfig()["default.api.timeout.ms"] == AdminClientConfig()["default.api.timeout.ms"] == 60_000
    assert "default.api.timeout.ms" not in PRODUCER_CONFIG_DEF.keys()  # the producer has max.block.ms
    assert ProducerConfig()["connections.max.idle.ms"] == ConsumerConfig()["connections.max.idle.ms"] == 540_000
    assert ConsumerConfig()["receive.buffer.bytes"] == AdminClientConfig()["receive.buffer.bytes"] == 65_536


@pytest.mark.parametrize("client", list(CONFIGS))
def test_ssl_truststore_password_is_accepted_by_every_client(client: str) -> None:
    cfg = CONFIGS[client]({"ssl.truststore.password": "secret"})
    assert cfg["ssl.truststore.password"] == "secret"
    assert "secret" not in repr(cfg)


@pytest.mark.parametrize("client", list(CONFIGS))
def test_empty_endpoint_identification_algorithm_turns_host_name_checking_off(client: str) -> None:
    # ssl.check.hostname defaulted to True in the consumer and admin copies and overrode Java's key.
    cfg = CONFIGS[client]({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""})
    assert cfg["ssl.check.hostname"] is None
    assert hostname_verification_enabled(security_config(cfg.values)) is False
    assert hostname_verification_enabled(security_config(CONFIGS[client]({}).values)) is True
    assert hostname_verification_enabled(security_config(CONFIGS[client]({"ssl.check.hostname": False}).values)) is False


@pytest.mark.parametrize("client", list(CONFIGS))
@pytest.mark.parametrize("suites", ["ECDHE-RSA-AES128-GCM-SHA256,ECDHE-RSA-AES256-GCM-SHA384",
                                    ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"]])
def test_cipher_suites_are_a_list_that_reaches_the_tls_context(client: str, suites: Any) -> None:
    cfg = CONFIGS[client]({"security.protocol": "SSL", "ssl.cipher.suites": suites})
    assert cfg["ssl.cipher.suites"] == ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"]
    context = create_ssl_context(security_config(cfg.values), server_side=False)
    names = {c["name"] for c in context.get_ciphers() if c["protocol"] != "TLSv1.3"}
    assert names == {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"}
    assert context.minimum_version is ssl.TLSVersion.TLSv1_2


@pytest.mark.parametrize("client", list(CONFIGS))
def test_metadata_recovery_defaults_to_rebootstrap_everywhere(client: str) -> None:
    cfg = CONFIGS[client]({})
    assert cfg["metadata.recovery.strategy"] == "rebootstrap"  # Kafka 4.0, KIP-1102
    assert cfg["metadata.recovery.rebootstrap.trigger.ms"] == 300_000


def test_security_config_leaves_out_unset_keys_and_keeps_the_rest() -> None:
    cfg = ConsumerConfig({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "u"})
    sec = security_config(cfg.values)
    assert sec["security.protocol"] == "SASL_SSL" and sec["sasl.username"] == "u"
    assert "ssl.truststore.location" not in sec and "ssl.check.hostname" not in sec
    assert all(k == "security.protocol" or k.startswith(("ssl.", "sasl.")) for k in sec)


@pytest.mark.parametrize(
    ("servers", "expected"),
    [
        (["a:1"], [("a", 1)]),
        (["a:1", " b:22 "], [("a", 1), ("b", 22)]),
        (["[::1]:9092"], [("::1", 9092)]),
        (["a:1", "", " "], [("a", 1)]),
        ("a:1,b:2", [("a", 1), ("b", 2)]),
    ],
)
def test_parse_bootstrap_servers(servers: Any, expected: list[tuple[str, int]]) -> None:
    assert parse_bootstrap_servers(servers) == expected


@pytest.mark.parametrize("servers", [[], [""], ["host"], ["host:"], [":9092"], ["host:port"], ["h:0"], ["h:70000"]])
def test_bad_bootstrap_servers(servers: list[str]) -> None:
    with pytest.raises(ConfigurationError, match="bootstrap"):
        parse_bootstrap_servers(servers)
