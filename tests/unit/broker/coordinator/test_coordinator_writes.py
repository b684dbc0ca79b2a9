"""The coordinators' writes are values the runtime carries out.

* The group and the transaction coordinators return their records as a ``CoordinatorResult`` and append nothing
  themselves: with the runtime's write intercepted, an offset commit, a group deletion, a SyncGroup's
  assignment, the members' leaving and a transaction transition leave their coordinator's log untouched, and the
  intercepted results hold exactly the records the log would get (the commit becomes visible and the syncs are
  answered only once the runtime carried the result out).
* The runtime's write with a fake ISR wait: what the append makes visible runs at once, the continuation only
  once the barrier releases; a resignation in the middle fails it with NOT_COORDINATOR; a refused or failed append
  runs nothing and answers through the result's error path (or raises when it has none).

MockTime and inline timers: deterministic, no sleeps."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.coordinator.partition import CoordinatorPartition
from mini_broker.coordinator.result import CoordinatorResult, append_error_code
from mini_broker.coordinator.runtime import CoordinatorRuntime
from mini_broker.group import GroupConfig, GroupCoordinator, GroupMetadataManager, LeaveMember
from mini_broker.group.group_metadata_manager import LoadedGroup, apply_record
from mini_broker.group.group_requests import CommittedOffset, OffsetCommitParams
from mini_broker.log.log_config import LogConfig
from mini_broker.log.unified_log import Log
from mini_broker.timer.system_timer import SystemTimer
from mini_broker.transaction.transaction_config import TransactionConfig
from mini_broker.transaction.transaction_coordinator import TransactionCoordinator
from mini_broker.transaction.transaction_log import (
    TransactionLog,
    read_transaction_log_key,
    read_transaction_log_value,
)
from mini_broker.transaction.transaction_requests import InitProducerIdParams, InitProducerIdResult
from mini_broker.transaction.transaction_state import TransactionState
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
)
from pykafka_client.protocol.records import MemoryRecords, MemoryRecordsBuilder
from pykafka_client.utils.time import MockTime
from tests.unit.broker.coordinator.test_coordinator_runtime import Broker, FakeReplication
from tests.unit.broker.group.harness import GROUP, Harness

NOT_COORDINATOR = NotCoordinatorError.code
TP = ("t", 0)


class InterceptedWrites:
    """Stands in for ``CoordinatorRuntime.write``: keeps each result and answers its response, appending nothing."""

    def __init__(self) -> None:
        self.results: list[CoordinatorResult[Any]] = []

    def __call__(self, result: CoordinatorResult[Any]) -> Any:
        self.results.append(result)
        return result.response


def _records(result: CoordinatorResult[Any]) -> list[tuple[bytes, bytes | None]]:
    assert result.records is not None
    return [(bytes(r.key or b""), None if r.value is None else bytes(r.value))
            for batch in MemoryRecords(result.records).batches() for r in batch.records()]


# -- the coordinators return their records -------------------------------------------------------------------
@pytest.fixture
def group_coordinator(tmp_path: Path, time: MockTime) -> Iterator[GroupCoordinator]:
    coordinator = GroupCoordinator(GroupConfig(), GroupMetadataManager(str(tmp_path), time), time,
                                   timer_run_inline=True, reaper_enabled=False)
    coordinator.startup()
    yield coordinator
    coordinator.shutdown()


def test_a_group_operation_returns_its_records_and_appends_nothing(group_coordinator: GroupCoordinator,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   time: MockTime) -> None:
    runtime = group_coordinator.runtime
    log = runtime.partition.log
    assert log is not None and log.log_end_offset == 0
    writes = InterceptedWrites()
    monkeypatch.setattr(runtime, "write", writes)

    commit = OffsetCommitParams("g", {TP: CommittedOffset(10, -1, "", time.milliseconds())})
    assert group_coordinator.handle_commit_offsets(commit) == {TP: 0}
    assert log.log_end_offset == 0  # the coordinator wrote nothing itself
    (result,) = writes.results
    replayed: dict[str, LoadedGroup] = {}
    for key, value in _records(result):
        apply_record(replayed, key, value)
    assert replayed["g"].offsets[TP].offset == 10
    assert group_coordinator.handle_fetch_offsets("g", [TP])[1][TP].offset == -1  # not visible before the write

    monkeypatch.undo()
    assert runtime.write(result) is None  # the runtime carries the result out: appended, then visible
    assert log.log_end_offset == 1
    assert group_coordinator.handle_fetch_offsets("g", [TP])[1][TP].offset == 10

    monkeypatch.setattr(runtime, "write", writes)
    assert group_coordinator.handle_delete_groups(["g"]) == {"g": 0}
    tombstones = _records(writes.results[-1])
    assert tombstones and all(value is None for _, value in tombstones)
    assert log.log_end_offset == 1


def test_a_sync_is_answered_only_once_the_runtime_wrote_the_assignment(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(str(tmp_path))
    try:
        runtime = h.coordinator.runtime
        log = runtime.partition.log
        assert log is not None
        a, b = h.join(), h.join()
        h.finish_initial_join()
        leader = a.value.leader_id
        follower = b.value.member_id if a.value.member_id == leader else a.value.member_id
        writes = InterceptedWrites()
        monkeypatch.setattr(runtime, "write", writes)
        parked = h.sync(follower, 1)
        leader_sync = h.sync(leader, 1, {leader: b"L", follower: b"F"})
        assert not parked.done and not leader_sync.done and log.log_end_offset == 0
        (result,) = writes.results
        replayed: dict[str, LoadedGroup] = {}
        for key, value in _records(result):
            apply_record(replayed, key, value)
        stored = replayed[GROUP].group
        assert stored is not None and stored.generation_id == 1
        assert {m.member_id: m.assignment for m in stored.members} == {leader: b"L", follower: b"F"}

        monkeypatch.undo()
        runtime.write(result)
        assert log.log_end_offset == 1
        assert parked.value.assignment == b"F" and leader_sync.value.assignment == b"L"

        monkeypatch.setattr(runtime, "write", writes)
        h.leave(LeaveMember(follower), LeaveMember(leader))  # the group is Empty: its record is the runtime's to write
        replayed = {}
        for key, value in _records(writes.results[-1]):
            apply_record(replayed, key, value)
        emptied = replayed[GROUP].group
        assert emptied is not None and emptied.members == [] and log.log_end_offset == 1
    finally:
        h.close()


def test_a_transaction_transition_returns_its_record_and_appends_nothing(tmp_path: Path, time: MockTime,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pids = iter(range(100, 200))
    coordinator = TransactionCoordinator(TransactionConfig(), TransactionLog(str(tmp_path), time), lambda: next(pids),
                                         lambda: None, time, timer_run_inline=True, reaper_enabled=False)
    coordinator.startup()
    try:
        log = coordinator.runtime.partition.log
        assert log is not None
        writes = InterceptedWrites()
        monkeypatch.setattr(coordinator.runtime, "write", writes)
        replies: list[InitProducerIdResult] = []
        coordinator.handle_init_producer_id(InitProducerIdParams("txn", 60000), replies.append)
        assert replies == [InitProducerIdResult(0, 100, 0)]
        assert log.log_end_offset == 0
        (result,) = writes.results
        assert result.flush  # a transition is fsynced before it is answered
        ((key, value),) = _records(result)
        assert read_transaction_log_key(key) == "txn"
        assert value is not None
        transit = read_transaction_log_value(value)
        assert (transit.state, transit.producer_id, transit.producer_epoch) == (TransactionState.EMPTY, 100, 0)
    finally:
        coordinator.shutdown()


# -- the runtime carries writes out --------------------------------------------------------------------------
def _batch(time: MockTime) -> bytes:
    builder = MemoryRecordsBuilder()
    builder.append(time.milliseconds(), b"k", b"v")
    return builder.build()


class Events:
    def __init__(self) -> None:
        self.seen: list[object] = []

    def result(self, records: bytes | None, on_failed: Callable[[Exception], str] | None = None
               ) -> CoordinatorResult[str]:
        return CoordinatorResult(records, "answer", on_appended=lambda: self.seen.append("appended"),
                                 on_durable=lambda error: self.seen.append(("durable", error)), on_failed=on_failed)


def _elect(broker: Broker, log: Log) -> FakeReplication:
    replication = FakeReplication(log, 1)
    broker.runtime.startup(follow_partition_leadership=True)
    broker.runtime.replication_barrier = replication.when_replicated
    broker.runtime.expect_election()
    broker.runtime.on_election(log, replication.append, 1)
    return replication


def test_the_continuation_runs_only_once_the_isr_has_the_records(broker: Broker, log: Log, time: MockTime) -> None:
    replication = _elect(broker, log)
    events = Events()
    assert broker.runtime.write(events.result(_batch(time))) == "answer"
    assert events.seen == ["appended"]  # visible to the coordinator at once, not yet acknowledged
    assert log.log_end_offset == 1 and log.high_watermark == 0
    broker.advance()
    assert events.seen == ["appended"]
    replication.catch_up()
    broker.advance()  # the continuation runs on the runtime's timer, not under the barrier's caller
    assert events.seen == ["appended", ("durable", 0)]


def test_a_resignation_mid_append_fails_the_waiting_write_with_not_coordinator(broker: Broker, log: Log,
                                                                              time: MockTime) -> None:
    replication = _elect(broker, log)
    events = Events()
    broker.runtime.write(events.result(_batch(time)))
    broker.runtime.on_resignation()
    replication.lose_leadership()
    broker.advance()
    assert events.seen == ["appended", ("durable", NOT_COORDINATOR)]
    # a write racing the resignation is refused: nothing runs but its error path, with the clients' error
    late = Events()
    assert broker.runtime.write(late.result(_batch(time), lambda e: f"failed {append_error_code(e)}")) \
        == f"failed {NOT_COORDINATOR}"
    assert late.seen == [] and log.log_end_offset == 1


class NothingHosted:
    """A hosted coordinator with no state (the runtime's lifecycle is not under test here)."""

    def load(self, coordinator_epoch: int | None, partition: int) -> int:
        return 0

    def on_loaded(self, partition: int) -> None:
        pass

    def unload(self, partition: int) -> None:
        pass


class BrokenLog(Log):
    """A local log whose appends fail (a disk error)."""

    def append(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")


def test_a_failed_append_answers_through_the_error_path_or_raises(tmp_path: Path, time: MockTime) -> None:
    timer = SystemTimer("kv", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    broken = BrokenLog(str(tmp_path / "__kv-0"), LogConfig(), time=time)
    runtime = CoordinatorRuntime("__kv", CoordinatorPartition(broken), NothingHosted(), timer)
    try:
        events = Events()
        failures: list[Exception] = []

        def failed(error: Exception) -> str:
            failures.append(error)
            return f"failed {append_error_code(error)}"

        assert runtime.write(events.result(_batch(time), failed)) == f"failed {CoordinatorNotAvailableError.code}"
        assert events.seen == [] and isinstance(failures[0], OSError)
        with pytest.raises(OSError):
            runtime.write(events.result(_batch(time)))
        assert events.seen == []
        # nothing to append: the continuations run (a single broker: durable at once)
        assert runtime.write(events.result(None)) == "answer"
        assert events.seen == ["appended", ("durable", 0)]
    finally:
        broken.close()
        timer.close()


def test_append_error_codes_are_the_ones_clients_get() -> None:
    assert append_error_code(NotLeaderOrFollowerError("resigned")) == NOT_COORDINATOR
    assert append_error_code(OSError("disk full")) == CoordinatorNotAvailableError.code
