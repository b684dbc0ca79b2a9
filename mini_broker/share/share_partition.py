"""One share partition of one share group (KIP-932): which records of a topic partition the group has handed
out, to whom, until when, and how often. Sans-IO: no log, no clock, no locks; every call takes ``now_ms``.

Offsets below :attr:`ShareState.start_offset` (the share-partition start offset, SPSO) are done. Offsets in
``[start_offset, end_offset)`` are *in flight*, each with a :class:`RecordState` and a delivery count. Offsets at
or above ``end_offset`` (the share-partition end offset, SPEO) were never handed out. A record moves:

* available -> acquired (``acquire``): its delivery count goes up; it gets an owner (the member) and a lock
  deadline (``now + record_lock_duration_ms``);
* acquired -> acknowledged (ACCEPT), archived (REJECT, GAP) or available (RELEASE), by its owner only;
* acquired -> available when its lock expires (``expire_locks``) or its owner's session ends (``release_member``);
* a record whose delivery count reached ``delivery_count_limit`` is archived instead of becoming available.

The start offset advances over acknowledged and archived records; the records it passes are forgotten. The
whole state is :class:`ShareState`, plain data, which :mod:`mini_broker.share.share_coordinator` writes to and
replays from ``__share_group_state``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field


class RecordState(enum.IntEnum):
    """Kafka's ``RecordState`` ids (the ones the share-group state records carry)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """The acknowledge types of ShareFetch / ShareAcknowledge (GAP: an offset with no record, e.g. a marker)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


@dataclass
class InFlightRecord:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    #: the member holding the acquisition lock (None unless acquired)
    owner: str | None = None
    #: when the acquisition lock expires (None unless acquired)
    lock_deadline_ms: int | None = None


@dataclass
class ShareState:
    """Everything a share partition knows; ``start_offset == -1`` until :meth:`SharePartition.initialize`."""

    start_offset: int = -1
    end_offset: int = -1
    records: dict[int, InFlightRecord] = field(default_factory=dict)


@dataclass(frozen=True)
class AcquiredRange:
    """Consecutive offsets acquired in one call with one delivery count (a ShareFetch ``AcquiredRecords``)."""

    first_offset: int
    last_offset: int
    delivery_count: int


class InvalidRecordState(Exception):
    """An acknowledgement names an offset that is not acquired by the acknowledging member."""


class SharePartition:
    """The state machine; see the module docstring. ``max_in_flight`` bounds ``end_offset - start_offset``
    (Kafka's ``group.share.partition.max.record.locks``): no new offsets are acquired beyond it."""

    def __init__(self, record_lock_duration_ms: int, delivery_count_limit: int, max_in_flight: int = 2000,
                 state: ShareState | None = None) -> None:
        if record_lock_duration_ms <= 0 or delivery_count_limit <= 0 or max_in_flight <= 0:
            raise ValueError(f"record_lock_duration_ms ({record_lock_duration_ms}), delivery_count_limit "
                             f"({delivery_count_limit}) and max_in_flight ({max_in_flight}) must be positive")
        self.record_lock_duration_ms = record_lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.state = state if state is not None else ShareState()

    # -- reading --------------------------------------------------------------------------------------------
    @property
    def initialized(self) -> bool:
        return self.state.start_offset >= 0

    @property
    def start_offset(self) -> int:
        return self.state.start_offset

    @property
    def end_offset(self) -> int:
        return self.state.end_offset

    def record(self, offset: int) -> InFlightRecord | None:
        """The in-flight record at ``offset`` (None: done, or never handed out)."""
        return self.state.records.get(offset)

    def next_fetch_offset(self) -> int:
        """Where a fetch for this partition reads from: the lowest available in-flight offset, else the end."""
        for offset in range(self.state.start_offset, self.state.end_offset):
            if self.state.records[offset].state is RecordState.AVAILABLE:
                return offset
        return self.state.end_offset

    def has_available(self) -> bool:
        """Whether some in-flight record may be acquired without reading new offsets."""
        return self.next_fetch_offset() < self.state.end_offset

    def can_acquire(self) -> bool:
        """Whether an acquisition may take anything: an in-flight record is available, or the in-flight records
        are below ``max_in_flight`` (so new offsets may be taken)."""
        return self.has_available() or self.state.end_offset - self.state.start_offset < self.max_in_flight

    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self.state.records.values() if r.lock_deadline_ms is not None]
        return min(deadlines) if deadlines else None

    # -- transitions ----------------------------------------------------------------------------------------
    def initialize(self, start_offset: int) -> None:
        """Start at ``start_offset`` (where ``share.auto.offset.reset`` points); nothing is in flight."""
        self.state = ShareState(start_offset, start_offset, {})

    def advance_start(self, log_start_offset: int) -> None:
        """The log no longer has the offsets below ``log_start_offset``: they are done (archived, forgotten)."""
        if log_start_offset <= self.state.start_offset:
            return
        for offset in range(self.state.start_offset, min(log_start_offset, self.state.end_offset)):
            del self.state.records[offset]
        self.state.start_offset = log_start_offset
        self.state.end_offset = max(self.state.end_offset, log_start_offset)

    def acquire(self, member_id: str, batches: Iterable[tuple[int, int]], max_records: int,
                now_ms: int) -> list[AcquiredRange]:
        """Acquire for ``member_id`` what is available among the offsets of ``batches`` ((first, last) offsets
        of the record batches a log read returned, ascending): in-flight available records, then new offsets
        (which extend the end offset; a gap before a batch is archived). Whole batches are taken, so
        ``max_records`` may be exceeded to finish one (as Kafka). Returns the acquired ranges."""
        deadline = now_ms + self.record_lock_duration_ms
        acquired: list[int] = []
        for first, last in batches:
            if len(acquired) >= max_records:
                break
            first = max(first, self.state.start_offset)
            for offset in range(first, last + 1):
                if offset >= self.state.end_offset:
                    if self.state.end_offset - self.state.start_offset >= self.max_in_flight:
                        break
                    for gap in range(self.state.end_offset, offset):
                        self.state.records[gap] = InFlightRecord(RecordState.ARCHIVED)
                    self.state.records[offset] = InFlightRecord()
                    self.state.end_offset = offset + 1
                record = self.state.records[offset]
                if record.state is not RecordState.AVAILABLE:
                    continue
                record.state = RecordState.ACQUIRED
                record.delivery_count += 1
                record.owner = member_id
                record.lock_deadline_ms = deadline
                acquired.append(offset)
        self._advance()
        return self._ranges(acquired)

    def skip(self, first_offset: int, last_offset: int) -> None:
        """Offsets a log read returned that hold no deliverable record (a control batch): those not yet in flight
        are archived, so the end offset moves past them."""
        for offset in range(max(first_offset, self.state.end_offset), last_offset + 1):
            self.state.records[offset] = InFlightRecord(RecordState.ARCHIVED)
            self.state.end_offset = offset + 1
        self._advance()

    def acknowledge(self, member_id: str, first_offset: int, last_offset: int, types: list[AcknowledgeType]) -> None:
        """Acknowledge ``[first_offset, last_offset]``: one type for all, or one per offset. All or nothing:
        raises :class:`InvalidRecordState` (nothing changed) unless every offset is acquired by ``member_id``
        (a GAP may also name an offset that is already archived)."""
        count = last_offset - first_offset + 1
        if count <= 0 or len(types) not in (1, count):
            raise InvalidRecordState(f"acknowledgement batch {first_offset}-{last_offset} has {len(types)} types: "
                                     f"send one, or one per offset")
        per_offset = [(o, types[0] if len(types) == 1 else types[o - first_offset])
                      for o in range(first_offset, last_offset + 1)]
        for offset, kind in per_offset:
            record = self.state.records.get(offset)
            if kind is AcknowledgeType.GAP and (record is None or record.state is RecordState.ARCHIVED):
                continue
            if record is None or record.state is not RecordState.ACQUIRED or record.owner != member_id:
                held = "not in flight" if record is None else (
                    f"{record.state.name.lower()}" + (f" by {record.owner}" if record.owner else ""))
                raise InvalidRecordState(f"offset {offset} is {held}, not acquired by member {member_id}: its "
                                         f"acquisition lock expired or it was never delivered to this member")
        for offset, kind in per_offset:
            record = self.state.records.get(offset)
            if record is None or record.state is not RecordState.ACQUIRED:
                continue
            if kind is AcknowledgeType.ACCEPT:
                self._set(record, RecordState.ACKNOWLEDGED)
            elif kind is AcknowledgeType.RELEASE:
                self._make_available(record)
            else:
                self._set(record, RecordState.ARCHIVED)
        self._advance()

    def release_member(self, member_id: str) -> int:
        """Every record ``member_id`` holds becomes available again (its session closed); returns how many."""
        released = 0
        for record in self.state.records.values():
            if record.state is RecordState.ACQUIRED and record.owner == member_id:
                self._make_available(record)
                released += 1
        self._advance()
        return released

    def expire_locks(self, now_ms: int) -> int:
        """Acquired records whose lock deadline passed become available again; returns how many."""
        expired = 0
        for record in self.state.records.values():
            if record.lock_deadline_ms is not None and record.lock_deadline_ms <= now_ms:
                self._make_available(record)
                expired += 1
        self._advance()
        return expired

    def recover(self) -> int:
        """After a restart (the state replayed, every acquisition lock gone): an available record whose delivery
        count reached ``delivery_count_limit`` (it was acquired for its last delivery when the broker stopped) is
        archived, as its release would have done. Returns how many."""
        archived = 0
        for record in self.state.records.values():
            if record.state is RecordState.AVAILABLE and record.delivery_count >= self.delivery_count_limit:
                self._set(record, RecordState.ARCHIVED)
                archived += 1
        self._advance()
        return archived

    # -- internals ------------------------------------------------------------------------------------------
    def _make_available(self, record: InFlightRecord) -> None:
        self._set(record, RecordState.ARCHIVED if record.delivery_count >= self.delivery_count_limit
                  else RecordState.AVAILABLE)

    @staticmethod
    def _set(record: InFlightRecord, state: RecordState) -> None:
        record.state = state
        record.owner = None
        record.lock_deadline_ms = None

    def _advance(self) -> None:
        records = self.state.records
        while self.state.start_offset < self.state.end_offset and records[self.state.start_offset].state in (
                RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
            del records[self.state.start_offset]
            self.state.start_offset += 1

    def _ranges(self, offsets: list[int]) -> list[AcquiredRange]:
        out: list[AcquiredRange] = []
        for offset in offsets:
            count = self.state.records[offset].delivery_count
            if out and out[-1].last_offset == offset - 1 and out[-1].delivery_count == count:
                out[-1] = AcquiredRange(out[-1].first_offset, offset, count)
            else:
                out.append(AcquiredRange(offset, offset, count))
        return out
