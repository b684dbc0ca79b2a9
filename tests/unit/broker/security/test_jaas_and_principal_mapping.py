"""JAAS configuration parsing (PLAIN's users) and ssl.principal.mapping.rules."""

from __future__ import annotations

import pytest

from mini_broker.config import KafkaConfig
from mini_broker.security.jaas import parse_jaas_config, plain_users
from mini_broker.security.principal_mapping import NoMatchingRuleError, SslPrincipalMapper
from pykafka_client.errors import ConfigurationError

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_alice="al\\"ice;pw" user_bob=bob-secret;')


def test_plain_users_are_the_user_options() -> None:
    assert plain_users(JAAS) == {"admin": "admin-secret", "alice": 'al"ice;pw', "bob": "bob-secret"}
    module = parse_jaas_config(JAAS)[0]
    assert module.name == "org.apache.kafka.common.security.plain.PlainLoginModule" and module.flag == "required"
    assert module.options["username"] == "admin"


@pytest.mark.parametrize("text", [
    'PlainLoginModule required user_a="x"',  # no terminating ';'
    'PlainLoginModule mandatory user_a="x";',  # not a control flag
    'user_a="x";',  # no login module
    "",
    'PlainLoginModule required user_a="unterminated;',
])
def test_malformed_jaas_names_the_key(text: str) -> None:
    with pytest.raises(ConfigurationError, match=r"listener\.name\.x\.plain\.sasl\.jaas\.config"):
        plain_users(text, "listener.name.x.plain.sasl.jaas.config")


def test_listener_prefixed_jaas_and_ssl_keys_are_per_listener() -> None:
    config = KafkaConfig({
        "listeners": "SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "ssl.client.auth": "requested",
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.SSL.connections.max.reauth.ms": 5000,
    })
    assert config.listener_value("SASL_SSL", "plain.sasl.jaas.config") == JAAS
    assert config.listener_value("SSL", "plain.sasl.jaas.config") is None
    assert config.listener_value("SSL", "ssl.client.auth") == "required"
    assert config.listener_value("SASL_SSL", "ssl.client.auth") == "requested"
    assert config.listener_value("SSL", "connections.max.reauth.ms") == 5000
    assert config.listener_security_protocol("SASL_SSL") == "SASL_SSL"


def test_named_listener_takes_its_protocol_from_the_map() -> None:
    config = KafkaConfig({"listeners": "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                          "listener.security.protocol.map": "CLIENT:SASL_SSL,INTERNAL:PLAINTEXT"})
    assert [config.listener_security_protocol(e.listener_name) for e in config.listeners] == ["SASL_SSL", "PLAINTEXT"]
    with pytest.raises(ConfigurationError, match=r"listener\.security\.protocol\.map"):
        KafkaConfig({"listeners": "CLIENT://127.0.0.1:0"})


@pytest.mark.parametrize(("rules", "dn", "name"), [
    ("DEFAULT", "CN=client-1,OU=eng,O=acme", "CN=client-1,OU=eng,O=acme"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L,DEFAULT", "CN=Client-1,OU=ENG,O=acme", "client-1@eng"),
    ("RULE:^CN=(.*?),OU=(.*?)$/$1/U,DEFAULT", "CN=client-1,OU=eng,O=acme", "CLIENT-1"),
    ("RULE:^CN=([^,]+)$/$1/,DEFAULT", "CN=svc", "svc"),
    ("RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L", "OU=x,CN=Kafka.Broker", "kafka.broker"),
    ("RULE:^CN=(.*)\\/x$/$1/, DEFAULT", "CN=a/x", "a"),  # an escaped '/' in the pattern
])
def test_principal_mapping_rules(rules: str, dn: str, name: str) -> None:
    assert SslPrincipalMapper(rules).principal_name(dn) == name


def test_a_dn_no_rule_matches_has_no_principal() -> None:
    with pytest.raises(NoMatchingRuleError, match="CN=a"):
        SslPrincipalMapper("RULE:^O=nomatch$/x/").principal_name("CN=a")
    with pytest.raises(NoMatchingRuleError):
        SslPrincipalMapper("RULE:^CN=([^,]+)$/$1/L").principal_name("CN=a,O=acme")


def test_bad_mapping_rule_raises() -> None:
    with pytest.raises(ConfigurationError, match=r"ssl\.principal\.mapping\.rules"):
        SslPrincipalMapper("RULE:^CN=(.*$/$1/")
    with pytest.raises(ConfigurationError, match=r"ssl\.principal\.mapping\.rules"):
        SslPrincipalMapper("NOTARULE")
