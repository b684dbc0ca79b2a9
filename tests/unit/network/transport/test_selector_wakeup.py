"""Selector.wakeup: a wakeup is never lost, also when it lands while a poll is draining earlier ones."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from pykafka_client.network.transport.selector import Selector
from pykafka_client.utils.time import MockTime


@pytest.fixture
def selector() -> Iterator[Selector]:
    s = Selector(time=MockTime())
    yield s
    s.close()


def poll_returns(selector: Selector) -> bool:
    """Run a long poll on another thread; True if it came back (it must have been woken)."""
    done = threading.Event()

    def poller() -> None:
        selector.poll(60_000)
        done.set()

    t = threading.Thread(target=poller, daemon=True)
    t.start()
    t.join(10)
    return done.is_set()


class _WakeupDuringDrain:
    """Wraps the wakeup socket's read end: the first read first runs ``hook`` (a wakeup racing the drain)."""

    def __init__(self, sock: socket.socket, hook: object) -> None:
        self._sock = sock
        self._hook = hook

    def recv(self, n: int) -> bytes:
        hook, self._hook = self._hook, None
        if callable(hook):
            hook()
        return self._sock.recv(n)

    def close(self) -> None:
        self._sock.close()


def test_wakeup_after_a_drained_poll_interrupts_the_next_poll(selector: Selector) -> None:
    selector.wakeup()
    selector.poll(0)
    selector.wakeup()
    assert poll_returns(selector)


def test_wakeup_racing_the_drain_does_not_disable_later_wakeups(selector: Selector) -> None:
    selector._wakeup_r = _WakeupDuringDrain(selector._wakeup_r, selector.wakeup)  # type: ignore[assignment]
    selector.wakeup()
    selector.poll(0)  # drains both bytes, the racing one included
    selector.wakeup()  # must still write a byte
    assert poll_returns(selector)


def test_wakeup_from_another_thread_after_many_rounds(selector: Selector) -> None:
    for _ in range(20):
        started = threading.Event()
        done = threading.Event()

        def poller(started: threading.Event, done: threading.Event) -> None:
            started.set()
            selector.poll(60_000)
            done.set()

        t = threading.Thread(target=poller, args=(started, done), daemon=True)
        t.start()
        started.wait(5)
        selector.wakeup()
        selector.wakeup()
        t.join(10)
        assert done.is_set()
