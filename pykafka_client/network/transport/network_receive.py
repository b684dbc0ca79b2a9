"""Reading size-delimited frames off a transport (Java: ``common.network.NetworkReceive``).

A frame is a 4-byte big-endian signed size followed by that many payload bytes. :class:`FrameReader`
reads the size first, checks it against the maximum receive size, and only then allocates the payload
buffer (one ``bytearray`` of exactly that size, filled with ``recv_into``): no allocation is ever sized
by a length that has not been checked.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Literal, Protocol

from pykafka_client.errors import InvalidReceiveError
from pykafka_client.network.transport.positional_new import positional_new
from pykafka_client.network.transport.selectable import NetworkReceive
from pykafka_client.protocol.records import _native

#: Size prefix length in bytes.
SIZE_LENGTH = 4
#: Default maximum frame payload (Kafka's ``socket.request.max.bytes`` default, 100 MiB).
DEFAULT_MAX_RECEIVE_SIZE = 104_857_600
#: Java's ``NetworkReceive.UNLIMITED``: the size is only checked for being non-negative.
UNLIMITED = -1

#: the payload of an empty frame (shared)
EMPTY_PAYLOAD = memoryview(b"")
_SIZE = struct.Struct(">i")
#: a frame received, from every field positionally, without the Python frame of its __init__ (once per frame)
new_receive = positional_new(NetworkReceive)
#: The client's read buffer (:class:`BufferedFrameReader`): a frame that fits is read with the frames around it
#: in one ``recv``; a larger one gets a payload buffer of its own.
DEFAULT_READ_BUFFER_SIZE = 65_536


class ReadableTransport(Protocol):
    """What a :class:`FrameReader` needs: ``read_into`` returns the number of bytes read, 0 when
    nothing is available now, and -1 at end of stream."""

    def read_into(self, view: memoryview) -> int: ...


class FrameReader:
    """Accumulates one frame at a time for one connection.

    Invariants: ``complete()`` is true only once the whole payload is in; the payload buffer exists
    only after the size passed the check; a frame that is never completed is never handed out.
    """

    __slots__ = ("source", "max_size", "_size_buf", "_size_view", "_size_read", "_payload", "_payload_read", "_size")

    def __init__(self, source: str, max_size: int = DEFAULT_MAX_RECEIVE_SIZE) -> None:
        self.source = source
        self.max_size = max_size
        self._size_buf = bytearray(SIZE_LENGTH)
        # the views read into are made once (per connection; per frame for the payload), and sliced only to go on
        # with a part already read
        self._size_view = memoryview(self._size_buf)
        self._size_read = 0
        #: the current frame's payload buffer (a bytearray, or an mmap for a large pooled frame), as the view that is
        #: read into and handed out
        self._payload: memoryview | None = None
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

    def has_bytes_ahead(self) -> bool:
        """Bytes read off the socket past the current frame, for the next read to hand out (the broker's
        read-ahead reader only)."""
        return False

    def take_buffered_frame(self) -> NetworkReceive | Literal[False] | None:
        """The next frame when all of it was read ahead of the current one, with no socket read (the broker's
        read-ahead reader only); False when the memory pool refused it (it waits for memory); None when it is not
        all read ahead (:meth:`read_frame` reads it)."""
        return None

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
            self._payload = memoryview(frame_buffer(self._size))
        if self._payload is not None and self._payload_read < self._size:
            read = self._payload_read
            n = transport.read_into(self._payload[read:] if read else self._payload)
            if n < 0:
                return -1
            total += n
            self._payload_read += n
        return total

    def _read_size(self, transport: ReadableTransport) -> int:
        """Read (part of) the 4-byte size and check it once complete; bytes read or -1 at end of stream."""
        n = transport.read_into(self._size_view[self._size_read :] if self._size_read else self._size_view)
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
        receive = self.take_completed()
        if receive is None:
            raise AssertionError("take() called before the frame was complete")
        return receive

    def read_frame(self, transport: ReadableTransport) -> tuple[NetworkReceive | None, int]:
        """:meth:`read_from` then :meth:`take_completed` in one step: (the frame if it is complete now, else None; the
        bytes read, -1 at end of stream). Raises as :meth:`read_from`."""
        n = self.read_from(transport)
        return (None, -1) if n < 0 else (self.take_completed(), n)

    def take_completed(self) -> NetworkReceive | None:
        """:meth:`take` once the frame is complete, None before (one step for a caller that reads and takes)."""
        if not self.complete():
            return None
        payload = self._payload if self._payload is not None else EMPTY_PAYLOAD
        self._size_read = 0
        self._payload = None
        self._payload_read = 0
        self._size = -1
        return new_receive(self.source, payload, None)  # (no __init__ frame: one a frame)


def _read_into(transport: ReadableTransport, recv_into: Callable[[memoryview], int] | None, view: memoryview) -> int:
    """``transport.read_into(view)``, or its plaintext socket's ``recv_into`` with the same result."""
    if recv_into is None:
        return transport.read_into(view)
    try:
        return recv_into(view) or -1
    except (BlockingIOError, InterruptedError):
        return 0


def frame_buffer(size: int) -> bytearray:
    """A payload buffer of ``size`` bytes that is filled whole before anyone reads it: ``bytearray(size)``, but not
    zeroed first when the compiled kernel is on (a 16 KiB produce request's zeroing cost as much as its parse)."""
    kernel = _native.kernel
    return bytearray(size) if kernel is None else kernel.frame_buffer(size)


def check_receive_size(size: int, max_size: int) -> None:
    """Raise :class:`InvalidReceiveError` for a negative size or one over ``max_size`` (unless
    ``max_size`` is :data:`UNLIMITED`). ``size == max_size`` is allowed."""
    if size < 0:
        raise InvalidReceiveError(f"Invalid receive (size = {size})")
    if max_size != UNLIMITED and size > max_size:
        raise InvalidReceiveError(f"Invalid receive (size = {size} larger than {max_size})")


class BufferedFrameReader:
    """Reads frames for a client connection through one receive buffer: a single ``read_into`` can bring in
    the size and the payload of several frames at once, and a read shorter than the free space means the
    socket had nothing more, so no further read (nor the would-block it ends with) follows it.

    Frames that fit the buffer are copied out of it (a response is handed out in a buffer of its own, never
    a view of memory that the next read overwrites); a frame larger than the buffer gets a payload buffer of
    exactly its size once its size has been checked, and the rest of it is read straight into that buffer.
    The selector polls level-triggered, so stopping after a short read loses nothing: bytes left in the socket
    make it readable again, and whole frames left in this buffer (over ``max_receives``) are reported by
    :meth:`has_buffered_frame`.

    Used by the client's channels (:meth:`Selector.connect`); the broker's accepted channels keep
    :class:`FrameReader` or its pooled variant (one request at a time per connection).

    Its state (``buf``, ``start``, ``end``, ``payload``, ``payload_read``) is public: the kernel's ``read_frames``
    (used by :meth:`KafkaChannel.read_frames` on a plaintext socket) is this class's :meth:`read_frames` compiled,
    and reads and keeps the same fields."""

    __slots__ = ("source", "max_size", "buf", "_view", "start", "end", "payload", "payload_read")

    def __init__(self, source: str, max_size: int = DEFAULT_MAX_RECEIVE_SIZE,
                 buffer_size: int = DEFAULT_READ_BUFFER_SIZE) -> None:
        if buffer_size < SIZE_LENGTH:
            raise ValueError(f"the read buffer must hold at least a frame size ({SIZE_LENGTH} bytes), got {buffer_size}")
        self.source = source
        self.max_size = max_size
        self.buf = bytearray(buffer_size)
        self._view = memoryview(self.buf)
        self.start = 0  # the unread bytes are buf[start:end]
        self.end = 0
        # a frame larger than the buffer, being read into its own buffer (its size already checked)
        self.payload: bytearray | None = None
        self.payload_read = 0

    def bytes_pending(self) -> bool:
        """True when part of a frame (or a whole one not handed out yet) has been read."""
        return self.end > self.start or self.payload is not None

    def has_buffered_frame(self) -> bool:
        """True when the buffer holds a whole frame (or a size that fails the check): the next read hands it
        out (or raises) without the socket becoming readable."""
        avail = self.end - self.start
        if self.payload is not None or avail < SIZE_LENGTH:
            return False
        size = _SIZE.unpack_from(self.buf, self.start)[0]
        return size < 0 or avail - SIZE_LENGTH >= size or (self.max_size != UNLIMITED and size > self.max_size)

    def close(self) -> None:
        """Drop what was read of an incomplete frame."""
        self.start = self.end = 0
        self.payload = None
        self.payload_read = 0

    def read_frames(
        self,
        transport: ReadableTransport,
        max_receives: int,
        max_bytes: int,
        recv_into: Callable[[memoryview], int] | None = None,
    ) -> tuple[list[NetworkReceive], int, bool]:
        """Read up to ``max_receives`` whole frames, or until about ``max_bytes`` bytes were read, or until the
        socket has nothing more. Returns the frames, the bytes read and whether the stream ended (the caller
        closes the connection: what was read of an incomplete frame is lost). Raises
        :class:`InvalidReceiveError` for a bad frame size.

        ``recv_into``: the ``recv_into`` of the plaintext socket under ``transport``, read instead of
        ``transport.read_into`` (the same bytes, one call less per read)."""
        receives: list[NetworkReceive] = []
        total = 0
        buf = self.buf
        view = self._view
        drained = False
        while True:
            if self.payload is None and self.end - self.start >= SIZE_LENGTH:
                # hand out the whole frames in the buffer (up to max_receives); the start of a frame larger than the
                # buffer moves to a payload buffer of its own
                start = self.start
                end = self.end
                while len(receives) < max_receives and end - start >= SIZE_LENGTH:
                    size = _SIZE.unpack_from(buf, start)[0]
                    if size < 0 or (self.max_size != UNLIMITED and size > self.max_size):
                        self.start = start
                        check_receive_size(size, self.max_size)
                    frame_end = start + SIZE_LENGTH + size
                    if frame_end > end:
                        if SIZE_LENGTH + size > len(buf):
                            have = end - start - SIZE_LENGTH
                            large = bytearray(size)
                            large[:have] = view[start + SIZE_LENGTH : end]
                            self.payload = large
                            self.payload_read = have
                            start = end = 0
                        break
                    receives.append(
                        new_receive(self.source, memoryview(buf[start + SIZE_LENGTH : frame_end]) if size else EMPTY_PAYLOAD, None)
                    )
                    start = frame_end
                if start == end:
                    start = end = 0
                self.start = start
                self.end = end
            if drained or len(receives) >= max_receives or total >= max_bytes:
                return receives, total, False
            payload = self.payload
            if payload is not None:  # a frame larger than the buffer: the rest straight into its own buffer
                want = len(payload) - self.payload_read
                n = _read_into(transport, recv_into, memoryview(payload)[self.payload_read :])
                if n < 0:
                    return receives, total, True
                total += n
                self.payload_read += n
                if n < want:  # the socket is drained
                    return receives, total, False
                receives.append(NetworkReceive(self.source, memoryview(payload)))
                self.payload = None
                self.payload_read = 0
                continue
            start = self.start
            end = self.end
            if start > 0:  # the start of a frame is left: move it to the front
                view[: end - start] = view[start:end]
                end -= start
                self.start = 0
            want = len(view) - end
            if recv_into is None:
                n = transport.read_into(view[end:])
            else:  # PlaintextTransportLayer.read_into, without its frame (the common read)
                try:
                    n = recv_into(view[end:]) or -1
                except (BlockingIOError, InterruptedError):
                    n = 0
            if n < 0:
                self.end = end
                return receives, total, True
            total += n
            self.end = end + n
            drained = n < want  # a short read: the socket is drained; hand out what came, and no read more
