"""DescribeUserScramCredentials (Java ``KafkaAdminClient.describeUserScramCredentials``): to any broker; the
mechanisms and iteration counts of users' SCRAM credentials."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import LeastLoaded
from pykafka_client.admin.types import ScramCredentialInfo, ScramMechanismType, UserScramCredentialsDescription
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse
from pykafka_client.structs import Node

#: the one key of a describe-all call
ALL_USERS = "*"


@dataclass
class DescribeUserScramCredentialsHandler:
    """Keys: the users asked for, or :data:`ALL_USERS` for every user (its value: all descriptions)."""

    api_key = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
    lookup = LeastLoaded()

    def build_request(self, version: int, keys: list[str]) -> DescribeUserScramCredentialsRequest:
        if keys == [ALL_USERS]:
            return DescribeUserScramCredentialsRequest(users=None)
        return DescribeUserScramCredentialsRequest(
            users=[DescribeUserScramCredentialsRequest.UserName(name=k) for k in keys])

    def handle_response(self, node: Node, keys: list[str], response: DescribeUserScramCredentialsResponse
                        ) -> ApiResult[str, object]:
        assert isinstance(response, DescribeUserScramCredentialsResponse)
        result: ApiResult[str, object] = ApiResult()
        if response.error_code:
            err = broker_error(response.error_code, response.error_message, "describe_user_scram_credentials")
            for k in keys:
                result.failed[k] = err
            return result
        described: dict[str, UserScramCredentialsDescription] = {}
        for r in response.results:
            if r.error_code:
                result.failed[r.user] = broker_error(r.error_code, r.error_message, f"SCRAM credentials of user {r.user!r}")
                continue
            described[r.user] = UserScramCredentialsDescription(r.user, [
                ScramCredentialInfo(ScramMechanismType(i.mechanism), i.iterations) for i in r.credential_infos])
        if keys == [ALL_USERS]:
            result.completed[ALL_USERS] = described
        else:
            result.completed.update(described)
        return result

    @staticmethod
    def call(ctx: AdminContext, users: Iterable[str] | None = None, timeout: float | None = None
             ) -> dict[str, UserScramCredentialsDescription]:
        """The credentials of ``users`` (every user with one when None); a user without any raises
        ResourceNotFoundError."""
        if users is None:
            described = ctx.run_call(lambda _timer: DescribeUserScramCredentialsHandler(), [ALL_USERS], timeout)
            out = described[ALL_USERS]
            assert isinstance(out, dict)
            return out
        names = list(dict.fromkeys(users))
        if not names:
            return {}
        results = ctx.run_call(lambda _timer: DescribeUserScramCredentialsHandler(), names, timeout)
        return {k: v for k, v in results.items() if isinstance(v, UserScramCredentialsDescription)}
