"""Garbage requests: KafkaApis.parse_request either returns a Request or raises a ProtocolError / broker
error (which closes the connection). Never another exception type, never a hang."""

from __future__ import annotations

import struct
from typing import cast

from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.network.request_channel import RequestChannel
from mini_broker.server.apis.registry import ALL_APIS
from mini_broker.server.kafka_apis import KafkaApis
from pykafka_client.errors import ProtocolError
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import REQUESTS

APIS = KafkaApis(RequestChannel(1), ALL_APIS)
ENABLED = sorted(APIS.specs)


def parse(payload: bytes) -> None:
    try:
        APIS.parse_request(0, "c", "127.0.0.1:1", "PLAINTEXT", memoryview(payload), 0)
    except (ProtocolError, BrokerResponseError):
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(payload: bytes) -> None:
    parse(payload)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ENABLED), st.integers(0, 20), st.binary(max_size=300))
def test_valid_header_garbage_body(api_key: int, version: int, body: bytes) -> None:
    parse(struct.pack(">hhih", api_key, version, 1, 3) + b"cid" + b"\x00" + body)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ENABLED), st.data())
def test_truncated_valid_requests(api_key: int, data: st.DataObject) -> None:
    spec = APIS.specs[api_key]
    version = data.draw(st.integers(spec.min_version, spec.max_version))
    body = REQUESTS[spec.api_key]()
    frame = b"".join(bytes(cast(bytes, p)) for p in headers.encode_request(body, version, 7, "c"))
    payload = frame[4:]
    cut = data.draw(st.integers(0, len(payload)))
    parse(payload[:cut])
    req = APIS.parse_request(0, "c", "127.0.0.1:1", "PLAINTEXT", memoryview(payload), 0)  # whole: parses
    assert req.context.api_key == api_key and req.context.api_version == version
