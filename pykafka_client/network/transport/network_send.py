"""Writing a :class:`~pykafka_client.network.transport.selectable.NetworkSend` to a transport, in pieces.

Java: ``common.network.NetworkSend`` + ``ByteBufferSend`` / ``DefaultRecordsSend``. A send is a list of
pieces: bytes-like buffers (written together with one gathering ``sendmsg`` call where the transport
allows it, so record bytes are never concatenated) and file regions (written with ``sendfile``, zero
copy on plaintext). :class:`SendWriter` remembers how far it got, so a partial write resumes exactly
where the kernel stopped.
"""

from __future__ import annotations

from typing import Protocol, Sequence, Union, runtime_checkable

from pykafka_client.errors import IllegalArgumentError
from pykafka_client.network.transport.selectable import NetworkSend
from pykafka_client.protocol.types import FileRegion

__all__ = ["MAX_IOV", "FileRegion", "FileRegionLike", "SendWriter", "WritableTransport", "framed_send", "piece_length", "region_fd", "size_prefixed"]

#: Most pieces handed to one ``sendmsg`` call (Linux ``IOV_MAX`` is 1024).
MAX_IOV = 1024


@runtime_checkable
class FileRegionLike(Protocol):
    """Anything with ``offset``/``length`` and a file (``fileno()``, an ``fd`` or a ``file``
    attribute), such as :class:`pykafka_client.protocol.types.FileRegion`."""

    @property
    def offset(self) -> int: ...

    @property
    def length(self) -> int: ...


Piece = Union[memoryview, FileRegionLike]


def region_fd(region: object) -> int:
    """The file descriptor behind a file region (see :class:`FileRegionLike`)."""
    fileno = getattr(region, "fileno", None)
    if callable(fileno):
        return int(fileno())
    for attr in ("fd", "file"):
        f = getattr(region, attr, None)
        if isinstance(f, int):
            return f
        if f is not None and callable(getattr(f, "fileno", None)):
            return int(f.fileno())
    raise IllegalArgumentError(f"file region {region!r} has no file descriptor")


def _as_piece(buf: object) -> Piece:
    if isinstance(buf, memoryview):
        return buf if buf.format == "B" and buf.ndim == 1 else buf.cast("B")
    if isinstance(buf, (bytes, bytearray)):
        return memoryview(buf)
    # the exact class first: a runtime Protocol isinstance costs microseconds per call on the fetch path
    if type(buf) is FileRegion or isinstance(buf, FileRegionLike):
        if buf.offset < 0 or buf.length < 0:
            raise IllegalArgumentError(f"invalid file region offset {buf.offset} length {buf.length}")
        return buf
    raise IllegalArgumentError(f"cannot send a {type(buf).__name__}: expected a bytes-like object or a file region")


def piece_length(piece: Piece) -> int:
    return piece.nbytes if isinstance(piece, memoryview) else piece.length


def size_prefixed(destination: str, payload: Sequence[object], extra: object = None) -> NetworkSend:
    """A :class:`NetworkSend` of ``payload`` pieces preceded by their total size (4 bytes)."""
    pieces = [_as_piece(p) for p in payload]
    size = sum(piece_length(p) for p in pieces)
    if size > 0x7FFFFFFF:
        raise IllegalArgumentError(f"frame of {size} bytes is larger than a 4-byte size allows")
    buffers: list[object] = [size.to_bytes(4, "big"), *pieces]
    return NetworkSend(destination=destination, buffers=buffers, size=size + 4, extra=extra)


def framed_send(destination: str, frame: Sequence[object], extra: object = None) -> NetworkSend:
    """A :class:`NetworkSend` of pieces that already start with their size prefix (what
    ``pykafka_client.protocol.headers.encode_request/encode_response`` return)."""
    pieces = [_as_piece(p) for p in frame]  # converted once; SendWriter takes them as they are
    size = sum(piece_length(p) for p in pieces)
    return NetworkSend(destination=destination, buffers=pieces, size=size, extra=extra)


class WritableTransport(Protocol):
    """What a :class:`SendWriter` needs. Both return the bytes written (0 when the socket is full)."""

    def write_buffers(self, views: Sequence[memoryview]) -> int: ...

    def transfer_file(self, fd: int, offset: int, count: int) -> int: ...


class SendWriter:
    """Progress of one :class:`NetworkSend` through its pieces. ``send.written`` is kept current."""

    __slots__ = ("send", "_pieces", "_index", "_offset", "_views_only")

    def __init__(self, send: NetworkSend, written: int = 0) -> None:
        """``written``: bytes of ``send`` that already went out (a gathering write that the transport took only part
        of, see ``KafkaChannel.write_new_send``); the writer resumes after them."""
        pieces: list[Piece] = []
        total = 0
        views_only = True
        for b in send.buffers:
            # bytes (what the request encoders return) without the general conversion: one call less per piece
            piece: Piece
            if type(b) is bytes or type(b) is bytearray:  # (the produce request's header is a bytearray)
                piece = memoryview(b)
            elif type(b) is memoryview and b.ndim == 1 and b.format == "B":  # as _as_piece takes it
                piece = b
            else:
                piece = _as_piece(b)
            if type(piece) is memoryview:
                n = piece.nbytes
            else:
                n = piece_length(piece)
                views_only = False
            total += n
            if n > 0:
                pieces.append(piece)
        if total != send.size:
            raise IllegalArgumentError(
                f"send to {send.destination} declares size {send.size} but its buffers hold {total} bytes"
            )
        self.send = send
        self._pieces: list[Piece] = pieces
        self._index = 0
        self._offset = 0  # within the current piece
        #: every piece is a memoryview (no file region): the whole send may go out in one gathering write
        self._views_only = views_only and len(pieces) <= MAX_IOV
        if written:
            self._advance(written)

    def completed(self) -> bool:
        return self._index >= len(self._pieces)

    def _advance(self, n: int) -> None:
        self.send.written += n
        while n > 0:
            remaining = piece_length(self._pieces[self._index]) - self._offset
            if n < remaining:
                self._offset += n
                return
            n -= remaining
            self._index += 1
            self._offset = 0

    def write_to(self, transport: WritableTransport) -> int:
        """Write as much as the transport takes now; returns the bytes written."""
        pieces = self._pieces
        if self._views_only and self._index == 0 and self._offset == 0 and pieces:
            # The whole send in one gathering write (a produce request's frame: a header and its batches).
            wanted = self.send.size - self.send.written
            n = transport.write_buffers(pieces)  # type: ignore[arg-type]  # every piece is a memoryview
            if n <= 0:
                return 0
            if n == wanted:
                self.send.written += n
                self._index = len(pieces)
                return n
            self._advance(n)
            return n
        total = 0
        while not self.completed():
            piece = self._pieces[self._index]
            if isinstance(piece, memoryview):
                views: list[memoryview] = [piece[self._offset :]]
                wanted = views[0].nbytes
                j = self._index + 1
                while j < len(self._pieces) and len(views) < MAX_IOV:
                    nxt = self._pieces[j]
                    if not isinstance(nxt, memoryview):
                        break
                    views.append(nxt)
                    wanted += nxt.nbytes
                    j += 1
                n = transport.write_buffers(views)
            else:
                wanted = piece.length - self._offset
                n = transport.transfer_file(region_fd(piece), piece.offset + self._offset, wanted)
            if n <= 0:
                break
            self._advance(n)
            total += n
            if n < wanted:
                break
        return total

