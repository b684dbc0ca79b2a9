"""The async producer's Sender, driven from the event loop instead of an I/O thread.

The Sender, NetworkClient, RecordAccumulator and TransactionManager are the sync producer's objects; only
who runs :meth:`Sender.run_step` changes. :class:`SenderDriver` runs it as one background task of the
event loop (asyncio task / trio system task), so the loop thread is the only thread doing the producer's
work and there is no GIL hand-off between the loop and an I/O thread (which cost up to the interpreter's
switch interval, 5 ms, per hand-off: the bridge's loop-lag p99 of 5-16 ms).

One step: ``run_step()`` with the selector in non-blocking mode (its poll never waits; it records how long
it would have waited in ``deferred_timeout_ms``: linger, retry backoff, request timeouts, metadata), then

* if that is 0 (a connection had I/O, or the Sender has work due now), or the selector has results pending
  without I/O, or the Sender was woken up during the step (:attr:`Sender.wakeup_pending`: the step's poll may
  have drained that wake-up, and the step may have looked before the change it announces): yield
  (:func:`~pykafka_client.aio._loop.loop_yield`, behind the timers already due) and step again;
* else await the OS selector's descriptor (epoll) becoming readable, up to that timeout. The descriptor is
  readable when any connection has I/O to do or :meth:`Selector.wakeup` was called (``send`` filling a batch,
  ``flush``, ``close``, a transactional call: the sync producer's wake-ups, unchanged).

A wake-up that the step's poll drained with no connection I/O does not make the driver step again: the change it
announced came before the step (else the Sender's wake-up flag is set), so the step saw it and the timeout it
computed already counts it. (A thread's blocking poll returns on such a wake-up and runs one more iteration, which
finds nothing new; the driver skips it.)

Under asyncio the descriptor is registered with the loop once for the driver's whole run (:class:`_Readable`:
a reader callback that resolves the current wait, a timer for its timeout), not once per wait: a wait through
``anyio.wait_readable`` under ``move_on_after`` adds and removes the reader (two ``epoll_ctl`` calls) and
enters a cancel scope each time, which cost more loop time per step than the steps' own bookkeeping. Under
trio the driver waits with ``anyio.wait_readable``.

A step is short (its p99 is measured by ``bench/async.py``), so no step blocks the loop.

The blocking sync calls (``flush``, ``close``, transactional calls, metadata waits) still run on worker
threads and wait for the loop-driven Sender as they wait for the I/O thread. When the loop ends while the
producer is open (its task is cancelled), or before the driver was ever started in a loop, the remaining
steps run on a thread (:meth:`SenderDriver.join` starts it), so the producer can always be closed and flushed.
Where the selector has no pollable descriptor (``select``-based platforms), the Sender runs on its thread
as in the sync producer.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
import time as _time
from collections.abc import Callable
from typing import Any

import anyio

from pykafka_client.aio._loop import loop_yield
from pykafka_client.producer.sender import Sender

log = logging.getLogger(__name__)


class _State(enum.Enum):
    NEW = "new"  # not started: nothing runs the Sender yet
    LOOP = "loop"  # a task of an event loop runs it
    THREAD = "thread"  # a thread runs it (the loop ended, or there was none, or no pollable selector)
    DONE = "done"  # the Sender's run is over (finish_run done)


class SenderDriver:
    """Runs one Sender's steps in an event loop; an :class:`~pykafka_client.producer.sender.IoRunner`."""

    def __init__(self, sender: Sender, name: str) -> None:
        self._sender = sender
        self._selector = sender.pollable_selector
        self._name = name
        self._lock = threading.Lock()
        self._state = _State.NEW
        self._done = threading.Event()
        self._loop_thread = 0
        self._asyncio_loop: asyncio.AbstractEventLoop | None = None
        self._task: Any = None  # the asyncio task (a strong reference, as asyncio requires)
        #: Wall time of each step (ns), when a benchmark sets it to a list.
        self.step_ns: list[int] | None = None

    # --- IoRunner ------------------------------------------------------------------------------

    def is_alive(self) -> bool:
        return not self._done.is_set()

    def join(self, timeout: float | None = None) -> None:
        """Wait until the Sender's run is over (as ``Thread.join``). Never waits in the loop thread itself
        (it would stop the loop that runs the Sender): returns at once there."""
        with self._lock:
            state = self._state
            if state is _State.NEW or (
                state is _State.LOOP and self._asyncio_loop is not None and self._asyncio_loop.is_closed()
            ):
                self._state = state = _State.THREAD
                self._start_thread()
        if state is _State.LOOP and threading.get_ident() == self._loop_thread:
            log.warning("the producer was closed from its event loop's thread without awaiting: not waiting")
            return
        self._done.wait(timeout)

    # --- starting --------------------------------------------------------------------------------

    def ensure_started(self) -> None:
        """Start driving the Sender: in the event loop running in this thread, else (no loop here: a sync
        call from another thread came first) on a thread. Once; cheap afterwards."""
        if self._state is not _State.NEW:
            return
        with self._lock:
            if self._state is not _State.NEW:
                return
            loop: asyncio.AbstractEventLoop | None = None
            trio_token: object = None
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                try:
                    import trio

                    trio_token = trio.lowlevel.current_trio_token()
                except (ImportError, RuntimeError):
                    pass
            if self._selector is None or (loop is None and trio_token is None):
                self._state = _State.THREAD
                self._start_thread()
                return
            self._state = _State.LOOP
            self._loop_thread = threading.get_ident()
            if loop is not None:
                self._asyncio_loop = loop
                self._task = loop.create_task(self._drive(), name=self._name)
            else:
                import trio

                trio.lowlevel.spawn_system_task(self._drive, name=self._name)

    def _start_thread(self) -> None:
        threading.Thread(target=self._run_rest, name=self._name, daemon=True).start()

    # --- the two ways of running the steps -----------------------------------------------------------

    async def _drive(self) -> None:
        sender = self._sender
        selector = self._selector
        assert selector is not None
        fd = selector.fileno()
        assert fd is not None
        wait_readable = anyio.wait_readable
        clock = _time.perf_counter_ns
        finished = False
        readable = (
            _Readable(self._asyncio_loop, fd, selector.readable_now_check())
            if self._asyncio_loop is not None else None
        )
        selector.nonblocking = True
        try:
            sender.start_run()
            while True:
                selector.deferred_timeout_ms = 0
                steps = self.step_ns
                if steps is None:
                    more = sender.run_step()
                else:
                    start = clock()
                    more = sender.run_step()
                    steps.append(clock() - start)
                if not more:
                    finished = True
                    break
                timeout_ms = selector.deferred_timeout_ms
                if timeout_ms <= 0 or sender.wakeup_pending or selector.has_pending_io():
                    await loop_yield()
                elif readable is not None:
                    await readable.wait(timeout_ms / 1000.0)
                else:
                    with anyio.move_on_after(timeout_ms / 1000.0):
                        await wait_readable(fd)
        except Exception:
            log.exception("uncaught error in the producer's event-loop driver; the producer stops sending")
            finished = True
        finally:
            if readable is not None:
                readable.close()
            selector.nonblocking = False
            if finished:
                self._finish()
            else:
                # the loop is ending (our task is cancelled) with the producer still open: go on in a thread
                with self._lock:
                    self._state = _State.THREAD
                    self._asyncio_loop = None
                    self._task = None
                self._start_thread()

    def _run_rest(self) -> None:
        """The thread's part: the remaining steps (blocking polls), then the end of the run."""
        sender = self._sender
        try:
            sender.start_run()  # idempotent: the loop may have run the first steps
            while sender.run_step():
                pass
        except Exception:
            log.exception("uncaught error in the producer I/O thread; the producer stops sending")
        finally:
            self._finish()

    def _finish(self) -> None:
        try:
            self._sender.finish_run()
        finally:
            with self._lock:
                self._state = _State.DONE
                self._task = None
            self._done.set()


class _Readable:
    """The selector's descriptor watched by an asyncio loop for a driver's whole run: :meth:`wait` returns when
    the descriptor is readable or ``timeout`` seconds passed, whichever comes first.

    The loop's reader callback is level-triggered: it runs at each loop iteration while the descriptor stays
    readable (the Sender's next step drains it), and only resolves a wait in progress. The loop queues it when its
    own poll finds the descriptor readable, then runs it after the callbacks queued before, the driver's step among
    them: by then the step may have drained what made the descriptor readable and begun its next wait. So the
    callback resolves a wait only if the descriptor is still readable (a zero-timeout ``poll``, about 1 us); a
    stale callback resolving the next wait would cost a whole step that finds nothing to do."""

    __slots__ = ("_fd", "_loop", "_still_readable", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, still_readable: Callable[[], bool]) -> None:
        self._loop = loop
        self._fd = fd
        self._waiter: asyncio.Future[None] | None = None
        self._still_readable = still_readable
        loop.add_reader(fd, self._on_readable)

    def _on_readable(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done() and self._still_readable():
            waiter.set_result(None)

    async def wait(self, timeout: float) -> None:
        loop = self._loop
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        timer = loop.call_later(timeout, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def close(self) -> None:
        """Stop watching the descriptor (the loop may be closing already: nothing is left to remove then)."""
        self._waiter = None
        try:
            self._loop.remove_reader(self._fd)
        except (RuntimeError, ValueError, OSError):
            pass


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # resolved by the reader callback, or its task was cancelled
        waiter.set_result(None)
