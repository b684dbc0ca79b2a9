"""What the async consumers (AsyncKafkaConsumer, AsyncKafkaShareConsumer) share around their client thread:
a poll that steps aside for other calls and keeps what a cancelled poll took, ``async for`` over polls, and a
close that finishes even when cancelled."""

from __future__ import annotations

import math
import time as _time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TypeVar

import anyio

from pykafka_client.aio._client_thread import ClientThread
from pykafka_client.errors import IllegalStateError

R = TypeVar("R")
X = TypeVar("X")

#: How long one poll of ``async for`` waits (it returns at once when records arrive or the consumer closes).
ITERATION_POLL_TIMEOUT_S = 1.0


async def preemptible_poll(thread: ClientThread, timeout: float, poll: Callable[[float], R], closed: Callable[[], bool],
                           empty: Callable[[], R], keep: Callable[[R], None]) -> R:
    """``poll`` on the thread for what is left of ``timeout`` seconds (``empty()`` once the consumer closed),
    stepping aside for calls other tasks make meanwhile; a cancelled poll's result goes to ``keep``."""
    deadline = _time.monotonic() + max(0.0, timeout if math.isfinite(timeout) else 1e9)

    def poll_rest() -> R:
        if closed():
            return empty()
        return poll(max(0.0, deadline - _time.monotonic()))

    return await thread.call(poll_rest, preemptible=True, on_cancelled_result=keep)


async def iterate_polls(poll: Callable[[float], Awaitable[Iterable[X]]], closed: Callable[[], bool]) -> AsyncIterator[X]:
    """Every record of successive polls until the consumer is closed."""
    while not closed():
        try:
            records = await poll(ITERATION_POLL_TIMEOUT_S)
        except IllegalStateError:
            if closed():
                return
            raise
        for record in records:
            yield record


async def close_on_thread(thread: ClientThread, close: Callable[[], None]) -> None:
    """Run the sync close on the thread (shielded: a cancelled close still closes), then stop the thread."""
    try:
        with anyio.CancelScope(shield=True):
            await thread.call(close)
    finally:
        thread.stop()
