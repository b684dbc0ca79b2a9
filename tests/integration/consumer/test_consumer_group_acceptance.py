"""Issue #6 acceptance: a crashed member is expired after session.timeout.ms and its partitions are consumed
by the survivors with nothing lost or read twice; cooperative-sticky moves only the partitions that must move.

The crashed member is a subprocess consumer killed with SIGKILL (only its own PID): its heartbeat thread and
sockets die with it and no LeaveGroup is sent, so only the coordinator's session timer can remove it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Collection, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.group.group_state import GroupState
from pykafka_client import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.errors import RebalanceInProgressClientError
from tests.integration.consumer.test_consumer_group import (
    Recorder,
    _Mini,
    _owned,
    group_consumer,
    make_topic,
    mini_group_broker,  # noqa: F401  (fixture used through mini_only)
    mini_only,  # noqa: F401  (fixture)
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(45)]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SESSION_MS = 1000
HEARTBEAT_MS = 200


@pytest.fixture(scope="module")
def short_session_broker() -> Iterator[_Mini]:
    """A MiniBroker that accepts a 1 s session timeout (group.min.session.timeout.ms=1000)."""
    with MiniBroker(
        {"num.partitions": 1}, group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=SESSION_MS
    ) as b:
        yield _Mini(b)


def produce(bootstrap: str, topic: str, partitions: int, start: int, n: int) -> None:
    p = KafkaProducer({"bootstrap.servers": bootstrap})
    try:
        for i in range(start, start + n):
            p.send(topic, key=b"%d" % i, value=b"v%d" % i, partition=i % partitions)
        p.flush(20)
    finally:
        p.close(10)


def commit_unless_rebalancing(c: KafkaConsumer[Any, Any]) -> None:
    """commit_sync() after a poll. As in Java, a commit while this member is (re)joining raises
    RebalanceInProgressClientError: the next poll completes the rebalance, and the revoke callback (or the
    next commit) commits these positions before any partition can move."""
    try:
        c.commit_sync()
    except RebalanceInProgressClientError:
        pass


def crash_child_main(bootstrap: str, topic: str, group: str, target: int, strategy: str) -> None:
    """The member that crashes: joins, consumes ``target`` records, commits them, prints them as one JSON line,
    then idles (heartbeat thread alive, no poll) until the test kills it."""
    c: KafkaConsumer[Any, Any] = KafkaConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS,
            "max.poll.interval.ms": 60000,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "partition.assignment.strategy": strategy,
        }
    )
    c.subscribe([topic])
    got: list[list[int]] = []
    deadline = time.monotonic() + 30
    while len(got) < target and time.monotonic() < deadline:
        recs = c.poll(0.2)
        got.extend([r.partition, r.offset] for r in recs)
        if recs:
            c.commit_sync()
    print(json.dumps({"records": got, "assignment": sorted(tp.partition for tp in c.assignment())}), flush=True)
    time.sleep(120)  # the heartbeat thread keeps the membership alive until SIGKILL


def _spawn_crash_child(bootstrap: str, topic: str, group: str, target: int, strategy: str) -> subprocess.Popen[str]:
    code = (
        "import sys; from tests.integration.consumer.test_consumer_group_acceptance import crash_child_main; "
        "crash_child_main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, bootstrap, topic, group, str(target), strategy],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_crashed_member_is_expired_and_survivors_consume_everything(short_session_broker: _Mini, strategy: str) -> None:
    broker = short_session_broker
    partitions, per_partition = 6, 20
    topic = make_topic(broker, partitions=partitions, records=0)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    survivor_cfg = {
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 300,
        "max.poll.interval.ms": 30000,
        "enable.auto.commit": False,
        "partition.assignment.strategy": strategy,
    }
    survivors = [group_consumer(broker, group, **survivor_cfg) for _ in range(2)]
    seen: list[tuple[int, int]] = []
    child = _spawn_crash_child(broker.bootstrap, topic, group, 2 * per_partition, strategy)
    try:
        for c in survivors:
            c.subscribe([topic])

        def poll_survivors() -> None:
            for c in survivors:
                recs = c.poll(0.05)
                seen.extend((r.partition, r.offset) for r in recs)
                if recs:
                    commit_unless_rebalancing(c)

        coordinator = broker.broker.group_coordinator
        assert coordinator is not None

        def settled(members: int) -> bool:
            """The coordinator's group is Stable with ``members`` members and the survivors own their share."""
            g = coordinator.get_group(group)
            if g is None or not g.is_state(GroupState.STABLE) or g.size() != members:
                return False
            want = [2, 2] if members == 3 else [3, 3]
            return sorted(len(c.assignment()) for c in survivors) == want

        deadline = time.monotonic() + 20
        while not settled(3) and time.monotonic() < deadline:
            poll_survivors()
        assert settled(3)
        # records after the group settled: the child reads exactly its two partitions' records
        produce(broker.bootstrap, topic, partitions, 0, partitions * per_partition)
        assert child.stdout is not None
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(child.stdout.readline() if child.stdout else ""))
        reader.start()
        deadline = time.monotonic() + 20
        while reader.is_alive() and time.monotonic() < deadline:
            poll_survivors()
        reader.join(1)
        assert line and line[0], "the crash child did not report"
        report = json.loads(line[0])
        child_records = [tuple(x) for x in report["records"]]
        assert len(report["assignment"]) == 2 and len(child_records) == 2 * per_partition
        # more records on every partition (also the dying member's), then the crash
        produce(broker.bootstrap, topic, partitions, partitions * per_partition, partitions * per_partition)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        killed_at = time.monotonic()
        deadline = killed_at + 25
        while not settled(2) and time.monotonic() < deadline:
            poll_survivors()
        assert settled(2), [c.assignment() for c in survivors]
        # not removed before its session could expire (no LeaveGroup was sent)
        assert time.monotonic() - killed_at >= (SESSION_MS - HEARTBEAT_MS) / 1000 - 0.05
        owned = set().union(*(c.assignment() for c in survivors))
        assert {tp.partition for tp in owned} == set(range(partitions))
        total = 2 * partitions * per_partition
        deadline = time.monotonic() + 20
        while len(seen) + len(child_records) < total and time.monotonic() < deadline:
            poll_survivors()
        for _ in range(5):  # anything read twice would show up here
            poll_survivors()
        everything = seen + child_records
        assert len(everything) == len(set(everything)) == total, "lost or duplicated records"
        assert set(everything) == {(p, o) for p in range(partitions) for o in range(2 * per_partition)}
        committed = survivors[0].committed({TopicPartition(topic, p) for p in range(partitions)}, 10)
        assert {tp.partition: om.offset if om else None for tp, om in committed.items()} == {
            p: 2 * per_partition for p in range(partitions)
        }
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
        for c in survivors:
            c.close(10)


def test_cooperative_sticky_moves_only_what_must_move(mini_only: Any) -> None:  # noqa: F811
    broker = mini_only
    partitions = 6
    topic = make_topic(broker, partitions=partitions, records=0)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    recorders = [Recorder() for _ in range(3)]
    consumers = [
        group_consumer(
            broker, group, **{"partition.assignment.strategy": "cooperative-sticky", "enable.auto.commit": False}
        )
        for _ in range(3)
    ]
    started = [threading.Event() for _ in range(3)]
    stop = threading.Event()
    lock = threading.Lock()
    seen: list[tuple[int, int, int, float]] = []  # member, partition, offset, time received
    errors: list[BaseException] = []

    def run(i: int) -> None:
        c = consumers[i]
        outer = recorders[i]

        class CommitOnRevoke(ConsumerRebalanceListener):
            def __repr__(self) -> str:
                return repr(outer.events)

            def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
                outer.on_partitions_revoked(revoked)
                if revoked:
                    c.commit_sync()

            def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
                outer.on_partitions_assigned(assigned)

        try:
            started[i].wait(30)
            c.subscribe([topic], CommitOnRevoke())
            while not stop.is_set():
                recs = c.poll(0.1)
                now = time.monotonic()
                with lock:
                    seen.extend((i, r.partition, r.offset, now) for r in recs)
                if recs:
                    commit_unless_rebalancing(c)
        except BaseException as e:
            errors.append(e)
        finally:
            c.close(10)

    produced = [0]

    def produce_forever() -> None:
        p = KafkaProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        try:
            while not stop.is_set():
                i = produced[0]
                p.send(topic, value=b"v%d" % i, partition=i % partitions).result(10)
                produced[0] = i + 1
                time.sleep(0.005)
        except BaseException as e:
            errors.append(e)
        finally:
            p.close(10)

    def wait_for(cond: Any, timeout_s: float = 20) -> bool:
        deadline = time.monotonic() + timeout_s
        while not cond() and not errors and time.monotonic() < deadline:
            time.sleep(0.05)
        return bool(cond())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    producer = threading.Thread(target=produce_forever)
    for t in threads:
        t.start()
    producer.start()
    try:
        started[0].set()
        assert wait_for(lambda: len(_owned(recorders[0])) == 6), (recorders[0].events, errors)
        started[1].set()
        assert wait_for(lambda: [len(_owned(r)) for r in recorders[:2]] == [3, 3]), (errors, recorders[:2])
        before = [_owned(r) for r in recorders[:2]]
        marks = [len(r.events) for r in recorders[:2]]
        join_at = time.monotonic()
        started[2].set()
        assert wait_for(lambda: sorted(len(_owned(r)) for r in recorders) == [2, 2, 2]), [r.events for r in recorders]
        after = [_owned(r) for r in recorders]
        events = [list(r.events) for r in recorders]  # before close() revokes everything
        # records flow on every member after the join
        assert wait_for(lambda: all(any(m == i and t > join_at for m, _, _, t in list(seen)) for i in range(3)))
    finally:
        stop.set()
        producer.join(15)
        for t in threads:
            t.join(20)
    assert not errors, errors
    assert set().union(*after) == {TopicPartition(topic, p) for p in range(partitions)}
    for i in range(2):
        assert after[i] <= before[i], (before[i], after[i])
        moved = before[i] - after[i]
        assert moved and moved <= after[2]
        revoked = [tps for kind, tps in events[i][marks[i] :] if kind == "revoked"]
        assert revoked and all(0 < len(tps) < len(before[i]) for tps in revoked), events[i]
        assert {tp for tps in revoked for tp in tps} == moved
        assigned_after = {tp for kind, tps in events[i][marks[i] :] if kind == "assigned" for tp in tps}
        assert not assigned_after, events[i]  # nothing new for the first two members
    # every record produced was consumed exactly once across the three members (commits in the revoke callback)
    consumed = [(p, o) for _, p, o, _ in seen]
    assert len(consumed) == len(set(consumed))
    # the consumers were stopped before the producer's last records may have been fetched: check a prefix
    per_partition: dict[int, set[int]] = {}
    for p, o in consumed:
        per_partition.setdefault(p, set()).add(o)
    for p, offsets in per_partition.items():
        assert offsets == set(range(max(offsets) + 1)), f"gap on partition {p}"
    # close() ran the revoke callback with the consumer still usable: its commit_sync stored the positions
    with group_consumer(broker, group) as c:
        committed = c.committed({TopicPartition(topic, p) for p in range(partitions)}, 10)
    assert {tp.partition: om.offset if om else None for tp, om in committed.items()} == {
        p: max(offsets) + 1 for p, offsets in per_partition.items()
    }


def test_commit_in_revoke_callback_during_close(mini_only: Any) -> None:  # noqa: F811
    """close() revokes the partitions while the consumer is still open (Java sets the closed flag after
    closing), so the usual commit_sync() in on_partitions_revoked stores the positions."""
    broker = mini_only
    topic = make_topic(broker, partitions=2, records=6)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    holder: dict[str, KafkaConsumer[Any, Any]] = {}
    outcomes: list[str] = []

    class CommitOnRevoke(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
            try:
                holder["c"].commit_sync()
                outcomes.append("committed")
            except Exception as e:
                outcomes.append(repr(e))

    c = group_consumer(broker, group, **{"enable.auto.commit": False})
    holder["c"] = c
    c.subscribe([topic], CommitOnRevoke())
    got: list[Any] = []
    deadline = time.monotonic() + 20
    while len(got) < 6 and time.monotonic() < deadline:
        got.extend(c.poll(0.2))
    assert len(got) == 6
    c.close(10)
    assert outcomes == ["committed"]
    with group_consumer(broker, group) as probe:
        committed = probe.committed({TopicPartition(topic, 0), TopicPartition(topic, 1)}, 10)
    assert {tp.partition: om.offset if om else None for tp, om in committed.items()} == {0: 3, 1: 3}
