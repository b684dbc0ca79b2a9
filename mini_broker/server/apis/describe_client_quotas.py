"""DescribeClientQuotas (key 48): the quotas set for the entities that match a filter (exact name, default,
or any, per entity type; ``strict`` leaves out entities with other types too). DESCRIBE_CONFIGS on the cluster is
needed (else CLUSTER_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.quota.client_quotas import ENTITY_TYPES
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import ClusterAuthorizationFailedError, InvalidRequestError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeClientQuotasRequest, DescribeClientQuotasResponse

MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


def handle(apis: KafkaApis, request: Request) -> DescribeClientQuotasResponse:
    body = request.body
    assert isinstance(body, DescribeClientQuotasRequest)
    if not apis.broker.auth(request).cluster(AclOperation.DESCRIBE_CONFIGS):
        return DescribeClientQuotasResponse(error_code=ClusterAuthorizationFailedError.code, entries=None,
                                            error_message="DESCRIBE_CONFIGS on the cluster is needed")
    components = [(c.entity_type, c.match_type, c.match) for c in body.components]
    for etype, match_type, match in components:
        problem = None
        if etype not in ENTITY_TYPES:
            problem = f"Unhandled client quota entity type: {etype}"
        elif match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
            problem = f"Unknown match type {match_type}"
        elif match_type == MATCH_EXACT and match is None:
            problem = f"An exact match for {etype} needs a name"
        if problem is not None:
            return DescribeClientQuotasResponse(error_code=InvalidRequestError.code, error_message=problem, entries=None)
    if len({c[0] for c in components}) != len(components):
        return DescribeClientQuotasResponse(error_code=InvalidRequestError.code,
                                            error_message="Duplicate entity type in filter", entries=None)
    found = apis.quotas.describe(components, body.strict) if apis.quotas is not None else []
    return DescribeClientQuotasResponse(error_code=0, error_message=None, entries=[
        DescribeClientQuotasResponse.EntryData(
            entity=[DescribeClientQuotasResponse.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            values=[DescribeClientQuotasResponse.ValueData(key=k, value=v) for k, v in sorted(values.items())])
        for entity, values in found])


API = ApiSpec(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, handle)
