"""Timing wheel, bucket list and SystemTimer, driven by a MockTime (deterministic)."""

from __future__ import annotations

import threading

import pytest

from mini_broker.timer import SystemTimer, SystemTimerReaper, TimerTask, TimerTaskEntry, TimerTaskList, TimingWheel
from mini_broker.timer.delay_queue import DelayQueue
from mini_broker.timer.timer_task_list import AtomicCounter
from pykafka_client.utils.time import MockTime


class RecordingTask(TimerTask):
    def __init__(self, delay_ms: int, task_id: int, output: list[int], latch: threading.Event | None = None) -> None:
        super().__init__(delay_ms)
        self.task_id = task_id
        self.output = output
        self.runs = 0
        self.latch = latch

    def run(self) -> None:
        self.runs += 1
        self.output.append(self.task_id)
        if self.latch is not None:
            self.latch.set()


def make_timer(time: MockTime, wheel_size: int = 20) -> SystemTimer:
    return SystemTimer("test", time, tick_ms=1, wheel_size=wheel_size, start_ms=time.hi_res_clock_ms(), run_inline=True)


def test_already_expired_tasks_run_at_once() -> None:
    time = MockTime()
    timer = make_timer(time)
    out: list[int] = []
    tasks = [RecordingTask(delay, delay, out) for delay in range(-5, 0)]
    for task in tasks:
        timer.add(task)
    # Expired tasks are dispatched by add itself; advancing the clock adds nothing.
    assert not timer.advance_clock(0)
    assert sorted(out) == list(range(-5, 0))
    assert all(t.runs == 1 for t in tasks)
    assert timer.size() == 0


def test_tasks_spanning_overflow_wheels_fire_exactly_once_in_deadline_order() -> None:
    time = MockTime()
    timer = make_timer(time, wheel_size=3)
    out: list[int] = []
    tasks: list[RecordingTask] = []
    delays = list(range(0, 5)) + [d for d in range(10, 100) for _ in range(2)] + list(range(100, 500))
    for delay in delays:
        task = RecordingTask(delay, delay, out)
        tasks.append(task)
        timer.add(task)
    assert timer.wheel.overflow_wheel is not None and timer.wheel.overflow_wheel.overflow_wheel is not None
    for _ in range(510):
        time.sleep(1)
        while timer.advance_clock(0):
            pass
    assert out == sorted(delays)
    assert all(t.runs == 1 for t in tasks)
    assert timer.size() == 0


def test_task_never_runs_before_its_deadline() -> None:
    time = MockTime()
    timer = make_timer(time)
    out: list[int] = []
    timer.add(RecordingTask(50, 50, out))
    time.sleep(49)
    while timer.advance_clock(0):
        pass
    assert out == []
    time.sleep(1)
    assert timer.advance_clock(0)
    assert out == [50]


def test_cancel_is_final_and_o1() -> None:
    time = MockTime()
    timer = make_timer(time)
    out: list[int] = []
    tasks = [RecordingTask(10 + i, i, out) for i in range(10)]
    for task in tasks:
        timer.add(task)
    assert timer.size() == 10
    for task in tasks[::2]:
        task.cancel()
        assert task.is_cancelled()
    assert timer.size() == 5
    time.sleep(100)
    while timer.advance_clock(0):
        pass
    assert out == [1, 3, 5, 7, 9]
    # A cancelled task added again is a new schedule; cancelling twice is harmless.
    tasks[0].cancel()
    assert tasks[0].runs == 0


def test_cancelled_task_is_not_run_when_added_expired() -> None:
    time = MockTime()
    timer = make_timer(time)
    out: list[int] = []
    task = RecordingTask(-1, 1, out)
    entry = TimerTaskEntry(task, 0)
    task.cancel()
    assert entry.cancelled()
    assert not timer.wheel.add(entry)
    assert out == []


def test_idle_timer_has_no_queued_buckets() -> None:
    time = MockTime()
    timer = make_timer(time)
    assert not timer.advance_clock(0)
    task = RecordingTask(5, 1, [])
    timer.add(task)
    task.cancel()
    time.sleep(10)
    # The bucket is still queued once (cancel does not dequeue); flushing it runs nothing.
    assert timer.advance_clock(0)
    assert not timer.advance_clock(0)
    assert task.runs == 0


def _locate(wheel: TimingWheel, entry: TimerTaskEntry) -> tuple[int, int, int]:
    """(level, first ms, last ms) of the bucket holding ``entry``."""
    level = 1
    current: TimingWheel | None = wheel
    while current is not None:
        for i in range(current.wheel_size):
            if entry.list is current.bucket(i):
                start = entry.list.get_expiration()
                return level, start, start + current.tick_ms - 1
        current = current.overflow_wheel
        level += 1
    raise AssertionError("entry not in any bucket")


def test_worked_example_u1_n3() -> None:
    """The three-level example (tick 1, 3 buckets per wheel) at times c, c+1, c+2 and c+3."""
    c = 900  # a multiple of 9, so that every level's buckets start at c
    counter = AtomicCounter()
    wheel = TimingWheel(1, 3, c, counter, DelayQueue(MockTime()))

    def where(expiration: int) -> tuple[int, int, int] | None:
        entry = TimerTaskEntry(RecordingTask(0, 0, []), expiration)
        if not wheel.add(entry):
            return None
        loc = _locate(wheel, entry)
        entry.remove()
        return loc

    # time c
    assert where(c) is None  # the current bucket is already expired
    assert where(c + 1) == (1, c + 1, c + 1)
    assert where(c + 2) == (1, c + 2, c + 2)
    assert where(c + 3) == (2, c + 3, c + 5)
    assert where(c + 8) == (2, c + 6, c + 8)
    assert where(c + 9) == (3, c + 9, c + 17)
    assert where(c + 26) == (3, c + 18, c + 26)
    # time c+1: level 1 now covers c+1..c+3; levels 2 and 3 have not moved
    wheel.advance_clock(c + 1)
    assert where(c + 1) is None
    assert where(c + 3) == (1, c + 3, c + 3)
    assert where(c + 4) == (2, c + 3, c + 5)
    assert wheel.overflow_wheel is not None and wheel.overflow_wheel.current_time_ms == c
    # time c+2: level 1 covers c+2..c+4
    wheel.advance_clock(c + 2)
    assert where(c + 4) == (1, c + 4, c + 4)
    assert where(c + 5) == (2, c + 3, c + 5)
    # time c+3: level 1 covers c+3..c+5, level 2 covers c+3..c+11, level 3 still starts at c
    wheel.advance_clock(c + 3)
    assert where(c + 5) == (1, c + 5, c + 5)
    assert where(c + 6) == (2, c + 6, c + 8)
    assert where(c + 11) == (2, c + 9, c + 11)
    assert where(c + 12) == (3, c + 9, c + 17)
    overflow = wheel.overflow_wheel
    assert overflow.current_time_ms == c + 3
    assert overflow.overflow_wheel is not None and overflow.overflow_wheel.current_time_ms == c
    assert counter.get() == 0


def test_new_entry_for_task_removes_old_entry_and_counter_tracks_tasks() -> None:
    counter = AtomicCounter()
    lists = [TimerTaskList(counter) for _ in range(3)]
    tasks = [RecordingTask(0, i, []) for i in range(10)]
    for task in tasks:
        lists[0].add(TimerTaskEntry(task, 10))
    assert counter.get() == 10
    for task in tasks[:4]:
        prev = task.entry
        lists[1].add(TimerTaskEntry(task, 10))
        assert prev is not None and prev.list is None
    assert (lists[0].size(), lists[1].size(), counter.get()) == (6, 4, 10)
    for task in tasks[4:]:
        lists[2].add(TimerTaskEntry(task, 10))
    assert (lists[0].size(), lists[1].size(), lists[2].size(), counter.get()) == (0, 4, 6, 10)
    assert sorted(t.task_id for t in lists[2].tasks() if isinstance(t, RecordingTask)) == list(range(4, 10))


def test_set_expiration_reports_change_and_flush_resets() -> None:
    counter = AtomicCounter()
    bucket = TimerTaskList(counter)
    assert bucket.set_expiration(5)
    assert not bucket.set_expiration(5)
    seen: list[TimerTaskEntry] = []
    bucket.add(TimerTaskEntry(RecordingTask(0, 0, []), 5))
    bucket.flush(seen.append)
    assert len(seen) == 1 and bucket.get_expiration() == -1 and counter.get() == 0


def test_executor_thread_runs_tasks_and_closes() -> None:
    time = MockTime()
    timer = SystemTimer("exec", time, start_ms=time.hi_res_clock_ms())
    done = threading.Event()
    out: list[int] = []
    timer.add(RecordingTask(3, 1, out, done))
    time.sleep(3)
    assert timer.advance_clock(0)
    assert done.wait(10)
    assert out == [1]
    timer.close()
    timer.close()


def test_reaper_drives_expiry_and_close_stops_it() -> None:
    time = MockTime()
    timer = SystemTimer("reaped", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    reaper = SystemTimerReaper("reaped", timer, poll_ms=5)
    done = threading.Event()
    out: list[int] = []
    timer.add(RecordingTask(2, 7, out, done))
    time.sleep(2)
    assert done.wait(10)
    assert out == [7]
    reaper.close()
    reaper.close()


@pytest.mark.parametrize("bad", [(0, 20), (1, 0)])
def test_wheel_rejects_bad_shape(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError):
        TimingWheel(bad[0], bad[1], 0, AtomicCounter(), DelayQueue(MockTime()))
