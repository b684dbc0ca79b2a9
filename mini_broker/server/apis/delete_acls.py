"""DeleteAcls (key 31): remove the bindings each filter selects and answer them per filter. Needs ALTER on the
cluster (else CLUSTER_AUTHORIZATION_FAILED for every filter); SECURITY_DISABLED without an authorizer;
INVALID_REQUEST for a filter with an UNKNOWN element (the other filters still apply)."""

from __future__ import annotations

import logging

from mini_broker.network.request_channel import Request
from mini_broker.server.api_error import error_code, error_message
from mini_broker.server.apis.acl_api_util import acl_authorizer, binding_filter, store_failure
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import InvalidRequestError
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.acl import AclBinding, AclBindingFilter, AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteAclsRequest, DeleteAclsResponse

log = logging.getLogger(__name__)

FilterResult = DeleteAclsResponse.DeleteAclsFilterResult


def _matching(b: AclBinding) -> DeleteAclsResponse.DeleteAclsMatchingAcl:
    p, e = b.pattern, b.entry
    return DeleteAclsResponse.DeleteAclsMatchingAcl(
        error_code=0, error_message=None, resource_type=int(p.resource_type), resource_name=p.name,
        pattern_type=int(p.pattern_type), principal=e.principal, host=e.host, operation=int(e.operation),
        permission_type=int(e.permission_type))


def handle(apis: KafkaApis, request: Request) -> DeleteAclsResponse:
    body = request.body
    assert isinstance(body, DeleteAclsRequest)
    authorizer = acl_authorizer(apis, request, AclOperation.ALTER)
    if isinstance(authorizer, Exception):
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
            FilterResult(error_code=error_code(authorizer), error_message=error_message(authorizer), matching_acls=[])
            for _ in body.filters])
    filters = [binding_filter(f) for f in body.filters]
    usable: list[AclBindingFilter] = [f for f in filters if f.unknown_element() is None]
    try:
        removed = iter(authorizer.delete_acls(usable))
    except (OSError, BrokerResponseError) as e:  # the ACL file, or the controller of a cluster
        log.error("event=acl_store_failed error=%r", e)
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
            FilterResult(error_code=error_code(e), error_message=store_failure(e),
                         matching_acls=[]) for _ in body.filters])
    results: list[FilterResult] = []
    for f in filters:
        unknown = f.unknown_element()
        if unknown is not None:
            results.append(FilterResult(error_code=InvalidRequestError.code,
                                        error_message=f"The filter has {unknown}", matching_acls=[]))
            continue
        gone = next(removed)
        for b in gone:
            log.info("event=acl_deleted principal=%s acl=%s", request.context.principal, b)
        results.append(FilterResult(error_code=0, error_message=None, matching_acls=[_matching(b) for b in gone]))
    return DeleteAclsResponse(throttle_time_ms=0, filter_results=results)


API = ApiSpec(ApiKey.DELETE_ACLS, 1, 3, handle)
