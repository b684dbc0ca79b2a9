"""The controller's batched metadata changes (one version and one persisted delta per request), manual replica
assignments, the reassignment state machine (KIP-455) and leader elections (KIP-460); MockTime, no I/O."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mini_broker.cluster import controller as controller_module
from mini_broker.cluster.controller import IMAGE_FILE, LOG_FILE, Controller
from mini_broker.cluster.controller_state import NO_LEADER, ControllerState, TopicSpec
from pykafka_client.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    InvalidReplicaAssignmentError,
    NoReassignmentInProgressError,
    PreferredLeaderNotAvailableError,
    TopicExistsError,
)
from pykafka_client.utils.time import MockTime

SESSION_MS = 2000


def _cluster(n: int = 4, **kw: Any) -> tuple[ControllerState, MockTime, dict[int, int], list[dict[str, Any]]]:
    time = MockTime()
    saved: list[dict[str, Any]] = []
    state = ControllerState("c1", time, SESSION_MS, persist=saved.append, **kw)
    epochs = {i: state.register_broker(i, "127.0.0.1", 9000 + i) for i in range(n)}
    return state, time, epochs, saved


def test_a_whole_create_topics_request_is_one_version_and_one_delta_of_just_those_topics() -> None:
    state, _, _, saved = _cluster()
    state.create_topic("existing", 1, 3, {})
    before, persisted = state.version, len(saved)
    out = state.create_topics([TopicSpec(f"t{i}", 3, 3, {}) for i in range(100)] +
                              [TopicSpec("existing", 1, 1, {})])
    assert state.version == before + 1 and len(saved) == persisted + 1
    assert sorted(key for _, key, _ in saved[-1]["entries"]) == sorted(f"t{i}" for i in range(100))
    assert isinstance(out["existing"], TopicExistsError)
    assert all(state.topics[f"t{i}"].partitions[2].leader != NO_LEADER for i in range(100))


def test_deltas_replayed_on_a_snapshot_rebuild_the_image() -> None:
    state, time, _, saved = _cluster()
    state.create_topic("a", 2, 3, {})
    snapshot = state.image()
    first = len(saved)
    state.create_topics([TopicSpec("b", 1, 2, {}), TopicSpec("c", 1, 1, {})])
    state.delete_topics(["a"])
    state.create_partitions("b", 3)
    again = ControllerState("c1", time, SESSION_MS, image=snapshot)
    for delta in saved[:first] + saved[first:]:  # deltas the snapshot already has are skipped
        again.replay(delta)
    assert again.version == state.version
    assert again.image()["topics"] == state.image()["topics"]


def test_manual_assignment_gives_exactly_those_replicas() -> None:
    state, _, _, _ = _cluster()
    t = state.create_topic("m", -1, -1, {}, assignment=[[3, 1], [2, 0]])
    assert [p.replicas for p in t.partitions] == [[3, 1], [2, 0]]
    assert [p.leader for p in t.partitions] == [3, 2]


@pytest.mark.parametrize("assignment, why", [
    ([[0, 1], [2]], "not consistent"),
    ([[0, 0]], "duplicate"),
    ([[0, 9]], "no such broker"),
    ([[]], "empty"),
])
def test_manual_assignment_is_validated_as_kafka_does(assignment: list[list[int]], why: str) -> None:
    state, _, _, _ = _cluster()
    with pytest.raises(InvalidReplicaAssignmentError, match=why):
        state.create_topic("m", -1, -1, {}, assignment=assignment)
    assert "m" not in state.topics


def test_create_partitions_with_an_assignment_checks_count_and_replication_factor() -> None:
    state, _, _, _ = _cluster()
    state.create_topic("m", 1, 2, {})
    with pytest.raises(InvalidReplicaAssignmentError, match="only 1 assignment"):
        state.create_partitions("m", 3, assignment=[[0, 1]])
    with pytest.raises(InvalidReplicaAssignmentError, match="not consistent"):
        state.create_partitions("m", 2, assignment=[[0, 1, 2]])
    state.create_partitions("m", 2, assignment=[[3, 2]])
    assert state.topics["m"].partitions[1].replicas == [3, 2]


def _isr_from_leader(state: ControllerState, epochs: dict[int, int], topic: str, isr: list[int]) -> None:
    reg = state.topics[topic].partitions[0]
    state.alter_partition(reg.leader, epochs[reg.leader], topic, 0, reg.leader_epoch, reg.partition_epoch, isr)


def test_reassignment_adds_then_moves_leadership_then_drops_the_removed_replicas() -> None:
    state, _, epochs, _ = _cluster()
    state.create_topic("r", -1, -1, {}, assignment=[[0, 1, 2]])
    assert state.alter_partition_reassignments([("r", 0, [3, 1, 2])]) == {("r", 0): None}
    reg = state.topics["r"].partitions[0]
    assert reg.replicas == [3, 1, 2, 0] and reg.adding_replicas == [3] and reg.removing_replicas == [0]
    assert reg.leader == 0 and reg.isr == [0, 1, 2]  # nothing moves before the new replica caught up
    assert list(state.list_partition_reassignments()) == [("r", 0)]
    epoch = reg.leader_epoch
    _isr_from_leader(state, epochs, "r", [0, 1, 2, 3])  # the leader saw 3 catch up
    reg = state.topics["r"].partitions[0]
    assert reg.replicas == [3, 1, 2] and reg.isr == [1, 2, 3] and reg.leader == 3  # first of the target
    assert reg.leader_epoch == epoch + 1 and not reg.adding_replicas and not reg.removing_replicas
    assert state.list_partition_reassignments() == {}


def test_cancelling_a_reassignment_restores_the_original_replicas() -> None:
    state, _, _, _ = _cluster()
    state.create_topic("r", -1, -1, {}, assignment=[[0, 1]])
    state.alter_partition_reassignments([("r", 0, [2, 3])])
    out = state.alter_partition_reassignments([("r", 0, None)])
    reg = state.topics["r"].partitions[0]
    assert out == {("r", 0): None} and reg.replicas == [0, 1] and reg.leader == 0
    assert isinstance(state.alter_partition_reassignments([("r", 0, None)])[("r", 0)],
                      NoReassignmentInProgressError)


def test_a_reassignment_is_validated() -> None:
    state, _, _, _ = _cluster()
    state.create_topic("r", 1, 2, {})
    out = state.alter_partition_reassignments([("r", 0, [0, 7]), ("r", 5, [0, 1])])
    assert isinstance(out[("r", 0)], InvalidReplicaAssignmentError)
    assert type(out[("r", 5)]).__name__ == "UnknownTopicOrPartitionError"


def test_preferred_election_returns_leadership_to_the_first_replica() -> None:
    state, _, epochs, _ = _cluster(3)
    state.create_topic("p", -1, -1, {}, assignment=[[0, 1, 2]])
    state.controlled_shutdown(0, epochs[0])
    assert state.topics["p"].partitions[0].leader == 1
    assert isinstance(state.elect_leaders(False, [("p", 0)])[("p", 0)], PreferredLeaderNotAvailableError)
    epochs[0] = state.register_broker(0, "127.0.0.1", 9000)
    _isr_from_leader(state, epochs, "p", [0, 1, 2])
    assert state.elect_leaders(False, [("p", 0)]) == {("p", 0): None}
    assert state.topics["p"].partitions[0].leader == 0
    assert isinstance(state.elect_leaders(False, [("p", 0)])[("p", 0)], ElectionNotNeededError)
    assert state.elect_leaders(False, None) == {}  # "all partitions" leaves out those that needed none


def test_unclean_election_picks_an_out_of_sync_replica_only_when_asked() -> None:
    state, _, epochs, _ = _cluster(2)
    state.create_topic("u", -1, -1, {}, assignment=[[0, 1]])
    _isr_from_leader(state, epochs, "u", [0])
    state.controlled_shutdown(0, epochs[0])
    assert state.topics["u"].partitions[0].leader == NO_LEADER
    assert state.elect_leaders(True, [("u", 0)]) == {("u", 0): None}
    reg = state.topics["u"].partitions[0]
    assert reg.leader == 1 and reg.isr == [1]
    assert isinstance(state.elect_leaders(True, [("u", 0)])[("u", 0)], ElectionNotNeededError)
    state.controlled_shutdown(1, epochs[1])
    assert isinstance(state.elect_leaders(True, [("u", 0)])[("u", 0)], EligibleLeadersNotAvailableError)


def test_the_metadata_log_appends_deltas_snapshots_and_survives_a_torn_last_record(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch
                                                                                   ) -> None:
    monkeypatch.setattr(controller_module, "SNAPSHOT_EVERY", 5)
    c = Controller(str(tmp_path), "c1", time=MockTime())
    try:
        for i in range(3):
            c.state.register_broker(i, "127.0.0.1", 9000 + i)
        c.state.create_topics([TopicSpec(f"t{i}", 1, 3, {}) for i in range(50)])
        c.state.create_topic("manual", -1, -1, {}, assignment=[[2, 1]])
        c.state.alter_partition_reassignments([("manual", 0, [0, 1])])
        image = c.state.image()
        log_lines = (tmp_path / LOG_FILE).read_bytes().splitlines()
        # 3 registrations + 1 batch + 1 topic + 1 reassignment = 6 deltas: a snapshot after the 5th
        assert len(log_lines) == 1 and (tmp_path / IMAGE_FILE).exists()
        assert len(log_lines[0]) < 2000  # the reassignment's delta names one topic, not the 51
    finally:
        c.shutdown()
    with open(tmp_path / LOG_FILE, "ab") as fh:
        fh.write(b'{"version": 99, "entr')  # a crash while appending
    again = Controller(str(tmp_path), "other", time=MockTime())
    try:
        assert again.state.cluster_id == "c1"
        assert again.state.image()["topics"] == image["topics"] and again.state.version == image["version"]
        assert again.state.topics["manual"].partitions[0].adding_replicas == [0]
        # a change after the torn record survives the next restart (the torn tail was cut, not appended to)
        again.state.create_topic("after-torn", 1, 3, {})
        version = again.state.version
    finally:
        again.shutdown()
    third = Controller(str(tmp_path), "other", time=MockTime())
    try:
        assert "after-torn" in third.state.topics and third.state.version == version
    finally:
        third.shutdown()


def test_a_change_whose_write_fails_is_not_published_and_goes_out_with_the_next_one() -> None:
    written: list[dict[str, object]] = []
    fail = [True]

    def persist(delta: dict[str, object]) -> None:
        if fail[0]:
            raise OSError(28, "No space left on device")
        written.append(delta)

    state = ControllerState("c1", MockTime(), 10_000, persist=persist)
    fail[0] = False
    state.register_broker(0, "127.0.0.1", 9000)
    version = state.version
    fail[0] = True
    with pytest.raises(OSError):
        state.create_topic("lost-write", 1, 1, {})
    assert state.version == version  # brokers fetching newer versions do not see it
    fail[0] = False
    state.create_topic("next", 1, 1, {})
    replayed = ControllerState("c1", MockTime(), 10_000)
    for delta in written:
        replayed.replay(delta)
    assert {"lost-write", "next"} <= set(replayed.topics)


def test_a_cancel_that_would_leave_no_original_replica_in_the_isr_is_refused() -> None:
    """Reverting to replicas none of which is in the ISR would leave the partition without a leader and with an
    ISR outside its replica set (every later AlterPartition refused): the move is left to complete."""
    state, _, epochs, _ = _cluster()
    state.create_topic("r", -1, -1, {}, assignment=[[0]])
    state.alter_partition_reassignments([("r", 0, [1, 2])])
    _isr_from_leader(state, epochs, "r", [0, 1])  # 1 caught up, 2 not yet: the move goes on
    state.controlled_shutdown(0, epochs[0])
    reg = state.topics["r"].partitions[0]
    assert reg.isr == [1] and reg.leader == 1
    error = state.alter_partition_reassignments([("r", 0, None)])[("r", 0)]
    assert isinstance(error, InvalidReplicaAssignmentError) and "let the reassignment complete" in str(error)
    reg = state.topics["r"].partitions[0]
    assert reg.leader == 1 and reg.isr == [1] and set(reg.isr) <= set(reg.replicas)
