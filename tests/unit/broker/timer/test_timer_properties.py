"""Property test: any mix of delays, cancels and clock steps fires each live task exactly once, never early."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.timer import SystemTimer, TimerTask
from pykafka_client.utils.time import MockTime


class Task(TimerTask):
    def __init__(self, delay_ms: int, deadline: int, fired: list[tuple[int, int]], clock: MockTime) -> None:
        super().__init__(delay_ms)
        self.deadline = deadline
        self.fired = fired
        self.clock = clock

    def run(self) -> None:
        self.fired.append((self.deadline, self.clock.hi_res_clock_ms()))


@settings(max_examples=60, deadline=None)
@given(
    delays=st.lists(st.integers(min_value=-3, max_value=3000), min_size=1, max_size=60),
    cancel_mask=st.lists(st.booleans(), min_size=60, max_size=60),
    steps=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=30),
    wheel_size=st.integers(min_value=2, max_value=20),
)
def test_every_live_task_fires_once_not_before_its_deadline(
    delays: list[int], cancel_mask: list[bool], steps: list[int], wheel_size: int
) -> None:
    clock = MockTime()
    timer = SystemTimer("prop", clock, wheel_size=wheel_size, start_ms=clock.hi_res_clock_ms(), run_inline=True)
    fired: list[tuple[int, int]] = []
    start = clock.hi_res_clock_ms()
    tasks = [Task(d, start + d, fired, clock) for d in delays]
    for task in tasks:
        timer.add(task)
    cancelled = {id(t) for t, c in zip(tasks, cancel_mask, strict=False) if c and t.delay_ms > 0}
    for task in tasks:
        if id(task) in cancelled:
            task.cancel()
    for step in [*steps, 4000]:
        clock.sleep(step)
        while timer.advance_clock(0):
            pass
    live = sorted(t.deadline for t in tasks if id(t) not in cancelled)
    assert sorted(d for d, _ in fired) == live
    assert all(at >= deadline for deadline, at in fired)
    # Tasks already expired when added (delay <= 0, i.e. before the next tick) run at once inside add(), in
    # the order they were added, as in Kafka; they all fire before any delayed task. Buckets are drained in
    # expiration order and cascaded entries land in later buckets, so delayed tasks fire in deadline order
    # (ties in any order).
    immediate = [d - start for d, _ in fired if d - start <= 0]
    assert immediate == [d for t, d in zip(tasks, delays, strict=True) if d <= 0 and id(t) not in cancelled]
    assert all(d - start <= 0 for d, _ in fired[: len(immediate)])
    deadlines = [d for d, _ in fired if d - start > 0]
    assert deadlines == sorted(deadlines)
    assert timer.size() == 0
