"""``ssl.SSLContext`` from Kafka-style configuration (Java: ``common.security.ssl.SslFactory``).

Keys (Java names, with the librdkafka / kafka-python aliases):

* ``ssl.truststore.location`` or ``ssl.ca.location``: PEM file of trusted CA certificates (the system
  defaults are used when neither is set, on the client side).
* ``ssl.keystore.location`` (PEM with certificate chain and private key) or ``ssl.certificate.location``
  + ``ssl.key.location``; password from ``ssl.key.password`` (or ``ssl.keystore.password``).
* ``ssl.endpoint.identification.algorithm``: ``"https"`` (default) verifies the broker's host name;
  ``""`` disables it. ``ssl.check.hostname`` (bool) overrides it when given.
* ``ssl.client.auth`` (server side): ``required``, ``requested`` or ``none`` (default).
* ``ssl.cipher.suites``: a list of cipher names or an OpenSSL cipher string; ``ssl.enabled.protocols``: lowest listed is the minimum
  (TLSv1.2 by default).

Only PEM stores are supported (``ssl.truststore.type`` / ``ssl.keystore.type`` other than PEM raise
:class:`~pykafka_client.errors.ConfigurationError`).
"""

from __future__ import annotations

import ssl
from typing import Mapping

from pykafka_client.errors import ConfigurationError

_TLS_VERSIONS = {
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


def _str(config: Mapping[str, object], *keys: str) -> str | None:
    for key in keys:
        value = config.get(key)
        if value is not None and value != "":
            return str(value)
    return None


def _check_pem(config: Mapping[str, object], key: str) -> None:
    store_type = config.get(key)
    if store_type is not None and str(store_type).upper() != "PEM":
        raise ConfigurationError(f"{key}={store_type} is not supported: only PEM files are")


def hostname_verification_enabled(config: Mapping[str, object]) -> bool:
    check = config.get("ssl.check.hostname")
    if check is not None:
        if isinstance(check, str):
            return check.strip().lower() in ("true", "1", "yes")
        return bool(check)
    algorithm = config.get("ssl.endpoint.identification.algorithm", "https")
    algorithm = "" if algorithm is None else str(algorithm).strip().lower()
    if algorithm not in ("", "https"):
        raise ConfigurationError(f"ssl.endpoint.identification.algorithm={algorithm!r}: must be 'https' or ''")
    return algorithm == "https"


def create_ssl_context(config: Mapping[str, object], *, server_side: bool) -> ssl.SSLContext:
    """An SSLContext for a client connection or a server listener. Bad files or passwords raise
    :class:`ConfigurationError` naming the key."""
    _check_pem(config, "ssl.truststore.type")
    _check_pem(config, "ssl.keystore.type")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server_side else ssl.PROTOCOL_TLS_CLIENT)

    protocols = config.get("ssl.enabled.protocols")
    if protocols:
        names = [p.strip() for p in str(protocols).split(",") if p.strip()] if isinstance(protocols, str) else [str(p) for p in protocols]  # type: ignore[attr-defined]
        unknown = [n for n in names if n not in _TLS_VERSIONS]
        if unknown or not names:
            raise ConfigurationError(f"ssl.enabled.protocols: unsupported {unknown or names}; use TLSv1.2 and/or TLSv1.3")
        context.minimum_version = min((_TLS_VERSIONS[n] for n in names), key=lambda v: v.value)
        context.maximum_version = max((_TLS_VERSIONS[n] for n in names), key=lambda v: v.value)
    else:
        context.minimum_version = ssl.TLSVersion.TLSv1_2

    suites = config.get("ssl.cipher.suites")
    # A list (Java's LIST type, as the client configs parse it) becomes an OpenSSL cipher string.
    ciphers = ":".join(str(c) for c in suites) if isinstance(suites, (list, tuple)) else _str(config, "ssl.cipher.suites")
    if ciphers:
        try:
            context.set_ciphers(ciphers)
        except ssl.SSLError as e:
            raise ConfigurationError(f"ssl.cipher.suites={ciphers!r}: {e}") from e

    cafile = _str(config, "ssl.truststore.location", "ssl.ca.location", "ssl_cafile")
    if cafile:
        try:
            context.load_verify_locations(cafile=cafile)
        except (OSError, ssl.SSLError) as e:
            raise ConfigurationError(f"ssl.truststore.location={cafile!r} could not be loaded: {e}") from e
    elif not server_side:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)

    certfile = _str(config, "ssl.certificate.location", "ssl.keystore.location", "ssl_certfile")
    keyfile = _str(config, "ssl.key.location", "ssl_keyfile")
    password = _str(config, "ssl.key.password", "ssl.keystore.password", "ssl_password")
    if certfile:
        try:
            context.load_cert_chain(certfile=certfile, keyfile=keyfile, password=password)
        except (OSError, ssl.SSLError) as e:
            raise ConfigurationError(f"ssl.keystore.location/ssl.certificate.location={certfile!r} (key {keyfile!r}) could not be loaded: {e}") from e
    elif keyfile:
        raise ConfigurationError("ssl.key.location is set without ssl.certificate.location")
    elif server_side:
        raise ConfigurationError("a TLS listener needs ssl.keystore.location (or ssl.certificate.location + ssl.key.location)")

    if server_side:
        client_auth = str(config.get("ssl.client.auth", "none")).lower()
        modes = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
        if client_auth not in modes:
            raise ConfigurationError(f"ssl.client.auth={client_auth!r}: must be required, requested or none")
        context.verify_mode = modes[client_auth]
    else:
        context.check_hostname = hostname_verification_enabled(config)
        context.verify_mode = ssl.CERT_REQUIRED
    return context
