"""KafkaConsumer group mode (subscribe, rebalances, commits) against both brokers with a group
coordinator: Tansu and MiniBroker. Short rebalance timeouts keep joins fast: Tansu waits up to the
rebalance timeout for members before completing a join; MiniBroker runs with no initial rebalance delay."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Collection, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import AdminClient, ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin.types import NewTopic

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(180)]


class _Mini:
    def __init__(self, broker: MiniBroker) -> None:
        self.broker = broker
        self.bootstrap = broker.bootstrap_servers


@pytest.fixture(scope="module")
def mini_group_broker() -> Iterator[_Mini]:
    with MiniBroker({"num.partitions": 1, "group.initial.rebalance.delay.ms": 0}) as b:
        yield _Mini(b)


class _Cluster:
    def __init__(self, cluster: MiniCluster) -> None:
        self.cluster = cluster
        self.bootstrap = cluster.bootstrap_servers


@pytest.fixture(scope="module")
def mini_group_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Cluster]:
    with MiniCluster(3, data_dir=str(tmp_path_factory.mktemp("group-cluster")),
                     overrides={"num.partitions": 1, "group.initial.rebalance.delay.ms": 0}) as c:
        yield _Cluster(c)


@pytest.fixture(params=["tansu", "mini_broker", "mini_cluster"])
def group_broker(request: pytest.FixtureRequest) -> Any:
    """A broker with a group coordinator (``.bootstrap``): all three, for the core flows (on the 3-broker
    MiniCluster the partitions' leaders are spread over brokers other than the coordinator's)."""
    if request.param == "tansu":
        return request.getfixturevalue("tansu_broker_module")
    if request.param == "mini_cluster":
        return request.getfixturevalue("mini_group_cluster")
    return request.getfixturevalue("mini_group_broker")


@pytest.fixture
def mini_only(mini_group_broker: _Mini) -> Any:
    """MiniBroker only (joins are fast there; Tansu waits the rebalance timeout on every join)."""
    return mini_group_broker


FAST_GROUP = {
    "max.poll.interval.ms": 3000,
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 500,
    "auto.offset.reset": "earliest",
}


def make_topic(broker: Any, partitions: int = 4, records: int = 40) -> str:
    topic = f"g-{uuid.uuid4().hex[:10]}"
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, partitions, 1)], timeout=10)
    p = KafkaProducer({"bootstrap.servers": broker.bootstrap})
    try:
        for i in range(records):
            p.send(topic, key=b"%d" % i, value=b"v%d" % i, partition=i % partitions)
        p.flush(20)
    finally:
        p.close(10)
    return topic


def group_consumer(broker: Any, group: str, **overrides: Any) -> KafkaConsumer[Any, Any]:
    cfg: dict[str, Any] = {"bootstrap.servers": broker.bootstrap, "group.id": group, **FAST_GROUP}
    cfg.update(overrides)
    return KafkaConsumer(cfg)


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, list[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        self.events.append(("revoked", sorted(revoked)))

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        self.events.append(("assigned", sorted(assigned)))


def poll_until(c: KafkaConsumer[Any, Any], n: int, deadline_s: float = 30) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + deadline_s
    while len(out) < n and time.monotonic() < deadline:
        out.extend(c.poll(0.5))
    return out


def test_subscribe_consume_commit_and_resume(group_broker: Any) -> None:
    broker = group_broker
    topic = make_topic(broker)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    rec = Recorder()
    c = group_consumer(broker, group, **{"enable.auto.commit": False})
    c.subscribe([topic], rec)
    got = poll_until(c, 40)
    assert len(got) == 40
    assert c.assignment() == {TopicPartition(topic, p) for p in range(4)}
    assert rec.events[0] == ("assigned", [TopicPartition(topic, p) for p in range(4)])
    # commit only up to offset 5 of each partition, then a new member resumes there
    c.commit_sync({TopicPartition(topic, p): 5 for p in range(4)})
    committed = c.committed({TopicPartition(topic, p) for p in range(4)}, 10)
    assert {tp: om.offset if om else None for tp, om in committed.items()} == {
        TopicPartition(topic, p): 5 for p in range(4)
    }
    meta = c.group_metadata()
    assert meta.group_id == group and meta.generation_id >= 0 and meta.member_id
    c.close()
    assert rec.events[-1][0] == "revoked"

    c2 = group_consumer(broker, group)
    c2.subscribe([topic])
    again = poll_until(c2, 20)
    assert sorted((r.partition, r.offset) for r in again) == [(p, o) for p in range(4) for o in range(5, 10)]
    c2.close()


def test_auto_commit_on_close(mini_only: Any) -> None:
    broker = mini_only
    topic = make_topic(broker, partitions=2, records=10)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    with group_consumer(broker, group) as c:
        c.subscribe([topic])
        assert len(poll_until(c, 10)) == 10
    with group_consumer(broker, group) as c:
        c.subscribe([topic])
        assert c.poll(3.0).count() == 0
        committed = c.committed({TopicPartition(topic, 0), TopicPartition(topic, 1)}, 10)
        assert {tp.partition: om.offset if om else None for tp, om in committed.items()} == {0: 5, 1: 5}


def test_pattern_subscription(mini_only: Any) -> None:
    broker = mini_only
    topic = make_topic(broker, partitions=1, records=3)
    with group_consumer(broker, f"grp-{uuid.uuid4().hex[:6]}") as c:
        c.subscribe(pattern=re.escape(topic[:8]) + ".*")
        got = poll_until(c, 3)
        assert {r.topic for r in got} >= {topic}


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_two_members_share_partitions(group_broker: Any, strategy: str) -> None:
    broker = group_broker
    topic = make_topic(broker, partitions=4, records=0)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    recorders = [Recorder(), Recorder()]
    consumers = [group_consumer(broker, group, **{"partition.assignment.strategy": strategy}) for _ in range(2)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def run(i: int) -> None:
        c = consumers[i]
        try:
            if i == 1:  # join after the first member owns everything
                limit = time.monotonic() + 30
                while not recorders[0].events and time.monotonic() < limit:
                    time.sleep(0.1)
            c.subscribe([topic], recorders[i])
            while not stop.is_set():
                c.poll(0.2)
        except BaseException as e:
            errors.append(e)
        finally:
            c.close(10)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    owned: list[set[TopicPartition]] = []
    events: list[tuple[str, list[TopicPartition]]] = []
    try:
        while time.monotonic() < deadline:
            events = list(recorders[0].events)
            owned = [_owned(r) for r in recorders]
            if all(len(o) == 2 for o in owned) and owned[0].isdisjoint(owned[1]):
                break
            time.sleep(0.2)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not errors, errors
    assert len(owned[0]) == 2 and len(owned[1]) == 2 and owned[0].isdisjoint(owned[1]), events
    revoked = [tp for kind, tps in events if kind == "revoked" for tp in tps]
    if strategy == "cooperative-sticky":
        # only the two partitions that moved were revoked from the first member
        assert len(revoked) == 2, events
    else:
        # eager: everything was revoked before the rejoin
        assert len(revoked) == 4, events


def _owned(r: Recorder) -> set[TopicPartition]:
    """Replay a listener's events into the set of partitions owned (eager or cooperative)."""
    owned: set[TopicPartition] = set()
    for kind, tps in r.events:
        if kind == "assigned":
            owned |= set(tps)
        else:
            owned -= set(tps)
    return owned


def test_max_poll_interval_exceeded_leaves_group_and_partitions_are_lost(mini_only: Any) -> None:
    """The heartbeat thread notices that poll() stopped being called, leaves the group; the next poll
    reports the partitions as lost and rejoins."""
    broker = mini_only
    topic = make_topic(broker, partitions=2, records=4)

    class LostRecorder(Recorder):
        def on_partitions_lost(self, lost: Collection[TopicPartition]) -> None:
            self.events.append(("lost", sorted(lost)))

    rec = LostRecorder()
    with group_consumer(broker, f"grp-{uuid.uuid4().hex[:6]}", **{"max.poll.interval.ms": 1500}) as c:
        c.subscribe([topic], rec)
        assert len(poll_until(c, 4)) == 4
        assert c.coordinator is not None
        member = c.coordinator.generation_snapshot().member_id
        time.sleep(3.0)  # longer than max.poll.interval.ms: the heartbeat thread leaves the group
        assert c.coordinator.generation_snapshot().member_id == ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            rec.events and rec.events[-1][0] == "assigned" and len(rec.events) >= 3
        ):
            c.poll(0.2)
        kinds = [k for k, _ in rec.events]
        assert kinds[:3] == ["assigned", "lost", "assigned"], rec.events
        assert c.coordinator.generation_snapshot().member_id not in ("", member)


def test_static_member_keeps_assignment_across_restart(mini_only: Any) -> None:
    broker = mini_only
    topic = make_topic(broker, partitions=2, records=4)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    cfg = {"group.instance.id": "instance-a", "enable.auto.commit": False}
    c = group_consumer(broker, group, **cfg)
    c.subscribe([topic])
    assert len(poll_until(c, 4)) == 4
    first = c.assignment()
    c.commit_sync()
    c.close()  # a static member does not send LeaveGroup
    c2 = group_consumer(broker, group, **cfg)
    c2.subscribe([topic])
    deadline = time.monotonic() + 30
    while not c2.assignment() and time.monotonic() < deadline:
        c2.poll(0.2)
    assert c2.assignment() == first
    c2.close()


def test_commit_sync_inside_revoke_callback_with_heartbeats_running(mini_only: Any) -> None:
    """The usual pattern (commit in on_partitions_revoked) must not deadlock with the heartbeat thread."""
    broker = mini_only
    topic = make_topic(broker, partitions=2, records=6)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    holder: dict[str, KafkaConsumer[Any, Any]] = {}
    committed_in_callback: list[int] = []

    class CommitOnRevoke(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
            if revoked:
                holder["c"].commit_sync()
                committed_in_callback.append(len(revoked))

    c = group_consumer(broker, group, **{"enable.auto.commit": False})
    holder["c"] = c
    c.subscribe([topic], CommitOnRevoke())
    assert len(poll_until(c, 6)) == 6
    c.enforce_rebalance("test")
    deadline = time.monotonic() + 30
    while not committed_in_callback and time.monotonic() < deadline:
        c.poll(0.2)
    assert committed_in_callback == [2]
    committed = c.committed({TopicPartition(topic, 0), TopicPartition(topic, 1)}, 10)
    assert {tp.partition: om.offset if om else None for tp, om in committed.items()} == {0: 3, 1: 3}
    c.close()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_members_come_and_go_without_losing_records(mini_only: Any, strategy: str) -> None:
    """Three members consume 6 partitions while members join and leave; with commits in the revoke
    callback every record is seen at least once and the final committed offsets reach the log end."""
    broker = mini_only
    n = 1200
    topic = make_topic(broker, partitions=6, records=n)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    seen: set[tuple[int, int]] = set()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def member(lifetime_s: float, start_delay_s: float) -> None:
        time.sleep(start_delay_s)
        holder: dict[str, KafkaConsumer[Any, Any]] = {}

        class CommitOnRevoke(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
                if revoked:
                    holder["c"].commit_sync()

        c = group_consumer(
            broker,
            group,
            **{"enable.auto.commit": False, "partition.assignment.strategy": strategy, "max.poll.records": 50},
        )
        holder["c"] = c
        try:
            c.subscribe([topic], CommitOnRevoke())
            end = time.monotonic() + lifetime_s
            while time.monotonic() < end:
                recs = c.poll(0.1)
                with lock:
                    seen.update((r.partition, r.offset) for r in recs)
                if recs:
                    c.commit_sync()
        except BaseException as e:
            errors.append(e)
        finally:
            c.close(10)

    threads = [
        threading.Thread(target=member, args=(5.0, 0.0)),
        threading.Thread(target=member, args=(2.0, 0.3)),  # leaves early
        threading.Thread(target=member, args=(3.5, 1.2)),  # joins late
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert seen == {(p, o) for p in range(6) for o in range(n // 6)}
    with group_consumer(broker, group) as c:
        committed = c.committed({TopicPartition(topic, p) for p in range(6)}, 10)
    assert {tp.partition: om.offset if om else None for tp, om in committed.items()} == {p: n // 6 for p in range(6)}


def test_group_member_survives_coordinator_restart(tmp_path: Any) -> None:
    """The broker (and its group coordinator) restarts on the same port: the member rediscovers the
    coordinator, keeps or regains its partitions and consumes the new records with no gap or duplicate."""
    cfg = {"num.partitions": 2, "group.initial.rebalance.delay.ms": 0}
    b = MiniBroker(cfg, data_dir=str(tmp_path)).start()
    port = b.port
    try:
        broker = _Mini(b)
        topic = make_topic(broker, partitions=2, records=10)
        c = group_consumer(broker, "grp-restart", **{"reconnect.backoff.max.ms": 200, "enable.auto.commit": False})
        c.subscribe([topic])
        got = poll_until(c, 10)
        c.commit_sync()
        b.shutdown()
        for _ in range(3):
            assert c.poll(0.3).count() == 0
        b = MiniBroker(cfg, data_dir=str(tmp_path), listeners=f"PLAINTEXT://127.0.0.1:{port}").start()
        p = KafkaProducer({"bootstrap.servers": broker.bootstrap})
        for i in range(10, 20):
            p.send(topic, key=b"%d" % i, value=b"v%d" % i, partition=i % 2)
        p.flush(20)
        p.close(10)
        got.extend(poll_until(c, 10))
        assert sorted(int(r.value[1:]) for r in got) == list(range(20))
        assert c.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        c.close(10)
    finally:
        b.shutdown()
