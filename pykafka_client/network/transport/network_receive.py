"""Reading size-delimited frames off a transport (Java: ``common.network.NetworkReceive``).

A frame is a 4-byte big-endian signed size followed by that many payload bytes. :class:`FrameReader`
reads the size first, checks it against the maximum receive size, and only then allocates the payload
buffer (one ``bytearray`` of exactly that size, filled with ``recv_into``): no allocation is ever sized
by a length that has not been checked.
"""

from __future__ import annotations

import mmap
from typing import Protocol

from pykafka_client.errors import InvalidReceiveError
from pykafka_client.network.transport.selectable import NetworkReceive

#: Size prefix length in bytes.
SIZE_LENGTH = 4
#: Default maximum frame payload (Kafka's ``socket.request.max.bytes`` default, 100 MiB).
DEFAULT_MAX_RECEIVE_SIZE = 104_857_600
#: Java's ``NetworkReceive.UNLIMITED``: the size is only checked for being non-negative.
UNLIMITED = -1

_EMPTY = memoryview(b"")


class ReadableTransport(Protocol):
    """What a :class:`FrameReader` needs: ``read_into`` returns the number of bytes read, 0 when
    nothing is available now, and -1 at end of stream."""

    def read_into(self, view: memoryview) -> int: ...


class FrameReader:
    """Accumulates one frame at a time for one connection.

    Invariants: ``complete()`` is true only once the whole payload is in; the payload buffer exists
    only after the size passed the check; a frame that is never completed is never handed out.
    """

    __slots__ = ("source", "max_size", "_size_buf", "_size_read", "_payload", "_payload_read", "_size")

    def __init__(self, source: str, max_size: int = DEFAULT_MAX_RECEIVE_SIZE) -> None:
        self.source = source
        self.max_size = max_size
        self._size_buf = bytearray(SIZE_LENGTH)
        self._size_read = 0
        self._payload: bytearray | mmap.mmap | None = None
        self._payload_read = 0
        self._size = -1

    def size_read(self) -> bool:
        """True once the 4 size bytes are in (and were valid)."""
        return self._size >= 0

    def bytes_pending(self) -> bool:
        """True when part of a frame has been read (a disconnect now loses that frame)."""
        return self._size_read > 0

    def waiting_for_memory(self) -> bool:
        """True when the last read stopped because no memory was available (pooled readers only)."""
        return False

    def waiting_for_large(self) -> bool:
        """The frame waiting for memory is larger than the pool's small-frame size."""
        return False

    def close(self) -> None:
        """Drop a partly read frame (pooled readers give its memory back)."""

    def complete(self) -> bool:
        return self._size >= 0 and self._payload_read == self._size

    def read_from(self, transport: ReadableTransport) -> int:
        """Read what is needed for the current frame. Returns the bytes read (0 if none were
        available) or -1 at end of stream. Raises :class:`InvalidReceiveError` for a bad size."""
        total = 0
        if self._size < 0:
            total = self._read_size(transport)
            if total < 0 or self._size <= 0:  # end of stream, size still incomplete, or an empty frame
                return total
            self._payload = bytearray(self._size)
        if self._payload is not None and self._payload_read < self._size:
            n = transport.read_into(memoryview(self._payload)[self._payload_read :])
            if n < 0:
                return -1
            total += n
            self._payload_read += n
        return total

    def _read_size(self, transport: ReadableTransport) -> int:
        """Read (part of) the 4-byte size and check it once complete; bytes read or -1 at end of stream."""
        n = transport.read_into(memoryview(self._size_buf)[self._size_read :])
        if n < 0:
            return -1
        self._size_read += n
        if self._size_read == SIZE_LENGTH:
            size = int.from_bytes(self._size_buf, "big", signed=True)
            check_receive_size(size, self.max_size)
            self._size = size
        return n

    def take(self) -> NetworkReceive:
        """Hand out the completed frame and reset for the next one."""
        if not self.complete():
            raise AssertionError("take() called before the frame was complete")
        payload = memoryview(self._payload) if self._payload is not None else _EMPTY
        self._size_read = 0
        self._payload = None
        self._payload_read = 0
        self._size = -1
        return NetworkReceive(source=self.source, payload=payload)


def check_receive_size(size: int, max_size: int) -> None:
    """Raise :class:`InvalidReceiveError` for a negative size or one over ``max_size`` (unless
    ``max_size`` is :data:`UNLIMITED`). ``size == max_size`` is allowed."""
    if size < 0:
        raise InvalidReceiveError(f"Invalid receive (size = {size})")
    if max_size != UNLIMITED and size > max_size:
        raise InvalidReceiveError(f"Invalid receive (size = {size} larger than {max_size})")
