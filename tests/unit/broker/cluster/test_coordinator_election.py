"""The group and transaction coordinators of a cluster broker follow the leadership of their internal partition:
nothing served before the election (NOT_COORDINATOR), state replayed from the partition's log on election
(COORDINATOR_LOAD_IN_PROGRESS meanwhile), dropped on resignation, and found again by the next leader from the
same (replicated) log. MockTime and inline timers; the "replicated" log is one Log both coordinators read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mini_broker.coordinator.result import CoordinatorResult
from mini_broker.group import GroupConfig, GroupCoordinator, GroupMetadataManager
from mini_broker.group.group_state import GroupState
from mini_broker.log.log_config import LogConfig
from mini_broker.log.unified_log import AppendOrigin, Log
from mini_broker.transaction.transaction_config import TransactionConfig
from mini_broker.transaction.transaction_coordinator import TransactionCoordinator
from mini_broker.transaction.transaction_log import TransactionLog
from mini_broker.transaction.transaction_requests import (
    AddPartitionsParams,
    EndTxnParams,
    InitProducerIdParams,
    InitProducerIdResult,
)
from mini_broker.transaction.transaction_state import TransactionState
from pykafka_client.errors import CoordinatorLoadInProgressError, NotCoordinatorError, NotLeaderOrFollowerError
from pykafka_client.utils.time import MockTime
from tests.unit.broker.group.harness import GROUP, Harness
from tests.unit.broker.transaction.harness import TP0, TXN, RecordingWriter

NOT_COORDINATOR = NotCoordinatorError.code


class Replicated:
    """A partition's log and the leader's append (the high watermark follows at once, as with a full ISR)."""

    def __init__(self, path: Path, time: MockTime) -> None:
        self.log = Log(str(path), LogConfig(), time=time)
        self.appends = 0

    def append(self, records: bytes) -> None:
        self.appends += 1
        self.log.append(records, origin=AppendOrigin.COORDINATOR, leader_epoch=1)
        self.log.update_high_watermark(self.log.log_end_offset)


class ReadHook:
    """The log as the coordinator sees it while loading: ``on_read`` runs before each read."""

    def __init__(self, log: Log, on_read: Callable[[], None]) -> None:
        self._log, self._on_read = log, on_read

    def read(self, *args: Any, **kwargs: Any) -> Any:
        self._on_read()
        return self._log.read(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._log, name)


def _cluster_group_harness(time: MockTime) -> Harness:
    h = Harness(None, time)
    h.coordinator.shutdown()
    h.coordinator = GroupCoordinator(GroupConfig(group_initial_rebalance_delay_ms=100), GroupMetadataManager(None, time),
                                     time, timer_run_inline=True, reaper_enabled=False)
    h.coordinator.startup(follow_partition_leadership=True)
    return h


def test_group_coordinator_loads_on_election_and_unloads_on_resignation(tmp_path: Path) -> None:
    time = MockTime()
    partition = Replicated(tmp_path / "__consumer_offsets-0", time)
    a, b = _cluster_group_harness(time), _cluster_group_harness(time)
    try:
        assert a.heartbeat("m", 1) == NOT_COORDINATOR  # not elected yet
        assert a.coordinator.handle_fetch_offsets(GROUP, None)[0] == NOT_COORDINATOR
        assert a.coordinator.handle_list_groups() == (0, [])  # leads no partition: no groups, no error

        a.coordinator.runtime.on_election(partition.log, partition.append, 1)
        leader, follower = a.stable_group(2)
        gen = a.group().generation_id
        assert a.commit(leader, gen, {("t", 0): 42, ("t", 1): 7}) == {("t", 0): 0, ("t", 1): 0}
        assert partition.appends >= 2  # the assignment and the commit went through the leader's append
        parked = a.join()  # a new member: the join round parks it until the others rejoin

        a.coordinator.runtime.on_resignation()
        assert parked.value.error_code == NOT_COORDINATOR  # parked members are sent to the new coordinator
        assert a.heartbeat(leader, gen) == NOT_COORDINATOR
        assert a.commit(leader, gen, {("t", 0): 50}) == {("t", 0): NOT_COORDINATOR}
        assert a.coordinator.get_group(GROUP) is None
        with pytest.raises(NotLeaderOrFollowerError):  # a request that raced the resignation: refused, not lost
            a.coordinator.runtime.write(CoordinatorResult(b"", None))

        b.coordinator.runtime.on_election(partition.log, partition.append, 1)
        g = b.group()
        assert g.state is GroupState.STABLE and g.generation_id == gen and set(g.members) == {leader, follower}
        assert b.fetch(None) == {("t", 0): 42, ("t", 1): 7}
        assert b.heartbeat(leader, gen) == 0
    finally:
        a.close()
        b.close()
        partition.log.close()


def test_group_requests_during_the_load_get_coordinator_load_in_progress(tmp_path: Path) -> None:
    time = MockTime()
    partition = Replicated(tmp_path / "__consumer_offsets-0", time)
    writer, reader = _cluster_group_harness(time), _cluster_group_harness(time)
    try:
        writer.coordinator.runtime.on_election(partition.log, partition.append, 1)
        member = writer.stable_group(1)[0]
        writer.coordinator.runtime.on_resignation()
        seen: list[int] = []
        hooked = ReadHook(partition.log, lambda: seen.append(reader.heartbeat(member, 1)))
        reader.coordinator.runtime.on_election(hooked, partition.append, 1)  # type: ignore[arg-type]
        assert seen and set(seen) == {CoordinatorLoadInProgressError.code}
        assert reader.heartbeat(member, 1) == 0
    finally:
        writer.close()
        reader.close()
        partition.log.close()


class TxnCoordinatorFixture:
    def __init__(self, time: MockTime) -> None:
        self.writer = RecordingWriter()
        pids = iter(range(100, 10**6))
        self.coordinator = TransactionCoordinator(TransactionConfig(), TransactionLog(None, time), lambda: next(pids),
                                                  lambda: self.writer, time, timer_run_inline=True,
                                                  reaper_enabled=False)
        self.coordinator.startup(follow_partition_leadership=True)

    def init(self) -> InitProducerIdResult:
        out: list[InitProducerIdResult] = []
        self.coordinator.handle_init_producer_id(InitProducerIdParams(TXN, 60000), out.append)
        return out[0]

    def add(self, pid: int, epoch: int) -> int:
        errors: list[int] = []
        self.coordinator.handle_add_partitions(AddPartitionsParams(TXN, pid, epoch, [TP0]), errors.append)
        return errors[0]

    def end(self, pid: int, epoch: int, commit: bool) -> int:
        errors: list[int] = []
        self.coordinator.handle_end_txn(EndTxnParams(TXN, pid, epoch, commit), errors.append)
        return errors[0]


def test_transaction_coordinator_loads_on_election_and_unloads_on_resignation(tmp_path: Path) -> None:
    time = MockTime()
    partition = Replicated(tmp_path / "__transaction_state-0", time)
    a, b = TxnCoordinatorFixture(time), TxnCoordinatorFixture(time)
    try:
        assert a.init().error_code == NOT_COORDINATOR
        assert a.coordinator.handle_describe(TXN)[0] == NOT_COORDINATOR
        assert a.coordinator.handle_list([], [], -1) == (0, [], [])

        a.coordinator.runtime.on_election(partition.log, partition.append, 3)
        result = a.init()
        assert result.error_code == 0
        pid, epoch = result.producer_id, result.producer_epoch
        assert a.add(pid, epoch) == 0

        a.coordinator.runtime.on_resignation()
        assert a.end(pid, epoch, True) == NOT_COORDINATOR
        assert a.coordinator.core.transactions == {}

        b.coordinator.runtime.on_election(partition.log, partition.append, 4)
        md = b.coordinator.core.transactions[TXN]
        assert md.state is TransactionState.ONGOING and set(md.partitions) == {TP0}
        assert b.end(pid, epoch, True) == 0
        markers = b.writer.requests[-1].markers
        assert markers[0].transaction_result and markers[0].coordinator_epoch == 4  # the new leader epoch
        assert b.coordinator.core.transactions[TXN].state is TransactionState.COMPLETE_COMMIT
    finally:
        a.coordinator.shutdown()
        b.coordinator.shutdown()
        partition.log.close()



def test_a_transitions_markers_and_answer_wait_for_the_isr(tmp_path: Path) -> None:
    """EndTxn appends PrepareCommit: its markers and its answer go out only once the replication barrier says the
    ISR has it (Kafka writes markers for a replicated state only); a failed barrier answers the error and a
    resigned coordinator writes no markers."""
    time = MockTime()
    partition = Replicated(tmp_path / "__transaction_state-0", time)
    f = TxnCoordinatorFixture(time)
    held: list[Callable[[int], None]] = []
    try:
        f.coordinator.runtime.on_election(partition.log, partition.append, 1)
        f.coordinator.runtime.replication_barrier = held.append
        init: list[InitProducerIdResult] = []
        f.coordinator.handle_init_producer_id(InitProducerIdParams(TXN, 60000), init.append)
        assert init == [] and len(held) == 1
        held.pop()(0)
        pid, epoch = init[0].producer_id, init[0].producer_epoch
        added: list[int] = []
        f.coordinator.handle_add_partitions(AddPartitionsParams(TXN, pid, epoch, [TP0]), added.append)
        held.pop()(0)
        assert added == [0]

        ended: list[int] = []
        f.coordinator.handle_end_txn(EndTxnParams(TXN, pid, epoch, True), ended.append)
        assert ended == [] and f.writer.requests == []  # PrepareCommit appended, not yet on the ISR
        held.pop()(0)
        assert ended == [0] and len(f.writer.requests) == 1  # now the markers, then CompleteCommit
        assert held == []  # CompleteCommit has nothing to wait for
        assert f.coordinator.core.transactions[TXN].state is TransactionState.COMPLETE_COMMIT

        f.coordinator.handle_add_partitions(AddPartitionsParams(TXN, pid, epoch, [TP0]), added.append)
        held.pop()(0)
        f.coordinator.handle_end_txn(EndTxnParams(TXN, pid, epoch, False), ended.append)
        f.coordinator.runtime.on_resignation()
        held.pop()(NOT_COORDINATOR)  # the leadership went before the ISR had PrepareAbort
        assert ended[-1] == NOT_COORDINATOR and len(f.writer.requests) == 1
    finally:
        f.coordinator.shutdown()
        partition.log.close()
