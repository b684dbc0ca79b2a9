"""The transport seam between NetworkClient (or a broker Processor) and the sockets.

Java: ``org.apache.kafka.common.network.Selectable``. The real implementation is
``pykafka_client.network.transport.selector.Selector``; unit tests drive NetworkClient with a MockSelector that
implements the same protocol. Connection ids are strings (node ids as text on the client, Kafka's
``local-remote-processor-index`` on the broker).

After each :meth:`Selectable.poll` the four result lists describe what happened in that poll only;
they are replaced by the next poll.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence, Union

Buffer = Union[bytes, bytearray, memoryview]


class ChannelState(enum.Enum):
    """Why a channel ended up in ``disconnected()`` (Java ChannelState.State)."""

    NOT_CONNECTED = "NOT_CONNECTED"
    AUTHENTICATE = "AUTHENTICATE"
    READY = "READY"
    EXPIRED = "EXPIRED"
    FAILED_SEND = "FAILED_SEND"
    AUTHENTICATION_FAILED = "AUTHENTICATION_FAILED"
    LOCAL_CLOSE = "LOCAL_CLOSE"


@dataclass(eq=False)
class DisconnectInfo:
    """State of a channel at disconnect, with the exception that caused it if any."""

    state: ChannelState
    exception: BaseException | None = None
    remote_address: str | None = None


@dataclass(eq=False, slots=True)
class NetworkSend:
    """A whole frame to write to ``destination``: the 4-byte size prefix is part of ``buffers``.

    ``buffers`` may be several pieces (header, body, record batches) so that record bytes are
    never copied to build a request. A buffer may also be a ``FileRegion`` for zero-copy sends on
    the broker (the Selector writes it with ``socket.sendfile``).
    """

    destination: str
    buffers: Sequence[object]
    size: int
    # Set by the transport as bytes go out.
    written: int = 0
    extra: object = None  # opaque per-send data for the caller (e.g. the in-flight request)

    def completed(self) -> bool:
        return self.written >= self.size


@dataclass(eq=False, slots=True)
class NetworkReceive:
    """A whole frame received from ``source``: ``payload`` excludes the 4-byte size prefix."""

    source: str
    payload: memoryview
    extra: object = field(default=None)


#: What :meth:`Selectable.poll` returns: which of its results have something, as bits of an int, so that its caller
#: asks for none of the empty ones (after most polls only a completed send or receive has entries).
POLL_COMPLETED_SENDS = 1  # completed_sends() has entries
POLL_COMPLETED_RECEIVES = 2  # completed_receives() has entries
POLL_DISCONNECTED = 4  # disconnected() has entries
POLL_CONNECTED = 8  # connected() has entries
POLL_REAUTHENTICATION_SCHEDULED = 16  # a SASL re-authentication is scheduled: reauthentication_delay_ms() is not None
#: every bit: each result is worth asking for
POLL_ALL = 31


class Selectable(Protocol):
    """What NetworkClient needs from the transport (Java Selectable)."""

    def connect(self, connection_id: str, address: tuple[str, int], send_buffer_size: int, receive_buffer_size: int) -> None:
        """Start a non-blocking connect. Raises OSError at once for an immediate failure."""
        ...

    def wakeup(self) -> None:
        """Interrupt a poll blocked in another thread (thread-safe)."""
        ...

    def close(self) -> None:
        """Close every channel and the selector."""
        ...

    def close_channel(self, connection_id: str) -> None:
        """Close one channel now; it is NOT reported in ``disconnected()``."""
        ...

    def send(self, send: NetworkSend) -> None:
        """Queue a send; one at a time per channel (the previous one must have completed)."""
        ...

    def poll(self, timeout_ms: int) -> int:
        """Do I/O for up to ``timeout_ms`` (0 = don't block) and fill the result lists; returns the ``POLL_*`` bits
        of the results that have entries (a result whose bit is clear is empty)."""
        ...

    def completed_sends(self) -> list[NetworkSend]: ...

    def completed_receives(self) -> list[NetworkReceive]: ...

    def disconnected(self) -> dict[str, DisconnectInfo]: ...

    def connected(self) -> list[str]:
        """Channels whose connection (and TLS/SASL handshake) finished in the last poll."""
        ...

    def mute(self, connection_id: str) -> None: ...

    def unmute(self, connection_id: str) -> None: ...

    def mute_all(self) -> None: ...

    def unmute_all(self) -> None: ...

    def is_channel_ready(self, connection_id: str) -> bool:
        """True once the channel is connected and authenticated."""
        ...

    @property
    def reauthentications_scheduled(self) -> Mapping[str, int]:
        """The channels whose SASL session is to be re-authenticated, with when (ms, the selector's clock): empty
        while :meth:`reauthentication_delay_ms` is None (a caller asks it only when this is not empty)."""
        ...

    def reauthentication_delay_ms(self) -> int | None:
        """Milliseconds until the first SASL session is due for re-authentication (KIP-368; 0: one is due now;
        None: none to re-authenticate), by the selector's own clock."""
        ...

    def reauthentications_due(self) -> list[str]:
        """The ready channels whose SASL session is due for re-authentication now."""
        ...

    def begin_reauthentication(self, connection_id: str) -> None:
        """Authenticate the channel again on the same connection; it is not ready until that completes, and it
        is not reported in :meth:`connected` again. Only with no request in flight on it."""
        ...
