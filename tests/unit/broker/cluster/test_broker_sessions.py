"""A broker keeps its session while it or the controller is busy with metadata (Kafka: the BrokerLifecycleManager
heartbeats on its own event queue): a heartbeat queued behind a long controller change keeps its broker alive
until it is processed, and a fenced broker registers again on its heartbeat channel without applying any
metadata there (its metadata thread catches up as for any change). MockTime, no sockets, no threads."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_broker.cluster.controller_state import ControllerState
from mini_broker.log.unified_log import Log
from pykafka_client.errors import StaleBrokerEpochError
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.unit.broker.cluster.test_metadata_deltas import _Broker
from tests.unit.broker.cluster.test_replication import InProcessChannel

SESSION_MS = 2000


def _cluster() -> tuple[ControllerState, MockTime, dict[int, int]]:
    time = MockTime()
    state = ControllerState("c1", time, SESSION_MS)
    return state, time, {i: state.register_broker(i, "127.0.0.1", 9000 + i) for i in range(3)}


def test_a_heartbeat_waiting_for_the_controller_keeps_its_broker_alive_however_long_it_waits() -> None:
    state, time, epochs = _cluster()
    time.sleep(SESSION_MS - 100)
    state.heartbeat_arrived(1, epochs[1])  # queued behind a change that holds the lock...
    time.sleep(3 * SESSION_MS)  # ...for longer than a whole session: the broker cannot send the next one
    assert state.check_sessions() == [0, 2]
    assert state.alive() == {1}
    state.heartbeat(1, epochs[1])  # processed at last: its session counts from now
    time.sleep(SESSION_MS - 1)
    assert state.check_sessions() == []
    time.sleep(2)
    assert state.check_sessions() == [1]  # and expires as usual when no further heartbeat comes


def test_a_heartbeat_refused_for_a_stale_epoch_no_longer_keeps_the_broker_alive() -> None:
    state, time, epochs = _cluster()
    state.heartbeat_arrived(1, epochs[1] - 1)  # an older incarnation's heartbeat: not this registration's
    time.sleep(SESSION_MS + 1)
    assert sorted(state.check_sessions()) == [0, 1, 2]
    state.heartbeat_arrived(2, epochs[2])
    with pytest.raises(StaleBrokerEpochError):
        state.heartbeat(2, epochs[2])  # broker 2 was fenced meanwhile: refused, and no longer waiting
    epochs[2] = state.register_broker(2, "127.0.0.1", 9002)
    time.sleep(SESSION_MS + 1)
    assert state.check_sessions() == [2]


def test_a_fenced_broker_registers_again_on_its_heartbeat_channel_without_applying_metadata(tmp_path: Path
                                                                                             ) -> None:
    state, time, epochs = _cluster()
    state.create_topic("t", 3, 3, {}, assignment=[[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    broker = _Broker(tmp_path / "b0", state, epochs[0])
    heartbeats = InProcessChannel(state)
    broker.cluster.heartbeat_channel = heartbeats
    forwarded = broker.cluster.channel
    assert isinstance(forwarded, InProcessChannel)
    try:
        broker.cluster.apply_metadata(state.changes_since(-1))
        applied = broker.cluster.image_version
        time.sleep(SESSION_MS + 1)
        for b in (1, 2):
            state.heartbeat(b, epochs[b])
        assert state.check_sessions() == [0]  # broker 0 missed its heartbeats: t-0 moves to broker 1
        told: list[tuple[TopicPartition, int]] = []

        def leadership(tp: TopicPartition, leader_epoch: int, lg: Log | None) -> None:
            told.append((tp, leader_epoch))

        broker.cluster.leadership_listener = leadership
        forwarded.calls.clear()
        broker.cluster.heartbeat_or_register()  # refused (fenced): registers again
        assert [c["op"] for c in heartbeats.calls] == ["heartbeat", "register"]
        assert forwarded.calls == []  # not on the channel that waits for AlterPartition and topic changes
        assert broker.cluster.broker_epoch == state.brokers[0].broker_epoch > epochs[0]
        assert not state.brokers[0].fenced
        # nothing was published on the heartbeat thread: the metadata thread brings the changes
        assert told == []
        assert broker.cluster.image_version == applied
        broker.cluster.heartbeat_or_register()
        assert heartbeats.calls[-1]["op"] == "heartbeat" and not state.brokers[0].fenced
        assert broker.cluster.apply_metadata(state.changes_since(broker.cluster.image_version))
        assert told  # the leadership it lost while fenced, published by the metadata fetch
        assert broker.cluster.image_version == state.version
    finally:
        broker.rm.shutdown()
