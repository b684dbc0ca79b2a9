"""confluent-kafka (librdkafka) consumers move a running group between the protocols one member at a time
(KIP-848's online migration on mini_broker, ``group.consumer.migration.policy=bidirectional``, Kafka's default):
classic members are replaced by ``group.protocol=consumer`` members (the first one upgrades the group; the classic
member left is served as a classic member of the consumer group), then back (the last consumer member leaving
downgrades the group). Records are produced throughout; every one is consumed (at least once: auto-commit).

Kafka's documented rules: docs "Consumer Rebalance Protocol" > "Upgrade & Downgrade"
(https://kafka.apache.org/40/operations/consumer-rebalance-protocol): "online migration" of a non-empty group
when the first consumer-protocol member joins it (upgrade) and when the last one leaves it (downgrade)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

PARTITIONS = 4
BATCH = 50


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker(num_network_threads=2, num_io_threads=4, group_initial_rebalance_delay_ms=0,
                    group_consumer_heartbeat_interval_ms=300, group_consumer_session_timeout_ms=10000) as b:
        yield b


class Run:
    def __init__(self, broker: MiniBroker, strategy: str) -> None:
        self.broker = broker
        self.strategy = strategy
        self.topic = f"mig-{uuid.uuid4().hex[:8]}"
        self.group = f"mig-g-{uuid.uuid4().hex[:8]}"
        admin = admin_mod.AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([admin_mod.NewTopic(self.topic, PARTITIONS, 1)])[self.topic].result(15)
        self.producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
        self.produced: set[str] = set()
        self.consumed: set[str] = set()
        self.members: list[Any] = []

    def produce(self) -> None:
        start = len(self.produced)
        for i in range(start, start + BATCH):
            self.producer.produce(self.topic, value=str(i).encode(), partition=i % PARTITIONS)
            self.produced.add(str(i))
        assert self.producer.flush(20) == 0

    def start(self, protocol: str) -> Any:
        conf = {"bootstrap.servers": self.broker.bootstrap_servers, "group.id": self.group,
                "group.protocol": protocol, "auto.offset.reset": "earliest", "enable.auto.commit": True,
                "auto.commit.interval.ms": 200, "enable.partition.eof": False}
        if protocol == "classic":
            conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                         "partition.assignment.strategy": self.strategy})
        c = ck.Consumer(conf)
        c.subscribe([self.topic])
        self.members.append(c)
        return c

    def stop(self, c: Any) -> None:
        self.members.remove(c)
        c.close()

    def consume_until(self, done: Any, timeout_s: float = 40) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, (
                f"missing {len(self.produced - self.consumed)} records; assignments "
                f"{[sorted(tp.partition for tp in c.assignment()) for c in self.members]}")
            for c in self.members:
                m = c.poll(0.05)
                if m is not None and m.error() is None:
                    self.consumed.add(m.value().decode())

    def all_consumed_and_assigned(self) -> bool:
        owned = [tp.partition for c in self.members for tp in c.assignment()]
        return self.produced <= self.consumed and sorted(owned) == list(range(PARTITIONS))


def _group_type(broker: MiniBroker, group: str) -> str:
    consumer_groups = broker.group_coordinator.consumer_groups  # type: ignore[union-attr]
    assert consumer_groups is not None
    return "consumer" if consumer_groups.is_consumer_group(group) else "classic"


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_a_running_group_moves_to_the_consumer_protocol_and_back_one_member_at_a_time(broker: MiniBroker,
                                                                                      strategy: str) -> None:
    """Classic members with an eager (range) or a cooperative (cooperative-sticky) assignor: as classic members
    of the consumer group, the first revoke everything when told to rejoin, the second only what they lose."""
    run = Run(broker, strategy)
    try:
        old = [run.start("classic"), run.start("classic")]
        run.produce()
        run.consume_until(run.all_consumed_and_assigned)
        assert _group_type(broker, run.group) == "classic"

        new = []
        for c in old:  # upgrade: each classic member is replaced by a consumer-protocol one
            run.stop(c)
            new.append(run.start("consumer"))
            run.produce()
            run.consume_until(run.all_consumed_and_assigned)
            assert _group_type(broker, run.group) == "consumer"
        described = broker.group_coordinator.consumer_groups.describe(run.group)  # type: ignore[union-attr]
        assert described is not None and not any(m.uses_classic_protocol for m in described.members.values())

        back = []
        for c in new:  # downgrade: each consumer-protocol member is replaced by a classic one
            run.stop(c)
            back.append(run.start("classic"))
            run.produce()
            run.consume_until(run.all_consumed_and_assigned)
        assert _group_type(broker, run.group) == "classic"
        run.produce()
        run.consume_until(run.all_consumed_and_assigned)
        assert run.produced <= run.consumed
    finally:
        for c in list(run.members):
            run.stop(c)
