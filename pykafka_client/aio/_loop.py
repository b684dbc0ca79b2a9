"""Completions signalled from the clients' threads into the event loop, without blocking either side.

The sync clients complete their work on their own threads (the producer's Sender, the async consumer's
client thread, a worker thread). :class:`LoopWaker` hands a callback to the event loop from any thread
with the loop's own thread-safe entry point (asyncio ``call_soon_threadsafe``, trio
``TrioToken.run_sync_soon``): the calling thread never waits for the loop, and a burst of completions
costs one loop callback (the pending callbacks are batched under a lock until the loop runs them).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import sniffio

log = logging.getLogger(__name__)

Schedule = Callable[[Callable[[], object]], object]


def _current_loop() -> tuple[object, Schedule]:
    """(identity of the running event loop, its thread-safe "call soon")."""
    library = sniffio.current_async_library()
    if library == "asyncio":
        import asyncio

        loop = asyncio.get_running_loop()
        return loop, loop.call_soon_threadsafe
    if library == "trio":
        import trio

        token = trio.lowlevel.current_trio_token()
        return token, token.run_sync_soon
    raise RuntimeError(f"pykafka_client.aio runs under asyncio or trio, not {library}")


class LoopWaker:
    """Runs callbacks on one event loop, called from any thread; callbacks run in order, in the loop."""

    __slots__ = ("_lock", "_pending", "_schedule", "_scheduled", "loop")

    def __init__(self) -> None:
        self.loop, self._schedule = _current_loop()
        self._lock = threading.Lock()
        self._pending: list[Callable[[], object]] = []
        self._scheduled = False

    def call_soon(self, callback: Callable[[], object]) -> None:
        with self._lock:
            self._pending.append(callback)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self._schedule(self._run)
        except Exception as e:  # the loop has ended (asyncio RuntimeError, trio RunFinishedError)
            with self._lock:
                self._pending.clear()
                self._scheduled = False
            log.warning("a completion could not be handed to its event loop, which has ended: %r", e)

    def _run(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
            self._scheduled = False
        for callback in pending:
            callback()


class WakerCache:
    """The :class:`LoopWaker` of the loop a client is used from (one slot: a client normally lives in one loop)."""

    __slots__ = ("_waker",)

    def __init__(self) -> None:
        self._waker: LoopWaker | None = None

    def current(self) -> LoopWaker:
        waker = self._waker
        if waker is not None:
            library = sniffio.current_async_library()
            if library == "asyncio":
                import asyncio

                if waker.loop is asyncio.get_running_loop():
                    return waker
            elif library == "trio":
                import trio

                if waker.loop is trio.lowlevel.current_trio_token():
                    return waker
        waker = self._waker = LoopWaker()
        return waker
