"""A unit of work scheduled on a :class:`~mini_broker.timer.system_timer.SystemTimer` (Java TimerTask).

A task knows the single :class:`TimerTaskEntry` that currently holds it. Binding the task to a new entry
removes the old one from its bucket, so a task sits in at most one bucket at a time, and
:meth:`TimerTask.cancel` is O(1): it unlinks the entry and forgets it. An entry whose task has moved on
(``task.entry is not entry``) reports :meth:`TimerTaskEntry.cancelled` and is never run.

No per-task lock (Java synchronizes on the task): ``entry`` is a single reference, read and written in
single bytecodes under the GIL, and every interleaving of ``cancel`` with a re-bind is equivalent to one
of the two serial orders. ``cancel`` clears the binding before it reads ``entry.list``, and a bucket
re-checks the binding after linking an entry, so an entry cancelled while it is being added is unlinked
by one side or the other (never run, not left counted). Unlinking is always done under the bucket's
lock (:meth:`TimerTaskList.remove`).
"""

from __future__ import annotations

from typing import Protocol


class EntryList(Protocol):
    """The list (a :class:`~mini_broker.timer.timer_task_list.TimerTaskList` bucket) holding an entry."""

    def remove(self, entry: TimerTaskEntry) -> None:
        """Unlink ``entry`` if this list holds it."""


class TimerTask:
    """Something to run once ``delay_ms`` after it is added to a timer. Subclasses implement :meth:`run`.

    Subclasses that skip ``TimerTask.__init__`` for speed (``DelayedOperation``) must set both slots."""

    __slots__ = ("delay_ms", "entry")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        #: the entry holding the task in a bucket (None: never added, cancelled, or expired and run)
        self.entry: TimerTaskEntry | None = None

    def run(self) -> None:
        """The work; called at most once, on the timer's executor, after the delay (unless cancelled)."""
        raise NotImplementedError

    def cancel(self) -> None:
        """Remove the task from its bucket (if any). Final: a cancelled entry is never run."""
        entry = self.entry
        if entry is not None:
            self.entry = None
            current = entry.list
            while current is not None:  # TimerTaskEntry.remove, inlined (completion path)
                current.remove(entry)
                current = entry.list

    def is_cancelled(self) -> bool:
        """True when the task is bound to no entry (never added, cancelled, or already expired and run)."""
        return self.entry is None

    def set_timer_task_entry(self, entry: TimerTaskEntry) -> None:
        """Bind the task to ``entry``, first unlinking a previous entry from its bucket."""
        old = self.entry
        self.entry = entry
        if old is not None and old is not entry:
            old.remove()


class TimerTaskEntry:
    """A node of a :class:`TimerTaskList`: the task and its absolute expiration (monotonic ms).

    ``list``/``next``/``prev`` are changed only under the lock of the list that holds the entry.
    """

    __slots__ = ("expiration_ms", "list", "next", "prev", "timer_task")

    def __init__(self, timer_task: TimerTask | None, expiration_ms: int) -> None:
        self.timer_task = timer_task
        self.expiration_ms = expiration_ms
        self.list: EntryList | None = None
        self.next: TimerTaskEntry | None = None
        self.prev: TimerTaskEntry | None = None
        if timer_task is not None:
            # TimerTask.set_timer_task_entry, inlined (one entry per timer add).
            old = timer_task.entry
            timer_task.entry = self
            if old is not None:
                old.remove()

    def cancelled(self) -> bool:
        """True when the task was cancelled or re-bound to another entry."""
        task = self.timer_task
        return task is None or task.entry is not self

    def remove(self) -> None:
        """Unlink from whatever list holds the entry; retries if the entry moved lists meanwhile."""
        current = self.list
        while current is not None:
            current.remove(self)
            current = self.list

    def __lt__(self, other: TimerTaskEntry) -> bool:
        return self.expiration_ms < other.expiration_ms

    def __repr__(self) -> str:
        return f"TimerTaskEntry(expiration_ms={self.expiration_ms}, task={self.timer_task!r})"
