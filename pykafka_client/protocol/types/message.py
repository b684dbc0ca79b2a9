"""The base of every generated message class (:class:`Message`), the machine-readable field description
generated classes carry in ``_SCHEMA`` (:class:`FieldSchema`) and :func:`write_checked`."""

from __future__ import annotations

import struct
from typing import ClassVar, NamedTuple

from typing_extensions import Self

from pykafka_client.errors import IllegalArgumentError, MessageDecodeError, UnsupportedVersionError
from pykafka_client.protocol.types.primitives import Buffer
from pykafka_client.protocol.types.reader import Reader
from pykafka_client.protocol.types.writer import Writer


class FieldSchema(NamedTuple):
    """One field of a generated message or struct, as declared in the JSON spec.

    Version ranges are inclusive ``(lo, hi)`` tuples (``hi`` = 32767 for an open range ``N+``) or ``None``
    for "none". ``default`` is the raw JSON default string (``None`` when the spec gives none).
    ``flexible_versions`` is the field-level override (only RequestHeader.ClientId has one: never compact).
    """

    name: str
    json_name: str
    type: str
    versions: tuple[int, int] | None
    nullable_versions: tuple[int, int] | None
    tag: int | None
    tagged_versions: tuple[int, int] | None
    default: str | None
    ignorable: bool
    flexible_versions: tuple[int, int] | str | None
    entity_type: str | None
    map_key: bool
    zero_copy: bool


class Message:
    """Base of every generated message/struct class (they are slotted dataclasses).

    Subclasses define ``read`` and ``write`` (generated, straight-line per version range) and the
    class attributes below. ``encode``/``decode`` wrap them for a whole buffer.
    """

    __slots__ = ()

    API_KEY: ClassVar[int | None] = None
    MESSAGE_TYPE: ClassVar[str] = "data"
    VALID_VERSIONS: ClassVar[tuple[int, int]] = (0, 0)
    FLEXIBLE_VERSIONS_MIN: ClassVar[int | None] = None
    _SCHEMA: ClassVar[tuple[FieldSchema, ...]] = ()

    def write(self, w: Writer, version: int) -> None:
        raise NotImplementedError

    @classmethod
    def read(cls, r: Reader, version: int) -> Self:
        raise NotImplementedError

    def encode(self, version: int) -> bytes:
        """The message encoded at ``version`` (raises UnsupportedVersionError outside VALID_VERSIONS)."""
        w = Writer()
        write_checked(self, w, version)
        return w.to_bytes()

    @classmethod
    def decode(cls, buf: Buffer, version: int) -> Self:
        """Decode a whole buffer at ``version``; trailing bytes raise MessageDecodeError."""
        r = Reader(buf)
        obj = cls.read(r, version)
        if r.pos != r.end:
            raise MessageDecodeError(f"{r.end - r.pos} trailing bytes after {cls.__qualname__} v{version}", r.pos)
        return obj

    @classmethod
    def unsupported_version(cls, version: int) -> UnsupportedVersionError:
        lo, hi = cls.VALID_VERSIONS
        return UnsupportedVersionError(f"{cls.__qualname__} version {version} is not in the valid range {lo}-{hi}")


def write_checked(msg: Message, w: Writer, version: int) -> None:
    """``msg.write(w, version)``, turning out-of-range numbers (``struct.error``) and strings that cannot
    be encoded into ``IllegalArgumentError`` naming the message."""
    try:
        msg.write(w, version)
    except (struct.error, OverflowError, UnicodeEncodeError) as e:
        raise IllegalArgumentError(f"cannot encode {type(msg).__qualname__} v{version}: {e}") from e
