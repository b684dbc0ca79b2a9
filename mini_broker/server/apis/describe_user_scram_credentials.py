"""DescribeUserScramCredentials (key 50): the mechanisms and iteration counts of users' SCRAM credentials
(never key material). No users (null or empty) describes every user that has one; a named user without any
is RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE, as in Kafka."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.security.scram_credentials import MECHANISM_TYPE_IDS
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import ClusterAuthorizationFailedError, DuplicateResourceError, ResourceNotFoundError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse

Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
Info = DescribeUserScramCredentialsResponse.CredentialInfo


def handle(apis: KafkaApis, request: Request) -> DescribeUserScramCredentialsResponse:
    body = request.body
    assert isinstance(body, DescribeUserScramCredentialsRequest)
    store = apis.broker.scram_credentials
    assert store is not None, "the broker has no SCRAM credential store"
    if not apis.broker.auth(request).cluster(AclOperation.DESCRIBE):  # Kafka: DESCRIBE on the cluster
        return DescribeUserScramCredentialsResponse(throttle_time_ms=0, error_code=ClusterAuthorizationFailedError.code,
                                                    error_message=None, results=[])
    names = [u.name for u in body.users or []]
    if not names:
        names = store.users()
    results: list[Result] = []
    for i, name in enumerate(names):
        if name in names[:i]:
            continue
        if names.count(name) > 1:
            results.append(Result(user=name, error_code=DuplicateResourceError.code,
                                  error_message="Cannot describe SCRAM credentials for the same user twice in a "
                                                "single request", credential_infos=[]))
            continue
        infos = store.describe(name)
        if not infos:
            results.append(Result(user=name, error_code=ResourceNotFoundError.code,
                                  error_message="Attempt to describe a user credential that does not exist",
                                  credential_infos=[]))
            continue
        results.append(Result(user=name, error_code=0, error_message=None, credential_infos=[
            Info(mechanism=MECHANISM_TYPE_IDS[i.mechanism], iterations=i.iterations) for i in infos]))
    return DescribeUserScramCredentialsResponse(throttle_time_ms=0, error_code=0, error_message=None, results=results)


API = ApiSpec(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, handle)
