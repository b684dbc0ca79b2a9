"""The real :class:`~pykafka_client.network.transport.selectable.Selectable` (Java: ``common.network.Selector``).

A single-threaded event loop over the stdlib ``selectors`` module (epoll on Linux) that owns many
:class:`~pykafka_client.network.transport.channel.KafkaChannel`\\ s. It is used in two roles:

* client (NetworkClient): :meth:`Selector.connect` starts a non-blocking connect; the channel is
  reported in :meth:`Selector.connected` once TCP, TLS and SASL are all done.
* server (a broker Processor): :meth:`Selector.register` adopts an accepted socket; such channels are
  never reported in ``connected()``.

Threading: nothing here is thread-safe except :meth:`Selector.wakeup`, which may be called from any
thread to interrupt a blocked :meth:`Selector.poll`.

Per poll, each channel completes at most ``max_receives_per_channel_per_poll`` frames (1 by default,
as in Java: a broker Processor relies on it to keep one request in flight per connection) and reads at
most about ``max_read_bytes_per_channel_per_poll`` bytes, so one busy peer cannot starve the others.
Any error on a channel closes that channel only and reports it in :meth:`Selector.disconnected`.
"""

from __future__ import annotations

import errno
import ipaddress
import random
import select
import selectors
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Mapping, Protocol, cast

from pykafka_client.errors import (
    AuthenticationError,
    IllegalArgumentError,
    IllegalSaslStateError,
    IllegalStateError,
    InvalidReceiveError,
    SaslAuthenticationError,
    UnsupportedSaslMechanismError,
)
from pykafka_client.network.transport.channel import ChannelMuteState, KafkaChannel, PeerClosedError
from pykafka_client.network.transport.channel_builder import (
    ChannelBuilder,
    DefaultChannelBuilder,
    Mode,
    create_channel_builder,
)
from pykafka_client.network.transport.idle_expiry import IdleExpiryManager
from pykafka_client.network.transport.memory_pool import MemoryPool, PooledFrameReader, ReadAheadFrameReader
from pykafka_client.network.transport.network_receive import (
    DEFAULT_MAX_RECEIVE_SIZE,
    EMPTY_PAYLOAD,
    BufferedFrameReader,
    check_receive_size,
    new_receive,
)
from pykafka_client.network.transport.network_send import MAX_IOV
from pykafka_client.network.transport.selectable import (
    POLL_COMPLETED_RECEIVES,
    POLL_COMPLETED_SENDS,
    POLL_CONNECTED,
    POLL_DISCONNECTED,
    POLL_REAUTHENTICATION_SCHEDULED,
    ChannelState,
    DisconnectInfo,
    NetworkReceive,
    NetworkSend,
)
from pykafka_client.network.transport.server_channel_path import ServerChannelPathApi
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records._native import GilHandoffApi
from pykafka_client.utils.time import SYSTEM_TIME, Time, nanoseconds_clock

_READY = ChannelState.READY
_NOT_MUTED = ChannelMuteState.NOT_MUTED
_EVENT_READ = selectors.EVENT_READ
_EVENT_WRITE = selectors.EVENT_WRITE

#: the channels with bytes buffered that a poll reads, when no channel has any (the common case: no list per poll)
_NONE_BUFFERED: tuple[str, ...] = ()
#: ``connections.max.idle.ms`` default on the client (9 minutes); the broker uses 10 minutes.
DEFAULT_CONNECTIONS_MAX_IDLE_MS = 540_000
#: Kafka's "use the OS default" value for socket buffer sizes.
USE_DEFAULT_BUFFER_SIZE = -1

#: connect() errors that are reported as a NOT_CONNECTED disconnect at the next poll, not raised.
_DEFERRED_CONNECT_ERRORS = frozenset(
    {errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ETIMEDOUT, errno.ECONNRESET, errno.ECONNABORTED}
)
_CONNECT_IN_PROGRESS = frozenset({errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY, errno.EINTR})
#: epoll takes an int of milliseconds; longer polls (e.g. Long.MAX_VALUE-style "forever") are capped.
_MAX_SELECT_TIMEOUT_MS = 2**31 - 1
#: the share of a SASL session's lifetime after which a client re-authenticates: random in this range (KIP-368)
REAUTH_MIN_SHARE = 0.85
REAUTH_MAX_SHARE = 0.95
_AUTH_ERRORS = (AuthenticationError, SaslAuthenticationError, UnsupportedSaslMechanismError, IllegalSaslStateError)


@dataclass(slots=True)
class SelectorMetrics:
    """Selector-wide counters (Java ``SelectorMetrics``); rates and ratios are derived by readers
    (e.g. io-wait ratio = ``select_time_ns_total`` / elapsed). Slotted: the kernel's send of a request counts into
    them at cached offsets."""

    connection_count: int = 0  # open channels now (a gauge)
    connection_creation_total: int = 0
    connection_close_total: int = 0
    successful_authentication_total: int = 0
    successful_reauthentication_total: int = 0
    failed_authentication_total: int = 0
    bytes_sent_total: int = 0
    bytes_received_total: int = 0
    requests_sent_total: int = 0  # completed sends
    responses_received_total: int = 0  # completed receives
    select_total: int = 0
    select_time_ns_total: int = 0
    io_time_ns_total: int = 0


class SelectorPollApi(Protocol):
    """The kernel's ``SelectorPoll`` (``records/kernel/client_poll.c.h``), a Selector's common poll in one call
    (:meth:`Selector.compiled_poll`)."""

    #: the selector's GilHandoff, whose select is then the poll's wait (:meth:`Selector.enable_gil_handoff` sets it)
    handoff: GilHandoffApi | None

    def poll(self, timeout_ms: int, /) -> int:
        """Reference: :meth:`Selector.poll`."""


def _resolve(address: tuple[str, int]) -> tuple[socket.AddressFamily, tuple[str, int] | tuple[str, int, int, int]]:
    host, port = address
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        # A host name: resolve it here (blocking). NetworkClient normally passes resolved addresses.
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _, _, _, sockaddr = infos[0]
        return family, sockaddr  # type: ignore[return-value]
    if ip.version == 6:
        return socket.AF_INET6, (host, port, 0, 0)
    return socket.AF_INET, (host, port)


class Selector:
    """Non-blocking multi-connection I/O; see the module docstring."""

    #: what the kernel's SelectorPoll and ClientPollPath read on every poll, in slots (at their offsets)
    __slots__ = (
        "__dict__", "__weakref__", "closed", "nonblocking", "pending_completed_sends", "polled_sends", "polled_receives",
        "polled_disconnects", "polled_connects", "reauthentications_scheduled",
    )

    def __init__(
        self,
        *,
        time: Time = SYSTEM_TIME,
        max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE,
        connections_max_idle_ms: int = DEFAULT_CONNECTIONS_MAX_IDLE_MS,
        channel_builder: ChannelBuilder | None = None,
        max_receives_per_channel_per_poll: int = 1,
        max_read_bytes_per_channel_per_poll: int = 2 * 1024 * 1024,
        optimistic_writes: bool = True,
        memory_pool: MemoryPool | None = None,
        skip_wait_when_buffered: bool = False,
    ) -> None:
        if max_receives_per_channel_per_poll < 1 or max_read_bytes_per_channel_per_poll < 1:
            raise IllegalArgumentError("per-poll read limits must be positive")
        self._time = time
        self._now_ns = nanoseconds_clock(time)  # read three times a poll
        self._max_receive_size = max_receive_size
        self._builder: ChannelBuilder = channel_builder or DefaultChannelBuilder(Mode.CLIENT)
        self._max_receives = max_receives_per_channel_per_poll
        self._max_read_bytes = max_read_bytes_per_channel_per_poll
        self._idle = (
            IdleExpiryManager(connections_max_idle_ms, time.nanoseconds()) if connections_max_idle_ms >= 0 else None
        )
        self._selector = selectors.DefaultSelector()
        self._channels: dict[str, KafkaChannel] = {}
        self._events: dict[str, int] = {}
        self._server_channels: set[str] = set()
        self._buffered: set[str] = set()
        self._pending_disconnects: dict[str, DisconnectInfo] = {}
        self._optimistic_writes = optimistic_writes
        #: (a broker's) a poll with bytes buffered in unmuted channels reads them without asking the OS for events,
        #: if the poll before it did ask (so every other poll at least sees the other connections and the wake-ups)
        self._skip_wait_when_buffered = skip_wait_when_buffered
        self._waited_last_poll = True
        # server role only: accepted channels read frames into pool memory; channels muted because the
        # pool had no room, with whether they wait for a large frame's step (Java: memory-muted channels)
        self._memory_pool = memory_pool
        self._memory_muted: dict[str, bool] = {}
        #: channels muted since the last poll, whose registration the next poll brings up to date
        self._interest_stale: set[str] = set()
        #: sends completed at send time (the optimistic write), reported by the next poll: appended to by this
        #: selector's send and the kernel's send of a request (:meth:`compiled_send`), replaced by each poll
        self.pending_completed_sends: list[NetworkSend] = []
        #: the last poll's results, which completed_sends(), completed_receives(), disconnected() and connected()
        #: return (public for the kernel's poll, :meth:`compiled_poll`, which replaces them as :meth:`poll` does)
        self.polled_sends: list[NetworkSend] = []
        self.polled_receives: list[NetworkReceive] = []
        self.polled_disconnects: dict[str, DisconnectInfo] = {}
        self.polled_connects: list[str] = []
        #: client SASL channels with a session lifetime: when each is due to re-authenticate (ms), and the
        #: channels re-authenticating now (KIP-368)
        self._reauth_at_ms: dict[str, int] = {}
        #: the same map, read-only to others (:attr:`Selectable.reauthentications_scheduled`)
        self.reauthentications_scheduled: Mapping[str, int] = self._reauth_at_ms
        self._reauthenticating: set[str] = set()
        self._reauth_rng = random.Random()
        self.metrics = SelectorMetrics()
        self._wakeup_r, self._wakeup_w = socket.socketpair()
        self._wakeup_r.setblocking(False)
        self._wakeup_w.setblocking(False)
        #: what is registered with the OS selector, by descriptor (the keys its register/modify returned): the map
        #: GilHandoff.select reads
        self._keys: dict[int, selectors.SelectorKey] = {}
        wakeup_fd = self._wakeup_r.fileno()
        self._keys[wakeup_fd] = self._selector.register(wakeup_fd, selectors.EVENT_READ, None)
        #: True once :meth:`close` closed it (read-only to others)
        self.closed = False
        #: Set by a driver that waits for readiness itself (the async producer's event-loop driver, which
        #: awaits :meth:`fileno` becoming readable): :meth:`poll` then never blocks and records in
        #: :attr:`deferred_timeout_ms` how long it would have waited: 0 when it found a connection's I/O (a
        #: blocking poll would have returned at once), else its timeout. A wake-up alone does not count: it announces
        #: a change made before it, which the caller's step saw unless the wake-up came during the step; the caller
        #: learns of that one from whoever raised it (``Sender.wakeup_pending``).
        self.nonblocking = False
        self.deferred_timeout_ms = 0
        #: the kernel's GilHandoff once :meth:`enable_gil_handoff` made one: the wait of :meth:`poll` then
        #: publishes when this selector's thread wants the GIL back (for the producer's send path)
        self._handoff: GilHandoffApi | None = None
        self._epoll_fd = self._wakeup_fd = -1
        #: the kernel's SelectorPoll once :meth:`compiled_poll` made one
        self._poll_path: SelectorPollApi | None = None

    # --- connections -----------------------------------------------------------------------------

    def connect(
        self,
        connection_id: str,
        address: tuple[str, int],
        send_buffer_size: int = USE_DEFAULT_BUFFER_SIZE,
        receive_buffer_size: int = USE_DEFAULT_BUFFER_SIZE,
    ) -> None:
        """Start a non-blocking connect. "Connection refused"-like failures that the kernel reports
        at once are reported as a NOT_CONNECTED disconnect at the next poll; other immediate
        failures (bad address, no fds) raise ``OSError``."""
        self._ensure_not_registered(connection_id)
        family, sockaddr = _resolve(address)
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if send_buffer_size != USE_DEFAULT_BUFFER_SIZE:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer_size)
            if receive_buffer_size != USE_DEFAULT_BUFFER_SIZE:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_size)
            err = sock.connect_ex(sockaddr)
        except BaseException:
            sock.close()
            raise
        remote = f"{address[0]}:{address[1]}"
        if err != 0 and err not in _CONNECT_IN_PROGRESS:
            sock.close()
            exc = OSError(err, f"connect to {remote} failed: {errno.errorcode.get(err, err)}")
            if err in _DEFERRED_CONNECT_ERRORS:
                self._pending_disconnects[connection_id] = DisconnectInfo(ChannelState.NOT_CONNECTED, exc, remote)
                return
            raise exc
        try:
            channel = self._builder.build_channel(
                connection_id,
                sock,
                connecting=True,
                host=address[0],
                max_receive_size=self._max_receive_size,
                remote_address=remote,
            )
        except BaseException:
            sock.close()
            raise
        # a client reads its responses through a receive buffer: one recv for the size and payload of each
        # response, often of several (the broker's accepted channels keep their frame-at-a-time readers)
        channel.use_buffered_reads()
        self._add_channel(channel)

    def register(self, connection_id: str, sock: socket.socket) -> None:
        """Server role: adopt an already-accepted socket (made non-blocking here). The channel is
        ready at once for plaintext, after the TLS/SASL handshake otherwise."""
        self._ensure_not_registered(connection_id)
        sock.setblocking(False)
        remote: str | None = None
        try:
            peer = sock.getpeername()
            if isinstance(peer, tuple):
                remote = f"{peer[0]}:{peer[1]}"
        except OSError:
            pass
        channel = self._builder.build_channel(
            connection_id,
            sock,
            connecting=False,
            host=None,
            max_receive_size=self._max_receive_size,
            remote_address=remote,
        )
        if self._memory_pool is not None:
            # (a SASL authenticator reads its frames off the transport itself: nothing may be read ahead of them)
            reader = PooledFrameReader if channel.authenticator is not None else ReadAheadFrameReader
            channel.use_frame_reader(reader(connection_id, self._max_receive_size, self._memory_pool))
        self._server_channels.add(connection_id)
        self.metrics.connection_creation_total += 1
        self._add_channel(channel)

    def _ensure_not_registered(self, connection_id: str) -> None:
        if self.closed:
            raise IllegalStateError("the selector is closed")
        if connection_id in self._channels:
            raise IllegalStateError(f"There is already a connection for id {connection_id}")
        self._pending_disconnects.pop(connection_id, None)

    def _add_channel(self, channel: KafkaChannel) -> None:
        self._channels[channel.id] = channel
        self.metrics.connection_count = len(self._channels)
        if self._idle is not None:
            self._idle.update(channel.id, self._time.nanoseconds())
        self._update_interest(channel)

    def _update_interest(self, channel: KafkaChannel) -> None:
        want = channel.interest()
        have = self._events.get(channel.id, 0)
        if want == have:
            return
        if have == 0:
            self._keys[channel.fd] = self._selector.register(channel.fd, want, channel)
        elif want == 0:
            self._selector.unregister(channel.fd)
            del self._keys[channel.fd]
        else:
            self._keys[channel.fd] = self._selector.modify(channel.fd, want, channel)
        self._events[channel.id] = want
        # up to date now, whatever a mute since the last poll left behind (see mute_channel)
        self._interest_stale.discard(channel.id)

    def read_buffered(self, channel: KafkaChannel) -> bool:
        """Read now what the next :meth:`poll` would read of an open, unmuted ``channel`` for the bytes it has buffered
        (a broker Processor that has just answered and unmuted it: the frame after, already read ahead, is handled
        in the same round rather than after another poll). Its frames are appended to :meth:`completed_receives`
        (the list the caller is going through), a failure reported by :meth:`disconnected` as a poll's. False when
        the channel has no bytes buffered (nothing done)."""
        cid = channel.id
        if cid not in self._buffered or self._channels.get(cid) is not channel or channel.mute_state is not _NOT_MUTED:
            return False
        now_ns = self._now_ns()
        try:
            taken = channel.take_buffered_frame() if channel.state is _READY else None
        except InvalidReceiveError:  # (a bad size, nothing taken: the read below fails the same way and closes it)
            taken = None
        self.read_buffered_taken(channel, taken, now_ns)
        return True

    def read_buffered_taken(self, channel: KafkaChannel, taken: NetworkReceive | Literal[False] | None,
                            now_ns: int) -> None:
        """The rest of :meth:`read_buffered` once ``channel``'s ``take_buffered_frame`` answered ``taken`` at ``now_ns``
        (None: not all read ahead, or the channel not READY, or a bad size; the kernel's server path goes on here)."""
        cid = channel.id
        if taken is None:  # not all read ahead: read as a poll would (its bytes are buffered: no need to ask again)
            self._poll_channel(channel, _EVENT_READ, now_ns)
            return
        # what _poll_channel's read does when the frame was all read ahead (no socket read: no bytes to count)
        if self._idle is not None:
            self._idle.update(cid, now_ns)
        if taken is False:  # the pool refused its memory
            self._mute_for_memory(channel)
            self._update_interest(channel)
        else:
            self.polled_receives.append(taken)
            self.metrics.responses_received_total += 1
        if not channel.has_bytes_buffered():
            self._buffered.discard(cid)

    def channel(self, connection_id: str) -> KafkaChannel | None:
        """The open channel for ``connection_id`` (e.g. for the broker's mute state events)."""
        return self._channels.get(connection_id)

    def open_channels(self) -> Mapping[str, KafkaChannel]:
        """The open channels by id: the selector's own mapping (read-only), which follows the channels as they open
        and close (a broker Processor looks a request's channel up in it, with no call of :meth:`channel`)."""
        return self._channels

    def is_open(self, connection_id: str) -> bool:
        return connection_id in self._channels

    def channel_ids(self) -> list[str]:
        return list(self._channels)

    def num_channels(self) -> int:
        return len(self._channels)

    def lowest_priority_channel(self) -> KafkaChannel | None:
        """The least recently active channel (what a broker closes first over ``max.connections``)."""
        if self._idle is not None:
            oldest = self._idle.oldest()
            if oldest is not None and oldest in self._channels:
                return self._channels[oldest]
        return next(iter(self._channels.values()), None)

    def is_channel_ready(self, connection_id: str) -> bool:
        channel = self._channels.get(connection_id)
        return channel is not None and channel.state is _READY  # (channel.ready(), inlined: once per iteration)

    # --- closing ---------------------------------------------------------------------------------

    def close_channel(self, connection_id: str) -> None:
        """Close now; not reported in ``disconnected()`` (nor are its not-yet-reported completed
        sends). Unknown ids are ignored."""
        self._pending_disconnects.pop(connection_id, None)
        if self.pending_completed_sends:
            self.pending_completed_sends = [s for s in self.pending_completed_sends if s.destination != connection_id]
        channel = self._channels.get(connection_id)
        if channel is not None:
            self._close(channel, None)

    def _close(self, channel: KafkaChannel, info: DisconnectInfo | None) -> None:
        cid = channel.id
        if self._events.pop(cid, 0) != 0:
            try:
                self._keys.pop(channel.fd, None)
                self._selector.unregister(channel.fd)
            except (KeyError, ValueError, OSError):
                pass
        try:
            channel.close()
        except OSError:
            pass
        del self._channels[cid]
        self.metrics.connection_count = len(self._channels)
        self._buffered.discard(cid)
        self._interest_stale.discard(cid)
        self._server_channels.discard(cid)
        self._memory_muted.pop(cid, None)
        self._reauth_at_ms.pop(cid, None)
        self._reauthenticating.discard(cid)
        if self._idle is not None:
            self._idle.remove(cid)
        self.metrics.connection_close_total += 1
        if info is not None:
            if info.remote_address is None:
                info.remote_address = channel.remote_address
            self.polled_disconnects[cid] = info

    def close(self) -> None:
        """Close every channel (not reported) and the selector itself."""
        if self.closed:
            return
        for channel in list(self._channels.values()):
            self._close(channel, None)
        self.closed = True
        self._selector.close()
        self._wakeup_r.close()
        self._wakeup_w.close()

    # --- sends, mute -----------------------------------------------------------------------------

    def send_completing(self, send: NetworkSend) -> bool:
        """:meth:`send`, except that a send the optimistic write finishes is not reported by the next poll: True
        says it is complete now, and its completion is the caller's to handle (a broker Processor unmutes the
        channel in the same round instead of one poll later). False: it goes on as :meth:`send`'s (reported by
        a later poll, or its channel's failure by ``disconnected()``)."""
        return self._send(send, False)

    def _send(self, send: NetworkSend, report_completed: bool = True) -> bool:
        channel = self._channels.get(send.destination)
        if channel is None:
            raise IllegalStateError(
                f"Attempt to retrieve channel for which there is no open connection. Connection id "
                f"{send.destination} existing connections {list(self._channels)}"
            )
        if channel.state is not _READY:  # (channel.ready(), inlined: once per request)
            raise IllegalStateError(f"Channel {send.destination} is not ready to send")
        if self._optimistic_writes:
            # Write at once: the socket is usually writable, and this saves an interest change and a
            # select round per request. Completion (or failure) is reported by the next poll, as if
            # the poll had written it.
            before = channel.bytes_sent
            try:
                done = channel.write_new_send(send)
            except IllegalStateError:
                raise
            except Exception as e:
                self.fail_send(channel, e)
                return False
            self.metrics.bytes_sent_total += channel.bytes_sent - before
            if done is not None:
                self.metrics.requests_sent_total += 1
                if report_completed:
                    self.pending_completed_sends.append(done)
                    return False
                return True  # the interest is unchanged: nothing left to write
        else:
            channel.set_send(send)
        self._update_interest(channel)
        return False

    def fail_send(self, channel: KafkaChannel, error: Exception) -> None:
        """The write of a new send on ``channel`` failed with ``error``: the channel is closed and reported by the next
        poll as FAILED_SEND (the end of :meth:`send` and of the kernel's send of a request)."""
        channel.state = ChannelState.FAILED_SEND
        self._close(channel, None)
        self._pending_disconnects[channel.id] = DisconnectInfo(ChannelState.FAILED_SEND, error, channel.remote_address)

    def continue_send(self, channel: KafkaChannel, send: NetworkSend, written: int) -> None:
        """A gathering write took only the first ``written`` bytes of the new ``send`` on ``channel`` (which has no send
        in progress): the rest goes out as the poll finds the socket writable (the kernel's send of a request, as
        :meth:`send` after a partial write)."""
        channel.resume_send(send, written)
        self.metrics.bytes_sent_total += written
        self._update_interest(channel)

    def compiled_send(self) -> Callable[[object, object, NetworkSend], None] | None:
        """The kernel's send of a request on this selector (``ChannelSend.send``): ``send(in_flight_requests, request,
        network_send)`` adds the in-flight request and writes its frame as ``in_flight_requests.add(request)`` then
        :meth:`send` (undoing the add with ``complete_last_sent`` if that raises) do, with no Python frame on the
        common path (a ready plaintext channel with no send in progress whose socket takes the whole frame at once).
        None without the kernel or without optimistic writes."""
        kernel = _native.kernel
        if kernel is None or not self._optimistic_writes:
            return None
        channel_send = kernel.ChannelSend(
            self, self._channels, self.metrics, _READY, MAX_IOV, (BlockingIOError, InterruptedError)
        )
        send: Callable[[object, object, NetworkSend], None] = channel_send.send
        return send

    def compiled_poll(self) -> Callable[[int], int] | None:
        """The kernel's poll of this selector (``SelectorPoll.poll``): ``poll(timeout_ms)`` does what :meth:`poll`
        does, with no Python frame of its own on the common case (no pending disconnects, no channel muted since the
        last poll, none muted for memory, none with bytes buffered, a blocking poll; each channel's event through
        ``_poll_channel``, the reference's). None without the kernel, for a selector that is not epoll's or skips waits
        when buffered, or for a subclass that overrides the poll's methods or :meth:`completed_receives` (the client's
        compiled poll reads :attr:`polled_receives` itself when its selector has one). The path holds this selector
        weakly."""
        kernel = _native.kernel
        if (
            kernel is None or not isinstance(self._selector, selectors.EpollSelector) or self._skip_wait_when_buffered
            or type(self).poll is not Selector.poll or type(self)._poll_channel is not Selector._poll_channel
            or type(self)._drain_wakeup is not Selector._drain_wakeup
            or type(self)._maybe_close_oldest_connection is not Selector._maybe_close_oldest_connection
            or type(self).completed_receives is not Selector.completed_receives
        ):
            return None
        if self._poll_path is None:
            # a channel's read event compiled too (_poll_channel's common case) for a client's channels: the class's
            # read, no memory pool
            read = (
                KafkaChannel, _READY, _NOT_MUTED, self._max_receives, self._max_read_bytes, BufferedFrameReader,
                new_receive, check_receive_size, EMPTY_PAYLOAD, PeerClosedError, Selector._channel_failed,
                self._idle.activity_order() if self._idle is not None else None,
            ) if self._memory_pool is None and type(self)._channel_failed is Selector._channel_failed else None
            path: SelectorPollApi = kernel.SelectorPoll(
                self, Selector.poll, self._channels, self._keys, self._pending_disconnects, self._interest_stale,
                self._memory_muted, self._buffered, self._reauth_at_ms, self.metrics, self._idle, self._now_ns,
                self._selector, self._selector.fileno(), self._wakeup_r.fileno(), Selector._poll_channel,
                Selector._drain_wakeup, Selector._maybe_close_oldest_connection, _MAX_SELECT_TIMEOUT_MS, read,
            )
            path.handoff = self._handoff
            self._poll_path = path
        poll: Callable[[int], int] = self._poll_path.poll
        return poll

    def compiled_server_path(self) -> ServerChannelPathApi | None:
        """The kernel's ``ServerChannelPath`` of this selector: :meth:`send_completing`, :meth:`mute_channel`,
        :meth:`unmute_channel` and :meth:`read_buffered` (their reference) compiled, each going on through these methods
        where its common case ends. It holds this selector weakly and is lent its channels, buffered and stale sets,
        metrics and idle order. None without the kernel, without optimistic writes, or for a subclass overriding them."""
        kernel = _native.kernel
        cls = type(self)
        if kernel is None or not self._optimistic_writes or any(
            getattr(cls, name) is not getattr(Selector, name)
            for name in ("send_completing", "mute_channel", "unmute_channel", "read_buffered", "read_buffered_taken")
        ):
            return None
        path: ServerChannelPathApi = kernel.ServerChannelPath(
            self, self._channels, self._buffered, self._interest_stale,
            self._idle.activity_order() if self._idle is not None else None, self.metrics, self._now_ns, KafkaChannel,
            _READY, tuple(ChannelMuteState), InvalidReceiveError, MAX_IOV, (BlockingIOError, InterruptedError),
        )
        return path

    #: Queue a send on its channel, which must be ready with no send in progress (the same function as
    #: :meth:`_send`: no call in between; its result is for :meth:`send_completing` only).
    send = cast("Callable[[Selector, NetworkSend], None]", _send)

    def mute(self, connection_id: str) -> None:
        """Stop reading the channel. Its registration with the OS selector changes at the next :meth:`poll`
        (nothing reads it before then): a broker unmutes most channels again within the same round, once its
        answer went out at once, and then no change is made at all."""
        self.mute_channel(self._require(connection_id))

    def unmute(self, connection_id: str) -> None:
        """Unmute if the channel's mute state allows it (only plain MUTED does)."""
        self.unmute_channel(self._require(connection_id))

    def mute_channel(self, channel: KafkaChannel, request_received: bool = False) -> None:
        """:meth:`mute` of an open channel of this selector that the caller holds (a broker Processor looked it up
        once for the frame it mutes for); with ``request_received`` the channel's ``REQUEST_RECEIVED`` too, in the
        same step (:meth:`KafkaChannel.request_received`)."""
        if channel.request_received() if request_received else channel.mute():
            # it was reading: until the next poll, or until its registration changes, the registration differs
            # from its interest by this mute alone
            self._interest_stale.add(channel.id)

    def unmute_channel(self, channel: KafkaChannel, response_sent: bool = False) -> bool:
        """:meth:`unmute` of an open channel of this selector that the caller holds; returns whether the channel is
        unmuted now (a throttled one, or one with a response pending, stays muted). With ``response_sent`` the
        channel's ``RESPONSE_SENT`` first, in the same step (:meth:`KafkaChannel.response_sent`)."""
        unmuted = channel.response_sent() if response_sent else channel.maybe_unmute()
        cid = channel.id
        if unmuted and cid in self._interest_stale:
            # muted and unmuted again with its registration unchanged in between: that registration is right
            self._interest_stale.discard(cid)
        else:
            self._interest_stale.discard(cid)  # brought up to date here
            self._update_interest(channel)
        return unmuted

    def mute_all(self) -> None:
        for cid in list(self._channels):
            self.mute(cid)

    def unmute_all(self) -> None:
        for cid in list(self._channels):
            self.unmute(cid)

    def _require(self, connection_id: str) -> KafkaChannel:
        channel = self._channels.get(connection_id)
        if channel is None:
            raise IllegalStateError(f"Attempt to retrieve channel for which there is no connection. Connection id {connection_id}")
        return channel

    # --- wakeup ----------------------------------------------------------------------------------

    def wakeup(self) -> None:
        """Interrupt a blocked poll (thread-safe)."""
        handoff = self._handoff
        if handoff is not None:
            # the same write, keeping the GIL: the producer's send thread wakes the I/O thread at a new batch, and a
            # GIL released around that write would hand the I/O thread the GIL there, outside the hand-off's rule
            handoff.wake(self._wakeup_w)
            return
        try:
            self._wakeup_w.send(b"\x01")
        except (BlockingIOError, InterruptedError):
            pass  # a wakeup is already pending
        except OSError:
            pass  # closed concurrently

    def fileno(self) -> int | None:
        """A descriptor that is readable whenever :meth:`poll` has I/O to do (a connection's interest is
        ready, or a :meth:`wakeup`): the OS selector's own (epoll/kqueue), or None where it has none
        (``select``-based platforms)."""
        fileno = getattr(self._selector, "fileno", None)
        return fileno() if fileno is not None else None

    def enable_gil_handoff(self) -> GilHandoffApi | None:
        """Make :meth:`poll`'s wait the kernel's ``GilHandoff.select`` (the same result as the OS selector's select),
        which tells another thread of the process when the thread that polls has I/O to handle and waits for the
        GIL (the producer's send path then hands the GIL over at a batch boundary: see ``KafkaProducer``).
        Returns the GilHandoff, or None where there is none (no kernel, not Linux, not an epoll selector): the
        wait stays the selectors module's. Call before the polling thread starts."""
        if self._handoff is not None:
            return self._handoff
        kernel = _native.kernel
        handoff_type = getattr(kernel, "GilHandoff", None) if kernel is not None else None
        if handoff_type is None or not isinstance(self._selector, selectors.EpollSelector):
            return None
        self._epoll_fd = self._selector.fileno()
        self._wakeup_fd = self._wakeup_r.fileno()
        self._handoff = handoff_type()
        if self._poll_path is not None:
            self._poll_path.handoff = self._handoff
        return self._handoff

    @property
    def gil_handoff(self) -> GilHandoffApi | None:
        """The GilHandoff :meth:`enable_gil_handoff` made, or None (the selectors module's wait)."""
        return self._handoff

    def readable_now_check(self) -> Callable[[], bool]:
        """A zero-timeout check that :meth:`fileno` is readable now (for a driver whose event loop reports
        readiness late: the callback may run after a step already drained the descriptor). Only where
        :meth:`fileno` is not None: ``select.poll`` exists on every epoll and kqueue platform."""
        fd = self.fileno()
        if fd is None:
            raise IllegalStateError("readable_now_check(): this selector has no descriptor to wait on")
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poll = poller.poll

        def readable_now() -> bool:
            return bool(poll(0))

        return readable_now

    def has_pending_io(self) -> bool:
        """True if the next :meth:`poll` has results without waiting (sends completed at send time, pending
        disconnects, bytes buffered in a channel): a driver waiting on :meth:`fileno` must poll at once."""
        return bool(
            self.pending_completed_sends or self._pending_disconnects or self._memory_muted
            or any(not self._channels[c].is_muted() for c in self._buffered if c in self._channels)
        )

    def _drain_wakeup(self) -> None:
        # A read shorter than asked for emptied the socket: no second read that fails with EAGAIN (an exception
        # per wake-up, and the producer wakes its I/O thread for every new batch).
        try:
            while len(self._wakeup_r.recv(4096)) == 4096:
                pass
        except (BlockingIOError, InterruptedError):
            pass

    # --- poll ------------------------------------------------------------------------------------

    def completed_sends(self) -> list[NetworkSend]:
        return self.polled_sends

    def completed_receives(self) -> list[NetworkReceive]:
        return self.polled_receives

    def disconnected(self) -> dict[str, DisconnectInfo]:
        return self.polled_disconnects

    def connected(self) -> list[str]:
        return self.polled_connects

    def poll(self, timeout_ms: int) -> int:
        """Do I/O for up to ``timeout_ms`` ms (0 = do not block) and fill the result lists; returns the ``POLL_*``
        bits of those that have entries (:meth:`Selectable.poll`)."""
        if timeout_ms < 0:
            raise IllegalArgumentError("timeout should be >= 0")
        if self.closed:
            raise IllegalStateError("the selector is closed")
        # this poll's results in new containers where the last poll's has entries (an empty one is this poll's as it
        # is: a poll's results are read before the next poll, as Java's Selector clears its lists)
        if self.pending_completed_sends:
            self.polled_sends = self.pending_completed_sends
            self.pending_completed_sends = []
        elif self.polled_sends:
            self.polled_sends = []
        if self.polled_receives:
            self.polled_receives = []
        if self.polled_disconnects:
            self.polled_disconnects = {}
        if self.polled_connects:
            self.polled_connects = []
        if self._pending_disconnects:
            self.polled_disconnects.update(self._pending_disconnects)
            self._pending_disconnects.clear()
        if self._interest_stale:
            self._update_stale_interest()
        if self._memory_muted:
            self._unmute_for_memory()
        buffered = [c for c in self._buffered if not self._channels[c].is_muted()] if self._buffered else _NONE_BUFFERED
        if buffered or self.polled_disconnects or self.polled_sends:
            timeout_ms = 0
        now_ns = self._now_ns
        metrics = self.metrics
        start_ns = now_ns()
        if timeout_ms > _MAX_SELECT_TIMEOUT_MS:
            timeout_ms = _MAX_SELECT_TIMEOUT_MS
        nonblocking = self.nonblocking
        if nonblocking:
            self.deferred_timeout_ms, timeout_ms = timeout_ms, 0
        handoff = self._handoff
        if buffered and self._skip_wait_when_buffered and self._waited_last_poll:
            events = []
            self._waited_last_poll = False
        elif handoff is not None:
            self._waited_last_poll = True
            events = handoff.select(
                self._epoll_fd, self._keys, timeout_ms, self._wakeup_fd,
                metrics.requests_sent_total - metrics.responses_received_total,
            )
        else:
            self._waited_last_poll = True
            events = self._selector.select(timeout_ms / 1000.0 if timeout_ms > 0 else 0)
        end_select_ns = now_ns()
        if nonblocking and events and (len(events) > 1 or events[0][0].data is not None):
            # a connection had I/O: a blocking poll would have returned now with it, and its caller loops at once
            self.deferred_timeout_ms = 0
        metrics.select_total += 1
        metrics.select_time_ns_total += end_select_ns - start_ns

        # (the channels polled for an event: asked only when channels with bytes buffered are polled after them)
        handled: set[str] | None = set() if buffered else None
        channels = self._channels
        for key, mask in events:
            channel: KafkaChannel | None = key.data
            if channel is None:
                self._drain_wakeup()
                continue
            if channels.get(channel.id) is not channel:  # closed (or replaced) by an earlier event's handling
                continue
            assert channel is not None
            if handled is not None:
                handled.add(channel.id)
            self._poll_channel(channel, mask, end_select_ns)
        if handled is not None:
            for cid in buffered:
                channel_or_none = channels.get(cid)
                if cid not in handled and channel_or_none is not None:
                    self._poll_channel(channel_or_none, selectors.EVENT_READ, end_select_ns)
        end_io_ns = now_ns()
        metrics.io_time_ns_total += end_io_ns - end_select_ns
        idle = self._idle
        if idle is not None and end_io_ns >= idle.next_check_ns:  # (no call before a connection may have expired)
            self._maybe_close_oldest_connection(end_io_ns)
        return (
            (POLL_COMPLETED_SENDS if self.polled_sends else 0)
            | (POLL_COMPLETED_RECEIVES if self.polled_receives else 0)
            | (POLL_DISCONNECTED if self.polled_disconnects else 0)
            | (POLL_CONNECTED if self.polled_connects else 0)
            | (POLL_REAUTHENTICATION_SCHEDULED if self._reauth_at_ms else 0)
        )

    def _update_stale_interest(self) -> None:
        channels = self._channels
        # (the same set kept: the kernel's poll holds it, :meth:`compiled_poll`)
        stale = self._interest_stale.copy()
        self._interest_stale.clear()
        for cid in stale:
            channel = channels.get(cid)
            if channel is not None:
                self._update_interest(channel)

    def _unmute_for_memory(self) -> None:
        """Unmute the channels muted for memory once the pool has room for what each waits for."""
        pool = self._memory_pool
        assert pool is not None
        for cid, large in list(self._memory_muted.items()):
            if not pool.has_room(large):
                continue
            del self._memory_muted[cid]
            channel = self._channels.get(cid)
            if channel is not None:
                channel.maybe_unmute()
                self._update_interest(channel)
                if channel.has_bytes_buffered():
                    self._buffered.add(cid)

    def memory_muted_count(self) -> int:
        """Channels muted now because the memory pool had no room."""
        return len(self._memory_muted)

    def _mute_for_memory(self, channel: KafkaChannel) -> None:
        """No memory for the channel's next frame: stop reading it (TCP pushes back) until the pool has room (its
        registration is the caller's to bring up to date)."""
        channel.mute()
        self._memory_muted[channel.id] = channel.waiting_for_large_memory()

    def _poll_channel(self, channel: KafkaChannel, mask: int, now_ns: int) -> None:
        cid = channel.id
        if self._idle is not None:
            self._idle.update(cid, now_ns)
        # What a channel waits for changes only with its connect, handshakes, mute state or send: the registration is
        # brought up to date after those, not after a read alone (mute() and unmute() between polls see to theirs)
        interest_may_change = False
        try:
            if channel.connecting:
                interest_may_change = True
                channel.finish_connect()
                self.metrics.connection_creation_total += 1
                if channel.ready():
                    self.polled_connects.append(cid)
            ready = channel.state is _READY  # (channel.ready(), inlined: once per read)
            if not ready:
                interest_may_change = True
                channel.prepare()
                ready = channel.ready()
                if ready:
                    if channel.authenticator is not None:
                        self.metrics.successful_authentication_total += 1
                        self._schedule_reauthentication(channel, now_ns)
                    if cid in self._reauthenticating:
                        self._reauthenticating.discard(cid)
                        self.metrics.successful_reauthentication_total += 1
                    elif cid not in self._server_channels:
                        self.polled_connects.append(cid)
            if ready:
                if (mask & _EVENT_READ or channel.has_bytes_buffered()) and channel.mute_state is _NOT_MUTED:
                    receives, n, more = channel.read_frames(self._max_receives, self._max_read_bytes)
                    metrics = self.metrics
                    metrics.bytes_received_total += n
                    if receives:
                        self.polled_receives.extend(receives)
                        metrics.responses_received_total += len(receives)
                    if more:
                        self._buffered.add(cid)
                    else:
                        self._buffered.discard(cid)
                    if self._memory_pool is not None and channel.waiting_for_memory() and not channel.is_muted():
                        self._mute_for_memory(channel)
                        interest_may_change = True
                if mask & _EVENT_WRITE:
                    interest_may_change = True  # a write, or a write event with nothing to write: a registration to correct
                    if channel.has_send():
                        before = channel.bytes_sent
                        done = channel.write()
                        self.metrics.bytes_sent_total += channel.bytes_sent - before
                        if done is not None:
                            self.polled_sends.append(done)
                            self.metrics.requests_sent_total += 1
            if interest_may_change:
                self._update_interest(channel)
        except Exception as e:
            self._channel_failed(channel, e)

    def _channel_failed(self, channel: KafkaChannel, error: Exception) -> None:
        """A channel's event handling raised ``error``: the channel closed (the peer's end of stream, an authentication
        failure, a bad frame, a socket error, anything else). The kernel's poll (:meth:`compiled_poll`) calls it for
        its read of a channel."""
        if isinstance(error, PeerClosedError):
            self._close(channel, DisconnectInfo(channel.state))
        elif isinstance(error, _AUTH_ERRORS):
            self.metrics.failed_authentication_total += 1
            channel.state = ChannelState.AUTHENTICATION_FAILED
            self._close(channel, DisconnectInfo(ChannelState.AUTHENTICATION_FAILED, error))
        else:
            self._close(channel, DisconnectInfo(channel.state, error))

    # --- re-authentication (KIP-368, client side) ---------------------------------------------------

    def _schedule_reauthentication(self, channel: KafkaChannel, now_ns: int) -> None:
        """After a client authentication that got a session lifetime: re-authenticate at a random point between
        85% and 95% of it (Kafka's client does the same, so that many connections do not re-authenticate at
        once and the session never lapses)."""
        # (imported here: a client without SASL never loads it; a channel with an authenticator has it loaded)
        from pykafka_client.network.transport.sasl.authenticator import SaslClientAuthenticator

        auth = channel.authenticator
        if channel.id in self._server_channels or not isinstance(auth, SaslClientAuthenticator):
            return
        if auth.can_reauthenticate():
            share = REAUTH_MIN_SHARE + (REAUTH_MAX_SHARE - REAUTH_MIN_SHARE) * self._reauth_rng.random()
            self._reauth_at_ms[channel.id] = now_ns // 1_000_000 + int(auth.session_lifetime_ms * share)

    def reauthentication_delay_ms(self) -> int | None:
        if not self._reauth_at_ms:
            return None
        return max(0, min(self._reauth_at_ms.values()) - self._time.nanoseconds() // 1_000_000)

    def reauthentications_due(self) -> list[str]:
        if not self._reauth_at_ms:
            return []
        now_ms = self._time.nanoseconds() // 1_000_000
        return [cid for cid, at in self._reauth_at_ms.items() if at <= now_ms and self.is_channel_ready(cid)]

    def begin_reauthentication(self, connection_id: str) -> None:
        from pykafka_client.network.transport.sasl.authenticator import SaslClientAuthenticator

        channel = self._require(connection_id)
        auth = channel.authenticator
        if not isinstance(auth, SaslClientAuthenticator):
            raise IllegalStateError(f"channel {connection_id} has no SASL session to re-authenticate")
        if channel.has_send():
            raise IllegalStateError(f"channel {connection_id} has a send in progress: re-authenticate between requests")
        self._reauth_at_ms.pop(connection_id, None)
        auth.begin_reauthentication()
        self._reauthenticating.add(connection_id)
        channel.begin_reauthentication()
        self._update_interest(channel)

    def _maybe_close_oldest_connection(self, now_ns: int) -> None:
        if self._idle is None:
            return
        expired = self._idle.poll_expired_connection(now_ns)
        if expired is None:
            return
        channel = self._channels.get(expired)
        if channel is not None:
            channel.state = ChannelState.EXPIRED
            self._close(channel, DisconnectInfo(ChannelState.EXPIRED))


#: Frames a client completes per channel per poll (Java: 1). A client may take several at once since
#: it has no mute discipline to protect; fewer polls per response matter in Python.
CLIENT_MAX_RECEIVES_PER_CHANNEL_PER_POLL = 16


def create_client_selector(config: Mapping[str, object], time: Time = SYSTEM_TIME) -> Selector:
    """The client's Selector from Kafka configuration: ``security.protocol`` with its ``ssl.*`` /
    ``sasl.*`` keys, ``connections.max.idle.ms`` (default 540000, -1 disables) and
    ``receive.message.max.bytes`` (librdkafka's name; default 100 MiB: the largest response frame
    accepted, anything larger closes the connection with InvalidReceiveError)."""
    return Selector(
        time=time,
        max_receive_size=int(config.get("receive.message.max.bytes", DEFAULT_MAX_RECEIVE_SIZE)),  # type: ignore[call-overload]
        connections_max_idle_ms=int(config.get("connections.max.idle.ms", DEFAULT_CONNECTIONS_MAX_IDLE_MS)),  # type: ignore[call-overload]
        channel_builder=create_channel_builder(config, Mode.CLIENT),
        max_receives_per_channel_per_poll=CLIENT_MAX_RECEIVES_PER_CHANNEL_PER_POLL,
    )
