"""A bounded pool of receive memory (Java: ``common.memory.MemoryPool`` / ``SimpleMemoryPool``), and the
frame reader that draws on it. Broker side only: a client Selector has no pool and reads as before.

The pool only counts bytes (Python owns the buffers): :meth:`SimpleMemoryPool.try_allocate` reserves,
:meth:`SimpleMemoryPool.release` gives back. It is non-strict, as Kafka's ``SocketServer`` creates it:
an allocation succeeds whenever some memory is left, even if it is larger than what is left.

Going past Kafka:

* A large frame's buffer grows with the bytes that actually arrive. Frames over :data:`EAGER_FRAME_BYTES`
  (1 MiB) get an anonymous ``mmap`` of the announced size, which the kernel backs with pages only as they
  are written, and reserve pool memory in :data:`GROWTH_STEP_BYTES` steps just ahead of the bytes read.
  Announcing 100 MB therefore costs nothing until the bytes come, and the memory goes back to the OS as
  soon as the frame is dropped (no allocator arena keeps it). Frames up to 1 MiB (nearly every real
  request: ``max.request.size`` is 1 MB) are allocated whole, as a plain ``bytearray``, once the pool
  grants their size: the cheap path, which a fresh mmap per frame is not (page faults).
* Frames over :data:`SMALL_FRAME_BYTES` (64 KiB) may use the pool only up to
  ``capacity - small_frame_reserve``: the rest stays for small frames (ApiVersions, Metadata, ordinary
  produce and fetch requests), so that connections stalled in the middle of large frames cannot starve
  everybody else.
* Large frames in progress that have used up the pool between them would wait for each other forever
  (they each hold part of the pool and none can finish). So when the pool refuses a large frame, one frame
  at a time may go on in *overdraft* past the bound until it is complete. The bound on the memory of
  frames is therefore ``queued.max.request.bytes`` plus one frame (``socket.request.max.bytes``) plus
  one growth step per reading connection; a connection that stalls, in overdraft or not, is closed after
  ``connections.max.idle.ms``.

Thread-safe: the Processors of all listeners share one pool.
"""

from __future__ import annotations

import mmap
import struct
import threading
from dataclasses import dataclass
from typing import Callable, Final, Literal, Protocol

from pykafka_client.network.transport.network_receive import (
    SIZE_LENGTH,
    FrameReader,
    ReadableTransport,
    check_receive_size,
    frame_buffer,
    new_receive,
)
from pykafka_client.network.transport.positional_new import positional_new
from pykafka_client.network.transport.selectable import NetworkReceive
from pykafka_client.protocol.records import _native

#: Frames up to this size may use the whole pool; larger ones leave the small-frame reserve alone.
SMALL_FRAME_BYTES: Final = 64 * 1024
#: Frames up to this size are allocated whole once the pool grants their size; larger ones grow as bytes arrive.
EAGER_FRAME_BYTES: Final = 1024 * 1024
#: How much pool memory a large frame reserves at a time, ahead of the bytes it reads.
GROWTH_STEP_BYTES: Final = 1024 * 1024
#: The part of the pool kept for small frames: min(capacity / 4, 8 MiB).
MAX_SMALL_FRAME_RESERVE: Final = 8 * 1024 * 1024


class MemoryPool(Protocol):
    def try_allocate(self, size: int, large: bool) -> bool:
        """Reserve ``size`` bytes; False when the pool has no room (the caller waits and retries)."""
        ...

    def try_overdraft(self, owner: object) -> bool:
        """Let ``owner``'s large frame go on past the bound (not counted) if no other frame does."""
        ...

    def release(self, size: int) -> None: ...

    def end_overdraft(self, owner: object) -> None:
        """``owner``'s frame is complete or dropped: the overdraft is free for another frame."""
        ...

    def has_room(self, large: bool) -> bool:
        """Whether an allocation of this kind could succeed now."""
        ...


class CountingMemoryPool(MemoryPool, Protocol):
    """A :class:`MemoryPool` that counts its bytes: :class:`SimpleMemoryPool` or the kernel's compiled one
    (:func:`new_memory_pool`)."""

    @property
    def capacity(self) -> int: ...

    @property
    def small_frame_reserve(self) -> int: ...

    @property
    def refused_total(self) -> int:
        """Allocations refused since start (a metric: how often reads were muted for memory)."""
        ...

    @property
    def available(self) -> int: ...

    @property
    def used(self) -> int: ...

    def is_out_of_memory(self) -> bool: ...


def small_frame_reserve(capacity: int) -> int:
    """The part of a pool of ``capacity`` bytes kept for small frames."""
    return min(capacity // 4, MAX_SMALL_FRAME_RESERVE)


def new_memory_pool(capacity: int) -> CountingMemoryPool:
    """The broker's request memory pool of ``capacity`` bytes: the compiled kernel's ``memory_counter`` when it is
    loaded (a frame's allocation and release are a C call each: no frame, no lock, the GIL making each atomic), else
    :class:`SimpleMemoryPool`, its reference."""
    kernel = _native.loaded_kernel()
    if kernel is None:
        return SimpleMemoryPool(capacity)
    pool: CountingMemoryPool = kernel.memory_counter(capacity, small_frame_reserve(capacity))
    return pool


class SimpleMemoryPool:
    """A non-strict byte counter bounded by ``capacity`` (``queued.max.request.bytes``)."""

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"memory pool capacity must be positive, got {capacity}")
        self.capacity = capacity
        self.small_frame_reserve = small_frame_reserve(capacity)
        self._available = capacity
        self._lock = threading.Lock()
        self._overdraft_owner: object = None
        #: allocations refused since start (a metric: how often reads were muted for memory)
        self.refused_total = 0

    def try_allocate(self, size: int, large: bool) -> bool:
        with self._lock:
            # what must stay available: large frames leave the small-frame reserve alone
            if self._available <= (self.small_frame_reserve if large else 0):
                self.refused_total += 1
                return False
            self._available -= size
            return True

    def try_overdraft(self, owner: object) -> bool:
        with self._lock:
            if self._overdraft_owner is not None and self._overdraft_owner is not owner:
                return False
            self._overdraft_owner = owner
            return True

    def end_overdraft(self, owner: object) -> None:
        with self._lock:
            if self._overdraft_owner is owner:
                self._overdraft_owner = None

    def release(self, size: int) -> None:
        with self._lock:
            self._available += size

    def has_room(self, large: bool) -> bool:
        return self._available > (self.small_frame_reserve if large else 0) or (large and self._overdraft_owner is None)

    @property
    def available(self) -> int:
        return self._available

    @property
    def used(self) -> int:
        return self.capacity - self._available

    def is_out_of_memory(self) -> bool:
        return self._available <= 0


@dataclass(eq=False, slots=True)
class _Release:
    """Gives a frame's reservation back to the pool once (idempotent). Made with :data:`_new_release`."""

    _pool: MemoryPool | None
    _size: int

    def __call__(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and self._size:
            pool.release(self._size)


def _release_maker() -> Callable[[MemoryPool | None, int], Callable[[], None]]:
    """The compiled kernel's ``release_once`` when it is loaded (no ``__init__`` frame to make one, and called with no
    ``__call__`` lookup nor frame of its own: the broker's Processor calls one a request), else ``_Release`` built
    without its Python ``__init__``."""
    kernel = _native.loaded_kernel()
    if kernel is not None:
        return kernel.release_once
    return positional_new(_Release)


#: ``_Release(pool, size)``, or the kernel's equivalent (one a received frame; the frame itself:
#: network_receive.new_receive)
_new_release = _release_maker()


class PooledFrameReader(FrameReader):
    """A :class:`FrameReader` whose payload memory comes from a :class:`MemoryPool` (see the module doc).

    A completed frame is handed out with ``extra`` set to a release callable: whoever consumes the
    frame calls it when done with the request (the broker Processor does when the response is sent or the
    connection closes). A frame dropped before completion is released by :meth:`close`."""

    __slots__ = ("_pool", "_allowed", "_reserved", "_overdraft", "_waiting", "_large")

    def __init__(self, source: str, max_size: int, pool: MemoryPool) -> None:
        super().__init__(source, max_size)
        self._pool = pool
        self._allowed = 0  # payload bytes that may be read now (the memory granted so far)
        self._reserved = 0  # pool bytes held by the current frame
        self._overdraft = 0  # bytes of the current frame allowed past the pool (not counted in it)
        self._waiting = False
        self._large = False

    def waiting_for_memory(self) -> bool:
        return self._waiting

    def waiting_for_large(self) -> bool:
        return self._large

    def read_from(self, transport: ReadableTransport) -> int:
        total = 0
        if self._size < 0:
            total = self._read_size(transport)
            if total < 0 or self._size <= 0:  # end of stream, size still incomplete, or an empty frame
                return total
            self._large = self._size > SMALL_FRAME_BYTES
        if self._payload_read == self._allowed and not self._grant():
            self._waiting = True
            return total
        self._waiting = False
        assert self._payload is not None
        read, allowed = self._payload_read, self._allowed
        # the whole frame's view as it is when nothing is read yet and all of it is granted (the common case)
        n = transport.read_into(self._payload[read:allowed] if read or allowed != self._size else self._payload)
        if n < 0:
            return -1
        self._payload_read += n
        return total + n

    def _grant(self) -> bool:
        """Memory for the next bytes: the whole frame up to 1 MiB, else the next growth step."""
        pool, size = self._pool, self._size
        if self._payload is None and size <= EAGER_FRAME_BYTES:
            if not pool.try_allocate(size, self._large):
                return False
            self._payload = memoryview(frame_buffer(size))
            self._reserved = self._allowed = size
            return True
        if self._payload is None:
            self._payload = memoryview(mmap.mmap(-1, size))  # pages are only backed once written
        step = min(GROWTH_STEP_BYTES, size - self._allowed)
        if pool.try_allocate(step, True):
            self._reserved += step
        elif pool.try_overdraft(self):
            self._overdraft += step
        else:
            return False
        self._allowed += step
        return True

    def take_completed(self) -> NetworkReceive | None:
        receive = super().take_completed()
        if receive is None:
            return None
        receive.extra = _new_release(self._pool, self._reserved)
        if self._overdraft:
            self._pool.end_overdraft(self)
            self._overdraft = 0
        self._reserved = self._allowed = 0
        self._large = False
        return receive

    def close(self) -> None:
        """Drop a partly read frame and give its memory back."""
        if self._reserved:
            self._pool.release(self._reserved)
            self._reserved = 0
        if self._overdraft:
            self._pool.end_overdraft(self)
            self._overdraft = 0
        self._payload = None


_SIZE = struct.Struct(">i")
#: The read-ahead buffer of a :class:`ReadAheadFrameReader`: one ``recv`` brings a request's size and body, and
#: often the requests after it (a producer keeps up to 5 in flight).
READ_AHEAD_BYTES: Final = 131_072


class ReadAheadFrameReader(PooledFrameReader):
    """A :class:`PooledFrameReader` that reads through a read-ahead buffer of its own: a frame's first read is one
    ``recv`` of up to :data:`READ_AHEAD_BYTES` into it, which brings the size and the body of a 16 KiB request at
    once (two ``recv`` calls frame by frame) and often the next requests too, which are then handed out with no
    ``recv`` at all. A frame whose bytes are all in the buffer is handed out as a view of it, without a copy (the pool
    counts its size as for any frame); a buffer is never written again once it was filled (a new one is made for the
    next ``recv``), so a frame's bytes stay as read for as long as it is used, and a buffer lives on while a frame
    handed out of it does (a request's parse keeps only a Produce request's records as views of its frame: the log
    copies them and the request goes with its answer). A frame that is not all in the buffer gets pool memory of
    exactly its size once its size passed the check (the buffer's bytes copied into it, the rest read straight into
    it). So the mute discipline, the size check and the pool's accounting are :class:`PooledFrameReader`'s.
    The buffer exists only while it holds bytes (an idle connection has none): at most :data:`READ_AHEAD_BYTES` a
    connection outside the pool, as the kernel's socket buffer is, and the buffers its frames still in use were
    handed out of (one request in flight a connection: one more). :meth:`has_bytes_ahead` tells the channel about
    them, so its selector comes back for them without the socket becoming readable.

    Only for channels whose bytes are all frames read by this reader: a SASL authenticator reads its own frames off
    the transport (also when a session re-authenticates), so its channels keep the :class:`PooledFrameReader`."""

    __slots__ = ("_buffer_size", "_ahead", "_lo", "_hi")

    def __init__(self, source: str, max_size: int, pool: MemoryPool, buffer_size: int = READ_AHEAD_BYTES) -> None:
        super().__init__(source, max_size, pool)
        if buffer_size < SIZE_LENGTH:
            raise ValueError(f"the read-ahead buffer must hold at least a frame size ({SIZE_LENGTH} bytes)")
        self._buffer_size = buffer_size
        #: the buffer while it holds bytes (they are _ahead[_lo:_hi]), else None
        self._ahead: memoryview | None = None
        self._lo = 0
        self._hi = 0

    def has_bytes_ahead(self) -> bool:
        return self._hi > self._lo

    def bytes_pending(self) -> bool:
        return self._size_read > 0 or self._hi > self._lo

    def read_frame(self, transport: ReadableTransport) -> tuple[NetworkReceive | None, int]:
        """:meth:`FrameReader.read_frame`; a frame whose size and bytes are all in the buffer (the usual case when a
        producer keeps several requests in flight) is handed out in this one step, with no socket read
        (:meth:`take_buffered_frame`)."""
        taken = self.take_buffered_frame()
        if taken is None:
            return super().read_frame(transport)
        return (None, 0) if taken is False else (taken, 0)

    def take_buffered_frame(self) -> NetworkReceive | Literal[False] | None:
        """The next frame if its size and bytes are all in the buffer, with the pool's accounting and the reader's
        state that :meth:`read_from` and :meth:`take_completed` give; False when the pool refused its memory (its
        size taken: the frame waits for memory, as :meth:`read_from` leaves it); None when it is not all in the
        buffer (nothing done: :meth:`read_frame` reads it)."""
        lo = self._lo
        ahead = self._ahead
        if ahead is not None and self._size < 0 and not self._size_read and self._hi - lo > SIZE_LENGTH:
            size = _SIZE.unpack_from(ahead, lo)[0]
            start = lo + SIZE_LENGTH
            end = start + size
            if 0 < size <= EAGER_FRAME_BYTES and end <= self._hi:
                if size > self.max_size:  # (only then may it fail: the size is positive)
                    check_receive_size(size, self.max_size)
                large = size > SMALL_FRAME_BYTES
                if not self._pool.try_allocate(size, large):
                    # as read_from leaves it: the size taken, the frame waiting for memory
                    self._size_read = SIZE_LENGTH
                    self._size = size
                    self._large = large
                    self._lo = start
                    self._waiting = True
                    return False
                payload = ahead[start:end]  # (a view: the buffer is never written again, see the class doc)
                if end == self._hi:
                    self._ahead = None
                    self._lo = self._hi = 0
                else:
                    self._lo = end
                self._waiting = False
                return new_receive(self.source, payload, _new_release(self._pool, size))
        return None

    def read_from(self, transport: ReadableTransport) -> int:
        """:meth:`FrameReader.read_from` through the buffer: the bytes it returns are those taken from the socket
        (0 when the frame came from the buffer alone)."""
        total = 0
        short = False  # a read shorter than asked for: the socket has nothing more now
        lo = self._lo
        hi = self._hi
        ahead = self._ahead
        if self._size < 0:
            need = SIZE_LENGTH - self._size_read
            if hi - lo < need:
                if hi > lo:  # the start of a size at the buffer's end
                    assert ahead is not None
                    self._size_view[self._size_read : self._size_read + hi - lo] = ahead[lo:hi]
                    self._size_read += hi - lo
                    need -= hi - lo
                self._lo = self._hi = lo = hi = 0
                # a new buffer, also when this one held the start of a size: frames handed out may be views of it
                # (never read past _hi: unzeroed is fine)
                ahead = memoryview(frame_buffer(self._buffer_size))
                n = transport.read_into(ahead)
                if n < need:  # nothing (or the end of the stream), or part of a size
                    self._ahead = None
                    if n <= 0:
                        return n if n == 0 else -1
                    self._size_view[self._size_read : self._size_read + n] = ahead[:n]
                    self._size_read += n
                    return n
                total = hi = n
                short = n < len(ahead)
            assert ahead is not None
            if self._size_read:
                self._size_view[self._size_read :] = ahead[lo : lo + need]
                size = _SIZE.unpack_from(self._size_buf)[0]
            else:
                size = _SIZE.unpack_from(ahead, lo)[0]
            lo += need
            self._size_read = SIZE_LENGTH
            if lo == hi:
                lo = hi = 0
                ahead = None
            self._ahead = ahead
            self._lo = lo
            self._hi = hi
            if not 0 <= size <= self.max_size:  # (only then may it fail)
                check_receive_size(size, self.max_size)
            self._size = size
            if size == 0:
                return total
            self._large = size > SMALL_FRAME_BYTES
        if self._payload_read == self._allowed and not self._grant():
            self._waiting = True
            return total
        self._waiting = False
        payload = self._payload
        assert payload is not None
        read = self._payload_read
        allowed = self._allowed
        if hi > lo:
            assert ahead is not None
            k = min(hi - lo, allowed - read)
            payload[read : read + k] = ahead[lo : lo + k]
            read += k
            lo += k
            if lo == hi:
                self._ahead = None
                lo = hi = 0
            self._lo = lo
            self._hi = hi
        if read < allowed and not short:  # the buffer is empty: the rest of the frame straight into its memory
            n = transport.read_into(payload[read:allowed])
            if n < 0:
                self._payload_read = read
                return -1
            read += n
            total += n
        self._payload_read = read
        return total

    def close(self) -> None:
        """Drop a partly read frame (its memory back to the pool) and the bytes read ahead."""
        super().close()
        self._ahead = None
        self._lo = self._hi = self._size_read = self._payload_read = self._allowed = 0
        self._size = -1
