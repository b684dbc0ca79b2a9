"""Automatic preferred leader election (Kafka: ``auto.leader.rebalance.enable``,
``leader.imbalance.check.interval.seconds``, ``leader.imbalance.per.broker.percentage``): after a failover the
leadership a broker lost goes back to it, the preferred replica, once it is back in the ISR, at the next check,
for the brokers whose imbalance is above the percentage. MockTime, no sockets, no threads."""

from __future__ import annotations

from mini_broker.cluster.controller_state import ControllerState, LeaderBalanceConfig
from pykafka_client.utils.time import MockTime

SESSION_MS = 2000
INTERVAL_MS = 10_000
#: partition p's replicas start at broker p % 3: each broker is the preferred replica of two partitions
ASSIGNMENT = [[p % 3, (p + 1) % 3, (p + 2) % 3] for p in range(6)]


def _cluster(enable: bool = True, per_broker_percentage: int = 10) -> tuple[ControllerState, MockTime, dict[int, int]]:
    time = MockTime()
    config = LeaderBalanceConfig(enable, INTERVAL_MS, per_broker_percentage)
    state = ControllerState("c1", time, SESSION_MS, leader_balance=config)
    epochs = {i: state.register_broker(i, "127.0.0.1", 9000 + i) for i in range(3)}
    state.create_topic("t", -1, -1, {}, assignment=ASSIGNMENT)
    return state, time, epochs


def _fail_over_and_return(state: ControllerState, time: MockTime, epochs: dict[int, int], broker: int,
                          rejoin: list[int]) -> None:
    """``broker`` misses its heartbeats (fenced: its partitions get other leaders), registers again, and the
    leaders take it back into the ISR of the partitions in ``rejoin``."""
    time.sleep(SESSION_MS + 1)
    for b in epochs:
        if b != broker:
            state.heartbeat(b, epochs[b])
    assert state.check_sessions() == [broker]
    epochs[broker] = state.register_broker(broker, "127.0.0.1", 9000 + broker)
    for p in rejoin:
        reg = state.topics["t"].partitions[p]
        state.alter_partition(reg.leader, epochs[reg.leader], "t", p, reg.leader_epoch, reg.partition_epoch,
                              [r for r in reg.replicas if r in reg.isr or r == broker])


def _leaders(state: ControllerState) -> list[int]:
    return [reg.leader for reg in state.topics["t"].partitions]


def test_leadership_goes_back_to_the_preferred_replica_at_the_next_check() -> None:
    state, time, epochs = _cluster()
    assert _leaders(state) == [0, 1, 2, 0, 1, 2]
    _fail_over_and_return(state, time, epochs, 0, rejoin=[0, 1, 2, 3, 4, 5])
    assert _leaders(state) == [1, 1, 2, 1, 1, 2]
    epochs_before = [reg.leader_epoch for reg in state.topics["t"].partitions]
    time.sleep(INTERVAL_MS - 2 * SESSION_MS - 10)
    assert state.maybe_balance_partition_leaders() == []  # not due yet
    version = state.version
    time.sleep(INTERVAL_MS)
    assert state.maybe_balance_partition_leaders() == [("t", 0), ("t", 3)]
    assert _leaders(state) == [0, 1, 2, 0, 1, 2]
    assert [reg.leader_epoch for reg in state.topics["t"].partitions] == [
        e + 1 if p in (0, 3) else e for p, e in enumerate(epochs_before)]
    assert state.version == version + 1  # one change for all of it
    assert state.maybe_balance_partition_leaders() == []  # the next check is an interval later
    time.sleep(INTERVAL_MS)
    assert state.maybe_balance_partition_leaders() == []  # balanced: nothing to elect


def test_a_preferred_replica_out_of_the_isr_or_fenced_is_not_elected() -> None:
    state, time, epochs = _cluster()
    _fail_over_and_return(state, time, epochs, 0, rejoin=[3])  # caught up on partition 3 only
    assert state.balance_partition_leaders() == [("t", 3)]
    assert _leaders(state) == [1, 1, 2, 0, 1, 2]
    time.sleep(SESSION_MS + 1)
    for b in (1, 2):
        state.heartbeat(b, epochs[b])
    assert state.check_sessions() == [0]  # fenced again: it leads nothing, and nothing goes back to it
    assert state.balance_partition_leaders() == []
    assert 0 not in _leaders(state)


def test_a_broker_within_the_imbalance_percentage_keeps_its_leaders_as_they_are() -> None:
    state, time, epochs = _cluster(per_broker_percentage=50)
    _fail_over_and_return(state, time, epochs, 0, rejoin=[0, 3])
    state.elect_leaders(False, [("t", 3)])  # an admin's preferred election: one of its two partitions is back
    assert _leaders(state) == [1, 1, 2, 0, 1, 2]
    assert state.balance_partition_leaders() == []  # 1 of 2 led by another broker: 50 %, not above it
    state_above, time_above, epochs_above = _cluster(per_broker_percentage=49)
    _fail_over_and_return(state_above, time_above, epochs_above, 0, rejoin=[0, 3])
    state_above.elect_leaders(False, [("t", 3)])
    assert state_above.balance_partition_leaders() == [("t", 0)]


def test_disabled_it_never_elects() -> None:
    state, time, epochs = _cluster(enable=False)
    _fail_over_and_return(state, time, epochs, 0, rejoin=[0, 3])
    time.sleep(10 * INTERVAL_MS)
    assert state.maybe_balance_partition_leaders() == []
    assert _leaders(state) == [1, 1, 2, 1, 1, 2]
