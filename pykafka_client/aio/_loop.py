"""Completions signalled from the clients' threads into the event loop, without blocking either side.

The sync clients complete their work on their own threads (the producer's Sender, the async consumer's
client thread, a worker thread). :class:`LoopWaker` hands a callback to the event loop from any thread
with the loop's own thread-safe entry point (asyncio ``call_soon_threadsafe``, trio
``TrioToken.run_sync_soon``): the calling thread never waits for the loop, and a burst of completions
costs one loop callback (the pending callbacks are batched under a lock until the loop runs them).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Schedule = Callable[[Callable[[], object]], object]


def _current_loop() -> tuple[object, Schedule]:
    """(identity of the running event loop, its thread-safe "call soon"); asyncio or trio.

    Without sniffio (anyio 4 does not depend on it): an asyncio loop runs in this thread, or we are in trio.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return loop, loop.call_soon_threadsafe
    try:
        import trio

        token = trio.lowlevel.current_trio_token()
    except (ImportError, RuntimeError):
        raise RuntimeError("pykafka_client.aio must be called from an asyncio or trio event loop") from None
    return token, token.run_sync_soon


def running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio loop running in this thread; None under trio (or outside any loop)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _current_loop_identity() -> object:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        import trio

        return trio.lowlevel.current_trio_token()


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
        if waker is None or waker.loop is not _current_loop_identity():
            waker = self._waker = LoopWaker()
        return waker


async def loop_yield() -> None:
    """Suspend the caller until the tasks that came due meanwhile, timers included, have run: what a task
    working in a tight loop awaits now and then (asyncio or trio).

    A plain checkpoint is not enough (measured with a 1 ms ticker beside a task yielding every 0.5 ms):
    asyncio runs a task that yielded with ``sleep(0)`` *before* the timers that came due meanwhile, and a timer
    wakes its task one loop iteration later still, so a 1 ms sleeper waited about three slices (lag p50 1.5 ms);
    here the caller resumes through a timer due now, queued behind theirs (p50 0.5 ms). trio runs the tasks
    made runnable in one batch in a random order, so the caller checkpoints twice (lag p99 1.0 -> 0.5 ms).
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        import trio

        await trio.lowlevel.checkpoint()
        await trio.lowlevel.checkpoint()
        return
    future: asyncio.Future[None] = loop.create_future()
    loop.call_at(loop.time(), _resolve, future)
    await future


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():  # the waiting task may have been cancelled
        future.set_result(None)
