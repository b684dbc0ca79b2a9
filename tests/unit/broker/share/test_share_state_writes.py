"""How the SharePartitionManager writes share-partition state (issue #25): never under its lock, so a write to a
remote share coordinator that takes its time holds back neither the other share partitions nor the in-memory
work on its own; the writes of one share partition stay ordered and a write carries every change made before it
started; a ShareFetch's acknowledgements and acquisitions go out in one write. MockTime; a persister whose
writes the test holds and lets go (the threads only stand for the request handlers; every wait is bounded)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest

from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.partition_manager import AckBatch, PendingWrite, SharePartitionManager
from mini_broker.share.share_coordinator import persisted_records
from mini_broker.share.share_partition import AcknowledgeType, RecordState, ShareState
from pykafka_client.errors import FencedLeaderEpochError
from pykafka_client.utils.time import MockTime

TOPIC = uuid.UUID(int=7)
A, B = (TOPIC, 0), (TOPIC, 1)
KEY_A = ("g", *A)
ACCEPT, RELEASE = int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE)
#: a bound on every wait for another thread (a deadlock fails the test instead of hanging it)
BOUND_S = 30.0

Key = tuple[str, uuid.UUID, int]


class _HeldPersister:
    """Records each write (key, start offset, persisted records); the writes of the keys in ``held`` block until
    the test lets them go (``entered`` is set when one is blocked)."""

    def __init__(self) -> None:
        self.writes: list[tuple[Key, int, dict[int, tuple[RecordState, int]]]] = []
        self.held: set[Key] = set()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail_next: Exception | None = None

    def states(self) -> dict[Key, ShareState]:
        return {}

    def read_state(self, key: Key, leader_epoch: int = -1) -> ShareState | None:
        return None

    def write_state(self, key: Key, state: ShareState, leader_epoch: int = -1) -> None:
        if key in self.held:
            self.entered.set()
            assert self.release.wait(BOUND_S), "the test never let the held write go"
        if self.fail_next is not None:
            failure, self.fail_next = self.fail_next, None
            raise failure
        self.writes.append((key, state.start_offset, persisted_records(state)))

    def delete_state(self, key: Key) -> None:
        self.writes.append((key, -1, {}))

    def initialize_state(self, key: Key, start_offset: int) -> None:
        pass


@pytest.fixture
def persister() -> _HeldPersister:
    return _HeldPersister()


@pytest.fixture
def mgr(persister: _HeldPersister) -> Iterator[SharePartitionManager]:
    m = SharePartitionManager(ShareGroupConfig(record_lock_duration_ms=60_000), MockTime(), reaper_enabled=False,
                              persister=persister)
    for tp in (A, B):
        m.fetch_offset("g", tp, lambda: 0, log_start_offset=0)
        m.acquire("g", "m", tp, [(0, 9, False)], max_records=10)
    yield m
    persister.release.set()
    m.shutdown()


def _in_thread(action: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    return thread


def _joined(thread: threading.Thread) -> bool:
    thread.join(BOUND_S)
    return not thread.is_alive()


def test_a_slow_state_write_holds_back_neither_other_partitions_nor_the_manager(
        mgr: SharePartitionManager, persister: _HeldPersister) -> None:
    persister.held = {KEY_A}
    slow = _in_thread(lambda: mgr.acknowledge("g", "m", A, [AckBatch(0, 0, (ACCEPT,))]))
    assert persister.entered.wait(BOUND_S)
    # A's write is in flight: B is acknowledged and written meanwhile, and the manager still answers for A
    other = _in_thread(lambda: mgr.acknowledge("g", "m", B, [AckBatch(0, 0, (ACCEPT,))]))
    assert _joined(other)
    assert [(key[2], start) for key, start, _ in persister.writes[-1:]] == [(1, 1)]
    assert mgr.partition_offsets("g", A) == (1, 10)  # applied in memory; answered once written
    assert slow.is_alive()
    persister.release.set()
    assert _joined(slow)
    assert persister.writes[-1][:2] == (KEY_A, 1)


def test_writes_of_one_partition_stay_ordered_and_one_write_carries_the_changes_made_while_another_was_in_flight(
        mgr: SharePartitionManager, persister: _HeldPersister) -> None:
    before = len(persister.writes)
    persister.held = {KEY_A}
    first = _in_thread(lambda: mgr.acknowledge("g", "m", A, [AckBatch(0, 0, (ACCEPT,))]))
    assert persister.entered.wait(BOUND_S)
    later = [_in_thread(lambda: mgr.acknowledge("g", "m", A, [AckBatch(o, o, (RELEASE,)) for o in (5, 6, 7)])),
             _in_thread(lambda: mgr.acknowledge("g", "m", A, [AckBatch(8, 8, (ACCEPT,))]))]
    _until(lambda: mgr.next_fetch_offset("g", A) == 5 and mgr.group_offsets("g")[A] == (1, 1))  # both applied
    assert all(t.is_alive() for t in later)  # neither answered before its change is written
    persister.held = set()
    persister.release.set()
    assert all(_joined(t) for t in [first, *later])
    written = [(start, records) for key, start, records in persister.writes[before:] if key == KEY_A]
    # the first write carries offset 0 only (accepted: the start offset moved past it); the next one carries
    # both later changes (one write, after the first)
    assert len(written) == 2
    assert written[0][0] == 1 and written[0][1][5] == written[0][1][8] == written[0][1][1]  # 5, 8 still acquired
    assert written[1][0] == 1
    assert [written[1][1][o] for o in (5, 6, 7, 8)] == [(RecordState.AVAILABLE, 1)] * 3 + [
        (RecordState.ACKNOWLEDGED, 1)]


def _until(condition: Callable[[], bool]) -> None:
    """Wait (bounded) until another thread made ``condition`` true."""
    done = threading.Event()
    for _ in range(int(BOUND_S * 1000)):
        if condition():
            return
        done.wait(0.001)
    raise AssertionError("the other threads' changes were never applied")


def test_a_share_fetchs_acknowledgements_and_acquisitions_go_out_in_one_write(
        mgr: SharePartitionManager, persister: _HeldPersister) -> None:
    before = len(persister.writes)
    pending: list[PendingWrite] = []
    assert mgr.acknowledge("g", "m", A, [AckBatch(0, 9, (RELEASE,))], pending) == (0, None)
    assert len(persister.writes) == before  # deferred
    again = mgr.acquire("g", "m2", A, [(0, 9, False)], max_records=10, deferred=pending)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in again] == [(0, 9, 2)]
    mgr.write_states(pending)
    assert [(key, records[0]) for key, _, records in persister.writes[before:]] == [
        (KEY_A, (RecordState.AVAILABLE, 2))]  # acquired, persisted as available with its delivery count


def test_a_failed_write_fails_the_call_and_the_next_write_carries_its_change(
        mgr: SharePartitionManager, persister: _HeldPersister) -> None:
    persister.fail_next = FencedLeaderEpochError("the coordinator fenced this leader epoch")
    with pytest.raises(FencedLeaderEpochError):
        mgr.acknowledge("g", "m", B, [AckBatch(0, 0, (ACCEPT,))])
    # fenced: the manager forgot the partition (its next use reads the state again); a write of the partition
    # made before the fence and still pending fails rather than write a state nobody serves
    assert mgr.partition_offsets("g", B) is None
