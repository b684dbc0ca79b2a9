"""Shared pieces of the wire codec: :class:`FileRegion`, the buffer/chunk type aliases, the struct
formats, zig-zag helpers and the constants generated code uses (``ZERO_UUID``, ``NO_TAGS``)."""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import IO, Union

ZERO_UUID = uuid.UUID(int=0)
"""Kafka's ``Uuid.ZERO_UUID`` (all zero bits): the default of every ``uuid`` field."""

NO_TAGS: list[tuple[int, bytes]] | None = None
"""Typed ``None`` for generated code: "no unknown tagged fields"."""

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_F64 = struct.Struct(">d")
_U8 = struct.Struct(">B")

_INLINE_RECORDS_MAX = 512
"""Records payloads shorter than this are copied into the current chunk instead of becoming a chunk."""


@dataclass(frozen=True, slots=True)
class FileRegion:
    """A byte range of a file, sent with ``socket.sendfile`` by the transport (broker Fetch responses).

    ``file`` is a binary file object or a raw file descriptor; ``offset`` and ``length`` are in bytes.
    """

    file: IO[bytes] | int
    offset: int
    length: int

    def __len__(self) -> int:
        return self.length


Buffer = Union[bytes, bytearray, memoryview]
RecordsLike = Union[bytes, bytearray, memoryview, FileRegion]
Chunk = Union[bytes, bytearray, memoryview, FileRegion]


def _nbytes(b: Buffer | FileRegion) -> int:
    """Length in bytes (a memoryview's ``len`` counts items, not bytes)."""
    return b.nbytes if isinstance(b, memoryview) else len(b)


def _zigzag32(n: int) -> int:
    return ((n << 1) ^ (n >> 31)) & 0xFFFFFFFF


def _zigzag64(n: int) -> int:
    return ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
