"""CreateAcls (key 30): add ACL bindings. Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every
creation); SECURITY_DISABLED without an authorizer; INVALID_REQUEST for a creation Kafka refuses (ANY/UNKNOWN
types, MATCH pattern, empty name, unparsable principal, a cluster name other than ``kafka-cluster``)."""

from __future__ import annotations

import logging

from mini_broker.network.request_channel import Request
from mini_broker.server.api_error import error_code, error_message
from mini_broker.server.apis.acl_api_util import acl_authorizer, store_failure
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    ResourcePattern,
    operation,
    pattern_type,
    permission_type,
    resource_type,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import CreateAclsRequest, CreateAclsResponse

log = logging.getLogger(__name__)

Result = CreateAclsResponse.AclCreationResult


def handle(apis: KafkaApis, request: Request) -> CreateAclsResponse:
    body = request.body
    assert isinstance(body, CreateAclsRequest)
    authorizer = acl_authorizer(apis, request, AclOperation.ALTER)
    if isinstance(authorizer, Exception):
        return CreateAclsResponse(throttle_time_ms=0, results=[
            Result(error_code=error_code(authorizer), error_message=error_message(authorizer)) for _ in body.creations])
    bindings = [AclBinding(ResourcePattern(resource_type(c.resource_type), c.resource_name,
                                           pattern_type(c.resource_pattern_type)),
                           AccessControlEntry(c.principal, c.host, operation(c.operation),
                                              permission_type(c.permission_type)))
                for c in body.creations]
    try:
        errors = authorizer.create_acls(bindings)
    except (OSError, BrokerResponseError) as e:  # the ACL file, or the controller of a cluster
        log.error("event=acl_store_failed error=%r", e)
        return CreateAclsResponse(throttle_time_ms=0, results=[
            Result(error_code=error_code(e), error_message=store_failure(e))
            for _ in body.creations])
    for b, err in zip(bindings, errors, strict=True):
        if err is None:
            log.info("event=acl_created principal=%s acl=%s", request.context.principal, b)
    return CreateAclsResponse(throttle_time_ms=0, results=[
        Result(error_code=error_code(e) if e else 0, error_message=error_message(e) if e else None) for e in errors])


API = ApiSpec(ApiKey.CREATE_ACLS, 1, 3, handle)
