"""confluent-kafka (librdkafka) consumers with ``group.protocol=consumer`` (KIP-848) against mini_broker's
consumer groups: the broker assigns (uniform by default), members converge by heartbeats, a member closing
hands its partitions to the others (a SIGKILLed one once its session expires), commits carry the member epoch, a topic gaining partitions gets them
assigned, a restarted static member keeps its partitions, a regex subscription picks up a created topic, and
ListGroups shows the group type."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]

PARTITIONS = 6
HEARTBEAT_INTERVAL_MS = 300


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker(num_network_threads=2, num_io_threads=4, group_consumer_heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                    group_consumer_session_timeout_ms=10000) as b:
        yield b


def _admin(broker: MiniBroker) -> Any:
    return admin_mod.AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _topic(broker: MiniBroker, partitions: int = PARTITIONS, prefix: str = "cg") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = _admin(broker)  # kept referenced until the result is in
    admin.create_topics([admin_mod.NewTopic(name, partitions, 1)])[name].result(15)
    return name


def _produce(broker: MiniBroker, topic: str, values: list[str], partitions: int = PARTITIONS) -> None:
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), partition=i % partitions)
    assert p.flush(20) == 0


def _consumer(broker: MiniBroker, group: str, **conf: object) -> Any:
    return ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                        "group.protocol": "consumer", "auto.offset.reset": "earliest",
                        "enable.auto.commit": False, "enable.partition.eof": False, **conf})


def _poll_until(consumers: list[Any], done: Callable[[], bool], sink: dict[int, list[str]] | None = None,
                timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() >= deadline:
            return False
        for i, c in enumerate(consumers):
            m = c.poll(0.05)
            if m is not None and m.error() is None and sink is not None:
                sink.setdefault(i, []).append(m.value().decode())
    return True


def _assignments(consumers: list[Any], topic: str | None = None) -> list[set[int]]:
    return [{tp.partition for tp in c.assignment() if topic is None or tp.topic == topic} for c in consumers]


def _each_partition_once(consumers: list[Any], partitions: int = PARTITIONS, topic: str | None = None) -> bool:
    owned = _assignments(consumers, topic)
    return all(owned) and sum(len(a) for a in owned) == partitions and set().union(*owned) == set(range(partitions))


def test_one_then_three_members_split_the_partitions_and_take_over_on_close(broker: MiniBroker) -> None:
    topic = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:8]}"
    first = _consumer(broker, group)
    consumers = [first]
    try:
        first.subscribe([topic])
        assert _poll_until(consumers, lambda: _each_partition_once(consumers))
        consumers += [_consumer(broker, group) for _ in range(2)]
        for c in consumers[1:]:
            c.subscribe([topic])
        # the broker assigns uniformly: 2 partitions each, every partition owned by exactly one member
        assert _poll_until(consumers, lambda: _each_partition_once(consumers)
                           and sorted(len(a) for a in _assignments(consumers)) == [2, 2, 2])
        values = [f"v{i}" for i in range(120)]
        _produce(broker, topic, values)
        got: dict[int, list[str]] = {}
        assert _poll_until(consumers, lambda: sum(len(v) for v in got.values()) >= len(values), got)
        assert sorted(v for vs in got.values() for v in vs) == sorted(values)  # every record exactly once
        assert len(got) == 3
        for c in consumers:  # each member commits what it read, with its member epoch
            c.commit(asynchronous=False)

        consumers[2].close()  # leaves with epoch -1: the others take its partitions over
        rest = consumers[:2]
        assert _poll_until(rest, lambda: _each_partition_once(rest))
        after = [f"after{i}" for i in range(30)]
        _produce(broker, topic, after)
        got_after: dict[int, list[str]] = {}
        assert _poll_until(rest, lambda: sum(len(v) for v in got_after.values()) >= len(after), got_after)
        assert sorted(v for vs in got_after.values() for v in vs) == sorted(after)  # from the commits on: once
    finally:
        for c in consumers[:2]:
            c.close()


def test_commit_and_committed_with_the_member_epoch(broker: MiniBroker) -> None:
    topic = _topic(broker, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    values = [f"v{i}" for i in range(40)]
    _produce(broker, topic, values, 2)
    c = _consumer(broker, group)
    try:
        c.subscribe([topic])
        got: dict[int, list[str]] = {}
        assert _poll_until([c], lambda: len(got.get(0, [])) >= len(values), got)
        c.commit(asynchronous=False)  # OffsetCommit v9 with the member id and epoch
        committed = {tp.partition: tp.offset for tp in c.committed([ck.TopicPartition(topic, p) for p in (0, 1)],
                                                                    timeout=10)}
        assert committed == {0: 20, 1: 20}
    finally:
        c.close()
    # a new member of the group starts where the group committed: nothing is read again
    c = _consumer(broker, group)
    try:
        c.subscribe([topic])
        assert _poll_until([c], lambda: _each_partition_once([c], 2))
        extra: dict[int, list[str]] = {}
        _produce(broker, topic, ["x0", "x1"], 2)
        assert _poll_until([c], lambda: len(extra.get(0, [])) >= 2, extra)
        assert sorted(extra[0]) == ["x0", "x1"]
    finally:
        c.close()


def test_topic_gaining_partitions_gets_them_assigned(broker: MiniBroker) -> None:
    topic = _topic(broker, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumers = [_consumer(broker, group, **{"topic.metadata.refresh.interval.ms": 1000}) for _ in range(2)]
    try:
        for c in consumers:
            c.subscribe([topic])
        assert _poll_until(consumers, lambda: _each_partition_once(consumers, 2))
        admin = _admin(broker)
        admin.create_partitions([admin_mod.NewPartitions(topic, 6)])[topic].result(15)
        assert _poll_until(consumers, lambda: _each_partition_once(consumers, 6)
                           and sorted(len(a) for a in _assignments(consumers)) == [3, 3])
    finally:
        for c in consumers:
            c.close()


def test_static_member_restart_keeps_its_partitions(broker: MiniBroker) -> None:
    topic = _topic(broker, 4)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumers = [_consumer(broker, group, **{"group.instance.id": f"inst-{i}"}) for i in range(2)]
    try:
        for c in consumers:
            c.subscribe([topic])
        assert _poll_until(consumers, lambda: _each_partition_once(consumers, 4)
                           and sorted(len(a) for a in _assignments(consumers)) == [2, 2])
        before = _assignments(consumers)
        consumer_groups = broker.group_coordinator.consumer_groups  # type: ignore[union-attr]
        assert consumer_groups is not None
        described = consumer_groups.describe(group)
        assert described is not None
        epoch = described.group_epoch
        consumers[1].close()  # a static member leaves with epoch -2: its partitions stay its own
        consumers[1] = _consumer(broker, group, **{"group.instance.id": "inst-1"})
        consumers[1].subscribe([topic])
        assert _poll_until(consumers, lambda: len(consumers[1].assignment()) == 2)
        assert _assignments(consumers) == before
        after = consumer_groups.describe(group)
        assert after is not None and after.group_epoch == epoch  # replaced without a rebalance
    finally:
        for c in consumers:
            c.close()


def test_regex_subscription_picks_up_a_created_topic(broker: MiniBroker) -> None:
    prefix = f"rx{uuid.uuid4().hex[:6]}"
    first = _topic(broker, 2, prefix)
    group = f"g-{uuid.uuid4().hex[:8]}"
    c = _consumer(broker, group, **{"topic.metadata.refresh.interval.ms": 1000})
    try:
        c.subscribe([f"^{prefix}-.*"])
        assert _poll_until([c], lambda: {tp.topic for tp in c.assignment()} == {first})
        second = _topic(broker, 3, prefix)
        assert _poll_until([c], lambda: {(tp.topic, tp.partition) for tp in c.assignment()}
                           == {(first, 0), (first, 1), (second, 0), (second, 1), (second, 2)})
    finally:
        c.close()


def test_list_groups_shows_the_group_type(broker: MiniBroker) -> None:
    topic = _topic(broker, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    c = _consumer(broker, group)
    try:
        c.subscribe([topic])
        assert _poll_until([c], lambda: _each_partition_once([c], 2))
        admin = _admin(broker)
        listed = admin.list_consumer_groups(request_timeout=10).result()
        mine = [g for g in listed.valid if g.group_id == group]
        assert len(mine) == 1
        assert mine[0].type == ck.ConsumerGroupType.CONSUMER
        assert str(mine[0].state).endswith("STABLE")
    finally:
        c.close()


_KILLED_MEMBER = textwrap.dedent("""
    import sys
    import confluent_kafka as ck
    c = ck.Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer"})
    c.subscribe([sys.argv[3]])
    while True:
        c.poll(0.1)
        if c.assignment():
            print("assigned", flush=True)
""")


def test_a_killed_member_loses_its_partitions_when_its_session_expires(broker: MiniBroker) -> None:
    """A member that never leaves (SIGKILL) keeps its partitions until ``group.consumer.session.timeout.ms``
    ends; then the group epoch moves and the others take them over."""
    topic = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:8]}"
    survivors = [_consumer(broker, group) for _ in range(2)]
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_MEMBER, broker.bootstrap_servers, group, topic],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for c in survivors:
            c.subscribe([topic])
        stdout = proc.stdout
        assert stdout is not None
        said: list[str] = []
        threading.Thread(target=lambda: said.append(stdout.readline().strip()), daemon=True).start()
        assert _poll_until(survivors, lambda: said == ["assigned"])  # the survivors revoke what it gets
        assert _poll_until(survivors, lambda: sorted(len(a) for a in _assignments(survivors)) == [2, 2])
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert _poll_until(survivors, lambda: _each_partition_once(survivors), timeout_s=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for c in survivors:
            c.close()
