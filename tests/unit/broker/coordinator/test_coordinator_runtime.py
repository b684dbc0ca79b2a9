"""The coordinator runtime drives a hosted coordinator through its partition's lifecycle: NOT_COORDINATOR before
the election, COORDINATOR_LOAD_IN_PROGRESS while it loads, the state replayed from the partition's log, a write
answered only once the ISR has it, and a resignation in the middle of a write answering NOT_COORDINATOR and
refusing later appends. The replication is a fake the test drives (the ISR catches up when told); MockTime and
an inline timer, so every step is deterministic."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mini_broker.coordinator.partition import CoordinatorPartition
from mini_broker.coordinator.result import CoordinatorResult, append_error_code
from mini_broker.coordinator.runtime import CoordinatorRuntime, CoordinatorStatus, HostedCoordinator
from mini_broker.log.unified_log import AppendOrigin, Log
from mini_broker.timer.system_timer import SystemTimer
from pykafka_client.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
)
from pykafka_client.protocol.records import MemoryRecordsBuilder
from pykafka_client.utils.time import MockTime

NOT_COORDINATOR = NotCoordinatorError.code
LOAD_IN_PROGRESS = CoordinatorLoadInProgressError.code


def _batch(time: MockTime, key: str, value: str) -> bytes:
    builder = MemoryRecordsBuilder()
    builder.append(time.milliseconds(), key.encode(), value.encode())
    return builder.build()


class FakeReplication:
    """One replicated partition seen from its leader: the leader's append (epoch-stamped, high watermark left
    behind) and the ISR wait, which completes when the test calls :meth:`catch_up` and fails with
    NOT_COORDINATOR when :meth:`lose_leadership` is called first."""

    def __init__(self, log: Log, leader_epoch: int) -> None:
        self.log = log
        self.leader_epoch = leader_epoch
        self.leader = True
        self.waiting: list[tuple[int, Callable[[int], None]]] = []

    def append(self, records: bytes) -> None:
        if not self.leader:
            raise NotLeaderOrFollowerError("not the leader")
        self.log.append(records, origin=AppendOrigin.COORDINATOR, leader_epoch=self.leader_epoch)

    def when_replicated(self, callback: Callable[[int], None]) -> None:
        required = self.log.log_end_offset
        if self.log.high_watermark >= required:
            callback(0)
        else:
            self.waiting.append((required, callback))

    def catch_up(self) -> None:
        self.log.update_high_watermark(self.log.log_end_offset)
        done, self.waiting = self.waiting, []
        for _, callback in done:
            callback(0)

    def lose_leadership(self) -> None:
        self.leader = False
        failed, self.waiting = self.waiting, []
        for _, callback in failed:
            callback(NOT_COORDINATOR)


class KeyValueCoordinator:
    """The smallest hosted coordinator: a map replayed from the partition, written through the runtime."""

    def __init__(self, time: MockTime, partition: CoordinatorPartition, timer: SystemTimer) -> None:
        self.time = time
        self.state: dict[str, str] = {}
        self.events: list[str] = []
        #: what a request sees while the runtime runs :meth:`load` (set by a test)
        self.during_load: Callable[[], None] | None = None
        self.runtime = CoordinatorRuntime("__kv", partition, self, timer)

    # HostedCoordinator
    def load(self, coordinator_epoch: int | None, partition: int) -> int:
        self.events.append(f"load epoch={coordinator_epoch} status={self.runtime.status.value}")
        if self.during_load is not None:
            self.during_load()
        for batch, first in self.runtime.partition.batches():
            for record in batch.records():
                if record.offset >= first and record.key is not None and record.value is not None:
                    self.state[bytes(record.key).decode()] = bytes(record.value).decode()
        return len(self.state)

    def on_loaded(self, partition: int) -> None:
        self.events.append(f"loaded status={self.runtime.status.value}")

    def unload(self, partition: int) -> None:
        self.events.append("unload")
        self.state.clear()

    # requests
    def get(self, key: str) -> tuple[int, str | None]:
        if not self.runtime.is_active:
            return self.runtime.inactive_error(), None
        return 0, self.state.get(key)

    def put_result(self, key: str, value: str, reply: Callable[[int], None]) -> CoordinatorResult[None]:
        """The write operation, sans-IO: the record, and the answer once it is durable (or the append failed)."""
        def durable(error: int) -> None:
            if error == 0:
                self.state[key] = value
            reply(error)

        return CoordinatorResult(_batch(self.time, key, value), None, on_durable=durable,
                                 on_failed=lambda e: reply(append_error_code(e)))

    def put(self, key: str, value: str, reply: Callable[[int], None]) -> None:
        if not self.runtime.is_active:
            reply(self.runtime.inactive_error())
            return
        self.runtime.write(self.put_result(key, value, reply))


def _is_hosted(coordinator: HostedCoordinator) -> HostedCoordinator:
    return coordinator  # mypy checks that KeyValueCoordinator satisfies the Protocol


class Broker:
    """One broker's runtime for the partition, with an inline timer the test advances."""

    def __init__(self, time: MockTime) -> None:
        self.time = time
        self.timer = SystemTimer("kv", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
        self.kv = KeyValueCoordinator(time, CoordinatorPartition(None), self.timer)
        _is_hosted(self.kv)

    @property
    def runtime(self) -> CoordinatorRuntime:
        return self.kv.runtime

    def advance(self, ms: int = 0) -> None:
        self.time.sleep(ms)
        while self.timer.advance_clock(0):
            pass

    def put(self, key: str, value: str) -> list[int]:
        replies: list[int] = []
        self.kv.put(key, value, replies.append)
        return replies

    def close(self) -> None:
        self.runtime.shutdown()
        self.timer.close()


def _status(broker: Broker) -> CoordinatorStatus:
    return broker.runtime.status


def _elect(broker: Broker, log: Log, epoch: int) -> FakeReplication:
    replication = FakeReplication(log, epoch)
    broker.runtime.replication_barrier = replication.when_replicated
    broker.runtime.expect_election()
    broker.runtime.on_election(log, replication.append, epoch)
    return replication


def test_before_the_election_nothing_is_served_and_nothing_is_loaded(broker: Broker) -> None:
    assert _status(broker) is CoordinatorStatus.NOT_STARTED
    assert broker.kv.get("k") == (CoordinatorNotAvailableError.code, None)
    broker.runtime.startup(follow_partition_leadership=True)
    assert _status(broker) is CoordinatorStatus.INACTIVE and broker.runtime.leads_no_partition
    assert broker.kv.get("k") == (NOT_COORDINATOR, None)
    assert broker.put("k", "v") == [NOT_COORDINATOR]
    assert broker.kv.events == []
    broker.runtime.expect_election()  # seen, load queued: clients retry here
    assert _status(broker) is CoordinatorStatus.LOADING and not broker.runtime.leads_no_partition
    assert broker.kv.get("k") == (LOAD_IN_PROGRESS, None)


def test_the_election_replays_the_partition_and_requests_during_the_load_wait(broker: Broker, log: Log,
                                                                             time: MockTime) -> None:
    log.append(_batch(time, "a", "1"), origin=AppendOrigin.COORDINATOR, leader_epoch=0)
    log.append(_batch(time, "a", "2"), origin=AppendOrigin.COORDINATOR, leader_epoch=0)
    log.append(_batch(time, "b", "3"), origin=AppendOrigin.COORDINATOR, leader_epoch=0)
    broker.runtime.startup(follow_partition_leadership=True)
    seen: list[tuple[int, str | None]] = []
    broker.kv.during_load = lambda: seen.append(broker.kv.get("a"))
    _elect(broker, log, epoch=5)
    assert seen == [(LOAD_IN_PROGRESS, None)]
    # the state is served only after the replay, and the coordinator's resume hook runs once it is served
    assert broker.kv.events == ["unload", "load epoch=5 status=Loading", "loaded status=Active"]
    assert _status(broker) is CoordinatorStatus.ACTIVE
    assert broker.kv.get("a") == (0, "2") and broker.kv.get("b") == (0, "3")


def test_a_write_is_answered_only_once_the_isr_has_it(broker: Broker, log: Log) -> None:
    broker.runtime.startup(follow_partition_leadership=True)
    replication = _elect(broker, log, epoch=1)
    replies = broker.put("k", "v")
    assert log.log_end_offset == 1 and log.high_watermark == 0  # appended by the leader, not yet replicated
    assert replies == [] and broker.kv.get("k") == (0, None)
    replication.catch_up()  # the continuation runs on the coordinator's timer (inline here)
    broker.advance()
    assert replies == [0] and broker.kv.get("k") == (0, "v")


def test_a_resignation_in_the_middle_of_a_write_answers_not_coordinator_and_refuses_later_appends(
        broker: Broker, log: Log) -> None:
    broker.runtime.startup(follow_partition_leadership=True)
    replication = _elect(broker, log, epoch=1)
    replies = broker.put("k", "v")
    assert replies == []
    broker.runtime.on_resignation()
    replication.lose_leadership()  # the ISR never got the record: the new leader may truncate it
    broker.advance()
    assert replies == [NOT_COORDINATOR]
    assert _status(broker) is CoordinatorStatus.INACTIVE and broker.kv.state == {}
    assert broker.kv.get("k") == (NOT_COORDINATOR, None)
    with pytest.raises(NotLeaderOrFollowerError):  # a request that raced the resignation is refused, not lost
        broker.runtime.write(CoordinatorResult(b"", None))
    assert log.log_end_offset == 1


def test_the_next_leader_loads_what_the_previous_one_replicated(time: MockTime, log: Log) -> None:
    first, second = Broker(time), Broker(time)
    try:
        for b in (first, second):
            b.runtime.startup(follow_partition_leadership=True)
        replication = _elect(first, log, epoch=1)
        replies = first.put("k", "v")
        replication.catch_up()
        first.advance()
        assert replies == [0]
        first.runtime.on_resignation()
        replication.lose_leadership()
        replication = _elect(second, log, epoch=2)
        assert second.kv.get("k") == (0, "v")
        replies = second.put("k2", "v2")
        replication.catch_up()
        second.advance()
        assert replies == [0] and log.log_end_offset == 2
    finally:
        first.close()
        second.close()


def test_a_single_broker_loads_its_local_partition_at_startup_and_writes_are_durable_at_once(
        time: MockTime, log: Log) -> None:
    log.append(_batch(time, "a", "1"), origin=AppendOrigin.COORDINATOR)
    log.update_high_watermark(log.log_end_offset)
    timer = SystemTimer("kv", time, start_ms=time.hi_res_clock_ms(), run_inline=True)
    kv = KeyValueCoordinator(time, CoordinatorPartition(log), timer)
    kv.runtime.startup()
    assert kv.events == ["load epoch=None status=Loading", "loaded status=Active"]
    assert kv.get("a") == (0, "1")
    replies: list[int] = []
    kv.put("b", "2", replies.append)
    assert replies == [0] and log.high_watermark == log.log_end_offset == 2
    kv.runtime.shutdown()
    assert kv.runtime.status.value == "ShutDown"
    assert kv.get("a") == (CoordinatorNotAvailableError.code, None)
    timer.close()


def test_periodic_tasks_run_only_while_the_coordinator_serves(broker: Broker, log: Log) -> None:
    runs: list[int] = []
    broker.runtime.startup(follow_partition_leadership=True)
    broker.runtime.schedule_periodic(lambda: runs.append(broker.time.milliseconds()), 100, "count")
    broker.advance(100)
    assert runs == []  # not elected: not run, but re-armed
    _elect(broker, log, epoch=1)
    broker.advance(100)
    broker.advance(100)
    assert len(runs) == 2
    broker.runtime.on_resignation()
    broker.advance(100)
    assert len(runs) == 2
    broker.runtime.shutdown()
    broker.advance(100)
    broker.advance(100)
    assert len(runs) == 2
