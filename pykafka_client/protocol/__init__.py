"""The Kafka wire protocol (see docs/ARCHITECTURE.md, "Protocol messages").

* :mod:`.types`: ``Reader``/``Writer`` wire primitives, ``FileRegion``, the ``Message`` base class.
* :mod:`.messages`: one generated class per JSON spec (``MetadataRequest``, ``FetchResponse``, ...).
* :mod:`.api_keys`: ``ApiKey`` and the request/response classes of each key.
* :mod:`.headers`: request/response headers and whole-frame encode/decode.
* :mod:`.records` and :mod:`.compression`: record batches (separate package).
"""

from __future__ import annotations

from pykafka_client.protocol.api_keys import (
    CLIENT_SUPPORTED_VERSIONS,
    REQUESTS,
    RESPONSES,
    STABLE_VERSIONS,
    ApiKey,
    api_name,
)
from pykafka_client.protocol.headers import (
    RequestHeader,
    ResponseHeader,
    decode_request,
    decode_request_header,
    decode_response,
    decode_response_header,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from pykafka_client.protocol.types import (
    ZERO_UUID,
    FieldSchema,
    FileRegion,
    Message,
    Reader,
    Writer,
)

__all__ = [
    "CLIENT_SUPPORTED_VERSIONS",
    "REQUESTS",
    "RESPONSES",
    "STABLE_VERSIONS",
    "ZERO_UUID",
    "ApiKey",
    "FieldSchema",
    "FileRegion",
    "Message",
    "Reader",
    "RequestHeader",
    "ResponseHeader",
    "Writer",
    "api_name",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "decode_response_header",
    "encode_request",
    "encode_response",
    "request_header_version",
    "response_header_version",
]
