"""Selector.wakeup keeps at most one byte outstanding and re-arms once a poll drained it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from pykafka_client.network.selector import Selector
from pykafka_client.utils.time import MockTime


@pytest.fixture
def selector() -> Iterator[Selector]:
    s = Selector(time=MockTime())
    yield s
    s.close()


def test_repeated_wakeups_write_one_byte(selector: Selector) -> None:
    for _ in range(50):
        selector.wakeup()
    assert selector._wakeup_r.recv(4096) == b"\x01"


def test_wakeup_after_a_drained_poll_interrupts_the_next_poll(selector: Selector) -> None:
    selector.wakeup()
    selector.poll(0)  # drains the byte
    selector.wakeup()  # must write again, or the poll below would sleep its whole timeout
    done = threading.Event()

    def poller() -> None:
        selector.poll(60_000)
        done.set()

    t = threading.Thread(target=poller, daemon=True)
    t.start()
    t.join(10)
    assert done.is_set()


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
