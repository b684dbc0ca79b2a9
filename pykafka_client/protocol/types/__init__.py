"""Wire primitives of the Kafka protocol: :class:`Reader`, :class:`Writer`, :class:`FileRegion`.

Java: ``org.apache.kafka.common.protocol.{Readable,Writable,ByteBufferAccessor}``.

Invariants
----------
* Every ``Reader.read_*`` checks the bytes available *before* reading and raises
  :class:`~pykafka_client.errors.MessageDecodeError` (with the byte offset) on truncation.
* Every length read off the wire (string, bytes, array count, compact length) is checked against the
  bytes that remain before anything is allocated; negative lengths are rejected except ``-1`` (null)
  where the caller allows null. Varints longer than 5 (int) / 10 (long) bytes are rejected.
* Strings must be valid UTF-8 on decode (invalid UTF-8 raises ``MessageDecodeError``; Java would
  substitute U+FFFD) and at most 32767 bytes long, compact or not (as Java's generated code enforces, both
  ways).
* ``Writer`` accumulates bytes in ``buf`` (a ``bytearray``); :meth:`Writer.write_records` appends large
  record payloads (and every :class:`FileRegion`) as their own chunk without copying them.
  ``chunks()`` returns the pieces in order; ``to_bytes()`` joins them and refuses ``FileRegion`` chunks
  (reading a file is I/O, and codecs do no I/O): use ``chunks()`` when a FileRegion may be present.

The package also holds :class:`Message`, the base of every generated message class, and
:class:`FieldSchema`, the machine-readable field description generated classes carry in ``_SCHEMA``.

Layout: :mod:`.primitives` (FileRegion, buffer aliases, constants), :mod:`.reader` (Reader),
:mod:`.writer` (Writer), :mod:`.message` (Message, FieldSchema, write_checked). Import from this package:
the generated messages do (``from pykafka_client.protocol.types import ...``).
"""

from __future__ import annotations

from pykafka_client.protocol.types.message import FieldSchema, Message, write_checked
from pykafka_client.protocol.types.primitives import NO_TAGS, ZERO_UUID, Buffer, Chunk, FileRegion, RecordsLike
from pykafka_client.protocol.types.reader import Reader
from pykafka_client.protocol.types.writer import Writer

__all__ = [
    "NO_TAGS",
    "ZERO_UUID",
    "Buffer",
    "Chunk",
    "FieldSchema",
    "FileRegion",
    "Message",
    "Reader",
    "RecordsLike",
    "Writer",
    "write_checked",
]
