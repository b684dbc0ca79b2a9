"""DescribeAcls (key 29): the bindings a filter selects, grouped by resource pattern. Needs DESCRIBE on the cluster
(else CLUSTER_AUTHORIZATION_FAILED); SECURITY_DISABLED without an authorizer; INVALID_REQUEST for a filter with an
UNKNOWN element."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.api_error import error_code, error_message
from mini_broker.server.apis.acl_api_util import acl_authorizer, binding_filter
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import InvalidRequestError
from pykafka_client.protocol.acl import AclOperation, ResourcePattern
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeAclsRequest, DescribeAclsResponse


def handle(apis: KafkaApis, request: Request) -> DescribeAclsResponse:
    body = request.body
    assert isinstance(body, DescribeAclsRequest)
    authorizer = acl_authorizer(apis, request, AclOperation.DESCRIBE)
    if isinstance(authorizer, Exception):
        return DescribeAclsResponse(throttle_time_ms=0, error_code=error_code(authorizer),
                                    error_message=error_message(authorizer), resources=[])
    f = binding_filter(body)
    unknown = f.unknown_element()
    if unknown is not None:
        return DescribeAclsResponse(throttle_time_ms=0, error_code=InvalidRequestError.code,
                                    error_message=f"The filter has {unknown}", resources=[])
    grouped: dict[ResourcePattern, list[DescribeAclsResponse.AclDescription]] = {}
    for b in authorizer.acls(f):
        e = b.entry
        grouped.setdefault(b.pattern, []).append(DescribeAclsResponse.AclDescription(
            principal=e.principal, host=e.host, operation=int(e.operation), permission_type=int(e.permission_type)))
    return DescribeAclsResponse(throttle_time_ms=0, error_code=0, error_message=None, resources=[
        DescribeAclsResponse.DescribeAclsResource(resource_type=int(p.resource_type), resource_name=p.name,
                                                  pattern_type=int(p.pattern_type), acls=acls)
        for p, acls in grouped.items()])


API = ApiSpec(ApiKey.DESCRIBE_ACLS, 1, 3, handle)
