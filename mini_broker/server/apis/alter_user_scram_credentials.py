"""AlterUserScramCredentials (key 51): upsert and delete SCRAM credentials. The client sends the salted password
(never the password); the broker keeps ``StoredKey`` / ``ServerKey`` (:mod:`mini_broker.security.scram_credentials`).
Checked per user as Kafka does: a user whose alterations have any error gets that error and none of them apply."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.security.scram_credentials import (
    MAX_ITERATIONS,
    MECHANISM_TYPES,
    credential_from_salted_password,
)
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import (
    ClusterAuthorizationFailedError,
    DuplicateResourceError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)
from pykafka_client.network.transport.sasl.scram import ScramCredential, ScramMechanism
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse

Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


def handle(apis: KafkaApis, request: Request) -> AlterUserScramCredentialsResponse:
    body = request.body
    assert isinstance(body, AlterUserScramCredentialsRequest)
    store = apis.broker.scram_credentials
    assert store is not None, "the broker has no SCRAM credential store"
    errors: dict[str, tuple[int, str]] = {}
    seen: set[tuple[str, int]] = set()
    users: list[str] = []
    ops: list[tuple[str, int, AlterUserScramCredentialsRequest.ScramCredentialUpsertion | None]] = (
        [(d.name, d.mechanism, None) for d in body.deletions] + [(u.name, u.mechanism, u) for u in body.upsertions])
    if not apis.broker.auth(request).cluster(AclOperation.ALTER):  # Kafka: ALTER on the cluster, else every user fails
        for name, _, _ in ops:
            errors.setdefault(name, (ClusterAuthorizationFailedError.code, "Not authorized to alter SCRAM credentials"))
    for name, mechanism_type, _ in ops:
        if name not in users:
            users.append(name)
        if (name, mechanism_type) in seen:
            errors.setdefault(name, (DuplicateResourceError.code,
                                     "A user credential cannot be altered twice in the same request"))
        seen.add((name, mechanism_type))
    upserts: dict[tuple[str, ScramMechanism], ScramCredential] = {}
    deletions: list[tuple[str, ScramMechanism]] = []
    for name, mechanism_type, upsert in ops:
        if name in errors:
            continue
        mechanism = MECHANISM_TYPES.get(mechanism_type)
        if not name:
            errors[name] = (UnacceptableCredentialError.code, "Username must not be empty")
        elif mechanism is None:
            errors[name] = (UnsupportedSaslMechanismError.code, "Unknown SCRAM mechanism")
        elif upsert is None:
            if store.get(name, mechanism) is None:
                errors[name] = (ResourceNotFoundError.code, "Attempt to delete a user credential that does not exist")
            else:
                deletions.append((name, mechanism))
        elif upsert.iterations < mechanism.min_iterations:
            errors[name] = (UnacceptableCredentialError.code, "Too few iterations")
        elif upsert.iterations > MAX_ITERATIONS:
            errors[name] = (UnacceptableCredentialError.code, "Too many iterations")
        elif not upsert.salt or not upsert.salted_password:
            errors[name] = (UnacceptableCredentialError.code, "Credential must have a salt and a salted password")
        else:
            upserts[(name, mechanism)] = credential_from_salted_password(
                mechanism, bytes(upsert.salt), bytes(upsert.salted_password), upsert.iterations)
    store.apply({k: v for k, v in upserts.items() if k[0] not in errors},
                [k for k in deletions if k[0] not in errors])
    results = [Result(user=u, error_code=errors[u][0] if u in errors else 0,
                      error_message=errors[u][1] if u in errors else None) for u in users]
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)


API = ApiSpec(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, handle)
