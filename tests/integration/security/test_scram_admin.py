"""SCRAM credentials managed with our AdminClient (sync and async) against a MiniBroker: a created user can
authenticate, a deleted one cannot, describe shows mechanisms and iterations only, Kafka's validation errors."""

from __future__ import annotations

import asyncio

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient
from pykafka_client.admin import (
    ScramCredentialInfo,
    ScramMechanismType,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from pykafka_client.aio.admin import AsyncAdminClient
from pykafka_client.errors import ResourceNotFoundError, SaslAuthenticationError, UnacceptableCredentialError

from .conftest import client_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _as(broker: MiniBroker, user: str, password: str, mechanism: str) -> dict[str, object]:
    return {"bootstrap.servers": broker.listener_bootstrap("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def test_alter_then_authenticate_describe_and_delete(secure_broker: MiniBroker, pki: object) -> None:
    with AdminClient(client_config(secure_broker, pki, "SASL_SSL", "SCRAM-SHA-256")) as admin:  # type: ignore[arg-type]
        result = admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("dave", "SCRAM-SHA-256", "dave-secret"),
            UserScramCredentialUpsertion("dave", ScramMechanismType.SCRAM_SHA_512, "dave-secret-512", iterations=8192),
        ], timeout=30)
        assert result == {"dave": None}
        with AdminClient(_as(secure_broker, "dave", "dave-secret-512", "SCRAM-SHA-512")) as dave:
            dave.list_topics(timeout=30)
        described = admin.describe_user_scram_credentials(["dave"], timeout=30)
        assert described["dave"].credential_infos == [ScramCredentialInfo(ScramMechanismType.SCRAM_SHA_256, 4096),
                                                      ScramCredentialInfo(ScramMechanismType.SCRAM_SHA_512, 8192)]
        assert {"alice", "dave"} <= set(admin.describe_user_scram_credentials(timeout=30))
        admin.alter_user_scram_credentials([UserScramCredentialDeletion("dave", "SCRAM-SHA-512")], timeout=30)
        with AdminClient(_as(secure_broker, "dave", "dave-secret-512", "SCRAM-SHA-512")) as dave, \
                pytest.raises(SaslAuthenticationError):
            dave.list_topics(timeout=30)
        with AdminClient(_as(secure_broker, "dave", "dave-secret", "SCRAM-SHA-256")) as dave:
            dave.list_topics(timeout=30)


def test_alter_errors_are_per_user(secure_broker: MiniBroker) -> None:
    with AdminClient({"bootstrap.servers": secure_broker.listener_bootstrap("PLAINTEXT")}) as admin:
        with pytest.raises(UnacceptableCredentialError, match="Too few iterations"):
            admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion("erin", "SCRAM-SHA-256", "pw", iterations=1000),
                UserScramCredentialUpsertion("frank", "SCRAM-SHA-256", "pw"),
            ], timeout=30)
        # frank's upsertion applied, erin's did not
        assert set(admin.describe_user_scram_credentials(["frank"], timeout=30)) == {"frank"}
        with pytest.raises(ResourceNotFoundError):
            admin.describe_user_scram_credentials(["erin"], timeout=30)
        with pytest.raises(ResourceNotFoundError):
            admin.alter_user_scram_credentials([UserScramCredentialDeletion("erin", "SCRAM-SHA-512")], timeout=30)
        with pytest.raises(ValueError, match="SCRAM-SHA-256"):
            admin.alter_user_scram_credentials([UserScramCredentialUpsertion("x", "SCRAM-SHA-1", "pw")], timeout=30)


def test_async_admin_scram_credentials(secure_broker: MiniBroker) -> None:
    async def go() -> None:
        async with AsyncAdminClient({"bootstrap.servers": secure_broker.listener_bootstrap("PLAINTEXT")}) as admin:
            assert await admin.alter_user_scram_credentials(
                [UserScramCredentialUpsertion("gina", "SCRAM-SHA-512", "gina-pw")], timeout=30) == {"gina": None}
            described = await admin.describe_user_scram_credentials(["gina"], timeout=30)
            assert described["gina"].credential_infos == [ScramCredentialInfo(ScramMechanismType.SCRAM_SHA_512, 4096)]

    asyncio.run(go())
    with AdminClient(_as(secure_broker, "gina", "gina-pw", "SCRAM-SHA-512")) as gina:
        gina.list_topics(timeout=30)
