"""An in-process echo server on the transport Selector (server role) and client-side helpers.

The server thread runs a broker-like loop: register accepted sockets, poll, and for each request
mute the channel, queue the echo, unmute once the response is written (one request in flight per
connection, as the broker does).
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from pykafka_client.network.transport.channel_builder import ChannelBuilder, DefaultChannelBuilder, Mode
from pykafka_client.network.transport.network_send import size_prefixed
from pykafka_client.network.transport.selectable import DisconnectInfo, NetworkReceive
from pykafka_client.network.transport.selector import Selector

DEADLINE_S = 20.0


class EchoServer:
    def __init__(self, channel_builder: ChannelBuilder | None = None, **selector_kwargs: Any) -> None:
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(2048)
        self.listener.settimeout(0.1)
        self.port: int = self.listener.getsockname()[1]
        self.selector = Selector(channel_builder=channel_builder or DefaultChannelBuilder(Mode.SERVER), **selector_kwargs)
        self.disconnects: dict[str, DisconnectInfo] = {}
        self.received = 0
        self.principals: dict[str, str | None] = {}
        self._new: queue.Queue[socket.socket] = queue.Queue()
        self._stop = threading.Event()
        self._pending: dict[str, deque[NetworkReceive]] = {}
        self._lock = threading.Lock()
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True)
        self._processor = threading.Thread(target=self._run, daemon=True)
        self._index = 0

    def __enter__(self) -> EchoServer:
        self._acceptor.start()
        self._processor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.selector.wakeup()
        self._processor.join(10)
        self._acceptor.join(10)
        self.listener.close()
        self.selector.close()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._new.put(sock)
            self.selector.wakeup()

    def _run(self) -> None:
        sel = self.selector
        while not self._stop.is_set():
            while True:
                try:
                    sock = self._new.get_nowait()
                except queue.Empty:
                    break
                self._index += 1
                sel.register(f"server-{self._index}", sock)
            sel.poll(100)
            for receive in sel.completed_receives():
                cid = receive.source
                sel.mute(cid)
                channel = sel.channel(cid)
                with self._lock:
                    self.received += 1
                    if channel is not None:
                        self.principals[cid] = channel.principal()
                sel.send(size_prefixed(cid, [receive.payload]))
            for send in sel.completed_sends():
                if sel.is_open(send.destination):
                    sel.unmute(send.destination)
            with self._lock:
                self.disconnects.update(sel.disconnected())

    def disconnect_snapshot(self) -> dict[str, DisconnectInfo]:
        with self._lock:
            return dict(self.disconnects)


def poll_until(selector: Selector, done: Callable[[], bool], on_poll: Callable[[], None] | None = None, deadline_s: float = DEADLINE_S) -> None:
    """Poll until ``done()``; fails the test after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while not done():
        if time.monotonic() > end:
            raise AssertionError("condition not reached before the deadline")
        selector.poll(50)
        if on_poll is not None:
            on_poll()


class ClientRecorder:
    """Collects what a client selector reports across polls."""

    def __init__(self, selector: Selector) -> None:
        self.selector = selector
        self.connected: list[str] = []
        self.receives: list[NetworkReceive] = []
        self.sends: list[str] = []
        self.disconnected: dict[str, DisconnectInfo] = {}

    def __call__(self) -> None:
        s = self.selector
        self.connected += s.connected()
        self.receives += s.completed_receives()
        self.sends += [x.destination for x in s.completed_sends()]
        self.disconnected.update(s.disconnected())

    def poll_until(self, done: Callable[[], bool], deadline_s: float = DEADLINE_S) -> None:
        poll_until(self.selector, done, self, deadline_s)


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload
