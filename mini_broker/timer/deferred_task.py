"""A task that runs an action on a timer's executor at once: how a coordinator continues after a replication
wait completed on another thread (a follower fetch, under the purgatory operation's lock), without taking its
own locks there."""

from __future__ import annotations

import logging
from collections.abc import Callable

from mini_broker.timer.timer_task import TimerTask

_log = logging.getLogger(__name__)


class DeferredTask(TimerTask):
    """Runs ``action`` on the timer's executor at once; ``what`` names it in the log if it raises."""

    def __init__(self, action: Callable[[], None], what: str) -> None:
        super().__init__(0)
        self._action = action
        self._what = what

    def run(self) -> None:
        try:
            self._action()
        except Exception:
            _log.exception("event=deferred_task_failed task=%r", self._what)
