from __future__ import annotations

import struct

import pytest

from pykafka_client.consumer.assignors import Assignment, Subscription
from pykafka_client.consumer.consumer_protocol import (
    deserialize_assignment,
    deserialize_subscription,
    serialize_assignment,
    serialize_subscription,
)
from pykafka_client.errors import MessageDecodeError
from pykafka_client.structs import TopicPartition

pytestmark = pytest.mark.timeout(60)

OWNED = [TopicPartition("foo", 0), TopicPartition("foo", 2), TopicPartition("bar", 1)]


def test_subscription_roundtrip_latest() -> None:
    sub = Subscription(["foo", "bar"], b"ud", OWNED, generation_id=7, rack_id="r1")
    out = deserialize_subscription(serialize_subscription(sub))
    assert out.topics == ["foo", "bar"]
    assert out.user_data == b"ud"
    assert sorted(out.owned_partitions) == sorted(OWNED)
    assert (out.generation_id, out.rack_id) == (7, "r1")


@pytest.mark.parametrize(
    ("version", "owned", "gen", "rack"),
    [(0, [], -1, None), (1, OWNED, -1, None), (2, OWNED, 7, None), (3, OWNED, 7, "r1")],
)
def test_subscription_versions_drop_newer_fields(
    version: int, owned: list[TopicPartition], gen: int, rack: str | None
) -> None:
    sub = Subscription(["foo"], None, OWNED, generation_id=7, rack_id="r1")
    buf = serialize_subscription(sub, version)
    assert struct.unpack(">h", buf[:2])[0] == version
    out = deserialize_subscription(buf)
    assert (sorted(out.owned_partitions), out.generation_id, out.rack_id, out.user_data) == (
        sorted(owned),
        gen,
        rack,
        None,
    )


def test_newer_version_is_read_as_latest_ignoring_trailing_fields() -> None:
    buf = bytearray(serialize_subscription(Subscription(["foo"], None, OWNED, 3, "r")))
    buf[0:2] = struct.pack(">h", 9)
    out = deserialize_subscription(bytes(buf) + b"\x00\x01future-field")
    assert out.topics == ["foo"] and out.rack_id == "r"


def test_assignment_roundtrip_and_empty() -> None:
    a = Assignment(OWNED, b"x")
    out = deserialize_assignment(serialize_assignment(a))
    assert sorted(out.partitions) == sorted(OWNED) and out.user_data == b"x"
    assert deserialize_assignment(b"").partitions == []
    assert deserialize_assignment(serialize_assignment(a, 0)).user_data == b"x"


@pytest.mark.parametrize("bad", [b"\x00", b"\xff\xff", b"\x00\x03\x00\x00\x00\x05", b"\x00\x00\x7f\xff\xff\xff"])
def test_garbage_raises_decode_error(bad: bytes) -> None:
    with pytest.raises(MessageDecodeError):
        deserialize_subscription(bad)
    with pytest.raises(MessageDecodeError):
        deserialize_assignment(bad)
