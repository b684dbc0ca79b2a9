"""SASL for the transport: sans-IO mechanisms (PLAIN, SCRAM-SHA-256/512; client and server) and the
channel authenticators that carry them in SaslHandshake / SaslAuthenticate frames."""

from __future__ import annotations

from pykafka_client.network.transport.sasl.authenticator import (
    SaslClientAuthenticator,
    SaslServerAuthenticator,
    client_authenticator_factory,
    server_authenticator_factory,
)
from pykafka_client.network.transport.sasl.mechanism import SaslClientMechanism, SaslServerMechanism
from pykafka_client.network.transport.sasl.plain import PlainClient, PlainServer, mapping_verifier
from pykafka_client.network.transport.sasl.scram import ScramClient, ScramCredential, ScramMechanism, ScramServer

__all__ = [
    "PlainClient",
    "PlainServer",
    "SaslClientAuthenticator",
    "SaslClientMechanism",
    "SaslServerAuthenticator",
    "SaslServerMechanism",
    "ScramClient",
    "ScramCredential",
    "ScramMechanism",
    "ScramServer",
    "client_authenticator_factory",
    "mapping_verifier",
    "server_authenticator_factory",
]
