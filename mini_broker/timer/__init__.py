"""Hierarchical timing wheel timer (Java server-common util/timer)."""

from __future__ import annotations

from mini_broker.timer.system_timer import SystemTimer, SystemTimerReaper
from mini_broker.timer.timer_task import TimerTask, TimerTaskEntry
from mini_broker.timer.timer_task_list import TimerTaskList
from mini_broker.timer.timing_wheel import TimingWheel

__all__ = ["SystemTimer", "SystemTimerReaper", "TimerTask", "TimerTaskEntry", "TimerTaskList", "TimingWheel"]
