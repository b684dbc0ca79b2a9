"""Serializers and deserializers for keys and values (Java ``common.serialization``).

Both sides share one shape: ``serialize(topic, data, headers=None) -> bytes | None`` and
``deserialize(topic, data, headers=None) -> object``. ``None`` always maps to ``None`` (a null key or
a tombstone value) in both directions, as in Java.

Typing: :class:`Serializer` is generic over what it accepts and :class:`Deserializer` over what it
returns (``StringDeserializer`` is a ``Deserializer[str | None]``: a null key stays ``None``). A
:class:`~pykafka_client.KafkaConsumer` built with deserializer objects is typed by them
(``KafkaConsumer[str | None, str | None]``); names and plain functions work at run time but type as ``Any``,
as does a side with no deserializer object when a config mapping is given (it may name one): annotate
the variable to state the types.

Built-ins (also reachable by short name through :func:`resolve_serializer` /
:func:`resolve_deserializer`, which is how ``key.serializer`` / ``value.deserializer`` configs are
interpreted):

=============  ===========================================================================
name           encoding
=============  ===========================================================================
``bytes``      bytes / bytearray / memoryview passed through (Java ByteArraySerializer)
``str``        UTF-8 text (Java StringSerializer; other encodings via ``StringSerializer(enc)``)
``int``        4-byte big-endian signed (Java IntegerSerializer)
``long``       8-byte big-endian signed (Java LongSerializer)
``double``     8-byte IEEE-754 big-endian (Java DoubleSerializer)
``uuid``       36-char text form, as Java UUIDSerializer
``json``       ``json.dumps`` compact UTF-8 (deserializer: ``json.loads``)
=============  ===========================================================================

A config value may be one of those names, an instance with ``serialize``/``deserialize``, a class
with a no-argument constructor, or a plain function ``f(data) -> bytes``. Any failure inside a
serializer surfaces as :class:`~pykafka_client.errors.SerializationError`.
"""

from __future__ import annotations

import json
import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pykafka_client.errors import ConfigurationError, SerializationError

#: Record headers as the client sees them: ``(key, value)`` pairs.
Headers = Sequence[tuple[str, "bytes | None"]]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
T_contra = TypeVar("T_contra", contravariant=True)
_N = TypeVar("_N", int, float)


@runtime_checkable
class Serializer(Protocol[T_contra]):
    """Turns a key or value of type ``T_contra`` into bytes (``None`` stays ``None``)."""

    def serialize(self, topic: str, data: T_contra, headers: Headers | None = None) -> bytes | None: ...


@runtime_checkable
class Deserializer(Protocol[T_co]):
    """Turns bytes (or ``None``: a null key, a tombstone) back into a ``T_co``."""

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> T_co: ...


class ByteArraySerializer:
    def serialize(
        self, topic: str, data: bytes | bytearray | memoryview | None, headers: Headers | None = None
    ) -> bytes | None:
        if data is None or isinstance(data, bytes):
            return data
        if isinstance(data, (bytearray, memoryview)):
            return bytes(data)
        raise SerializationError(f"ByteArraySerializer expects bytes, got {type(data).__name__} (topic {topic})")


class ByteArrayDeserializer:
    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> bytes | None:
        return None if data is None else bytes(data)


class StringSerializer:
    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, data: str | None, headers: Headers | None = None) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, str):
            raise SerializationError(f"StringSerializer expects str, got {type(data).__name__} (topic {topic})")
        try:
            return data.encode(self.encoding)
        except UnicodeError as e:
            raise SerializationError(f"cannot encode string as {self.encoding}: {e}") from e


class StringDeserializer:
    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> str | None:
        if data is None:
            return None
        try:
            return bytes(data).decode(self.encoding)
        except UnicodeError as e:
            raise SerializationError(f"cannot decode {self.encoding} string: {e}") from e


class _StructSerializer(Generic[_N]):
    """Fixed-size numbers; each subclass is both the serializer and (subclassed) the deserializer."""

    _fmt: struct.Struct
    _what: str

    def serialize(self, topic: str, data: _N | None, headers: Headers | None = None) -> bytes | None:
        if data is None:
            return None
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise SerializationError(f"{type(self).__name__} expects {self._what}, got {type(data).__name__}")
        try:
            return self._fmt.pack(data)
        except struct.error as e:
            raise SerializationError(f"{type(self).__name__}: {data!r} out of range: {e}") from e

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> _N | None:
        if data is None:
            return None
        if len(data) != self._fmt.size:
            raise SerializationError(
                f"{type(self).__name__}: size of data received is not {self._fmt.size} (got {len(data)})"
            )
        value: _N = self._fmt.unpack(data)[0]
        return value


class IntegerSerializer(_StructSerializer[int]):
    _fmt = struct.Struct(">i")
    _what = "an int in the 32-bit signed range"


class IntegerDeserializer(IntegerSerializer):
    pass


class LongSerializer(_StructSerializer[int]):
    _fmt = struct.Struct(">q")
    _what = "an int in the 64-bit signed range"


class LongDeserializer(LongSerializer):
    pass


class DoubleSerializer(_StructSerializer[float]):
    _fmt = struct.Struct(">d")
    _what = "a float"


class DoubleDeserializer(DoubleSerializer):
    pass


class UUIDSerializer:
    def serialize(self, topic: str, data: uuid.UUID | None, headers: Headers | None = None) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, uuid.UUID):
            raise SerializationError(f"UUIDSerializer expects uuid.UUID, got {type(data).__name__}")
        return str(data).encode("ascii")


class UUIDDeserializer:
    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> uuid.UUID | None:
        if data is None:
            return None
        try:
            return uuid.UUID(bytes(data).decode("ascii"))
        except (ValueError, UnicodeError) as e:
            raise SerializationError(f"not a UUID: {e}") from e


class JsonSerializer:
    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        if data is None:
            return None
        try:
            return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise SerializationError(f"cannot serialize to JSON: {e}") from e


class JsonDeserializer:
    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        if data is None:
            return None
        try:
            return json.loads(bytes(data))
        except (ValueError, UnicodeError) as e:
            raise SerializationError(f"invalid JSON: {e}") from e


class FunctionSerializer:
    """Adapts a plain function ``f(data) -> bytes`` (``None`` is passed through without calling it)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def serialize(self, topic: str, data: Any, headers: Headers | None = None) -> bytes | None:
        if data is None:
            return None
        try:
            out = self.fn(data)
        except SerializationError:
            raise
        except Exception as e:
            raise SerializationError(f"serializer {self.fn!r} failed: {e}") from e
        if out is None or isinstance(out, bytes):
            return out
        if isinstance(out, (bytearray, memoryview)):
            return bytes(out)
        raise SerializationError(f"serializer {self.fn!r} returned {type(out).__name__}, not bytes")


class FunctionDeserializer(Generic[T]):
    """Adapts a plain function ``f(bytes) -> T`` (``None`` is passed through without calling it)."""

    def __init__(self, fn: Callable[[bytes], T]) -> None:
        self.fn = fn

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> T | None:
        if data is None:
            return None
        try:
            return self.fn(data)
        except SerializationError:
            raise
        except Exception as e:
            raise SerializationError(f"deserializer {self.fn!r} failed: {e}") from e


SERIALIZERS: dict[str, Callable[[], Serializer[Any]]] = {
    "bytes": ByteArraySerializer,
    "str": StringSerializer,
    "string": StringSerializer,
    "int": IntegerSerializer,
    "integer": IntegerSerializer,
    "long": LongSerializer,
    "double": DoubleSerializer,
    "uuid": UUIDSerializer,
    "json": JsonSerializer,
    "org.apache.kafka.common.serialization.ByteArraySerializer": ByteArraySerializer,
    "org.apache.kafka.common.serialization.StringSerializer": StringSerializer,
    "org.apache.kafka.common.serialization.IntegerSerializer": IntegerSerializer,
    "org.apache.kafka.common.serialization.LongSerializer": LongSerializer,
    "org.apache.kafka.common.serialization.DoubleSerializer": DoubleSerializer,
    "org.apache.kafka.common.serialization.UUIDSerializer": UUIDSerializer,
}

DESERIALIZERS: dict[str, Callable[[], Deserializer[Any]]] = {
    "bytes": ByteArrayDeserializer,
    "str": StringDeserializer,
    "string": StringDeserializer,
    "int": IntegerDeserializer,
    "integer": IntegerDeserializer,
    "long": LongDeserializer,
    "double": DoubleDeserializer,
    "uuid": UUIDDeserializer,
    "json": JsonDeserializer,
    "org.apache.kafka.common.serialization.ByteArrayDeserializer": ByteArrayDeserializer,
    "org.apache.kafka.common.serialization.StringDeserializer": StringDeserializer,
    "org.apache.kafka.common.serialization.IntegerDeserializer": IntegerDeserializer,
    "org.apache.kafka.common.serialization.LongDeserializer": LongDeserializer,
    "org.apache.kafka.common.serialization.DoubleDeserializer": DoubleDeserializer,
    "org.apache.kafka.common.serialization.UUIDDeserializer": UUIDDeserializer,
}


def _resolve(
    config_name: str,
    value: Any,
    kind: str,
    registry: dict[str, Callable[[], Any]],
    protocol: type,
    from_function: Callable[[Callable[..., Any]], Any],
) -> Any:
    """A (de)serializer from a config value: a registered name, an instance of ``protocol``, a class to
    instantiate, or a plain function (wrapped by ``from_function``)."""
    if isinstance(value, str):
        factory = registry.get(value) or registry.get(value.lower())
        if factory is None:
            raise ConfigurationError(
                f"Invalid value {value!r} for configuration {config_name}: unknown {kind} "
                f"(built-ins: {', '.join(sorted(k for k in registry if '.' not in k))})"
            )
        return factory()
    if isinstance(value, type):
        try:
            value = value()
        except Exception as e:
            raise ConfigurationError(f"Invalid value for configuration {config_name}: cannot instantiate: {e}") from e
    if isinstance(value, protocol):
        return value
    if callable(value):
        return from_function(value)
    raise ConfigurationError(f"Invalid value {value!r} for configuration {config_name}: not a {kind}")


def resolve_serializer(config_name: str, value: Any) -> Serializer[Any]:
    """Interpret a ``key.serializer`` / ``value.serializer`` config value (see module doc)."""
    result: Serializer[Any] = _resolve(config_name, value, "serializer", SERIALIZERS, Serializer, FunctionSerializer)
    return result


def resolve_deserializer(config_name: str, value: Any) -> Deserializer[Any]:
    """Interpret a ``key.deserializer`` / ``value.deserializer`` config value (see module doc)."""
    result: Deserializer[Any] = _resolve(
        config_name, value, "deserializer", DESERIALIZERS, Deserializer, FunctionDeserializer
    )
    return result
