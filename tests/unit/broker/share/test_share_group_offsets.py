"""The share partitions' side of the share-group offsets admin APIs (KIP-932): a SharePartitionManager lists a
group's start offsets (with the records done beyond them, which the lag leaves out), resets a share partition's start offset (its in-flight records dropped) and forgets a
topic's share partitions, each written through the share coordinator before it returns so that a restarted
broker has it (MockTime, no reaper thread, a real ``__share_group_state`` log in a temporary dir)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.share.config import ShareGroupConfig
from mini_broker.share.partition_manager import AckBatch, SharePartitionManager
from mini_broker.share.share_coordinator import ShareCoordinator
from mini_broker.share.share_partition import AcknowledgeType
from pykafka_client.utils.time import MockTime

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
LOCK_MS = 500
ACCEPT, REJECT = int(AcknowledgeType.ACCEPT), int(AcknowledgeType.REJECT)


class Broker:
    """A share coordinator and partition manager on ``data_dir``; :meth:`restart` builds them again on it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.time = MockTime()
        self.started: list[tuple[ShareCoordinator, SharePartitionManager]] = []
        self.mgr = self.restart()

    def restart(self) -> SharePartitionManager:
        coordinator = ShareCoordinator(str(self.data_dir), self.time)
        coordinator.startup()
        mgr = SharePartitionManager(ShareGroupConfig(record_lock_duration_ms=LOCK_MS), self.time,
                                    reaper_enabled=False, persister=coordinator)
        self.started.append((coordinator, mgr))
        self.mgr = mgr
        return mgr

    def close(self) -> None:
        for coordinator, mgr in self.started:
            mgr.shutdown()
            coordinator.shutdown()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = Broker(tmp_path)
    yield b
    b.close()


def _acquired(mgr: SharePartitionManager, group: str, tp: tuple[uuid.UUID, int], upto: int) -> list[tuple[int, int]]:
    """Acquire what the share partition hands out of offsets [0, upto]: (first, delivery count) per range."""
    start = mgr.fetch_offset(group, tp, lambda: 0, log_start_offset=0)
    assert start is not None
    ranges = mgr.acquire(group, "m", tp, [(o, o, False) for o in range(start, upto + 1)], max_records=100)
    return [(r.first_offset, r.delivery_count) for r in ranges]


def test_the_start_offsets_of_a_groups_initialized_share_partitions(broker: Broker) -> None:
    mgr = broker.mgr
    assert mgr.group_offsets("g") == {}
    mgr.fetch_offset("g", (T1, 0), lambda: 4, log_start_offset=0)
    mgr.fetch_offset("g", (T2, 1), lambda: 0, log_start_offset=0)
    mgr.fetch_offset("other", (T1, 0), lambda: 9, log_start_offset=0)
    assert mgr.group_offsets("g") == {(T1, 0): (4, 0), (T2, 1): (0, 0)}


def test_records_done_beyond_the_start_offset_are_counted_for_the_lag(broker: Broker) -> None:
    mgr = broker.mgr
    _acquired(mgr, "g", (T1, 0), 4)
    assert mgr.acknowledge("g", "m", (T1, 0), [AckBatch(1, 1, (ACCEPT,)), AckBatch(2, 2, (REJECT,))]) == (0, None)
    assert mgr.group_offsets("g") == {(T1, 0): (0, 2)}  # 0 still acquired: the start offset stays
    assert mgr.acknowledge("g", "m", (T1, 0), [AckBatch(0, 0, (ACCEPT,))]) == (0, None)
    assert mgr.group_offsets("g") == {(T1, 0): (3, 0)}  # the start offset moved past what was done


def test_a_reset_drops_in_flight_records_and_the_next_fetch_starts_at_the_new_offset(broker: Broker) -> None:
    mgr = broker.mgr
    assert _acquired(mgr, "g", (T1, 0), 9) == [(o, 1) for o in range(10)]  # held by m, locks pending
    mgr.reset_start_offset("g", (T1, 0), 6)
    assert mgr.partition_offsets("g", (T1, 0)) == (6, 6)
    assert _acquired(mgr, "g", (T1, 0), 9) == [(6, 1), (7, 1), (8, 1), (9, 1)]
    # the new acquisitions hold their records until their own locks expire
    broker.time.sleep(LOCK_MS - 1)
    mgr.advance_timer()
    assert mgr.fetch_offset("g", (T1, 0), lambda: 0, log_start_offset=0) == 10
    # back to an offset the group had done: delivered again, as a first delivery
    mgr.reset_start_offset("g", (T1, 0), 2)
    assert _acquired(mgr, "g", (T1, 0), 3) == [(2, 1), (3, 1)]
    with pytest.raises(ValueError, match="-1"):
        mgr.reset_start_offset("g", (T1, 0), -1)


def test_a_reset_of_a_partition_the_group_never_fetched_initializes_it_and_survives_a_restart(broker: Broker) -> None:
    broker.mgr.reset_start_offset("g", (T2, 0), 17)
    assert broker.restart().group_offsets("g") == {(T2, 0): (17, 0)}
    assert broker.mgr.fetch_offset("g", (T2, 0), lambda: 0, log_start_offset=0) == 17


def test_deleting_a_topics_state_forgets_only_its_partitions_for_good(broker: Broker) -> None:
    mgr = broker.mgr
    for tp in ((T1, 0), (T1, 1), (T2, 0)):
        mgr.reset_start_offset("g", tp, 5)
    mgr.reset_start_offset("other", (T1, 0), 5)
    assert mgr.delete_topic_state("g", T1) == 2
    assert mgr.delete_topic_state("g", T1) == 0
    assert mgr.group_offsets("g") == {(T2, 0): (5, 0)}
    restarted = broker.restart()
    assert restarted.group_offsets("g") == {(T2, 0): (5, 0)}
    assert restarted.group_offsets("other") == {(T1, 0): (5, 0)}
    # the next fetch starts the partition afresh where share.auto.offset.reset says
    assert restarted.fetch_offset("g", (T1, 0), lambda: 0, log_start_offset=0) == 0
