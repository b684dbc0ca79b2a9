"""One connection as the Selector sees it (Java: ``common.network.KafkaChannel``).

A channel owns a transport (plaintext or TLS), an optional authenticator (SASL), the frame being read
and the send being written, its byte counters and the broker's mute state machine.

Mute states (broker side; Java ``KafkaChannel.ChannelMuteState``): a Processor mutes a channel when it
hands a request to the handlers (``REQUEST_RECEIVED``) and unmutes it after the response went out
(``RESPONSE_SENT``); quota throttling adds the ``*_THROTTLED*`` states. :meth:`KafkaChannel.maybe_unmute`
succeeds only from plain ``MUTED``, so a channel with a response pending or a throttle running stays
muted whatever the caller does. Invalid events raise :class:`~pykafka_client.errors.IllegalStateError`.
"""

from __future__ import annotations

import enum
import selectors
from typing import Callable, Literal, Protocol

from pykafka_client.errors import IllegalStateError
from pykafka_client.network.transport.network_receive import (
    DEFAULT_MAX_RECEIVE_SIZE,
    DEFAULT_READ_BUFFER_SIZE,
    EMPTY_PAYLOAD,
    BufferedFrameReader,
    FrameReader,
    check_receive_size,
    new_receive,
)
from pykafka_client.network.transport.network_send import MAX_IOV, SendWriter
from pykafka_client.network.transport.selectable import ChannelState, NetworkReceive, NetworkSend
from pykafka_client.network.transport.transport_layer import PlaintextTransportLayer, TransportLayer
from pykafka_client.protocol.records import _native

#: Principal name of an unauthenticated peer (Java ``KafkaPrincipal.ANONYMOUS``).
ANONYMOUS = "ANONYMOUS"

EVENT_READ = selectors.EVENT_READ
EVENT_WRITE = selectors.EVENT_WRITE


class ChannelMuteState(enum.Enum):
    NOT_MUTED = "NOT_MUTED"
    MUTED = "MUTED"
    MUTED_AND_RESPONSE_PENDING = "MUTED_AND_RESPONSE_PENDING"
    MUTED_AND_THROTTLED = "MUTED_AND_THROTTLED"
    MUTED_AND_THROTTLED_AND_RESPONSE_PENDING = "MUTED_AND_THROTTLED_AND_RESPONSE_PENDING"

    # members are singletons compared by identity: hashed as such, not by a Python-level hash of the name (the
    # mute transitions are looked up twice per request)
    __hash__ = object.__hash__


class ChannelMuteEvent(enum.Enum):
    REQUEST_RECEIVED = "REQUEST_RECEIVED"
    RESPONSE_SENT = "RESPONSE_SENT"
    THROTTLE_STARTED = "THROTTLE_STARTED"
    THROTTLE_ENDED = "THROTTLE_ENDED"

    # members are singletons compared by identity: hashed as such, not by a Python-level hash of the name (the
    # mute transitions are looked up twice per request)
    __hash__ = object.__hash__


_M = ChannelMuteState
_E = ChannelMuteEvent
_MUTE_TRANSITIONS: dict[tuple[ChannelMuteEvent, ChannelMuteState], ChannelMuteState] = {
    (_E.REQUEST_RECEIVED, _M.MUTED): _M.MUTED_AND_RESPONSE_PENDING,
    (_E.RESPONSE_SENT, _M.MUTED_AND_RESPONSE_PENDING): _M.MUTED,
    (_E.RESPONSE_SENT, _M.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING): _M.MUTED_AND_THROTTLED,
    (_E.THROTTLE_STARTED, _M.MUTED_AND_RESPONSE_PENDING): _M.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING,
    (_E.THROTTLE_ENDED, _M.MUTED_AND_THROTTLED): _M.MUTED,
    (_E.THROTTLE_ENDED, _M.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING): _M.MUTED_AND_RESPONSE_PENDING,
}


# (a module constant: a member read through its Enum class is a metaclass attribute lookup, several times a
# global's, and the I/O thread reads it on every request)
_NOT_MUTED = ChannelMuteState.NOT_MUTED
_MUTED = ChannelMuteState.MUTED
_READY = ChannelState.READY
_REQUEST_RECEIVED = ChannelMuteEvent.REQUEST_RECEIVED
_RESPONSE_SENT = ChannelMuteEvent.RESPONSE_SENT


def next_mute_state(state: ChannelMuteState, event: ChannelMuteEvent) -> ChannelMuteState:
    """The mute state after ``event`` in ``state``; raises IllegalStateError for an invalid pair."""
    nxt = _MUTE_TRANSITIONS.get((event, state))
    if nxt is None:
        raise IllegalStateError(f"Cannot transition from {state.value} for {event.value}")
    return nxt


def _nothing_read_ahead() -> None:
    """A channel's :attr:`KafkaChannel.take_buffered_frame` with a receive buffer (it reads frames in batches)."""
    return None


class Authenticator(Protocol):
    """Runs inside a channel after the transport is ready and before the channel is (Java
    ``Authenticator``). ``authenticate`` makes progress without blocking and raises on failure."""

    def authenticate(self, transport: TransportLayer) -> None: ...

    def complete(self) -> bool: ...

    def wants_write(self) -> bool:
        """True while it has bytes to write (else it waits to read)."""
        ...

    def principal(self) -> str | None:
        """The authenticated identity (server side), when known."""
        ...


class PeerClosedError(ConnectionError):
    """End of stream: the peer closed the connection."""


class KafkaChannel:
    """A connection: transport + authenticator + framing + mute state. Not thread-safe (owned by
    one Selector)."""

    #: what the kernel's send of a request and its client selector's read of a frame (SelectorPoll) read and write of
    #: its channel, in slots (at their offsets)
    __slots__ = (
        "__dict__", "__weakref__", "id", "state", "bytes_sent", "send_writer", "plain_sendmsg", "connecting", "mute_state",
        "bytes_received", "buffered_reader", "plain_recv_into",
    )

    def __init__(
        self,
        channel_id: str,
        transport: TransportLayer,
        authenticator: Authenticator | None = None,
        *,
        max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE,
        connecting: bool = False,
        remote_address: str | None = None,
    ) -> None:
        self.id = channel_id
        self.transport = transport
        self.authenticator = authenticator
        self.remote_address = remote_address
        self.connecting = connecting
        self.state = ChannelState.NOT_CONNECTED if connecting else ChannelState.AUTHENTICATE
        self.mute_state = ChannelMuteState.NOT_MUTED
        self.bytes_sent = 0
        self.bytes_received = 0
        self._reader = FrameReader(channel_id, max_receive_size)
        #: (read-only) the receive buffer's reader once :meth:`use_buffered_reads` made one (a client's channel), else None
        self.buffered_reader: BufferedFrameReader | None = None
        #: the next frame when all of it was read ahead, with no socket read (its frame reader's
        #: ``take_buffered_frame``, called without a frame of the channel's: a broker reads one a request)
        self.take_buffered_frame: Callable[[], NetworkReceive | Literal[False] | None] = self._reader.take_buffered_frame
        #: the send in progress (its writer), None when there is none: set by this channel's send methods only (read
        #: by the kernel's send of a request, which writes a new send itself only when there is none)
        self.send_writer: SendWriter | None = None
        self._fd = transport.socket.fileno()
        # a plaintext transport's socket, written and read straight by the common send and read (one Python frame
        # less each way per request); None for any other transport (TLS, a test's), always called through it
        plain = transport.socket if type(transport) is PlaintextTransportLayer else None
        #: (read-only) the plaintext socket's ``sendmsg``, None for any other transport: what the common send writes with
        self.plain_sendmsg = plain.sendmsg if plain is not None else None
        #: (read-only) the plaintext socket's ``recv_into``, None for any other transport: what the common read reads with
        self.plain_recv_into = plain.recv_into if plain is not None else None
        if not connecting and self._handshakes_done():
            self.state = ChannelState.READY

    # --- lifecycle -------------------------------------------------------------------------------

    @property
    def fd(self) -> int:
        """The socket's file descriptor (stable across the TLS wrap)."""
        return self._fd

    def finish_connect(self) -> None:
        """The socket became writable while connecting: raise if the connect failed."""
        self.transport.finish_connect()
        self.connecting = False
        self.state = ChannelState.READY if self._handshakes_done() else ChannelState.AUTHENTICATE

    def ready(self) -> bool:
        """Connected, transport handshake done and authenticated: the state READY. The channel enters it when its
        handshakes are done (at the connect's end, or in :meth:`prepare`, the only places they make progress) and
        leaves it when a re-authentication begins (:meth:`begin_reauthentication`) or the channel fails (the
        Selector sets that state), so the question asked before every send costs no call to the transport and the
        authenticator."""
        return self.state is _READY

    def begin_reauthentication(self) -> None:
        """The authenticator started over on this connection (KIP-368): the channel is not ready (state
        AUTHENTICATE) until :meth:`prepare` finds the new authentication complete. Whoever restarts the
        authenticator calls it: the client's Selector, and the broker's Processor on a SaslHandshake."""
        self.state = ChannelState.AUTHENTICATE

    def _handshakes_done(self) -> bool:
        return (
            not self.connecting
            and self.transport.ready()
            and (self.authenticator is None or self.authenticator.complete())
        )

    def prepare(self) -> None:
        """Make progress on the TLS handshake, then on authentication (non-blocking)."""
        if not self.transport.ready():
            self.transport.handshake()
        if self.transport.ready() and self.authenticator is not None and not self.authenticator.complete():
            self.authenticator.authenticate(self.transport)
        if self._handshakes_done():
            self.state = ChannelState.READY

    def principal(self) -> str:
        """Who the peer is: the SASL identity, else the TLS client certificate's distinguished name,
        else ``ANONYMOUS`` (Java's default principal builder, without the ``User:`` type)."""
        name = self.authenticator.principal() if self.authenticator is not None else None
        if name is None:
            name = self.transport.peer_principal()
        return name if name is not None else ANONYMOUS

    def close(self) -> None:
        self._reader.close()
        if self.buffered_reader is not None:
            self.buffered_reader.close()
        self.transport.close()

    # --- interest --------------------------------------------------------------------------------

    def interest(self) -> int:
        """The selector events this channel waits for now (0 = none)."""
        if self.connecting:
            return EVENT_WRITE
        if not self.transport.ready():
            return EVENT_WRITE if self.transport.handshake_wants_write() else EVENT_READ
        if self.authenticator is not None and not self.authenticator.complete():
            return EVENT_WRITE if self.authenticator.wants_write() else EVENT_READ
        events = 0 if self.is_muted() else EVENT_READ
        if self.send_writer is not None:
            events |= EVENT_WRITE
        return events

    # --- mute ------------------------------------------------------------------------------------

    def is_muted(self) -> bool:
        return self.mute_state is not _NOT_MUTED

    def mute(self) -> bool:
        """Stop reading (only from NOT_MUTED; otherwise already muted). Returns whether this call muted it."""
        if self.mute_state is _NOT_MUTED:
            self.mute_state = _MUTED
            return True
        return False

    def maybe_unmute(self) -> bool:
        """Unmute if plainly MUTED; returns whether the channel is now unmuted."""
        if self.mute_state is _MUTED:
            self.mute_state = _NOT_MUTED
        return self.mute_state is _NOT_MUTED

    def handle_channel_mute_event(self, event: ChannelMuteEvent) -> None:
        self.mute_state = next_mute_state(self.mute_state, event)

    def request_received(self) -> bool:
        """:meth:`mute`, then ``REQUEST_RECEIVED`` (a broker Processor takes a request of this channel), in one step;
        returns what :meth:`mute` returns (whether it was reading)."""
        was_reading = self.mute_state is _NOT_MUTED
        if was_reading:
            self.mute_state = _MUTED
        state = self.mute_state
        nxt = _MUTE_TRANSITIONS.get((_REQUEST_RECEIVED, state))
        self.mute_state = nxt if nxt is not None else next_mute_state(state, _REQUEST_RECEIVED)  # (the latter raises)
        return was_reading

    def response_sent(self) -> bool:
        """``RESPONSE_SENT`` (the answer of the channel's request went out), then :meth:`maybe_unmute`, in one step;
        returns whether the channel is unmuted now."""
        state = self.mute_state
        nxt = _MUTE_TRANSITIONS.get((_RESPONSE_SENT, state))
        if nxt is None:
            nxt = next_mute_state(state, _RESPONSE_SENT)  # raises
        self.mute_state = nxt = _NOT_MUTED if nxt is _MUTED else nxt
        return nxt is _NOT_MUTED

    # --- sends -----------------------------------------------------------------------------------

    def has_send(self) -> bool:
        return self.send_writer is not None

    def set_send(self, send: NetworkSend) -> None:
        if self.send_writer is not None:
            raise IllegalStateError(f"Attempt to begin a send operation with prior send operation still in progress, connection id is {self.id}")
        self.send_writer = SendWriter(send)

    def write_new_send(self, send: NetworkSend) -> NetworkSend | None:
        """:meth:`set_send` and :meth:`write` in one step (the Selector's optimistic write); returns the send once it
        is complete. A send of bytes and bytearray pieces (a request frame; a broker's produce response, one piece)
        goes out in one gathering write of the pieces as they are, with no :class:`SendWriter` (nor a memoryview per
        piece) unless the transport took only part of it; any other send takes the general path."""
        if self.send_writer is not None:
            raise IllegalStateError(f"Attempt to begin a send operation with prior send operation still in progress, connection id is {self.id}")
        pieces = send.buffers
        if type(pieces) is list and 0 < len(pieces) <= MAX_IOV:
            for piece in pieces:
                kind = type(piece)
                if kind is not bytes and kind is not bytearray:
                    break
            else:
                if sum(map(len, pieces)) == send.size:  # (as SendWriter checks it, before any byte goes out)
                    sendmsg = self.plain_sendmsg
                    if sendmsg is None:
                        n = self.transport.write_buffers(pieces)
                    else:  # PlaintextTransportLayer.write_buffers, without its frame
                        try:
                            n = sendmsg(pieces)
                        except (BlockingIOError, InterruptedError):
                            n = 0
                    if n == send.size:
                        self.bytes_sent += n
                        send.written = n
                        return send
                    self.resume_send(send, n)
                    return None
        self.send_writer = SendWriter(send)
        return self.write()

    def resume_send(self, send: NetworkSend, written: int) -> None:
        """A new ``send`` with no send in progress, of which a gathering write took only the first ``written`` bytes:
        counted, and the rest left to :meth:`write` (the end of :meth:`write_new_send`'s and of the kernel's send)."""
        self.bytes_sent += written
        self.send_writer = SendWriter(send, written=written)

    def write(self) -> NetworkSend | None:
        """Write what the socket takes; returns the send once it is complete."""
        if self.send_writer is None:
            return None
        n = self.send_writer.write_to(self.transport)
        self.bytes_sent += n
        if self.send_writer.completed():
            done = self.send_writer.send
            self.send_writer = None
            return done
        return None

    # --- receives --------------------------------------------------------------------------------

    def has_bytes_buffered(self) -> bool:
        """Bytes read from the socket that a read hands out without the socket becoming readable: TLS's
        buffered plaintext, whole frames left in the receive buffer, or a broker reader's bytes read ahead."""
        buffered = self.buffered_reader
        if buffered is None:  # (a broker's reader may have read ahead of its frame: asked first, the usual yes)
            return self._reader.has_bytes_ahead() or self.transport.has_bytes_buffered()
        return self.transport.has_bytes_buffered() or buffered.has_buffered_frame()

    def partial_receive_pending(self) -> bool:
        buffered = self.buffered_reader
        return buffered.bytes_pending() if buffered is not None else self._reader.bytes_pending()

    def use_frame_reader(self, reader: FrameReader) -> None:
        """Read frames with ``reader`` (the broker's pooled reader) from now on; before any byte is read."""
        self._reader = reader
        self.buffered_reader = None
        self.take_buffered_frame = reader.take_buffered_frame

    def use_buffered_reads(self, buffer_size: int = DEFAULT_READ_BUFFER_SIZE) -> None:
        """Read frames through a receive buffer (:class:`BufferedFrameReader`, the client's channels) from now
        on; before any byte is read."""
        self.buffered_reader = BufferedFrameReader(self.id, self._reader.max_size, buffer_size)
        self.take_buffered_frame = _nothing_read_ahead

    def waiting_for_memory(self) -> bool:
        """The last read stopped because the memory pool had no room for this frame."""
        return self._reader.waiting_for_memory()

    def waiting_for_large_memory(self) -> bool:
        """The frame waiting for memory is a large one (it may not use the small-frame reserve)."""
        return self._reader.waiting_for_large()

    def read_frames(self, max_receives: int, max_bytes: int) -> tuple[list[NetworkReceive], int, bool]:
        """:meth:`read`, and :meth:`has_bytes_buffered` after it, in one step (the Selector asks both once per read).
        Returns the frames, the bytes read and whether bytes are buffered now."""
        buffered = self.buffered_reader
        if buffered is None:
            receives, n = self.read(max_receives, max_bytes)
            return receives, n, self.has_bytes_buffered()
        recv_into = self.plain_recv_into
        kernel = _native.kernel
        if recv_into is not None and kernel is not None and type(buffered) is BufferedFrameReader:
            # the reader's read_frames with the socket's recv_into in one compiled call (the same reads, frames, state
            # and errors: its reference is BufferedFrameReader.read_frames)
            frames, n, ended = kernel.read_frames(
                buffered, recv_into, max_receives, max_bytes, new_receive, check_receive_size, EMPTY_PAYLOAD
            )
        else:
            frames, n, ended = buffered.read_frames(self.transport, max_receives, max_bytes, recv_into)
        self.bytes_received += n
        if ended:
            raise PeerClosedError(f"connection {self.id} closed by the peer")
        # a read that handed out fewer frames than it may left no whole frame in the buffer (it parses them all)
        more = len(frames) >= max_receives and buffered.has_buffered_frame()
        if recv_into is None and not more:
            more = self.transport.has_bytes_buffered()
        return frames, n, more

    def read(self, max_receives: int, max_bytes: int) -> tuple[list[NetworkReceive], int]:
        """Read up to ``max_receives`` whole frames or about ``max_bytes`` bytes, whichever comes
        first, stopping when the socket has nothing more. Returns the frames and the bytes read.

        Raises :class:`PeerClosedError` at end of stream (a partly read frame is dropped) and
        :class:`~pykafka_client.errors.InvalidReceiveError` for a bad frame size."""
        buffered = self.buffered_reader
        if buffered is not None:
            frames, n, ended = buffered.read_frames(self.transport, max_receives, max_bytes, self.plain_recv_into)
            self.bytes_received += n
            if ended:
                raise PeerClosedError(f"connection {self.id} closed by the peer")
            return frames, n
        receives: list[NetworkReceive] = []
        total = 0
        read_frame = self._reader.read_frame
        while True:
            receive, n = read_frame(self.transport)
            if n < 0:
                raise PeerClosedError(f"connection {self.id} closed by the peer")
            total += n
            self.bytes_received += n
            if receive is not None:
                receives.append(receive)
                if len(receives) >= max_receives:
                    break
            elif n == 0:
                break
            if total >= max_bytes:
                break
        return receives, total
