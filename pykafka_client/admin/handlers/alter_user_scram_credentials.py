"""AlterUserScramCredentials (Java ``KafkaAdminClient.alterUserScramCredentials``): to any broker. The password
never leaves the client: an upsertion carries the salt, the iteration count and ``SaltedPassword = Hi(password,
salt, i)`` (RFC 5802)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import LeastLoaded
from pykafka_client.admin.types import ScramMechanismType, UserScramCredentialDeletion, UserScramCredentialUpsertion
from pykafka_client.network.transport.sasl.scram import ScramMechanism, hi
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse
from pykafka_client.structs import Node

Alteration = UserScramCredentialUpsertion | UserScramCredentialDeletion


def _upsertion(a: UserScramCredentialUpsertion) -> AlterUserScramCredentialsRequest.ScramCredentialUpsertion:
    mechanism = ScramMechanismType.for_name(a.mechanism)
    scram = ScramMechanism.for_mechanism_name(mechanism.mechanism_name)
    assert scram is not None
    salt = a.salt if a.salt is not None else secrets.token_bytes(32)
    return AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        name=a.user, mechanism=int(mechanism), iterations=a.iterations, salt=salt,
        salted_password=hi(scram, a.password.encode("utf-8"), salt, a.iterations))


@dataclass
class AlterUserScramCredentialsHandler:
    """Keys: the users; each user's result is None or its error."""

    alterations: list[Alteration]
    api_key = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
    lookup = LeastLoaded()

    def build_request(self, version: int, keys: list[str]) -> AlterUserScramCredentialsRequest:
        wanted = set(keys)
        return AlterUserScramCredentialsRequest(
            deletions=[AlterUserScramCredentialsRequest.ScramCredentialDeletion(
                name=a.user, mechanism=int(ScramMechanismType.for_name(a.mechanism)))
                for a in self.alterations if isinstance(a, UserScramCredentialDeletion) and a.user in wanted],
            upsertions=[_upsertion(a) for a in self.alterations
                        if isinstance(a, UserScramCredentialUpsertion) and a.user in wanted],
        )

    def handle_response(self, node: Node, keys: list[str], response: AlterUserScramCredentialsResponse
                        ) -> ApiResult[str, BaseException | None]:
        assert isinstance(response, AlterUserScramCredentialsResponse)
        result: ApiResult[str, BaseException | None] = ApiResult()
        for r in response.results:
            err = broker_error(r.error_code, r.error_message, f"SCRAM credentials of user {r.user!r}") if r.error_code else None
            result.completed[r.user] = err
            if err is not None:
                result.failed.setdefault(r.user, err)
        return result

    @staticmethod
    def call(ctx: AdminContext, alterations: Iterable[Alteration], timeout: float | None = None
             ) -> dict[str, BaseException | None]:
        """Upsert / delete credentials; each user's error or None; raises the first user's error."""
        items = list(alterations)
        for a in items:
            if not isinstance(a, (UserScramCredentialUpsertion, UserScramCredentialDeletion)):
                raise TypeError("alter_user_scram_credentials() expects UserScramCredentialUpsertion / "
                                f"UserScramCredentialDeletion items, got {a!r}")
            ScramMechanismType.for_name(a.mechanism)  # ValueError for an unknown mechanism, before sending
        if not items:
            return {}
        users = list(dict.fromkeys(a.user for a in items))
        return ctx.run_call(lambda _timer: AlterUserScramCredentialsHandler(items), users, timeout)
