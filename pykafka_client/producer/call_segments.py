"""The segments of one ``send_batch`` call (``SendBatchFuture``'s bookkeeping): where its records went, one segment
per producer batch, and the registration of each segment with its batch's outcome.

:class:`CallSegments` is the reference; with the kernel, a ``SendBatchFuture`` holds the kernel's ``CallSegments``
(``protocol/records/kernel/producer_append_run.c.h``), which does the same in one call per ``add`` without the
Python frames of ``add``, the watch and the segment's ``__init__``. Neither holds the future (it is an argument of
each call): the future holds its segments, and a dropped future is freed by its reference count.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures._base import FINISHED
from typing import Any, Generic, Protocol, TypeVar

from pykafka_client.protocol.records import _native


class SegmentOutcome(Protocol):
    """What the segments read and write of a batch's outcome (``future_record_metadata.BatchOutcome``), under its
    ``condition``: its ``state``, ``moved_to`` (a split) and the segments waiting on it, ``calls``."""

    condition: threading.Condition
    state: str
    moved_to: list[Any] | None
    calls: Any


#: the outcome type of a call's segments (``future_record_metadata.BatchOutcome``)
OutcomeT = TypeVar("OutcomeT", bound=SegmentOutcome)
OutcomeT_contra = TypeVar("OutcomeT_contra", bound=SegmentOutcome, contravariant=True)


class CallSegment(Protocol):
    """A segment (``future_record_metadata.CallSegment``): released when its outcome completed or was split."""

    def release(self) -> None: ...


class SegmentCounter(Protocol):
    """How many segments of a call still wait (``count``, under ``lock``): ``WaitingSegments``."""

    lock: threading.Lock
    count: int


class Segments(Protocol[OutcomeT_contra]):
    """What ``SendBatchFuture`` calls: :class:`CallSegments` or the kernel's."""

    def add(self, future: Any, position: int, count: int, outcome: OutcomeT_contra, index: int, /) -> None: ...

    def flush(self, future: Any, /) -> None: ...


class CallSegments(Generic[OutcomeT]):
    """Records at processing positions ``position..position+count`` of one call are records ``index..`` of a batch's
    ``outcome``: :meth:`add` grows the open segment while the records follow on in the same outcome, else watches it
    (appends it to ``starts``, ``outcomes`` and ``indexes``, counts it in ``waiting`` and registers a new segment,
    ``new_segment(future, waiting, outcome, index, count)``, in the outcome's ``calls``, or releases it at once when the
    outcome already completed or was split) and opens the next. :meth:`flush` watches the open segment."""

    __slots__ = (
        "indexes", "new_segment", "open_count", "open_index", "open_outcome", "open_position", "outcomes",
        "segment_type", "starts", "waiting",
    )

    def __init__(
        self, starts: list[int], outcomes: list[OutcomeT], indexes: list[int], waiting: SegmentCounter,
        segment_type: type[CallSegment], new_segment: Callable[..., CallSegment],
    ) -> None:
        self.starts = starts
        self.outcomes = outcomes
        self.indexes = indexes
        self.waiting = waiting
        #: the class of an outcome's one segment kept alone in its ``calls`` (``CallSegment``), and what makes one
        self.segment_type = segment_type
        self.new_segment = new_segment
        #: the last segment, still growing (no outcome: none)
        self.open_outcome: OutcomeT | None = None
        self.open_position = 0
        self.open_count = 0
        self.open_index = 0

    @property
    def open_segment(self) -> tuple[int, int, OutcomeT, int] | None:
        """The open segment (position, count, outcome, index), or None."""
        o_outcome = self.open_outcome
        if o_outcome is None:
            return None
        return self.open_position, self.open_count, o_outcome, self.open_index

    def add(self, future: Any, position: int, count: int, outcome: OutcomeT, index: int, /) -> None:
        """Records ``position..position+count`` are records ``index..`` of ``outcome``; the batch's outcome is
        watched once all its records of this call were added (at the next segment of another batch, or at
        :meth:`flush`)."""
        o_outcome = self.open_outcome
        if o_outcome is not None:
            o_count = self.open_count
            if o_outcome is outcome and self.open_index + o_count == index and self.open_position + o_count == position:
                self.open_count = o_count + count
                return
            self._watch(future, self.open_position, o_count, o_outcome, self.open_index)
        self.open_outcome = outcome
        self.open_position = position
        self.open_count = count
        self.open_index = index

    def flush(self, future: Any, /) -> None:
        """Watch the open segment, if any."""
        o_outcome = self.open_outcome
        if o_outcome is not None:
            self.open_outcome = None
            self._watch(future, self.open_position, self.open_count, o_outcome, self.open_index)

    def _watch(self, future: Any, position: int, count: int, outcome: OutcomeT, index: int) -> None:
        self.starts.append(position)
        self.outcomes.append(outcome)
        self.indexes.append(index)
        waiting = self.waiting
        with waiting.lock:
            waiting.count += 1
        seg = self.new_segment(future, waiting, outcome, index, count)
        cond = outcome.condition
        cond.acquire()  # the lock's own C methods: no Python-level Condition.__enter__/__exit__ per batch
        try:
            if outcome.state != FINISHED and outcome.moved_to is None:
                calls = outcome.calls
                if isinstance(calls, list):
                    calls.append(seg)
                elif isinstance(calls, self.segment_type):
                    outcome.calls = [calls, seg]
                else:
                    outcome.calls = seg  # the only one so far: no list of its own
                return
        finally:
            cond.release()
        seg.release()  # already complete, or split: as a done-callback added now would


def new_call_segments(
    starts: list[int], outcomes: list[OutcomeT], indexes: list[int], waiting: SegmentCounter,
    segment_type: type[CallSegment], new_segment: Callable[..., CallSegment],
) -> Segments[OutcomeT]:
    """The kernel's ``CallSegments`` when the kernel is on, else the reference (same arguments)."""
    kernel = _native.kernel
    if kernel is not None:
        made: Segments[OutcomeT] = kernel.CallSegments(starts, outcomes, indexes, waiting, segment_type, new_segment, FINISHED)
        return made
    return CallSegments(starts, outcomes, indexes, waiting, segment_type, new_segment)
