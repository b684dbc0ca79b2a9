"""alter_user_scram_credentials refuses an UNKNOWN mechanism before anything is sent (it reached the request
builder's assert)."""

from __future__ import annotations

import pytest

from pykafka_client.admin.types import ScramMechanismType, UserScramCredentialUpsertion
from tests.unit.network.test_admin_client import Env


def test_an_unknown_mechanism_is_a_value_error_and_nothing_is_sent() -> None:
    env = Env()
    with pytest.raises(ValueError, match="SCRAM-SHA-256"):
        env.admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("alice", ScramMechanismType.UNKNOWN, "pw")], timeout=5)
    assert env.sent(51) == []  # ApiKey.ALTER_USER_SCRAM_CREDENTIALS
    assert ScramMechanismType.for_name(ScramMechanismType.SCRAM_SHA_512) is ScramMechanismType.SCRAM_SHA_512
    env.admin.close()
