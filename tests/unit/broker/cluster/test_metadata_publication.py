"""A broker reports a metadata version as applied only once its publication finished (Kafka: a broker's
metadata offset moves after its publishers ran): while it is still creating the logs of a change and moving
its coordinators, its heartbeats name the version before, so that the controller's topic changes (and
``MiniCluster.wait_for_metadata``) that wait for every broker to have applied a version do not proceed early.
MockTime, no sockets, no threads."""

from __future__ import annotations

from pathlib import Path

from mini_broker.cluster.controller_state import ControllerState
from mini_broker.log.unified_log import Log
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.unit.broker.cluster.test_metadata_deltas import _Broker
from tests.unit.broker.cluster.test_replication import InProcessChannel


def _cluster() -> tuple[ControllerState, dict[int, int]]:
    state = ControllerState("c1", MockTime(), 2000)
    epochs = {i: state.register_broker(i, "127.0.0.1", 9000 + i) for i in range(3)}
    return state, epochs


def test_a_version_is_reported_applied_only_after_its_publication_finished(tmp_path: Path) -> None:
    state, epochs = _cluster()
    state.create_topic("before", 1, 3, {}, assignment=[[0, 1, 2]])
    broker = _Broker(tmp_path / "b0", state, epochs[0])
    broker.cluster.heartbeat_channel = InProcessChannel(state)
    try:
        broker.cluster.apply_metadata(state.changes_since(-1))
        broker.cluster.send_heartbeat()
        applied_before = state.version
        assert state.brokers[0].metadata_version == applied_before

        state.create_topic("new", 1, 3, {}, assignment=[[0, 1, 2]])  # broker 0 leads it: its publication tells
        new_version = state.version                                   # the leadership listener (coordinators)
        seen: list[tuple[int, int, bool]] = []

        def mid_publication(tp: TopicPartition, leader_epoch: int, lg: Log | None) -> None:
            # the heartbeat thread runs while the delta is being published: what does the controller learn?
            broker.cluster.send_heartbeat()
            seen.append((broker.cluster.image_version, state.brokers[0].metadata_version,
                         state.wait_for_propagation(new_version, -1, 0)))

        broker.cluster.leadership_listener = mid_publication
        assert broker.cluster.apply_metadata(state.changes_since(broker.cluster.image_version))
        assert seen == [(applied_before, applied_before, False)]
        assert broker.rm.log_manager.get_log("new", 0) is not None

        broker.cluster.send_heartbeat()  # publication finished: now the version is reported
        assert broker.cluster.image_version == new_version
        assert state.brokers[0].metadata_version == new_version
    finally:
        broker.rm.shutdown()


def test_a_whole_image_is_reported_applied_only_after_its_publication_finished(tmp_path: Path) -> None:
    state, epochs = _cluster()
    state.create_topic("t", 2, 3, {}, assignment=[[0, 1, 2], [1, 2, 0]])
    broker = _Broker(tmp_path / "b0", state, epochs[0])
    broker.cluster.heartbeat_channel = InProcessChannel(state)
    seen: list[int] = []

    def mid_publication(tp: TopicPartition, leader_epoch: int, lg: Log | None) -> None:
        broker.cluster.send_heartbeat()
        seen.append(state.brokers[0].metadata_version)

    broker.cluster.leadership_listener = mid_publication
    try:
        broker.cluster.apply_image(state.image())
        assert seen == [-1, -1]  # leader of t-0, follower of t-1: both told before the version was reported
        broker.cluster.send_heartbeat()
        assert state.brokers[0].metadata_version == state.version
    finally:
        broker.rm.shutdown()
