"""Java-compatible message semantics: absent fields, ignorable, tagged fields and their defaults,
unknown tags, nullability, version checks, zero-copy records."""

from __future__ import annotations

import struct

import pytest

from pykafka_client.errors import IllegalArgumentError, MessageDecodeError, UnsupportedVersionError
from pykafka_client.protocol.messages import (
    ApiVersionsResponse,
    ConsumerGroupHeartbeatResponse,
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    RequestHeader,
)


def test_non_default_non_ignorable_field_absent_in_version_raises() -> None:
    req = MetadataRequest(topics=[], allow_auto_topic_creation=False)  # 4+, not ignorable
    with pytest.raises(UnsupportedVersionError, match="non-default AllowAutoTopicCreation at version 3"):
        req.encode(3)
    assert req.encode(4)
    MetadataRequest(topics=[], allow_auto_topic_creation=True).encode(3)  # default: fine


def test_ignorable_field_is_silently_dropped() -> None:
    resp = MetadataResponse(cluster_id="abc")  # 2+, ignorable
    assert MetadataResponse.decode(resp.encode(1), 1).cluster_id is None


def test_absent_fields_decode_to_defaults() -> None:
    got = MetadataRequest.decode(MetadataRequest(topics=[]).encode(1), 1)
    assert got.allow_auto_topic_creation is True  # custom default "true"


def test_tagged_field_with_default_is_not_written() -> None:
    base = ApiVersionsResponse()
    assert base.finalized_features_epoch == -1
    plain = base.encode(3)
    assert plain.endswith(b"\x00")  # empty tag section
    tagged = ApiVersionsResponse(finalized_features_epoch=7).encode(3)
    # one tagged field: count 1, tag 1, size 8, int64 7
    assert tagged.endswith(b"\x01\x01\x08" + struct.pack(">q", 7))
    assert ApiVersionsResponse.decode(tagged, 3).finalized_features_epoch == 7


def test_tagged_fields_are_written_in_tag_order_with_unknown_ones_merged() -> None:
    resp = ApiVersionsResponse(zk_migration_ready=True, finalized_features_epoch=1)
    resp.unknown_tagged_fields = [(4, b""), (9, b"\xaa")]  # tags 0-3 are known, 4 and 9 are not
    enc = resp.encode(3)
    tail = b"\x04" + b"\x01\x08" + struct.pack(">q", 1) + b"\x03\x01\x01" + b"\x04\x00" + b"\x09\x01\xaa"
    assert enc.endswith(tail)
    dec = ApiVersionsResponse.decode(enc, 3)
    assert dec.unknown_tagged_fields == [(4, b""), (9, b"\xaa")]
    assert dec.encode(3) == enc  # byte-exact round trip keeps unknown tags


def test_unknown_tags_at_non_flexible_version_raise() -> None:
    resp = ApiVersionsResponse()
    resp.unknown_tagged_fields = [(5, b"x")]
    with pytest.raises(UnsupportedVersionError, match="tagged fields were set"):
        resp.encode(2)


def test_known_tagged_field_must_use_its_declared_size() -> None:
    good = ApiVersionsResponse(finalized_features_epoch=7).encode(3)
    bad = good[:-10] + b"\x09" + good[-9:] + b"\x00"  # size 9 for an int64
    with pytest.raises(MessageDecodeError):
        ApiVersionsResponse.decode(bad, 3)


def test_tagged_struct_default_is_not_written() -> None:
    req = FetchRequest()
    v15 = req.encode(15)
    assert FetchRequest.decode(v15, 15) == req
    req.replica_state = FetchRequest.ReplicaState(replica_id=3, replica_epoch=9)
    v15b = req.encode(15)
    assert len(v15b) > len(v15)
    assert FetchRequest.decode(v15b, 15).replica_state == FetchRequest.ReplicaState(replica_id=3, replica_epoch=9)
    with pytest.raises(UnsupportedVersionError):
        req.encode(14)  # ReplicaState (15+) is not ignorable


def test_nullable_struct() -> None:
    null = ConsumerGroupHeartbeatResponse(assignment=None).encode(0)
    some = ConsumerGroupHeartbeatResponse(assignment=ConsumerGroupHeartbeatResponse.Assignment()).encode(0)
    assert len(some) == len(null) + 2  # 0x01 marker + empty compact array vs 0xff; + empty tag section
    assert null[-2:] == b"\xff\x00"
    assert ConsumerGroupHeartbeatResponse.decode(some, 0).assignment == ConsumerGroupHeartbeatResponse.Assignment()
    assert ConsumerGroupHeartbeatResponse.decode(null, 0).assignment is None


def test_null_in_non_nullable_version_raises() -> None:
    req = MetadataRequest(topics=None)  # topics nullable only from v1
    assert req.encode(1)
    with pytest.raises(IllegalArgumentError, match=r"non-nullable field MetadataRequest\.Topics"):
        req.encode(0)


def test_null_array_on_the_wire_for_non_nullable_field_is_a_decode_error() -> None:
    with pytest.raises(MessageDecodeError, match="null not allowed"):
        MetadataRequest.decode(b"\xff\xff\xff\xff", 0)


def test_version_range_is_checked() -> None:
    with pytest.raises(UnsupportedVersionError, match="MetadataRequest version 99"):
        MetadataRequest().encode(99)
    with pytest.raises(UnsupportedVersionError):
        MetadataRequest.decode(b"", -1)
    with pytest.raises(UnsupportedVersionError):
        MetadataResponse.MetadataResponseTopic().encode(13)


def test_trailing_bytes_are_rejected() -> None:
    with pytest.raises(MessageDecodeError, match="1 trailing bytes"):
        MetadataRequest.decode(MetadataRequest(topics=[]).encode(4) + b"\x00", 4)


def test_request_header_client_id_is_never_compact() -> None:
    hdr = RequestHeader(3, 12, 5, "abc")
    assert hdr.encode(2) == struct.pack(">hhih", 3, 12, 5, 3) + b"abc" + b"\x00"
    assert hdr.encode(1) == struct.pack(">hhih", 3, 12, 5, 3) + b"abc"
    assert RequestHeader(3, 12, 5, "ignored").encode(0) == struct.pack(">hhi", 3, 12, 5)


def test_fetch_records_decode_as_views_into_the_buffer() -> None:
    records = b"R" * 100
    resp = FetchResponse(
        responses=[FetchResponse.FetchableTopicResponse(
            topic="t", partitions=[FetchResponse.PartitionData(records=records)])]
    )
    buf = bytearray(resp.encode(11))
    dec = FetchResponse.decode(buf, 11)
    got = dec.responses[0].partitions[0].records
    assert isinstance(got, memoryview)
    assert got.obj is buf
    assert got == records


def test_same_object_encodes_at_every_version() -> None:
    resp = MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092, rack=None)],
        topics=[MetadataResponse.MetadataResponseTopic(name="t", partitions=[
            MetadataResponse.MetadataResponsePartition(partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1])
        ])],
    )
    lo, hi = MetadataResponse.VALID_VERSIONS
    for v in range(lo, hi + 1):
        assert MetadataResponse.decode(resp.encode(v), v) == resp


def test_out_of_range_numbers_raise_illegal_argument() -> None:
    from pykafka_client.protocol import encode_request

    with pytest.raises(IllegalArgumentError, match="int16 limit"):
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="x" * 40000)]).encode(1)
    with pytest.raises(IllegalArgumentError, match="RequestHeader"):
        encode_request(MetadataRequest(topics=[]), 1, 2**31, "c")
    with pytest.raises(IllegalArgumentError):
        MetadataResponse(throttle_time_ms=2**31).encode(3)
    with pytest.raises(IllegalArgumentError):
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="\ud800")]).encode(1)
