"""AlterClientQuotas (key 49): set or remove producer_byte_rate / consumer_byte_rate / request_percentage of
user and client-id entities, and connection_creation_rate of ip entities. Each entry succeeds or fails alone
(INVALID_REQUEST with the reason); ``validate_only`` checks without applying. ALTER_CONFIGS on the cluster is needed
(else CLUSTER_AUTHORIZATION_FAILED for every entry)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.quota.client_quotas import InvalidQuotaError, check_key, make_entity
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import ClusterAuthorizationFailedError, InvalidRequestError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import AlterClientQuotasRequest, AlterClientQuotasResponse


def handle(apis: KafkaApis, request: Request) -> AlterClientQuotasResponse:
    body = request.body
    assert isinstance(body, AlterClientQuotasRequest)
    quotas = apis.quotas
    allowed = apis.broker.auth(request).cluster(AclOperation.ALTER_CONFIGS)
    entries: list[AlterClientQuotasResponse.EntryData] = []
    for entry in body.entries:
        error_code, error_message = 0, None
        try:
            if not allowed:
                raise ClusterAuthorizationFailedError("ALTER_CONFIGS on the cluster is needed to alter quotas")
            if quotas is None:
                raise InvalidQuotaError("client quotas are not enabled on this broker")
            entity = make_entity([(e.entity_type, e.entity_name) for e in entry.entity])
            changes = [(op.key, None if op.remove else op.value) for op in entry.ops]
            for key, value in changes:
                check_key(entity, key, value)
            if not body.validate_only:
                for key, value in changes:
                    quotas.alter(entity, key, value)
        except InvalidQuotaError as e:
            error_code, error_message = InvalidRequestError.code, str(e)
        except ClusterAuthorizationFailedError as e:
            error_code, error_message = e.code, e.message
        entries.append(AlterClientQuotasResponse.EntryData(
            error_code=error_code, error_message=error_message,
            entity=[AlterClientQuotasResponse.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                    for e in entry.entity]))
    return AlterClientQuotasResponse(throttle_time_ms=0, entries=entries)


API = ApiSpec(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, handle)
