"""The timer without per-task locks and with per-bucket counts: races between add, cancel, re-binding and
the clock end in a state equivalent to some serial order (no timing asserted)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from mini_broker.timer import SystemTimer, TimerTask, TimerTaskEntry, TimerTaskList
from mini_broker.timer.timer_task_list import AtomicCounter
from pykafka_client.utils.time import MockTime


class CountingTask(TimerTask):
    __slots__ = ("runs",)

    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.runs = 0

    def run(self) -> None:
        self.runs += 1


@pytest.fixture(autouse=True)
def frequent_thread_switches() -> Iterator[None]:
    """Switch threads every few bytecodes instead of every 5 ms, so that the races actually happen."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def run_threads(targets: list[Callable[[], None]]) -> None:
    barrier = threading.Barrier(len(targets))
    errors: list[BaseException] = []

    def wrap(target: Callable[[], None]) -> Callable[[], None]:
        def body() -> None:
            try:
                barrier.wait(timeout=30)
                target()
            except BaseException as e:  # surfaced below
                errors.append(e)

        return body

    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    assert errors == []


def test_cancel_racing_add_and_clock_runs_exactly_the_tasks_left_bound() -> None:
    """A task cancelled concurrently with its add either stays cancelled (add, then cancel) or is armed
    (cancel, then add); once the clock has passed every deadline, exactly the armed ones ran, once each,
    and no entry is left counted."""
    time = MockTime()
    timer = SystemTimer("race", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    tasks = [CountingTask(1 + i % 30) for i in range(3000)]

    def adder() -> None:
        for task in tasks:
            timer.add(task)

    def canceller(start: int) -> None:
        for task in tasks[start::2]:
            task.cancel()

    def clock() -> None:
        for _ in range(20):
            time.sleep(1)
            timer.advance_clock(0)

    run_threads([adder, lambda: canceller(0), lambda: canceller(1), clock])
    armed = {id(t) for t in tasks if not t.is_cancelled()}
    ran_before = {id(t) for t in tasks if t.runs}
    time.sleep(100)
    while timer.advance_clock(0):
        pass
    assert all(t.runs <= 1 for t in tasks)
    assert {id(t) for t in tasks if t.runs} == armed | ran_before
    assert not (armed & ran_before)
    assert timer.size() == 0
    assert all(t.is_cancelled() for t in tasks)


def test_rebinding_a_task_leaves_one_live_entry() -> None:
    counter = AtomicCounter()
    buckets = [TimerTaskList(counter) for _ in range(4)]
    tasks = [CountingTask(0) for _ in range(500)]

    def binder(n: int) -> None:
        for task in tasks:
            buckets[n].add(TimerTaskEntry(task, 5))

    run_threads([lambda: binder(0), lambda: binder(1), lambda: binder(2), lambda: binder(3)])
    live = [t for b in buckets for t in b.tasks()]
    assert sorted(map(id, live)) == sorted(map(id, tasks))  # each task is live in exactly one bucket
    for task in tasks:
        task.cancel()
    # An entry that lost a race to a re-bind or a cancel is unlinked by one side or the other: nothing
    # stays counted (Java may leave such an entry linked until its bucket is flushed).
    assert [list(b.tasks()) for b in buckets] == [[], [], [], []]
    assert counter.get() == 0 and sum(b.size() for b in buckets) == 0


def test_counter_adds_tracked_bucket_sizes() -> None:
    counter = AtomicCounter(3)
    bucket = TimerTaskList(counter)
    assert counter.get() == 3
    entries = [TimerTaskEntry(CountingTask(0), 1) for _ in range(4)]
    for e in entries:
        bucket.add(e)
    assert counter.get() == 7 and counter.add(-3) == 4
    assert counter.get_and_set(10) == 4 and counter.get() == 10
    entries[0].remove()
    assert counter.get() == 9 and bucket.size() == 3
    bucket.flush(lambda e: None)
    assert counter.get() == 6 and bucket.size() == 0 and bucket.get_expiration() == -1
