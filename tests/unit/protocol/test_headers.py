"""Request/response headers and frames, checked against hand-computed bytes."""

from __future__ import annotations

import struct

import pytest

from pykafka_client.errors import (
    CorrelationIdMismatchError,
    MessageDecodeError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from pykafka_client.protocol import (
    ApiKey,
    FileRegion,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from pykafka_client.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ControlledShutdownRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)
from pykafka_client.protocol.types import Chunk
from tests.doubles.frames import chunk_bytes


def join(pieces: list[Chunk]) -> bytes:
    out = b""
    for p in pieces:
        assert not isinstance(p, FileRegion)
        out += bytes(p)
    return out


def test_header_versions() -> None:
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 0) == 0
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 1) == 1
    assert request_header_version(ApiKey.METADATA, 8) == 1
    assert request_header_version(ApiKey.METADATA, 9) == 2
    assert request_header_version(ApiKey.API_VERSIONS, 2) == 1
    assert request_header_version(ApiKey.API_VERSIONS, 3) == 2
    assert request_header_version(ApiKey.API_VERSIONS, 99) == 2  # unknown future versions are flexible
    assert response_header_version(ApiKey.METADATA, 8) == 0
    assert response_header_version(ApiKey.METADATA, 9) == 1
    for v in range(0, 5):
        assert response_header_version(ApiKey.API_VERSIONS, v) == 0
    with pytest.raises(UnknownApiKeyError):
        request_header_version(9999, 0)
    with pytest.raises(UnknownApiKeyError):
        response_header_version(-1, 0)


def test_request_header_v1_bytes() -> None:
    body = MetadataRequest(topics=None, allow_auto_topic_creation=True)
    frame = join(encode_request(body, 4, 0x0A0B0C0D, "ab"))
    header = struct.pack(">hhih", 3, 4, 0x0A0B0C0D, 2) + b"ab"
    payload = header + b"\xff\xff\xff\xff" + b"\x01"  # null topics, allow_auto_topic_creation
    assert frame == struct.pack(">i", len(payload)) + payload


def test_request_header_v1_null_client_id() -> None:
    frame = join(encode_request(MetadataRequest(topics=[]), 1, 1, None))
    assert frame[4:14] == struct.pack(">hhih", 3, 1, 1, -1)


def test_request_header_v2_bytes() -> None:
    # ApiVersions v3 is flexible: header v2 = v1 fields + empty tag section; client id stays INT16-length
    body = ApiVersionsRequest(client_software_name="py", client_software_version="1")
    frame = join(encode_request(body, 3, 7, "cid"))
    header = struct.pack(">hhih", 18, 3, 7, 3) + b"cid" + b"\x00"
    body_bytes = b"\x03py" + b"\x021" + b"\x00"
    assert frame == struct.pack(">i", len(header + body_bytes)) + header + body_bytes


def test_request_header_v0_has_no_client_id() -> None:
    frame = join(encode_request(ControlledShutdownRequest(broker_id=5), 0, 9, "ignored"))
    assert frame == struct.pack(">ihhii", 12, 7, 0, 9, 5)
    header, body = decode_request(frame[4:])
    assert header.client_id == ""  # absent in v0: the default
    assert body == ControlledShutdownRequest(broker_id=5)


def test_response_header_v0_and_v1_bytes() -> None:
    v8 = join(encode_response(MetadataResponse(), ApiKey.METADATA, 8, 0x11223344))
    assert v8[4:8] == b"\x11\x22\x33\x44"
    assert v8[8:12] == b"\x00\x00\x00\x00"  # throttle_time_ms follows directly (no tag section)
    v9 = join(encode_response(MetadataResponse(), ApiKey.METADATA, 9, 0x11223344))
    assert v9[4:9] == b"\x11\x22\x33\x44\x00"  # correlation id + empty tag section
    assert struct.unpack(">i", v9[:4])[0] == len(v9) - 4


def test_api_versions_response_header_is_always_v0() -> None:
    frame = join(encode_response(ApiVersionsResponse(error_code=35), ApiKey.API_VERSIONS, 3, 5))
    # size, correlation id, then immediately the body (error code 35), no header tag byte
    assert frame[4:10] == struct.pack(">ih", 5, 35)
    assert decode_response(frame[4:], ApiKey.API_VERSIONS, 3, 5) == ApiVersionsResponse(error_code=35)


def test_api_versions_response_falls_back_to_v0() -> None:
    # KIP-511: we asked with v3, the broker only knows older versions and answers with a v0 body
    v0 = ApiVersionsResponse(error_code=35, api_keys=[ApiVersionsResponse.ApiVersion(18, 0, 2)])
    frame = join(encode_response(v0, ApiKey.API_VERSIONS, 0, 42))
    got = decode_response(frame[4:], ApiKey.API_VERSIONS, 3, 42)
    assert got == v0


def test_correlation_id_mismatch() -> None:
    frame = join(encode_response(MetadataResponse(), ApiKey.METADATA, 12, 1))
    with pytest.raises(CorrelationIdMismatchError):
        decode_response(frame[4:], ApiKey.METADATA, 12, 2)
    assert decode_response(frame[4:], ApiKey.METADATA, 12, 1) == MetadataResponse()


def test_decode_response_errors() -> None:
    frame = join(encode_response(MetadataResponse(), ApiKey.METADATA, 12, 1))
    with pytest.raises(UnknownApiKeyError):
        decode_response(frame[4:], 4242, 0, 1)
    with pytest.raises(UnsupportedVersionError):
        decode_response(frame[4:], ApiKey.METADATA, 99, 1)
    with pytest.raises(MessageDecodeError):
        decode_response(frame[4:-1], ApiKey.METADATA, 12, 1)
    with pytest.raises(MessageDecodeError):
        decode_response(frame[4:] + b"\x00", ApiKey.METADATA, 12, 1)


def test_decode_request_unknown_key_and_version() -> None:
    with pytest.raises(UnknownApiKeyError):
        decode_request(struct.pack(">hhih", 4242, 0, 1, -1))
    with pytest.raises(UnsupportedVersionError):
        decode_request(struct.pack(">hhih", 3, 99, 1, -1) + b"\x00")
    with pytest.raises(MessageDecodeError):
        decode_request(b"\x00\x03\x00")


def test_unknown_api_versions_version_header_still_parses() -> None:
    # A future ApiVersions v9 request: the broker must read the header to answer v0 + UNSUPPORTED_VERSION
    raw = struct.pack(">hhih", 18, 9, 77, 4) + b"test" + b"\x00" + b"whatever-body"
    header, offset = decode_request_header(raw)
    assert (header.request_api_key, header.request_api_version, header.correlation_id, header.client_id) == (
        18, 9, 77, "test")
    assert raw[offset:] == b"whatever-body"
    with pytest.raises(UnsupportedVersionError):
        decode_request(raw)


def test_request_round_trip_through_decode_request() -> None:
    body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")], allow_auto_topic_creation=False)
    for v in range(1, 13):
        if v < 4:
            body.allow_auto_topic_creation = True  # not in v0-3: must be the default (true)
        else:
            body.allow_auto_topic_creation = False
        frame = join(encode_request(body, v, v * 10, "c"))
        header, got = decode_request(frame[4:])
        assert header.request_api_version == v
        assert header.correlation_id == v * 10
        assert got == body


def test_records_are_not_copied_into_the_frame() -> None:
    records = bytes(range(256)) * 8  # 2 KiB: large enough to be its own piece
    body = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    pieces = encode_request(body, 9, 1, "c")
    assert any(p is records for p in pieces)
    frame = join(pieces)
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    _, got = decode_request(frame[4:])
    assert got == body


def test_file_region_is_its_own_piece() -> None:
    region = FileRegion(file=0, offset=100, length=4096)
    body = FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="t", partitions=[FetchResponse.PartitionData(partition_index=0, records=region)]
            )
        ]
    )
    pieces = encode_response(body, ApiKey.FETCH, 11, 3)
    assert pieces.count(region) == 1
    total = sum(len(p) for p in pieces)
    assert struct.unpack(">i", chunk_bytes(pieces[0])[:4])[0] == total - 4
    with pytest.raises(Exception, match="FileRegion"):
        body.encode(11)


def test_encode_request_rejects_non_requests_and_bad_versions() -> None:
    with pytest.raises(UnknownApiKeyError):
        encode_request(MetadataResponse(), 1, 1, "c")
    with pytest.raises(UnsupportedVersionError):
        encode_request(MetadataRequest(), 99, 1, "c")
    with pytest.raises(UnknownApiKeyError):
        encode_response(MetadataResponse(), ApiKey.FETCH, 1, 1)
