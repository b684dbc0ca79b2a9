from __future__ import annotations

import uuid

import pytest

from pykafka_client.errors import ConfigurationError, SerializationError
from pykafka_client.serialization import (
    IntegerDeserializer,
    IntegerSerializer,
    JsonDeserializer,
    JsonSerializer,
    StringSerializer,
    resolve_deserializer,
    resolve_serializer,
)


@pytest.mark.parametrize(
    ("name", "value", "wire"),
    [
        ("bytes", b"\x00\x01", b"\x00\x01"),
        ("str", "héllo", "héllo".encode()),
        ("int", 1, b"\x00\x00\x00\x01"),
        ("int", -1, b"\xff\xff\xff\xff"),
        ("long", 2**40, (2**40).to_bytes(8, "big")),
        ("double", 1.5, b"\x3f\xf8\x00\x00\x00\x00\x00\x00"),
        ("json", {"a": [1, 2]}, b'{"a":[1,2]}'),
        ("uuid", uuid.UUID(int=1), b"00000000-0000-0000-0000-000000000001"),
    ],
)
def test_builtin_round_trip(name: str, value: object, wire: bytes) -> None:
    ser = resolve_serializer("value.serializer", name)
    de = resolve_deserializer("value.deserializer", name)
    assert ser.serialize("t", value) == wire
    assert de.deserialize("t", wire) == value


@pytest.mark.parametrize("name", ["bytes", "str", "int", "long", "double", "json", "uuid"])
def test_none_maps_to_none(name: str) -> None:
    assert resolve_serializer("k", name).serialize("t", None) is None
    assert resolve_deserializer("k", name).deserialize("t", None) is None


def test_java_class_names_and_instances_and_functions() -> None:
    assert isinstance(resolve_serializer("k", "org.apache.kafka.common.serialization.StringSerializer"), StringSerializer)
    inst = IntegerSerializer()
    assert resolve_serializer("k", inst) is inst
    assert isinstance(resolve_serializer("k", JsonSerializer), JsonSerializer)
    f = resolve_serializer("k", lambda v: v.upper().encode())
    assert f.serialize("t", "ab") == b"AB"
    g = resolve_deserializer("k", lambda b: b[::-1])
    assert g.deserialize("t", b"ab") == b"ba"


def test_unknown_name_is_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"value\.serializer"):
        resolve_serializer("value.serializer", "protobuf")
    with pytest.raises(ConfigurationError, match=r"key\.deserializer"):
        resolve_deserializer("key.deserializer", 42)


def test_errors_are_serialization_errors() -> None:
    with pytest.raises(SerializationError):
        IntegerSerializer().serialize("t", 2**31)
    with pytest.raises(SerializationError):
        IntegerSerializer().serialize("t", "1")  # type: ignore[arg-type]  # a str: the bad input under test
    with pytest.raises(SerializationError):
        IntegerDeserializer().deserialize("t", b"\x00\x01")
    with pytest.raises(SerializationError):
        JsonSerializer().serialize("t", object())
    with pytest.raises(SerializationError):
        JsonDeserializer().deserialize("t", b"{")
    with pytest.raises(SerializationError):
        resolve_serializer("k", "bytes").serialize("t", "text")
    with pytest.raises(SerializationError):
        resolve_serializer("k", lambda v: 1 / 0).serialize("t", 1)
    with pytest.raises(SerializationError):
        resolve_deserializer("k", "str").deserialize("t", b"\xff\xfe")
