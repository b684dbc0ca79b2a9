"""A fake transport that drives a *real* NetworkClient deterministically (Java: ``test.MockSelector``).

Behaviour (all results appear in the next :meth:`MockSelector.poll`; a poll that has nothing to report
``sleep``s the MockTime by its timeout, one that has returns at once, so time moves only when the client
polls and waits):

* ``connect`` succeeds instantly (reported in ``connected()``) unless the address is blocked
  (:meth:`server_connection_blocked` / the ``can_connect`` predicate): a blocked connect stays pending
  forever, which is how the connection-setup timeout is tested. Addresses in ``refused`` raise
  ``ConnectionRefusedError`` at once.
* ``send`` is completed in full on the next poll (``completed_sends()``); the bytes are kept in
  :attr:`completed_send_buffers` and the parsed requests in :attr:`sent_requests`.
* Receives are queued with :meth:`complete_receive` (any bytes) or :meth:`respond` (a response body
  encoded for the oldest unanswered request to that node); :meth:`delayed_receive` releases a receive
  only in a poll in which that node completed a send.
* :meth:`server_disconnect` / :meth:`server_authentication_failed` report a disconnect on the next poll;
  :meth:`channel_not_ready` makes ``is_channel_ready`` false (the TLS/SASL handshake never finishes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
from pykafka_client.utils.time import MockTime


@dataclass
class SentRequest:
    """A request the client wrote, parsed back (header + body)."""

    destination: str
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int
    body: Any
    raw: bytes
    answered: bool = False


def _frame_bytes(send: NetworkSend) -> bytes:
    out = bytearray()
    for buf in send.buffers:
        out += bytes(buf)  # type: ignore[call-overload]
    return bytes(out)


class MockSelector:
    """Implements :class:`pykafka_client.network.transport.selectable.Selectable` with test hooks."""

    def __init__(self, time: MockTime, can_connect: Callable[[tuple[str, int]], bool] | None = None) -> None:
        self.time = time
        self.can_connect = can_connect
        self.refused: set[tuple[str, int]] = set()
        self.blocked_connection_ids: set[str] = set()
        self.reauth_due_ms: dict[str, int] = {}
        self.reauthentications_scheduled = self.reauth_due_ms  # (Selectable's read-only view: the same map)
        #: (connection id, MockTime ms) of each re-authentication the client began
        self.reauthentications: list[tuple[str, int]] = []
        self.connect_attempts: list[tuple[str, tuple[str, int]]] = []
        self.channels: dict[str, tuple[str, int]] = {}
        self.not_ready: set[str] = set()
        self.closed_ids: list[str] = []
        self.muted: set[str] = set()
        self.wakeups = 0
        self.poll_timeouts: list[int] = []
        self.completed_send_buffers: list[bytes] = []
        self.sent_requests: list[SentRequest] = []
        self.closed = False
        self._initiated_sends: list[NetworkSend] = []
        self._pending_connected: list[str] = []
        self._pending_receives: list[NetworkReceive] = []
        self._delayed_receives: list[NetworkReceive] = []
        self._pending_disconnects: dict[str, DisconnectInfo] = {}
        self._completed_sends: list[NetworkSend] = []
        self._completed_receives: list[NetworkReceive] = []
        self._disconnected: dict[str, DisconnectInfo] = {}
        self._connected: list[str] = []
        # Optional hook run at the start of every poll (e.g. to answer requests automatically).
        self.on_poll: Callable[[MockSelector], None] | None = None

    # --- Selectable ----------------------------------------------------------------------------

    def connect(self, connection_id: str, address: tuple[str, int], send_buffer_size: int, receive_buffer_size: int) -> None:
        self.connect_attempts.append((connection_id, address))
        if address in self.refused:
            raise ConnectionRefusedError(f"connection to {address} refused (MockSelector)")
        self.channels[connection_id] = address
        blocked = connection_id in self.blocked_connection_ids or (
            self.can_connect is not None and not self.can_connect(address)
        )
        if not blocked:
            self._pending_connected.append(connection_id)

    def wakeup(self) -> None:
        self.wakeups += 1

    def close(self) -> None:
        self.closed = True
        self.channels.clear()

    def close_channel(self, connection_id: str) -> None:
        self.closed_ids.append(connection_id)
        self._drop(connection_id)

    def _drop(self, connection_id: str) -> None:
        self.channels.pop(connection_id, None)
        self._pending_connected = [c for c in self._pending_connected if c != connection_id]
        self._initiated_sends = [s for s in self._initiated_sends if s.destination != connection_id]
        self._pending_receives = [r for r in self._pending_receives if r.source != connection_id]
        self._delayed_receives = [r for r in self._delayed_receives if r.source != connection_id]
        for req in self.sent_requests:
            if req.destination == connection_id:
                req.answered = True

    def send(self, send: NetworkSend) -> None:
        if send.destination not in self.channels:
            # The real Selector reports a send to an unknown channel as a failed send / disconnect.
            self._pending_disconnects[send.destination] = DisconnectInfo(ChannelState.FAILED_SEND)
            return
        self._initiated_sends.append(send)

    def poll(self, timeout_ms: int) -> int:
        self.poll_timeouts.append(int(timeout_ms))
        if self.on_poll is not None:
            self.on_poll(self)
        self._completed_sends = []
        self._completed_receives = []
        self._connected, self._pending_connected = self._pending_connected, []
        self._disconnected, self._pending_disconnects = self._pending_disconnects, {}
        for send in self._initiated_sends:
            raw = _frame_bytes(send)
            send.written = send.size
            self._completed_sends.append(send)
            self.completed_send_buffers.append(raw)
            self._record_request(send.destination, raw)
        self._initiated_sends = []
        sent_to = {s.destination for s in self._completed_sends}
        still_delayed: list[NetworkReceive] = []
        for receive in self._delayed_receives:
            (self._pending_receives if receive.source in sent_to else still_delayed).append(receive)
        self._delayed_receives = still_delayed
        self._completed_receives, self._pending_receives = self._pending_receives, []
        # Like a real selector, return at once when something happened; otherwise wait the timeout out.
        if not (self._completed_sends or self._completed_receives or self._connected or self._disconnected):
            self.time.sleep(timeout_ms)
        # the bit of each result that has entries, as the Selector's poll returns them
        results: list[tuple[int, object]] = [
            (POLL_COMPLETED_SENDS, self._completed_sends), (POLL_COMPLETED_RECEIVES, self._completed_receives),
            (POLL_DISCONNECTED, self._disconnected), (POLL_CONNECTED, self._connected),
            (POLL_REAUTHENTICATION_SCHEDULED, self.reauth_due_ms),
        ]
        return sum(bit for bit, result in results if result)

    def completed_sends(self) -> list[NetworkSend]:
        return self._completed_sends

    def completed_receives(self) -> list[NetworkReceive]:
        return self._completed_receives

    def disconnected(self) -> dict[str, DisconnectInfo]:
        return self._disconnected

    def connected(self) -> list[str]:
        return self._connected

    def mute(self, connection_id: str) -> None:
        self.muted.add(connection_id)

    def unmute(self, connection_id: str) -> None:
        self.muted.discard(connection_id)

    def mute_all(self) -> None:
        self.muted.update(self.channels)

    def unmute_all(self) -> None:
        self.muted.clear()

    def is_channel_ready(self, connection_id: str) -> bool:
        return connection_id in self.channels and connection_id not in self.not_ready

    def reauthentication_delay_ms(self) -> int | None:
        now_ms = self.time.hi_res_clock_ms()
        return max(0, min(self.reauth_due_ms.values()) - now_ms) if self.reauth_due_ms else None

    def reauthentications_due(self) -> list[str]:
        now_ms = self.time.hi_res_clock_ms()
        return [c for c, at in self.reauth_due_ms.items() if at <= now_ms and self.is_channel_ready(c)]

    def begin_reauthentication(self, connection_id: str) -> None:
        """Recorded in :attr:`reauthentications`; the channel stays ready (the exchange is not simulated)."""
        del self.reauth_due_ms[connection_id]
        self.reauthentications.append((connection_id, self.time.hi_res_clock_ms()))

    def reauthentication_due_at(self, connection_id: str, at_ms: int) -> None:
        """The channel's SASL session is due for re-authentication at ``at_ms`` (``time.hi_res_clock_ms()``)."""
        self.reauth_due_ms[connection_id] = at_ms

    # --- test hooks ----------------------------------------------------------------------------

    def server_connection_blocked(self, connection_id: str) -> None:
        """Connects with this id will never complete."""
        self.blocked_connection_ids.add(connection_id)

    def server_connection_unblocked(self, connection_id: str) -> None:
        self.blocked_connection_ids.discard(connection_id)

    def channel_not_ready(self, connection_id: str) -> None:
        self.not_ready.add(connection_id)

    def server_disconnect(self, connection_id: str, state: ChannelState = ChannelState.READY) -> None:
        """The peer closes the connection: reported in the next poll."""
        self._drop(connection_id)
        self._pending_disconnects[connection_id] = DisconnectInfo(state)

    def server_authentication_failed(self, connection_id: str, exception: BaseException | None = None) -> None:
        from pykafka_client.errors import AuthenticationError

        self._drop(connection_id)
        self._pending_disconnects[connection_id] = DisconnectInfo(
            ChannelState.AUTHENTICATION_FAILED, exception or AuthenticationError("authentication failed (mock)")
        )

    def complete_receive(self, source: str, payload: bytes) -> None:
        """Deliver ``payload`` (a frame without its size prefix) from ``source`` on the next poll."""
        self._pending_receives.append(NetworkReceive(source, memoryview(payload)))

    def delayed_receive(self, source: str, payload: bytes) -> None:
        """Deliver ``payload`` in the first poll in which ``source`` completes a send."""
        self._delayed_receives.append(NetworkReceive(source, memoryview(payload)))

    def _record_request(self, destination: str, raw: bytes) -> None:
        from pykafka_client.protocol import headers

        try:
            header, body = headers.decode_request(memoryview(raw)[4:])
        except Exception:  # not a Kafka request (tests may send anything)
            return
        self.sent_requests.append(
            SentRequest(
                destination,
                int(header.request_api_key),
                int(header.request_api_version),
                int(header.correlation_id),
                header.client_id,
                headers.request_header_version(int(header.request_api_key), int(header.request_api_version)),
                body,
                raw,
            )
        )

    def unanswered(self, destination: str | None = None, api_key: int | None = None) -> list[SentRequest]:
        return [
            r
            for r in self.sent_requests
            if not r.answered
            and (destination is None or r.destination == destination)
            and (api_key is None or r.api_key == int(api_key))
        ]

    def respond(
        self,
        destination: str,
        body: Any,
        *,
        api_key: int | None = None,
        version: int | None = None,
        correlation_id: int | None = None,
        delayed: bool = False,
    ) -> SentRequest:
        """Answer the oldest unanswered request to ``destination`` (of ``api_key`` if given) with ``body``,
        encoded at the request's version unless ``version`` is given. Returns the request answered."""
        from pykafka_client.protocol import headers

        pending = self.unanswered(destination, api_key)
        if not pending:
            raise AssertionError(f"no unanswered request to node {destination} (api_key={api_key})")
        req = pending[0]
        req.answered = True
        pieces = headers.encode_response(
            body,
            req.api_key,
            req.api_version if version is None else version,
            req.correlation_id if correlation_id is None else correlation_id,
        )
        raw = b"".join(bytes(p) for p in pieces if not hasattr(p, "fd"))[4:]  # type: ignore[arg-type]
        if delayed:
            self.delayed_receive(destination, raw)
        else:
            self.complete_receive(destination, raw)
        return req

    def last_request(self, destination: str | None = None) -> SentRequest:
        reqs = [r for r in self.sent_requests if destination is None or r.destination == destination]
        if not reqs:
            raise AssertionError("no request was sent")
        return reqs[-1]
