"""One thread that runs a single-threaded client's calls, in order, for tasks awaiting them on an event loop.

Used by :class:`~pykafka_client.aio.AsyncKafkaConsumer` (the sync consumer is not thread-safe and its
rebalance listeners must run in the thread that is inside ``poll``). How a call travels:

* The task puts a :class:`_Job` on the queue and awaits it; the thread runs it and hands the outcome back
  through the task's :class:`~pykafka_client.aio._loop.LoopWaker` (the thread never waits for the loop).
* A job may ask the loop to run something for it (a rebalance listener, possibly a coroutine):
  :meth:`ClientThread.call_in_loop` posts a request to the task awaiting the job, which runs it in the event
  loop, and the thread serves its queue meanwhile, so the listener may await this client's own calls
  (``await consumer.commit()`` in ``on_partitions_revoked``): they run nested, on this thread, as a sync
  listener's calls would.
* A *preemptible* job (poll) steps aside for calls queued after it: the task that queues one calls the
  client's ``wakeup()``, the poll raises WakeupException, the thread runs the queued calls and polls again
  for the rest of its timeout. Any WakeupException is ours (the async API has no ``wakeup``), so a stale one
  only makes the job run again.
* Cancelling the awaiting task: a job not started yet is dropped; a started one is woken and awaited,
  shielded, until it ends (bounded: blocking calls check the wakeup flag), so the client is never left in
  the middle of a call, and the outcome of a cancelled job goes to ``on_cancelled_result`` (a cancelled poll's
  records are kept for the next poll).
"""

from __future__ import annotations

import inspect
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import anyio

from pykafka_client.aio._loop import LoopWaker, WakerCache
from pykafka_client.errors import WakeupException
from pykafka_client.errors_base import KafkaError

T = TypeVar("T")


class _JobCancelled(KafkaError):
    """The outcome of a job whose task was cancelled (never seen by a caller: the task was cancelled)."""


class _LoopRequest:
    """Something a job needs run in the event loop (a rebalance listener); the reply comes back on the queue."""

    __slots__ = ("error", "fn", "result")

    def __init__(self, fn: Callable[[], object]) -> None:
        self.fn = fn
        self.result: object = None
        self.error: BaseException | None = None


class _Job(Generic[T]):
    __slots__ = ("cancelled", "error", "event", "finished", "fn", "lock", "preemptible", "requests", "result",
                 "started", "waker")

    def __init__(self, fn: Callable[[], T], preemptible: bool, waker: LoopWaker) -> None:
        self.fn = fn
        self.preemptible = preemptible
        self.waker = waker
        self.lock = threading.Lock()
        self.started = False
        self.finished = False
        self.cancelled = False
        self.result: T | None = None
        self.error: BaseException | None = None
        self.requests: deque[_LoopRequest] = deque()
        self.event: anyio.Event | None = None

    def _signal(self) -> None:
        """Under ``lock``: wake the awaiting task if it sleeps."""
        event, self.event = self.event, None
        if event is not None:
            self.waker.call_soon(event.set)

    def finish(self, result: T | None, error: BaseException | None) -> None:
        with self.lock:
            self.result = result
            self.error = error
            self.finished = True
            self._signal()

    def post(self, request: _LoopRequest) -> None:
        with self.lock:
            self.requests.append(request)
            self._signal()


_Item = _Job[Any] | _LoopRequest | None


class ClientThread:
    """See the module docstring. ``wakeup`` interrupts the client's blocking call (from any thread);
    ``clear_wakeup`` drops a pending wakeup (on the thread); ``closed_error`` makes the error a call to a
    stopped thread raises."""

    def __init__(
        self,
        name: str,
        wakeup: Callable[[], None],
        clear_wakeup: Callable[[], object],
        closed_error: Callable[[], BaseException],
    ) -> None:
        self._wakeup = wakeup
        self._clear_wakeup = clear_wakeup
        self._closed_error = closed_error
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._stack: list[_Job[Any]] = []  # jobs running on the thread, innermost last
        self._in_preemptible = False
        self._stopped = False
        self._wakers = WakerCache()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    # --- event loop side ---------------------------------------------------------------------------

    async def call(
        self,
        fn: Callable[[], T],
        *,
        preemptible: bool = False,
        on_cancelled_result: Callable[[T], None] | None = None,
    ) -> T:
        """Run ``fn`` on the thread and return its result (or raise its error), serving its loop requests."""
        if self._stopped:
            raise self._closed_error()
        job: _Job[T] = _Job(fn, preemptible, self._wakers.current())
        self._queue.put(job)
        if self._in_preemptible:
            self._wakeup()
        try:
            return await self._serve(job)
        except anyio.get_cancelled_exc_class():
            with job.lock:
                job.cancelled = True
                started = job.started
                interrupt = started and not job.finished
            if not started:
                raise  # the thread will skip it
            if interrupt:
                self._wakeup()
            with anyio.CancelScope(shield=True):
                try:
                    result = await self._serve(job)
                except Exception:
                    pass  # interrupted (or failed): nothing to keep
                else:
                    if on_cancelled_result is not None:
                        on_cancelled_result(result)
            raise

    async def _serve(self, job: _Job[T]) -> T:
        while True:
            with job.lock:
                request = job.requests.popleft() if job.requests else None
                event = None
                if request is None and not job.finished:
                    event = job.event = anyio.Event()
            if request is not None:
                await self._run_request(request)
            elif event is not None:
                await event.wait()
            else:
                break
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]  # finished without error: fn returned a T

    async def _run_request(self, request: _LoopRequest) -> None:
        try:
            outcome = request.fn()
            if inspect.isawaitable(outcome):
                outcome = await outcome
            request.result = outcome
        except anyio.get_cancelled_exc_class():
            # the thread sees the listener interrupted, as by wakeup(): the call ends, the task is cancelled
            request.error = WakeupException("a rebalance listener was cancelled")
            self._queue.put(request)
            raise
        except BaseException as e:  # handed to the thread, which raises it where a sync listener would
            request.error = e
        self._queue.put(request)

    def stop(self) -> None:
        """No more calls; the thread ends once the queued ones ran."""
        if not self._stopped:
            self._stopped = True
            self._queue.put(None)

    @property
    def stopped(self) -> bool:
        return self._stopped

    # --- thread side -------------------------------------------------------------------------------

    def call_in_loop(self, fn: Callable[[], object]) -> object:
        """From a job on the thread: run ``fn`` (its result awaited if awaitable) in the event loop, in the
        task awaiting the job; serve queued calls until it is done; return its result or raise its error."""
        if threading.current_thread() is not self._thread or not self._stack:
            raise RuntimeError("call_in_loop() is for a job running on the client thread")
        request = _LoopRequest(fn)
        was_preemptible, self._in_preemptible = self._in_preemptible, False
        self._stack[-1].post(request)
        stop_seen = False
        try:
            while True:
                item = self._queue.get()
                if item is request:
                    break
                if isinstance(item, _Job):
                    self._run(item)
                elif item is None:  # stop() while a listener runs: the main loop ends after this job
                    stop_seen = True
        finally:
            self._in_preemptible = was_preemptible
            if stop_seen:
                self._queue.put(None)
        if request.error is not None:
            raise request.error
        return request.result

    def _main(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if isinstance(item, _Job):
                self._run(item)

    def _run_queued(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is None:
                self._queue.put(None)
                return
            if isinstance(item, _Job):
                self._run(item)

    def _run(self, job: _Job[Any]) -> None:
        with job.lock:
            cancelled = job.cancelled
            job.started = True
        if cancelled:
            job.finish(None, _JobCancelled())
            return
        if len(self._stack) == 0:
            self._clear_wakeup()  # a wakeup meant for a job that has ended
        self._stack.append(job)
        try:
            while True:
                self._in_preemptible = job.preemptible
                try:
                    result = job.fn()
                except WakeupException:
                    self._in_preemptible = False
                    if job.cancelled:
                        job.finish(None, _JobCancelled())
                        return
                    self._run_queued()  # the calls that preempted us, then run again
                    continue
                except BaseException as e:
                    job.finish(None, e)
                    return
                job.finish(result, None)
                return
        finally:
            self._in_preemptible = False
            self._stack.pop()
