"""Per-listener security (Kafka: ``ChannelBuilders.serverChannelBuilder``): the channel builder of a listener for
its security protocol, with the ``ssl.*`` / ``sasl.*`` settings read through the listener prefix
(``listener.name.<listener>.<key>`` first, then the broker-wide key).

TLS material is PEM only: ``ssl.keystore.location`` (certificate chain and private key in one file, the key
decrypted with ``ssl.key.password``) or the inline ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``;
trusted certificates from ``ssl.truststore.location`` or the inline ``ssl.truststore.certificates``.
``ssl.client.auth`` is none, requested or required.

SASL mechanisms (``sasl.enabled.mechanisms``): PLAIN with the users of
``listener.name.<listener>.plain.sasl.jaas.config`` (``user_<name>="<password>"``), SCRAM-SHA-256 and
SCRAM-SHA-512 against the broker's :class:`~mini_broker.security.scram_credentials.ScramCredentialStore`,
OAUTHBEARER with Kafka's unsecured JWT validator (:mod:`mini_broker.security.oauthbearer`; its options from
``listener.name.<listener>.oauthbearer.sasl.jaas.config``).
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from mini_broker.config import KafkaConfig
from mini_broker.security.jaas import parse_jaas_config, plain_users
from mini_broker.security.oauthbearer import OAuthBearerServer, UnsecuredValidatorOptions
from mini_broker.security.sasl_authenticator import ApiVersionsHandler, DelayedAuthFailures, SaslServerSession
from mini_broker.security.scram_credentials import ScramCredentialStore
from pykafka_client.errors import ConfigurationError, UnsupportedVersionError
from pykafka_client.network.transport.channel_builder import AuthenticatorFactory, DefaultChannelBuilder, Mode
from pykafka_client.network.transport.sasl.mechanism import SaslServerMechanism, SaslServerMechanismFactory
from pykafka_client.network.transport.sasl.oauthbearer import OAUTHBEARER
from pykafka_client.network.transport.sasl.plain import PLAIN, PlainServer, mapping_verifier
from pykafka_client.network.transport.sasl.scram import ScramMechanism, ScramServer
from pykafka_client.network.transport.ssl_factory import create_ssl_context
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.headers import encode_response
from pykafka_client.protocol.messages import ApiVersionsRequest, ApiVersionsResponse, RequestHeader
from pykafka_client.protocol.types import Chunk, Message
from pykafka_client.utils.time import Time

SSL_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_SSL_KEYS = ("ssl.keystore.location", "ssl.key.password", "ssl.truststore.location", "ssl.client.auth",
             "ssl.enabled.protocols", "ssl.cipher.suites")


@dataclass
class BrokerSecurity:
    """What the listeners' authenticators need from the broker."""

    scram_credentials: ScramCredentialStore
    api_versions_handler: ApiVersionsHandler
    time: Time


def api_versions_handler(supported: Callable[[], list[tuple[int, int, int]]]) -> ApiVersionsHandler:
    """Answers ApiVersions during authentication with every API the broker serves (``supported()``: (key, min,
    max)); an unknown version in v0 with UNSUPPORTED_VERSION (KIP-511)."""

    def answer(header: RequestHeader, body: Message | None) -> list[Chunk]:
        ranges = supported()
        keys = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in ranges]
        lo, hi = next(((lo, hi) for k, lo, hi in ranges if k == ApiKey.API_VERSIONS), ApiVersionsRequest.VALID_VERSIONS)
        version = header.request_api_version
        if body is None or not lo <= version <= hi:
            response = ApiVersionsResponse(error_code=UnsupportedVersionError.code, api_keys=keys)
            return encode_response(response, ApiKey.API_VERSIONS, 0, header.correlation_id)
        return encode_response(ApiVersionsResponse(api_keys=keys), ApiKey.API_VERSIONS, version, header.correlation_id)
    return answer


def _text(config: KafkaConfig, listener: str, key: str) -> str | None:
    value = config.listener_value(listener, key)
    if value is None or value == "" or value == []:
        return None
    return ",".join(value) if isinstance(value, list) else str(value)


def _write_pem(directory: str, name: str, text: str) -> str:
    fd, path = tempfile.mkstemp(prefix=name, suffix=".pem", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")
    return path


def server_ssl_context(config: KafkaConfig, listener: str) -> ssl.SSLContext:
    """The TLS context of a listener; ConfigurationError naming the key when the material is missing or bad."""
    return listener_ssl_context(config, listener, server_side=True)


def listener_ssl_context(config: KafkaConfig, listener: str, *, server_side: bool) -> ssl.SSLContext:
    """The TLS context of a listener's server side, or of this broker's connections to that listener of the other
    brokers (client side: the same trust store and key store, the key store as the client certificate, the other
    broker's host name verified as ``ssl.endpoint.identification.algorithm`` says)."""
    prefix = f"listener.name.{listener.lower()}."
    for key in ("ssl.keystore.type", "ssl.truststore.type"):
        store_type = _text(config, listener, key)
        if config.listener_is_set(listener, key) and (store_type or "").upper() != "PEM":
            raise ConfigurationError(f"{key}={store_type} (listener {listener}): mini_broker reads PEM only; set "
                                     f"{key}=PEM")
    settings: dict[str, object] = {}
    for key in _SSL_KEYS:
        value = _text(config, listener, key)
        if value is not None:
            settings[key] = value
    chain = _text(config, listener, "ssl.keystore.certificate.chain")
    key_pem = _text(config, listener, "ssl.keystore.key")
    trusted = _text(config, listener, "ssl.truststore.certificates")
    if (chain is None) != (key_pem is None):
        raise ConfigurationError(f"{prefix}ssl.keystore.certificate.chain and ssl.keystore.key go together: set both "
                                 "(inline PEM) or neither (ssl.keystore.location)")
    if chain is not None and "ssl.keystore.location" in settings:
        raise ConfigurationError(f"listener {listener}: set ssl.keystore.location or the inline "
                                 "ssl.keystore.certificate.chain / ssl.keystore.key, not both")
    if not server_side:
        settings.pop("ssl.client.auth", None)
        settings["ssl.endpoint.identification.algorithm"] = _text(config, listener,
                                                                  "ssl.endpoint.identification.algorithm") or ""
    if server_side and chain is None and "ssl.keystore.location" not in settings:
        raise ConfigurationError(f"listener {listener} uses TLS but has no key: set {prefix}ssl.keystore.location "
                                 "(PEM with the certificate chain and the key) or ssl.keystore.certificate.chain and "
                                 "ssl.keystore.key")
    with tempfile.TemporaryDirectory(prefix="mini_broker-pem-") as scratch:
        # ssl loads keys and chains from files only: the inline PEM goes through a private temp file
        if chain is not None and key_pem is not None:
            settings["ssl.keystore.location"] = _write_pem(scratch, "keystore", key_pem.strip() + "\n" + chain)
        if trusted is not None:
            if "ssl.truststore.location" in settings:
                raise ConfigurationError(f"listener {listener}: set ssl.truststore.location or "
                                         "ssl.truststore.certificates, not both")
            settings["ssl.truststore.location"] = _write_pem(scratch, "truststore", trusted)
        return create_ssl_context(settings, server_side=server_side)


def sasl_mechanisms(config: KafkaConfig, listener: str, security: BrokerSecurity) -> dict[str, SaslServerMechanismFactory]:
    """The enabled mechanisms of a SASL listener as factories of server mechanisms."""
    enabled = config.listener_value(listener, "sasl.enabled.mechanisms")
    names = [str(n).strip().upper() for n in (enabled if isinstance(enabled, list) else str(enabled or "").split(","))
             if str(n).strip()]
    out: dict[str, SaslServerMechanismFactory] = {}
    for name in names:
        if name == PLAIN:
            key = f"listener.name.{listener.lower()}.plain.sasl.jaas.config"
            jaas = _text(config, listener, "plain.sasl.jaas.config") or _text(config, listener, "sasl.jaas.config")
            if jaas is None:
                raise ConfigurationError(f"listener {listener} enables PLAIN but has no users: set {key} to "
                                         'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                         'user_<name>="<password>" ...;')
            verify = mapping_verifier(plain_users(jaas, key))
            out[name] = _plain_factory(verify)
            continue
        if name == OAUTHBEARER:
            out[name] = _oauthbearer_factory(config, listener, security)
            continue
        scram = ScramMechanism.for_mechanism_name(name)
        if scram is None:
            raise ConfigurationError(f"sasl.enabled.mechanisms (listener {listener}): {name} is not supported; use "
                                     "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and/or OAUTHBEARER")
        out[name] = _scram_factory(scram, security.scram_credentials)
    if not out:
        raise ConfigurationError(f"listener {listener} uses SASL but sasl.enabled.mechanisms is empty")
    return out


def _plain_factory(verify: Callable[[str, str], bool]) -> SaslServerMechanismFactory:
    def make() -> SaslServerMechanism:
        return PlainServer(verify)
    return make


def _oauthbearer_factory(config: KafkaConfig, listener: str, security: BrokerSecurity) -> SaslServerMechanismFactory:
    """OAUTHBEARER with Kafka's unsecured validator, its options from the listener's oauthbearer JAAS config
    (defaults without one)."""
    key = f"listener.name.{listener.lower()}.oauthbearer.sasl.jaas.config"
    jaas = _text(config, listener, "oauthbearer.sasl.jaas.config") or _text(config, listener, "sasl.jaas.config")
    options = UnsecuredValidatorOptions.from_jaas_options(parse_jaas_config(jaas, key)[0].options if jaas else {}, key)
    clock = security.time

    def make() -> SaslServerMechanism:
        return OAuthBearerServer(options, clock.milliseconds)
    return make


def _scram_factory(mechanism: ScramMechanism, store: ScramCredentialStore) -> SaslServerMechanismFactory:
    view = store.view(mechanism)

    def make() -> SaslServerMechanism:
        return ScramServer(mechanism, view)
    return make


def server_channel_builder(config: KafkaConfig, listener: str, security: BrokerSecurity | None,
                           failures: DelayedAuthFailures | None) -> DefaultChannelBuilder:
    """The channel builder of ``listener`` for its security protocol."""
    protocol = config.listener_security_protocol(listener)
    context = server_ssl_context(config, listener) if protocol in SSL_PROTOCOLS else None
    factory: AuthenticatorFactory | None = None
    if protocol in SASL_PROTOCOLS:
        if security is None:
            raise ConfigurationError(f"listener {listener} ({protocol}) needs the broker's SASL support")
        factory = _session_factory(config, listener, security, failures)
    return DefaultChannelBuilder(Mode.SERVER, context, factory)


def _session_factory(config: KafkaConfig, listener: str, security: BrokerSecurity,
                     failures: DelayedAuthFailures | None) -> AuthenticatorFactory:
    mechanisms = sasl_mechanisms(config, listener, security)
    reauth = config.listener_value(listener, "connections.max.reauth.ms")
    delay = config.listener_value(listener, "connection.failed.authentication.delay.ms")
    max_reauth_ms = reauth if isinstance(reauth, int) else 0
    delay_ms = delay if isinstance(delay, int) else 0
    schedule = failures.schedule if failures is not None else None

    def make(connection_id: str, host: str | None) -> SaslServerSession:
        return SaslServerSession(connection_id, mechanisms, security.api_versions_handler, security.time,
                                 max_reauth_ms=max_reauth_ms, failure_delay_ms=delay_ms, schedule_failure=schedule)
    return make
