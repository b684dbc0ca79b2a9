"""Brokers catch up with the controller's metadata by deltas (Kafka: brokers fetching the metadata log from
their offset, a snapshot when they are too far behind): the deltas after a broker's version, applied to its
image, give exactly the controller's image; a broker whose version was dropped from the kept deltas (or that
just started) gets the image; a broker applying deltas ends with the same metadata cache, partitions and logs
as one applying the whole image. MockTime, no sockets, no threads."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from mini_broker.cluster.controller import Controller, handle_request
from mini_broker.cluster.controller_state import ControllerState, TopicSpec
from mini_broker.cluster.metadata_image import MetadataGapError, MetadataImage
from mini_broker.cluster.replication import ClusterReplication
from mini_broker.config import KafkaConfig
from mini_broker.server.metadata_cache import MetadataCache
from mini_broker.server.replica_manager import ReplicaManager
from pykafka_client.errors import InvalidTopicError
from pykafka_client.errors_base import KafkaError
from pykafka_client.utils.time import MockTime
from tests.unit.broker.cluster.test_replication import InProcessChannel

SESSION_MS = 2000
BROKERS = 4


def _state(**kw: Any) -> tuple[ControllerState, MockTime, dict[int, int]]:
    time = MockTime()
    state = ControllerState("c1", time, SESSION_MS, **kw)
    epochs = {i: state.register_broker(i, "127.0.0.1", 9000 + i) for i in range(3)}
    return state, time, epochs


def _random_change(state: ControllerState, time: MockTime, epochs: dict[int, int], rnd: random.Random, n: int
                   ) -> None:
    """One random controller change of every kind the image carries (refused ones included)."""
    topics = sorted(state.topics)
    pick = rnd.choice
    op = rnd.randrange(14)
    try:
        if op == 0 or not topics:
            state.create_topics([TopicSpec(f"t{n}-{i}", rnd.randint(1, 4), rnd.randint(1, 3),
                                           {"retention.ms": str(rnd.randint(1, 9))}) for i in range(rnd.randint(1, 5))])
        elif op == 1:
            state.delete_topics(rnd.sample(topics, min(len(topics), rnd.randint(1, 2))))
        elif op == 2:
            name = pick(topics)
            state.create_partitions(name, len(state.topics[name].partitions) + rnd.randint(1, 2))
        elif op == 3:
            state.alter_configs(pick(topics), {"cleanup.policy": pick(["compact", "delete"])})
        elif op == 4:  # the leader drops a follower from the ISR
            name = pick(topics)
            p = rnd.randrange(len(state.topics[name].partitions))
            reg = state.topics[name].partitions[p]
            if reg.leader >= 0 and len(reg.isr) > 1:
                state.alter_partition(reg.leader, epochs[reg.leader], name, p, reg.leader_epoch,
                                      reg.partition_epoch, [reg.leader])
        elif op == 13:  # followers catch up: the leader adds every live replica (completing reassignments)
            for name in topics:
                for p, reg in enumerate(state.topics[name].partitions):
                    isr = [r for r in reg.replicas if r in state.alive()]
                    if reg.leader >= 0 and reg.leader in isr and isr != reg.isr:
                        state.alter_partition(reg.leader, epochs[reg.leader], name, p, reg.leader_epoch,
                                              reg.partition_epoch, isr)
        elif op == 5:  # a broker (re)registers: a restart or a new broker
            b = rnd.randrange(BROKERS)
            epochs[b] = state.register_broker(b, "127.0.0.1", 9100 + b,
                                              [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9100 + b,
                                                "security_protocol": "PLAINTEXT"}])
        elif op == 6:  # a broker stops heartbeating and is fenced
            alive = sorted(state.alive())
            if len(alive) > 1:
                keep = [b for b in alive if b != pick(alive)]
                time.sleep(SESSION_MS + 1)
                for b in keep:
                    state.heartbeat(b, epochs[b])
                state.check_sessions()
        elif op == 7 and len(state.alive()) > 1:
            b = pick(sorted(state.alive()))
            state.controlled_shutdown(b, epochs[b])
        elif op == 8:
            acl = {"principal": f"User:u{rnd.randrange(3)}", "resource": pick(topics) if topics else "x"}
            if rnd.random() < 0.7:
                state.alter_acls([acl], [])
            else:
                state.alter_acls([], [dict(a) for a in state.acls[:1]])
        elif op == 9:
            user = f"u{rnd.randrange(3)}"
            if rnd.random() < 0.7:
                state.alter_scram_credentials([{"user": user, "mechanism": "SCRAM-SHA-256", "salt": str(n)}], [])
            else:
                state.alter_scram_credentials([], [{"user": user, "mechanism": "SCRAM-SHA-256"}])
        elif op == 10:
            state.allocate_producer_ids()
        elif op == 11:
            name = pick(topics)
            p = rnd.randrange(len(state.topics[name].partitions))
            target = rnd.sample(range(BROKERS), len(state.topics[name].partitions[p].replicas))
            state.alter_partition_reassignments([(name, p, target)])
        else:
            state.elect_leaders(rnd.random() < 0.5, None)
    except KafkaError:
        pass  # refused changes change nothing


@pytest.mark.parametrize("seed", range(6))
def test_an_image_after_the_deltas_equals_the_controllers_image(seed: int) -> None:
    rnd = random.Random(seed)
    state, time, epochs = _state()
    brokers = [MetadataImage.of(state.image()), MetadataImage(), MetadataImage()]
    used_deltas = False
    for n in range(150):
        _random_change(state, time, epochs, rnd, n)
        broker = rnd.choice(brokers)  # brokers catch up at different paces
        changes = state.changes_since(broker.version)
        if "image" in changes:
            broker.replace(changes["image"])
        else:
            used_deltas = True
            broker.apply(changes["deltas"])
        assert broker.version == state.version
        assert broker.to_image() == state.image()
    for broker in brokers:
        changes = state.changes_since(broker.version)
        assert "deltas" in changes
        broker.apply(changes["deltas"])
        assert broker.to_image() == state.image()
    assert used_deltas


def test_a_broker_whose_version_was_dropped_from_the_kept_deltas_or_just_started_gets_the_image() -> None:
    state, _, _ = _state(delta_retention_entries=5)
    behind = MetadataImage.of(state.image())
    for i in range(10):
        state.create_topic(f"t{i}", 1, 3, {})
    assert state.deltas_after(behind.version) is not None  # 10 entries: fewer than the image's 13
    for i in range(20):
        state.alter_configs("t0", {"retention.ms": str(i)})
    # 30 entries of deltas after it: more than the image has; they are dropped and the image is sent
    assert state.deltas_after(behind.version) is None
    changes = state.changes_since(behind.version)
    assert set(changes) == {"image"}
    behind.replace(changes["image"])
    assert behind.to_image() == state.image()
    assert set(state.changes_since(-1)) == {"image"}
    recent = state.changes_since(state.version - 2)
    assert [d["version"] for d in recent["deltas"]] == [state.version - 1, state.version]
    assert state.changes_since(state.version) == {"deltas": []}


def test_deltas_with_a_gap_leave_the_image_as_it_was() -> None:
    state, _, _ = _state()
    image = MetadataImage.of(state.image())
    before = image.to_image()
    state.create_topic("a", 1, 3, {})
    state.create_topic("b", 1, 3, {})
    deltas = state.deltas_after(image.version)
    assert deltas is not None and len(deltas) == 2
    with pytest.raises(MetadataGapError, match="does not follow"):
        image.apply(deltas[1:])
    with pytest.raises(MetadataGapError, match="unknown kinds"):
        image.apply([deltas[0], {"version": deltas[1]["version"], "entries": [["novel", "k", 1]]}])
    assert image.to_image() == before
    image.apply(deltas[:1])
    assert image.apply(deltas).topics.keys() == {"b"}  # deltas already applied (another reply's) are skipped
    assert image.to_image() == state.image()


def test_a_restarted_controller_serves_the_deltas_it_replayed_and_the_image_before_them(tmp_path: Path) -> None:
    c = Controller(str(tmp_path), "c1", time=MockTime())
    try:
        for i in range(3):
            c.state.register_broker(i, "127.0.0.1", 9000 + i)
        c.metadata_log.snapshot(c.state)
        snapshot_version = c.state.version
        c.state.create_topic("a", 1, 3, {})
        c.state.create_topic("b", 2, 3, {})
        image = c.state.image()
    finally:
        c.shutdown()
    again = Controller(str(tmp_path), "c1", time=MockTime())
    try:
        deltas = again.state.deltas_after(snapshot_version)
        assert deltas is not None and [d["version"] for d in deltas] == [snapshot_version + 1, image["version"]]
        assert again.state.deltas_after(snapshot_version - 1) is None
        broker = MetadataImage()
        broker.replace(again.state.changes_since(snapshot_version - 1)["image"])
        assert broker.to_image() == image
    finally:
        again.shutdown()


def test_a_change_sends_a_broker_what_it_changed_not_the_image() -> None:
    """The long-poll's reply to a broker that is current except for one new topic, in a cluster of 1,000
    topics: that topic's delta (the whole image was sent before)."""
    state, _, epochs = _state()
    state.create_topics([TopicSpec(f"topic-{i}", 3, 3, {}) for i in range(1000)])
    version = state.version
    image_bytes = len(json.dumps(state.image()))
    state.create_topic("one-more", 3, 3, {})
    reply = handle_request(state, {"op": "fetch_metadata", "broker_id": 1, "broker_epoch": epochs[1],
                                   "version": version, "max_wait_ms": 0})
    assert [[k, key] for d in reply["deltas"] for k, key, _ in d["entries"]] == [["topic", "one-more"]]
    assert len(json.dumps(reply)) * 100 < image_bytes


class _Broker:
    """A cluster broker's replication (broker 0) with its own data dir and an in-process controller."""

    def __init__(self, path: Path, state: ControllerState, epoch: int) -> None:
        path.mkdir(exist_ok=True)
        d = str(path)
        config = KafkaConfig({"log.dirs": d, "node.id": 0, "controller.quorum.bootstrap.servers": "127.0.0.1:1"})
        self.cache = MetadataCache(d, 0, "c1")
        self.rm = ReplicaManager(config, self.cache, d, time=state.time)
        self.cluster = ClusterReplication(self.rm, self.cache, 0, "127.0.0.1:1", d, state.time)
        self.cluster.channel = self.cluster.forwarding_channel = InProcessChannel(state)
        self.cluster.broker_epoch = epoch
        self.rm.replication = self.cluster
        self.rm.startup()
        self.acls: list[list[dict[str, str]]] = []
        self.cluster.acl_listener = self.acls.append

    def view(self) -> dict[str, Any]:
        """Everything the broker serves from its metadata."""
        topics = self.cache.all_topics()
        return {
            "topics": topics,
            "partitions": {(t.name, p): self.cache.partition_registration(t.name, p)
                           for t in topics for p in range(t.num_partitions)},
            "brokers": self.cache.live_brokers(),
            "hosted": {tp: (part.leader, part.leader_epoch, list(part.isr), part.is_leader)
                       for tp, part in self.cluster.partitions.items()},
            "logs": sorted((lg.topic, lg.partition) for lg in self.rm.log_manager.all_logs()),
            "log_configs": {(lg.topic, lg.partition): (lg.config.retention_ms, lg.config.cleanup_policies)
                            for lg in self.rm.log_manager.all_logs()},
            "acls": self.acls[-1] if self.acls else [],
        }


def test_a_broker_applying_deltas_ends_as_one_applying_the_whole_image(tmp_path: Path) -> None:
    rnd = random.Random(7)
    state, time, epochs = _state()
    by_deltas = _Broker(tmp_path / "deltas", state, epochs[0])
    by_deltas.cluster.apply_metadata(state.changes_since(-1))
    for n in range(60):
        _random_change(state, time, epochs, rnd, n)
        if rnd.random() < 0.5:
            changes = state.changes_since(by_deltas.cluster.image_version)
            assert "deltas" in changes
            assert by_deltas.cluster.apply_metadata(changes)
    # a partition moves off this broker (a completed reassignment): its log goes
    for b in range(3):
        epochs[b] = state.register_broker(b, "127.0.0.1", 9000 + b)
    state.create_topic("moved", -1, -1, {}, assignment=[[0, 1]])
    assert by_deltas.cluster.apply_metadata(state.changes_since(by_deltas.cluster.image_version))
    assert by_deltas.rm.log_manager.get_log("moved", 0) is not None
    state.alter_partition_reassignments([("moved", 0, [1, 2])])
    reg = state.topics["moved"].partitions[0]
    state.alter_partition(reg.leader, epochs[reg.leader], "moved", 0, reg.leader_epoch, reg.partition_epoch,
                          [0, 1, 2])
    assert state.topics["moved"].partitions[0].replicas == [1, 2]
    assert by_deltas.cluster.apply_metadata(state.changes_since(by_deltas.cluster.image_version))
    assert by_deltas.rm.log_manager.get_log("moved", 0) is None
    by_image = _Broker(tmp_path / "image", state, epochs[0])
    by_image.cluster.apply_image(state.image())
    try:
        assert by_deltas.cluster.image_version == by_image.cluster.image_version == state.version
        assert by_deltas.cluster.metadata.to_image() == state.image()
        assert by_deltas.view() == by_image.view()
        assert by_deltas.view()["hosted"]  # the comparison covers partitions this broker hosts
    finally:
        by_deltas.rm.shutdown()
        by_image.rm.shutdown()


def test_a_restarted_broker_drops_the_topics_its_registry_kept_that_the_image_no_longer_has(tmp_path: Path) -> None:
    state, _, epochs = _state()
    state.create_topics([TopicSpec("kept", 1, 3, {}), TopicSpec("deleted-while-down", 2, 3, {})])
    broker = _Broker(tmp_path / "b0", state, epochs[0])
    broker.cluster.apply_metadata(state.changes_since(-1))
    assert broker.rm.log_manager.get_log("deleted-while-down", 1) is not None
    broker.rm.shutdown()
    state.delete_topic("deleted-while-down")
    restarted = _Broker(tmp_path / "b0", state, epochs[0])  # its registry still names the deleted topic
    try:
        assert restarted.cache.get_topic("deleted-while-down") is not None
        restarted.cluster.apply_metadata(state.changes_since(restarted.cluster.image_version))
        assert [t.name for t in restarted.cache.all_topics()] == ["kept"]
        assert restarted.view()["logs"] == [("kept", 0)]
    finally:
        restarted.rm.shutdown()


def test_a_heartbeat_that_waited_behind_a_long_change_counts_from_its_arrival() -> None:
    state, time, epochs = _state()
    time.sleep(SESSION_MS - 100)
    state.heartbeat_arrived(1, epochs[1])  # broker 1's heartbeat arrives; the lock is busy with a change
    state.heartbeat_arrived(2, epochs[2] - 1)  # one of an older incarnation of broker 2 does not count
    time.sleep(500)  # ...that takes longer than what was left of broker 1's session
    assert state.check_sessions() == [0, 2]
    assert state.alive() == {1}


def test_topic_names_colliding_on_dot_and_underscore_are_refused_within_a_batch_and_after_a_delete() -> None:
    state, _, _ = _state()
    state.create_topic("a.b", 1, 1, {})
    out = state.create_topics([TopicSpec("a_b", 1, 1, {}), TopicSpec("c.d", 1, 1, {}), TopicSpec("c_d", 1, 1, {})])
    assert isinstance(out["a_b"], InvalidTopicError) and isinstance(out["c_d"], InvalidTopicError)
    assert "collides with existing topic: c.d" in str(out["c_d"])
    state.delete_topic("a.b")
    assert state.create_topic("a_b", 1, 1, {}).name == "a_b"
