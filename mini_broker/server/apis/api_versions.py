"""ApiVersions (key 18): the enabled APIs and their version ranges.

The KIP-511 case (a version newer than ours) is answered by KafkaApis before dispatch; this handler sees
only enabled versions. Client software name/version (v3+) are logged for the connection.
"""

from __future__ import annotations

import logging
import re

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

log = logging.getLogger(__name__)

INVALID_REQUEST = 42
_LEGAL_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def handle(apis: KafkaApis, request: Request) -> ApiVersionsResponse:
    body = request.body
    assert isinstance(body, ApiVersionsRequest)
    ranges = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
              for k, lo, hi in apis.supported_versions()]
    if request.context.api_version >= 3:
        name, version = body.client_software_name, body.client_software_version
        if not (_LEGAL_SOFTWARE.match(name or "") and _LEGAL_SOFTWARE.match(version or "")):
            return ApiVersionsResponse(error_code=INVALID_REQUEST, api_keys=ranges)
        log.debug("event=client_software connection=%s name=%s version=%s", request.connection_id, name, version)
    return ApiVersionsResponse(error_code=0, api_keys=ranges, throttle_time_ms=0)


API = ApiSpec(ApiKey.API_VERSIONS, 0, 4, handle)
