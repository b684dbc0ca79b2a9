"""The configuration every client shares (Java: ``CommonClientConfigs`` with ``SslConfigs`` and
``SaslConfigs``'s client keys), defined once for the producer, the consumer and the admin client.

:func:`define_common_client_configs` adds the shared keys to a client's :class:`ConfigDef`; the client
then defines only its own keys. Where Java gives a client its own default for a shared key (the
producer's ``receive.buffer.bytes`` is 32768, the admin's ``connections.max.idle.ms`` is 300000 and its
``enable.metrics.push`` false) the client passes it in ``defaults``, as each Java ``*Config`` does.

Settled differences between the three former copies (Kafka 4.x docs):

* ``ssl.truststore.password`` is a Java client key (PASSWORD, default null): every client accepts it
  (it was only in the producer). Only PEM stores are supported, which need no store password.
* ``ssl.check.hostname`` is not a Java key but kafka-python's: its default is ``None``, meaning "follow
  ``ssl.endpoint.identification.algorithm``" (Java's key, default ``https``). The consumer and the admin
  defaulted it to ``True``, which overrode ``ssl.endpoint.identification.algorithm=""``: host name
  verification could not be turned off the Java way.
* ``ssl.cipher.suites`` is a LIST as in Java (the producer had a STRING); the transport joins it into
  an OpenSSL cipher string.
* ``metadata.recovery.strategy`` defaults to ``rebootstrap`` and
  ``metadata.recovery.rebootstrap.trigger.ms`` to 300000 in every client (Kafka 4.0, KIP-1102); the
  producer and the consumer defaulted to ``none`` and neither passed the trigger to its NetworkClient.
* ``bootstrap.servers`` defaults to an empty list everywhere; constructing a client without one raises
  ConfigurationError (:func:`pykafka_client.client_utils.parse_bootstrap_servers`).

Keys of the JVM's TLS and login machinery (``ssl.provider``, ``ssl.protocol``, ``ssl.keymanager.algorithm``,
``sasl.kerberos.*``, ``sasl.login.*``, ...) are not defined: this client cannot honour them, so setting one
raises ConfigurationError instead of being ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykafka_client.config import ConfigDef, ConfigType, at_least, one_of

_T = ConfigType

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
CLIENT_DNS_LOOKUPS = ("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")
METADATA_RECOVERY_STRATEGIES = ("none", "rebootstrap")

# (name, type, default, validator, doc); the default may be replaced per client.
# fmt: off
_COMMON: tuple[tuple[str, ConfigType, Any, Any, str], ...] = (
    ("bootstrap.servers", _T.LIST, [], None, "host:port pairs used to discover the cluster"),
    ("client.id", _T.STRING, "", None, "logical name sent with every request"),
    ("client.dns.lookup", _T.STRING, "use_all_dns_ips", one_of(*CLIENT_DNS_LOOKUPS), ""),
    ("metadata.max.age.ms", _T.LONG, 300_000, at_least(0), "refresh metadata at least this often"),
    ("metadata.recovery.strategy", _T.STRING, "rebootstrap", one_of(*METADATA_RECOVERY_STRATEGIES),
     "rebootstrap: fall back to bootstrap.servers when no known broker is reachable"),
    ("metadata.recovery.rebootstrap.trigger.ms", _T.LONG, 300_000, at_least(0), ""),
    ("send.buffer.bytes", _T.INT, 131_072, at_least(-1), "SO_SNDBUF; -1: the OS default"),
    ("receive.buffer.bytes", _T.INT, 65_536, at_least(-1), "SO_RCVBUF; -1: the OS default"),
    ("reconnect.backoff.ms", _T.LONG, 50, at_least(0), ""),
    ("reconnect.backoff.max.ms", _T.LONG, 1000, at_least(0), ""),
    ("retry.backoff.ms", _T.LONG, 100, at_least(0), ""),
    ("retry.backoff.max.ms", _T.LONG, 1000, at_least(0), ""),
    ("request.timeout.ms", _T.INT, 30_000, at_least(0), "how long to wait for each response"),
    ("socket.connection.setup.timeout.ms", _T.LONG, 10_000, at_least(0), ""),
    ("socket.connection.setup.timeout.max.ms", _T.LONG, 30_000, at_least(0), ""),
    ("connections.max.idle.ms", _T.LONG, 540_000, None, "close idle connections; -1 never"),
    ("metrics.sample.window.ms", _T.LONG, 30_000, at_least(0), ""),
    ("metrics.num.samples", _T.INT, 2, at_least(1), ""),
    ("metrics.recording.level", _T.STRING, "INFO", one_of("INFO", "DEBUG", "TRACE"), ""),
    ("enable.metrics.push", _T.BOOLEAN, True, None, ""),
    ("security.protocol", _T.STRING, "PLAINTEXT", one_of(*SECURITY_PROTOCOLS), ""),
    # SslConfigs (client side); *.location keys without a Java name are librdkafka's, ssl.check.hostname kafka-python's
    ("ssl.endpoint.identification.algorithm", _T.STRING, "https", None, "https: verify the broker's host name; empty: don't"),
    ("ssl.check.hostname", _T.BOOLEAN, None, None, "overrides ssl.endpoint.identification.algorithm when set"),
    ("ssl.enabled.protocols", _T.LIST, ["TLSv1.2", "TLSv1.3"], None, ""),
    ("ssl.cipher.suites", _T.LIST, None, None, "OpenSSL cipher names"),
    ("ssl.keystore.type", _T.STRING, None, None, "only PEM is supported"),
    ("ssl.keystore.location", _T.STRING, None, None, "PEM with the certificate chain and the private key"),
    ("ssl.keystore.password", _T.PASSWORD, None, None, ""),
    ("ssl.key.password", _T.PASSWORD, None, None, ""),
    ("ssl.truststore.type", _T.STRING, None, None, "only PEM is supported"),
    ("ssl.truststore.location", _T.STRING, None, None, "PEM CA bundle"),
    ("ssl.truststore.password", _T.PASSWORD, None, None, "not needed for PEM"),
    ("ssl.ca.location", _T.STRING, None, None, "PEM CA bundle (librdkafka name)"),
    ("ssl.certificate.location", _T.STRING, None, None, "PEM client certificate (librdkafka name)"),
    ("ssl.key.location", _T.STRING, None, None, "PEM client key (librdkafka name)"),
    # SaslConfigs (client side): PLAIN and SCRAM-SHA-256/512
    ("sasl.mechanism", _T.STRING, "GSSAPI", None, ""),
    ("sasl.jaas.config", _T.PASSWORD, None, None, "a login module line with username and password"),
    ("sasl.username", _T.STRING, None, None, "(librdkafka name)"),
    ("sasl.password", _T.PASSWORD, None, None, "(librdkafka name)"),
)
# fmt: on

#: Every shared key's name, in definition order.
COMMON_CLIENT_CONFIG_NAMES: tuple[str, ...] = tuple(name for name, *_ in _COMMON)

DEFAULT_API_TIMEOUT_MS_CONFIG = "default.api.timeout.ms"


def define_common_client_configs(config: ConfigDef, defaults: Mapping[str, Any] | None = None) -> ConfigDef:
    """Add every shared key to ``config``, with ``defaults`` replacing Java's common default where a
    client's own differs. Returns ``config`` for chaining."""
    overrides = dict(defaults or {})
    stray = set(overrides) - set(COMMON_CLIENT_CONFIG_NAMES)
    if stray:
        raise ValueError(f"not common client configurations: {sorted(stray)}")
    for name, type_, default, validator, doc in _COMMON:
        value = overrides.get(name, default)
        config.define(name, type_, value, validator, doc, nullable=value is None)
    return config


def define_default_api_timeout(config: ConfigDef) -> ConfigDef:
    """``default.api.timeout.ms`` (60000): shared by the consumer and the admin client; the producer
    has ``max.block.ms`` instead."""
    return config.define(DEFAULT_API_TIMEOUT_MS_CONFIG, _T.INT, 60_000, at_least(0), "timeout of blocking calls without one")


def security_config(values: Mapping[str, Any]) -> dict[str, Any]:
    """The keys the transport reads (``security.protocol``, ``ssl.*``, ``sasl.*``), unset ones left out."""
    return {
        k: v
        for k, v in values.items()
        if (k == "security.protocol" or k.startswith(("ssl.", "sasl."))) and v is not None and v != []
    }
