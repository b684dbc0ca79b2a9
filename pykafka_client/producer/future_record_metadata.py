"""The future returned by ``KafkaProducer.send`` (Java ``FutureRecordMetadata`` / ``ProduceRequestResult``).

:class:`FutureRecordMetadata` *is* a :class:`concurrent.futures.Future`, so ``result(timeout)``,
``exception()``, ``add_done_callback``, ``concurrent.futures.wait`` and ``as_completed`` all work.
Only the producer completes these futures; ``cancel()`` always returns False, as a record handed to the
producer cannot be taken back (``set_result`` / ``set_exception`` complete one future, as on any Future).

As Java, the outcome is kept once per batch: all futures of a batch point to one :class:`BatchOutcome` (the
batch's ``ProduceRequestResult``) and know their index in it; a future's state, result and exception are read
from it, and its :class:`RecordMetadata` is built only when read (``result()``, or for a delivery callback).
So completing a batch costs one lock round plus work for the futures someone waits on or added a
done-callback to (the outcome's ``watched``), not a write per record. The batch does not keep its futures
(a future the caller drops is freed at once): when a batch is split, its outcome records where each record
went (``moved_to``) and a future follows that on every read; watched futures are also registered with their
new outcome. A future's (outcome, index) pair is written only when it is completed on its own, so a reader
without the lock never sees half of a move.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, InvalidStateError
from concurrent.futures._base import FINISHED, PENDING
from dataclasses import dataclass
from typing import Any

from pykafka_client.network.transport.positional_new import positional_new
from pykafka_client.producer.call_segments import Segments, new_call_segments
from pykafka_client.producer.record_metadata import RecordMetadata

NO_TIMESTAMP = -1

#: A per-record column of a completed batch (timestamps, key or value sizes): a list, or the one int every record
#: of the batch has (see producer_batch.pending_columns_reference); before completion, :data:`NOT_COLLECTED`
Column = Sequence[int] | int

#: an outcome's key and value size columns until it completes (nothing reads them before): the empty tuple, which
#: the garbage collector does not track (an empty list per column would be two more tracked objects per queued
#: batch, see BatchOutcome)
NOT_COLLECTED: tuple[()] = ()


def column_at(column: Column, index: int) -> int:
    """Record ``index``'s value in ``column``."""
    return column if column.__class__ is int else column[index]  # type: ignore[index]


class BatchOutcome:
    """The outcome shared by the futures of one batch (Java ``ProduceRequestResult``).

    Written once, under ``condition``, by :meth:`complete_success` / :meth:`complete_failure`; until then
    ``state`` is PENDING. Per record it keeps only the timestamps and serialized sizes (not the records), so
    a user holding futures does not hold the records' bytes.

    A queued batch's outcome holds no container of its own until it needs one: ``watched`` and ``calls`` are the
    empty tuple until a future or segment is added (``calls`` is then the one segment itself, a list from the
    second on), the size columns :data:`NOT_COLLECTED` until completion.
    Batches queue up by the thousand when the caller is ahead of the broker and survive into the oldest
    generation; every GC-tracked object they hold counts towards CPython's next full collection (tens of ms
    with the GIL held, which stalls the I/O thread)."""

    __slots__ = (
        "base_offset", "calls", "condition", "exception", "key_sizes", "log_append_time", "moved_to", "partition",
        "record_exceptions", "state", "timestamps", "topic", "value_sizes", "watched",
    )

    def __init__(self, condition: threading.Condition, topic: str, partition: int) -> None:
        self.condition = condition
        self.topic = topic
        self.partition = partition
        self.state = PENDING
        self.base_offset = -1
        self.log_append_time = NO_TIMESTAMP
        self.exception: BaseException | None = None
        self.record_exceptions: list[BaseException] | None = None
        self.timestamps: Column | None = None
        self.key_sizes: Column = NOT_COLLECTED
        self.value_sizes: Column = NOT_COLLECTED
        #: futures with waiters or done-callbacks (registered on first use, under ``condition``, by
        #: :meth:`add_watched`: a list once one is added)
        self.watched: list[FutureRecordMetadata] | tuple[()] = ()
        #: the send_batch segments waiting on this outcome (under ``condition``; see :func:`segments_of`): none
        #: (the empty tuple), the one segment itself (the usual batch: one send_batch call), or a list of them. No
        #: future and no done-callback of their own, so a completion in the record kernel releases them without
        #: calling Python (see :class:`CallSegment`)
        self.calls: list[CallSegment] | CallSegment | tuple[()] = ()
        #: after a split: record i's (outcome, index) in the new batches (this outcome never completes then)
        self.moved_to: list[tuple[BatchOutcome, int]] | None = None

    def add_watched(self, f: FutureRecordMetadata) -> None:
        """Watch ``f`` (under ``condition``): the completion will look at it."""
        watched = self.watched
        if watched:
            watched.append(f)
        else:
            self.watched = [f]

    def move_to(self, places: list[tuple[BatchOutcome, int]]) -> None:
        """The batch was split (all new batches share this condition): record i now lives at ``places[i]``.
        Watched futures are registered with their new outcomes, which notify them; every future follows
        ``moved_to`` when read. The send_batch segments waiting on it then watch their records one by one."""
        with self.condition:
            self.moved_to = places
            for f in self.watched:
                where = f._where()[0]
                if where is not self:
                    where.add_watched(f)
            calls = segments_of(self.calls)
            self.calls = ()
        for seg in calls:
            seg._invoke_callbacks()

    def metadata(self, index: int) -> RecordMetadata | None:
        """Record ``index``'s metadata; None unless the batch succeeded."""
        if self.state != FINISHED or self.exception is not None:
            return None
        base = self.base_offset
        ts = self.timestamps
        return _tuple_new(RecordMetadata, (
            self.topic, self.partition, -1 if base < 0 else base + index,
            self.log_append_time if ts is None else column_at(ts, index), column_at(self.key_sizes, index),
            column_at(self.value_sizes, index),
        ))

    def error(self, index: int) -> BaseException | None:
        errs = self.record_exceptions
        return self.exception if errs is None else errs[index]

    def complete_success(
        self, base_offset: int, log_append_time: int, timestamps: Column | None, key_sizes: Column, value_sizes: Column
    ) -> list[Any]:
        """Mark the batch succeeded; returns the futures (and send_batch segments) whose done-callbacks must now run
        (outside the lock)."""
        cond = self.condition
        cond.acquire()  # the lock's own C methods: no Python-level Condition.__enter__/__exit__ per batch
        try:
            if self.state == FINISHED:
                return []
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.timestamps = None if log_append_time != NO_TIMESTAMP else timestamps
            self.key_sizes = key_sizes
            self.value_sizes = value_sizes
            return self._finish()
        finally:
            cond.release()

    def complete_failure(self, exception: BaseException, record_exceptions: list[BaseException] | None) -> list[Any]:
        with self.condition:
            if self.state == FINISHED:
                return []
            self.exception = exception
            self.record_exceptions = record_exceptions
            return self._finish()

    def _finish(self) -> list[Any]:
        self.state = FINISHED
        # the send_batch segments first: each was registered when send_batch added the records, before anyone could
        # watch a record future of the call (as the done-callback each segment had before)
        with_callbacks: list[Any] = []
        calls = self.calls
        if calls:
            self.calls = ()  # as watched below: no cycle outcome -> segment -> SendBatchFuture -> outcome
            with_callbacks.extend(segments_of(calls))
        for f in self.watched:
            where, index = f._where()
            if where is not self:
                continue  # completed on its own (set_result) or moved by a split
            waiters = f._waiters_list
            if waiters:
                failed = self.error(index) is not None
                for waiter in waiters:
                    if failed:
                        waiter.add_exception(f)
                    else:
                        waiter.add_result(f)
            if f._callbacks_list:
                with_callbacks.append(f)
        if self.watched:
            # A thread blocked in result()/exception() is watched (FutureRecordMetadata._wait registers it): no
            # watched future, nobody to wake (the common batch: no notify_all, which is Python-level code)
            self.condition.notify_all()
            # Done: nothing looks at the watched futures again. Letting go of them breaks the cycle outcome ->
            # future -> done-callback -> (e.g. a SendBatchFuture -> its segments) -> outcome, which only the
            # cyclic collector would free, late, with every completed outcome's per-record lists.
            self.watched = ()
        return with_callbacks


_tuple_new = tuple.__new__


def segments_of(calls: list[CallSegment] | CallSegment | tuple[()]) -> list[CallSegment] | tuple[CallSegment, ...]:
    """The segments an outcome's ``calls`` holds (none, one kept alone, or a list), in the order added."""
    if isinstance(calls, CallSegment):
        return (calls,)
    return calls


class FutureRecordMetadata(Future[RecordMetadata]):
    """A record's delivery outcome: its :class:`RecordMetadata`, or the exception that failed it.

    Memory and speed: ``Future.__init__`` is not called (it would allocate a Condition and two lists per
    record); a future is two set slots (its batch's outcome and its index), made by :func:`new_future` without a
    Python-level constructor; the waiter / callback list slots are set on first use (:meth:`_watch`)."""

    __slots__ = ("_callbacks_list", "_waiters_list", "index", "outcome")

    outcome: BatchOutcome
    index: int

    _waiters_list: list[Any]
    _callbacks_list: list[Any]

    def __init__(self, condition: threading.Condition | None = None) -> None:
        # Deliberately not calling Future.__init__: a standalone future (see _failed_future) has its own outcome.
        self.outcome = BatchOutcome(condition if condition is not None else threading.Condition(), "", -1)
        self.index = 0

    # --- the attributes concurrent.futures reads, from the shared outcome -------------------------------

    @property
    def _condition(self) -> threading.Condition:  # type: ignore[override]
        return self.outcome.condition

    def batch_position(self) -> tuple[BatchOutcome, int]:
        """This record's batch outcome and its index there (following splits)."""
        return self._where()

    def _where(self) -> tuple[BatchOutcome, int]:
        """This record's outcome and index, following splits."""
        o, i = self.outcome, self.index
        while o.moved_to is not None:
            o, i = o.moved_to[i]
        return o, i

    @property
    def _state(self) -> str:  # type: ignore[override]
        o = self.outcome
        return o.state if o.moved_to is None else self._where()[0].state

    @property
    def _result(self) -> RecordMetadata | None:  # type: ignore[override]
        o, i = self._where()
        return o.metadata(i)

    @property
    def _exception(self) -> BaseException | None:  # type: ignore[override]
        o, i = self._where()
        return o.error(i)

    @property
    def _waiters(self) -> list[Any]:  # type: ignore[override]
        try:
            return self._waiters_list
        except AttributeError:
            self._watch()
            return self._waiters_list

    @property
    def _done_callbacks(self) -> list[Any]:
        try:
            return self._callbacks_list
        except AttributeError:
            self._watch()
            return self._callbacks_list

    def _watch(self) -> None:
        """First waiter or done-callback (Future's methods ask under the condition): the lists are created
        and the outcome will look at this future when the batch completes."""
        self._waiters_list = []
        self._callbacks_list = []
        self._where()[0].add_watched(self)

    # --- Future API ----------------------------------------------------------------------------------

    def cancel(self) -> bool:
        return False

    def set_running_or_notify_cancel(self) -> bool:
        return True

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """As ``Future.result``, but a wake-up of the shared condition for another future (another batch split
        from the same one) does not end the wait early."""
        self._wait(timeout)
        return super().result(0)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._wait(timeout)
        return super().exception(0)

    def _wait(self, timeout: float | None) -> None:
        if self._state == FINISHED:
            return
        cond = self.outcome.condition
        deadline = None if timeout is None else time.monotonic() + timeout
        with cond:
            if self._state != FINISHED and not _is_watched(self):
                self._watch()  # the outcome that completes this future wakes the condition only for watched ones
            while self._state != FINISHED:
                if deadline is None:
                    cond.wait()
                else:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return  # Future.result(0) raises TimeoutError
                    cond.wait(left)

    def set_result(self, result: RecordMetadata) -> None:
        if not self._complete(result, None):
            raise InvalidStateError(f"{self!r} is already done")

    def set_exception(self, exception: BaseException | None) -> None:
        if not self._complete(None, exception):
            raise InvalidStateError(f"{self!r} is already done")

    def _complete(self, metadata: RecordMetadata | None, exception: BaseException | None) -> bool:
        """Complete this future alone (it leaves its batch's outcome for one of its own); False if it was already
        done. Runs its done-callbacks in this thread."""
        cond = self.outcome.condition
        with cond:
            if self._state == FINISHED:
                return False
            own = _OwnOutcome(cond, metadata, exception)
            self.outcome = own  # its index no longer matters: an _OwnOutcome has one result
            if _is_watched(self):
                own.add_watched(self)
            with_callbacks = own._finish()
        for f in with_callbacks:
            f._invoke_callbacks()
        return True


class _OwnOutcome(BatchOutcome):
    """The outcome of a future completed on its own (``set_result``, a send that failed before any batch)."""

    __slots__ = ("result",)

    def __init__(self, condition: threading.Condition, result: RecordMetadata | None, exception: BaseException | None) -> None:
        super().__init__(condition, "", -1)
        self.result = result
        self.exception = exception

    def metadata(self, index: int) -> RecordMetadata | None:
        return self.result if self.state == FINISHED else None


def _is_watched(f: FutureRecordMetadata) -> bool:
    try:
        f._waiters_list  # noqa: B018  (an unset slot raises AttributeError)
    except AttributeError:
        return False
    return True


_object_new = object.__new__


def new_future(outcome: BatchOutcome, index: int) -> FutureRecordMetadata:
    """Record ``index``'s future of the batch whose outcome is ``outcome`` (no Python-level ``__init__``)."""
    f: FutureRecordMetadata = _object_new(FutureRecordMetadata)
    f.outcome = outcome
    f.index = index
    return f


class _CallRecords:
    """Where each record of one ``send_batch`` call went: the (outcome, index) segments in processing order and the
    order given. Shared by the call's :class:`SendBatchFuture` and its :class:`BatchMetadata` (the future's result),
    so that neither references the other: no reference cycle, and a dropped future is freed at once with the
    outcomes it holds, not at the next run of the cyclic collector.

    The segments are three parallel lists (``starts``, ``outcomes``, ``indexes``), not a tuple per segment: a
    call's segments live as long as its batches wait, and a tuple of them would be one more GC-tracked object
    per queued batch."""

    __slots__ = ("indexes", "inverse", "order", "outcomes", "record_count", "starts")

    def __init__(self, record_count: int, order: list[int] | None) -> None:
        self.record_count = record_count
        #: processing position -> position given (None: the same)
        self.order = order
        self.inverse: list[int] | None = None
        #: per segment, in processing order: its first processing position, its outcome, the index of that record
        #: in it
        self.starts: list[int] = []
        self.outcomes: list[BatchOutcome] = []
        self.indexes: list[int] = []

    def record_future(self, i: int) -> Future[RecordMetadata]:
        """Record ``i``'s future (as ``send`` would have returned it); built when asked."""
        order = self.order
        if order is None:
            position = i
        else:
            inverse = self.inverse
            if inverse is None:
                inverse = [0] * len(order)
                for p, original in enumerate(order):
                    inverse[original] = p
                self.inverse = inverse
            position = inverse[i]
        starts = self.starts
        k = bisect.bisect_right(starts, position) - 1
        outcome = self.outcomes[k]
        if isinstance(outcome, _OwnOutcome):
            f = FutureRecordMetadata()
            f.outcome = outcome
            return f
        return new_future(outcome, self.indexes[k] + position - starts[k])


class BatchMetadata:
    """The outcome of every record of one ``send_batch`` call, in the order given: ``len()``, ``[i]`` (record i's
    :class:`RecordMetadata`, raising its error if it failed), :meth:`exception` and iteration. Each
    RecordMetadata is built when read."""

    __slots__ = ("_records",)

    def __init__(self, records: _CallRecords) -> None:
        self._records = records

    def __len__(self) -> int:
        return self._records.record_count

    def _record_future(self, i: int) -> Future[RecordMetadata]:
        n = self._records.record_count
        if not -n <= i < n:
            raise IndexError(f"record {i} of a batch of {n}")
        return self._records.record_future(i % n)

    def __getitem__(self, i: int) -> RecordMetadata:
        return self._record_future(i).result(0)

    def exception(self, i: int) -> BaseException | None:
        """Record ``i``'s error, None if it was delivered."""
        return self._record_future(i).exception(0)

    def __iter__(self) -> Iterator[RecordMetadata]:
        for i in range(len(self)):
            yield self[i]


class WaitingSegments:
    """How many segments of one send_batch call still wait for their batch (plus one until the call sealed it),
    and the lock that guards the count. Shared by the call's :class:`SendBatchFuture` and its segments."""

    __slots__ = ("count", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 1  # held by send_batch until it added every record (seal)


@dataclass(slots=True, eq=False)
class CallSegment:
    """Records ``index..index+count`` of ``outcome``, of the send_batch call of ``future``: in the outcome's ``calls``
    until it completes. The outcome's completion releases it (:meth:`release`) as the done-callback of a watched
    future would. The record kernel's completion (``complete_produce_response``) does the same without calling
    Python unless this is the call's last segment: it lowers ``waiting.count`` under ``waiting.lock`` while it
    stays above zero, else calls :meth:`release`. (A slotted dataclass: the call's segments make one with
    :func:`positional_new`, without a Python ``__init__`` frame with the kernel.)"""

    future: SendBatchFuture
    waiting: WaitingSegments
    outcome: BatchOutcome
    index: int
    count: int

    def release(self) -> None:
        """The batch completed (or was split): this segment no longer waits."""
        self.future._segment_done(self.outcome, self.index, self.count)

    def _invoke_callbacks(self) -> None:
        """As a completed future's (the outcome's completion hands back segments and futures alike)."""
        self.release()


#: ``CallSegment(future, waiting, outcome, index, count)`` without its __init__ frame when the kernel is loaded
_new_call_segment = positional_new(CallSegment)


class SendBatchFuture(Future[BatchMetadata]):
    """The future of a ``send_batch`` call: done once every record of it is (delivered or failed); its result is a
    :class:`BatchMetadata`, or it raises the error of the first record that failed (:meth:`metadata` still gives
    every record's outcome then).

    It waits on one segment per producer batch the records went into (the batch completes them all together), not
    on every record: the batch's outcome keeps the segment (``calls``) and releases it when it completes, without a
    future or done-callback of its own, so the record kernel completes the batch on its common path. Only a batch
    split on MESSAGE_TOO_LARGE, whose records may complete apart, makes it watch each record of that batch."""

    def __init__(self, record_count: int, order: list[int] | None) -> None:
        super().__init__()
        self.record_count = record_count
        records = self._records = _CallRecords(record_count, order)
        #: the records' segments (see _CallRecords), in processing order
        self._starts = records.starts
        self._outcomes = records.outcomes
        self._indexes = records.indexes
        waiting = self._waiting = WaitingSegments()
        #: the records' segments as they are added (the kernel's CallSegments, or the reference): public, as
        #: ``send_batch`` adds them straight through it (``segments.add(future, ...)``: no Python frame with the kernel)
        self.segments: Segments[BatchOutcome] = new_call_segments(records.starts, records.outcomes, records.indexes, waiting, CallSegment, _new_call_segment)
        self._batch_metadata = BatchMetadata(records)

    def cancel(self) -> bool:
        """Records handed to the producer are sent: as a record's future (and Java's), this cannot be cancelled."""
        return False

    def set_running_or_notify_cancel(self) -> bool:
        return True

    # --- filled by send_batch ------------------------------------------------------------------------

    def add_segment(self, position: int, count: int, outcome: BatchOutcome, index: int) -> None:
        """Records at processing positions ``position..position+count`` are records ``index..`` of ``outcome``.
        The batch's outcome is watched once all its records of this call were added (at the next segment
        of another batch, or at :meth:`seal`): :meth:`CallSegments.add`."""
        self.segments.add(self, position, count, outcome, index)

    def fail_from(self, position: int, exception: BaseException) -> None:
        """Records at processing positions ``position..`` were never appended: they fail with ``exception``."""
        self._flush_open()
        failed = _OwnOutcome(threading.Condition(), None, exception)
        failed.state = FINISHED
        self._starts.append(position)
        self._outcomes.append(failed)
        self._indexes.append(0)

    def seal(self) -> None:
        """send_batch added every record."""
        self._flush_open()
        self._release(1)

    def _flush_open(self) -> None:
        self.segments.flush(self)

    # --- completion ----------------------------------------------------------------------------------

    def _segment_done(self, outcome: BatchOutcome, index: int, count: int) -> None:
        if outcome.moved_to is None:
            self._release(1)
            return
        # the batch was split: its records complete with the batches they went to
        waiting = self._waiting
        with waiting.lock:
            waiting.count += count
        for i in range(index, index + count):
            new_future(outcome, i).add_done_callback(lambda _f: self._release(1))
        self._release(1)

    def _release(self, n: int) -> None:
        waiting = self._waiting
        with waiting.lock:
            waiting.count -= n
            done = waiting.count == 0
        if not done:
            return
        err = self._first_error()
        if err is not None:
            self.set_exception(err)
        else:
            self.set_result(self._batch_metadata)

    def _first_error(self) -> BaseException | None:
        """Per segment, not per record, unless a segment's records may have different outcomes."""
        starts = self._starts
        outcomes = self._outcomes
        n = len(outcomes)
        for k, outcome in enumerate(outcomes):
            if outcome.moved_to is None and outcome.record_exceptions is None:
                if outcome.exception is not None:
                    return outcome.exception
                continue
            index = self._indexes[k]
            stop = starts[k + 1] if k + 1 < n else self.record_count
            for i in range(index, index + stop - starts[k]):
                err = new_future(outcome, i).exception(0)
                if err is not None:
                    return err
        return None

    # --- per record, on demand -----------------------------------------------------------------------

    def record_future(self, i: int) -> Future[RecordMetadata]:
        """Record ``i``'s future (as ``send`` would have returned it); built when asked."""
        return self._records.record_future(i)

    def metadata(self) -> BatchMetadata:
        """Every record's outcome (read them once the future is done)."""
        return self._batch_metadata
