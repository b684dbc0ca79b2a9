"""confluent-kafka (librdkafka) group consumers against mini_broker's group coordinator: subscribe with the
range and cooperative-sticky assignors, rebalance when a member leaves, committed offsets across a restart."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]

PARTITIONS = 6


def _broker(data_dir: str | None = None) -> MiniBroker:
    return MiniBroker(data_dir=data_dir, num_network_threads=2, num_io_threads=4,
                      group_initial_rebalance_delay_ms=0)


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with _broker() as b:
        yield b


def _topic(broker: MiniBroker, partitions: int = PARTITIONS) -> str:
    name = f"grp-{uuid.uuid4().hex[:8]}"
    admin = admin_mod.AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([admin_mod.NewTopic(name, partitions, 1)])[name].result(15)
    return name


def _produce(broker: MiniBroker, topic: str, values: list[str], partitions: int = PARTITIONS) -> None:
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), partition=i % partitions)
    assert p.flush(20) == 0


def _consumer(broker: MiniBroker, group: str, strategy: str = "range", **conf: object) -> Any:
    return ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                        "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
                        "partition.assignment.strategy": strategy, "auto.offset.reset": "earliest",
                        "enable.auto.commit": False, "enable.partition.eof": False, **conf})


def _poll_until(consumers: list[Any], done: Callable[[], bool], sink: dict[int, list[str]],
                timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                sink.setdefault(i, []).append(m.value().decode())


def _assignments(consumers: list[Any]) -> list[set[int]]:
    return [{tp.partition for tp in c.assignment()} for c in consumers]


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_three_consumers_split_six_partitions(broker: MiniBroker, strategy: str) -> None:
    topic = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumers = [_consumer(broker, group, strategy) for _ in range(3)]
    try:
        for c in consumers:
            c.subscribe([topic])
        got: dict[int, list[str]] = {}
        # Records are produced once the group is settled: without commits, partitions that move during
        # the first rebalances would be read again by their next owner (at-least-once, as with Kafka).
        _poll_until(consumers, lambda: sorted(len(a) for a in _assignments(consumers)) == [2, 2, 2], got)
        values = [f"v{i}" for i in range(120)]
        _produce(broker, topic, values)
        _poll_until(consumers, lambda: sum(len(v) for v in got.values()) >= len(values), got)
        assignments = _assignments(consumers)
        assert sorted(len(a) for a in assignments) == [2, 2, 2]
        assert set().union(*assignments) == set(range(PARTITIONS))
        consumed = [v for vs in got.values() for v in vs]
        assert sorted(consumed) == sorted(values)  # every record exactly once
        assert len(got) == 3  # by all three members
    finally:
        for c in consumers:
            c.close()


def test_member_leaving_triggers_rebalance(broker: MiniBroker) -> None:
    topic = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumers = [_consumer(broker, group) for _ in range(3)]
    try:
        for c in consumers:
            c.subscribe([topic])
        _poll_until(consumers, lambda: sorted(len(a) for a in _assignments(consumers)) == [2, 2, 2], {})
        assert sorted(len(a) for a in _assignments(consumers)) == [2, 2, 2]
        consumers[2].close()  # LeaveGroup
        rest = consumers[:2]
        _poll_until(rest, lambda: sorted(len(a) for a in _assignments(rest)) == [3, 3], {})
        assert set().union(*_assignments(rest)) == set(range(PARTITIONS))
        values = [f"after{i}" for i in range(30)]
        _produce(broker, topic, values)
        got: dict[int, list[str]] = {}
        _poll_until(rest, lambda: sum(len(v) for v in got.values()) >= len(values), got)
        assert sorted(v for vs in got.values() for v in vs) == sorted(values)
    finally:
        for c in consumers[:2]:
            c.close()


def test_committed_offsets_survive_restart(tmp_path: Path) -> None:
    group = "g-restart"
    values = [f"v{i}" for i in range(40)]
    with _broker(str(tmp_path)) as b:
        topic = _topic(b, 2)
        _produce(b, topic, values, 2)
        c = _consumer(b, group)
        try:
            c.subscribe([topic])
            got: dict[int, list[str]] = {}
            _poll_until([c], lambda: len(got.get(0, [])) >= 20, got)
            c.commit(asynchronous=False)
            committed = {tp.partition: tp.offset for tp in c.committed([ck.TopicPartition(topic, p) for p in (0, 1)])}
            done = sum(max(o, 0) for o in committed.values())
            assert done == len(got[0]) >= 20
        finally:
            c.close()
    with _broker(str(tmp_path)) as b:
        c = _consumer(b, group)
        try:
            after = {tp.partition: tp.offset
                     for tp in c.committed([ck.TopicPartition(topic, p) for p in (0, 1)], timeout=15)}
            assert after == committed
            c.subscribe([topic])
            rest: dict[int, list[str]] = {}
            expected = len(values) - done
            _poll_until([c], lambda: len(rest.get(0, [])) >= expected, rest)
            assert sorted(got[0] + rest[0]) == sorted(values)  # resumed where it committed: nothing twice
        finally:
            c.close()


def test_static_member_restart_keeps_its_partitions(broker: MiniBroker) -> None:
    topic = _topic(broker, 4)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumers = [_consumer(broker, group, **{"group.instance.id": f"inst-{i}"}) for i in range(2)]
    try:
        for c in consumers:
            c.subscribe([topic])
        _poll_until(consumers, lambda: sorted(len(a) for a in _assignments(consumers)) == [2, 2], {})
        before = _assignments(consumers)
        assert sorted(len(a) for a in before) == [2, 2]
        coordinator = broker.group_coordinator
        assert coordinator is not None
        g = coordinator.get_group(group)
        assert g is not None
        generation = g.generation_id
        consumers[1].close()  # a static member does not leave the group on close
        consumers[1] = _consumer(broker, group, **{"group.instance.id": "inst-1"})
        consumers[1].subscribe([topic])
        _poll_until(consumers, lambda: len(consumers[1].assignment()) == 2, {})
        assert _assignments(consumers) == before
        assert g.generation_id == generation  # replaced without a rebalance
    finally:
        for c in consumers:
            c.close()
