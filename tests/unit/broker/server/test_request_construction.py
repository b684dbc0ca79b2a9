"""The parser's per-request objects: RequestContext and Request built positionally (the kernel's slots constructor
when it is loaded) are what the classes' own ``__init__`` builds from the same values, defaults included."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.network.request_channel import (
    ANONYMOUS_PRINCIPAL,
    Request,
    RequestChannel,
    RequestContext,
    new_request,
    new_request_context,
)
from mini_broker.server.apis.registry import ALL_APIS
from mini_broker.server.kafka_apis import KafkaApis
from pykafka_client.protocol import headers
from pykafka_client.protocol.messages import MetadataRequest, ProduceRequest
from pykafka_client.protocol.records import _native


def fields_of(obj: object) -> dict[str, object]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}  # type: ignore[arg-type]


@pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")
def test_the_kernel_builds_them_without_the_classes_init() -> None:
    assert new_request_context is not RequestContext and new_request is not Request
    assert not hasattr(RequestContext(0, 0, 0, None, "c", "a", "L"), "__dict__")  # slotted: what the kernel fills


ints = st.integers(-(2**31), 2**31 - 1)
texts = st.text(max_size=8)


@settings(max_examples=100, deadline=None)
@given(ints, ints, ints, st.none() | texts, texts, texts, texts, st.integers(0, 2), ints, ints, ints)
def test_positional_construction_equals_the_classes(key: int, version: int, correlation_id: int, client_id: str | None,
                                                     connection_id: str, address: str, listener: str,
                                                     header_version: int, processor_id: int, size: int,
                                                     start: int) -> None:
    ctx = new_request_context(key, version, correlation_id, client_id, connection_id, address, listener,
                              header_version, ANONYMOUS_PRINCIPAL)
    expected_ctx = RequestContext(key, version, correlation_id, client_id, connection_id, address, listener,
                                  header_version=header_version)
    assert type(ctx) is RequestContext and fields_of(ctx) == fields_of(expected_ctx)
    body = object()
    request = new_request(processor_id, ctx, body, size, start, -1, -1, -1, -1, -1)
    expected = Request(processor_id, ctx, body, size, start)
    assert type(request) is Request and fields_of(request) == fields_of(expected)
    assert request.connection_id == connection_id
    request.request_dequeue_time_ns = 5  # the later timestamps stay settable
    ctx.principal = "User:x"
    assert request.request_dequeue_time_ns == 5 and request.context.principal == "User:x"


@pytest.mark.parametrize("body,api_key,version", [
    (ProduceRequest(acks=1, timeout_ms=10, topic_data=[]), 0, 9),  # a direct reader's path
    (MetadataRequest(topics=None), 3, 12),  # the generated reader's path
])
def test_parsed_requests_carry_every_default(body: object, api_key: int, version: int) -> None:
    apis = KafkaApis(RequestChannel(10), list(ALL_APIS))
    frame = b"".join(bytes(c) for c in headers.encode_request(body, version, 7, "cid"))  # type: ignore[arg-type]
    request = apis.parse_request(3, "conn", "1.2.3.4:5", "PLAINTEXT", memoryview(bytearray(frame))[4:], 42)
    ctx = request.context
    assert fields_of(ctx) == fields_of(RequestContext(
        api_key, version, 7, "cid", "conn", "1.2.3.4:5", "PLAINTEXT",
        header_version=headers.request_header_version(api_key, version)))
    assert fields_of(request) == fields_of(Request(3, ctx, request.body, len(frame) - 4, 42))
