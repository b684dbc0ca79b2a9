"""The controller's state machine: registration, fencing on session expiry, leader election only from the ISR,
AlterPartition validation, persistence (MockTime, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from mini_broker.cluster.controller_state import NO_LEADER, ControllerState, PartitionRegistration, elect_leader
from pykafka_client.errors import (
    FencedLeaderEpochError,
    InvalidReplicationFactorError,
    InvalidUpdateVersionError,
    StaleBrokerEpochError,
)
from pykafka_client.utils.time import MockTime

SESSION_MS = 2000


def _cluster(n: int = 3, **kw: Any) -> tuple[ControllerState, MockTime, dict[int, int]]:
    time = MockTime()
    state = ControllerState("c1", time, SESSION_MS, **kw)
    epochs = {i: state.register_broker(i, "127.0.0.1", 9000 + i) for i in range(n)}
    return state, time, epochs


def _heartbeat_all_but(state: ControllerState, epochs: dict[int, int], dead: set[int]) -> None:
    for b, e in epochs.items():
        if b not in dead:
            state.heartbeat(b, e)


def _reg(state: ControllerState, topic: str = "t", p: int = 0) -> PartitionRegistration:
    return state.topics[topic].partitions[p]


def test_create_topic_assigns_replicas_round_robin_with_full_isr() -> None:
    state, _, _ = _cluster()
    state.create_topic("t", 3, 3, {})
    assert [r.replicas for r in state.topics["t"].partitions] == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    assert [r.leader for r in state.topics["t"].partitions] == [0, 1, 2]
    assert all(r.isr == r.replicas and r.leader_epoch == 0 for r in state.topics["t"].partitions)


def test_replication_factor_above_the_broker_count_is_refused() -> None:
    state, _, _ = _cluster(2)
    with pytest.raises(InvalidReplicationFactorError):
        state.create_topic("t", 1, 3, {})


def test_session_expiry_fences_the_leader_and_elects_from_the_isr_with_an_epoch_bump() -> None:
    state, time, epochs = _cluster()
    state.create_topic("t", 1, 3, {})
    time.sleep(SESSION_MS // 2)
    _heartbeat_all_but(state, epochs, {0})
    time.sleep(SESSION_MS // 2 + 1)
    assert state.check_sessions() == [0]
    reg = _reg(state)
    assert reg.leader == 1 and reg.leader_epoch == 1 and reg.isr == [1, 2]
    with pytest.raises(StaleBrokerEpochError):
        state.heartbeat(0, epochs[0])


def test_a_dead_follower_leaves_the_isr_without_a_leader_epoch_bump() -> None:
    state, time, epochs = _cluster()
    state.create_topic("t", 1, 3, {})
    time.sleep(SESSION_MS // 2)
    _heartbeat_all_but(state, epochs, {2})
    time.sleep(SESSION_MS // 2 + 1)
    state.check_sessions()
    reg = _reg(state)
    assert reg.leader == 0 and reg.leader_epoch == 0 and reg.isr == [0, 1] and reg.partition_epoch == 1


def test_election_never_picks_an_out_of_sync_replica_by_default() -> None:
    state, time, epochs = _cluster()
    state.create_topic("t", 1, 3, {})
    state.alter_partition(0, epochs[0], "t", 0, 0, 0, [0])  # followers fell behind
    time.sleep(SESSION_MS // 2)
    _heartbeat_all_but(state, epochs, {0})
    time.sleep(SESSION_MS // 2 + 1)
    state.check_sessions()
    reg = _reg(state)
    assert reg.leader == NO_LEADER and reg.isr == [0]  # the last ISR member stays, to be elected on return
    # it comes back: it is the one elected, with a new epoch
    state.register_broker(0, "127.0.0.1", 9000)
    assert _reg(state).leader == 0 and _reg(state).leader_epoch == 2


def test_unclean_election_picks_an_alive_out_of_sync_replica_when_enabled() -> None:
    state, time, epochs = _cluster()
    state.create_topic("t", 1, 3, {"unclean.leader.election.enable": "true"})
    state.alter_partition(0, epochs[0], "t", 0, 0, 0, [0])
    time.sleep(SESSION_MS // 2)
    _heartbeat_all_but(state, epochs, {0})
    time.sleep(SESSION_MS // 2 + 1)
    state.check_sessions()
    assert _reg(state).leader == 1 and _reg(state).isr == [1]


def test_elect_leader_prefers_replica_order_among_alive_isr_members() -> None:
    reg = PartitionRegistration([2, 0, 1], [0, 1], 2)
    assert elect_leader(reg, {0, 1}, False) == (0, [0, 1])
    assert elect_leader(reg, {2}, False) == (NO_LEADER, [0, 1])
    assert elect_leader(reg, {2}, True) == (2, [2])


def test_alter_partition_needs_the_current_leader_and_partition_epochs() -> None:
    state, _, epochs = _cluster()
    state.create_topic("t", 1, 3, {})
    with pytest.raises(FencedLeaderEpochError):
        state.alter_partition(1, epochs[1], "t", 0, 0, 0, [0, 1])  # not the leader
    with pytest.raises(FencedLeaderEpochError):
        state.alter_partition(0, epochs[0], "t", 0, 5, 0, [0, 1])
    with pytest.raises(InvalidUpdateVersionError):
        state.alter_partition(0, epochs[0], "t", 0, 0, 7, [0, 1])
    assert state.alter_partition(0, epochs[0], "t", 0, 0, 0, [0, 1]).isr == [0, 1]
    with pytest.raises(InvalidUpdateVersionError):  # partition epoch moved
        state.alter_partition(0, epochs[0], "t", 0, 0, 0, [0, 1, 2])


def test_reregistering_a_leader_fences_its_old_incarnation_first() -> None:
    state, _, _ = _cluster()
    state.create_topic("t", 1, 3, {})
    state.register_broker(0, "127.0.0.1", 9000)  # a restart faster than the session timeout
    reg = _reg(state)
    assert reg.leader == 1 and reg.leader_epoch == 1 and 0 not in reg.isr


def test_the_image_survives_a_controller_restart() -> None:
    saved: list[dict[str, Any]] = []
    time = MockTime()
    state = ControllerState("c1", time, SESSION_MS, persist=saved.append)
    for i in range(3):
        state.register_broker(i, "h", 1 + i)
    state.create_topic("t", 2, 3, {"retention.ms": "5"})
    first, _ = state.allocate_producer_ids()
    again = ControllerState("c1", time, SESSION_MS)
    for delta in saved:
        again.replay(delta)
    assert again.topics["t"] == state.topics["t"]
    assert again.allocate_producer_ids()[0] > first
    assert again.version == state.version + 1


def test_a_brokers_listeners_are_registered_imaged_and_persisted() -> None:
    saved: list[dict[str, Any]] = []
    state = ControllerState("c1", MockTime(), SESSION_MS, persist=saved.append)
    listeners = [{"name": "PLAINTEXT", "host": "h", "port": 1, "security_protocol": "PLAINTEXT"},
                 {"name": "SASL_SSL", "host": "h", "port": 2, "security_protocol": "SASL_SSL"}]
    state.register_broker(0, "h", 2, listeners)
    assert state.image()["brokers"][0]["listeners"] == listeners
    assert ControllerState("c1", MockTime(), SESSION_MS, image=state.image()).brokers[0].listeners == listeners
    again = ControllerState("c1", MockTime(), SESSION_MS)
    for delta in saved:  # the delta log carries them too
        again.replay(delta)
    assert again.brokers[0].listeners == listeners


def test_controlled_shutdown_moves_leadership_at_once() -> None:
    state, _, epochs = _cluster()
    state.create_topic("t", 1, 3, {})
    with pytest.raises(StaleBrokerEpochError):
        state.controlled_shutdown(0, epochs[0] + 100)
    state.controlled_shutdown(0, epochs[0])
    assert _reg(state).leader == 1 and _reg(state).isr == [1, 2] and state.brokers[0].fenced


def test_the_consistent_readers_give_copies_that_a_later_change_leaves_alone() -> None:
    state, time, epochs = _cluster()
    state.create_topic("t", 1, 3, {"retention.ms": "1000"})
    version = state.current_version()
    topic, reg, all_topics = state.topic_registration("t"), state.partition_registration("t", 0), state.topic_registrations()
    assert topic is not None and reg is not None and set(all_topics) == {"t"}
    assert (reg.leader, reg.isr, topic.topic_id) == (0, [0, 1, 2], state.topics["t"].topic_id)
    time.sleep(SESSION_MS + 1)
    _heartbeat_all_but(state, epochs, {0})
    assert state.check_sessions() == [0]  # broker 0 fenced: a new leader, a smaller ISR, a new version
    assert state.current_version() > version
    assert (reg.leader, reg.isr) == (0, [0, 1, 2])  # the copies read before the change did not move with it
    assert topic.partitions[0].leader == 0 and all_topics["t"].partitions[0].isr == [0, 1, 2]
    now = state.partition_registration("t", 0)
    assert now is not None and (now.leader, now.isr) == (1, [1, 2])
    now.isr.append(0)
    topic.configs["retention.ms"] = "1"
    assert _reg(state).isr == [1, 2] and state.topics["t"].configs == {"retention.ms": "1000"}  # nor the other way
    assert state.topic_registration("missing") is None and state.partition_registration("t", 1) is None
