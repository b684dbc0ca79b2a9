"""One consumer group, two client implementations: our KafkaConsumer and confluent-kafka (librdkafka) members
share a topic's partitions through mini_broker's coordinator, with the same assignor on both sides. All members
are polled round-robin from the test thread (each client is single-threaded)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer
from pykafka_client.errors import RebalanceInProgressClientError
from tests.interop.test_groups_confluent_kafka import PARTITIONS, _consumer, _produce, _topic, broker  # noqa: F401

ck = pytest.importorskip("confluent_kafka")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(45)]


def _ours(b: MiniBroker, group: str, strategy: str) -> KafkaConsumer[Any, Any]:
    return KafkaConsumer(
        {
            "bootstrap.servers": b.bootstrap_servers,
            "group.id": group,
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
            "max.poll.interval.ms": 20000,
            "partition.assignment.strategy": strategy,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )


class Mixed:
    """Our members and librdkafka members, polled in turn; records land in one list per member."""

    def __init__(self, ours: list[KafkaConsumer[Any, Any]], theirs: list[Any]) -> None:
        self.ours = ours
        self.theirs = theirs
        self.got: dict[str, list[tuple[int, int]]] = {}

    def poll_once(self) -> None:
        for i, c in enumerate(self.ours):
            recs = c.poll(0.05)
            self.got.setdefault(f"ours{i}", []).extend((r.partition, r.offset) for r in recs)
            if recs:
                try:
                    c.commit_sync()
                except RebalanceInProgressClientError:
                    pass  # committed by the next commit (no partition moves with eager range before a rejoin)
        for i, c in enumerate(self.theirs):
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                self.got.setdefault(f"theirs{i}", []).append((m.partition(), m.offset()))
                c.commit(message=m, asynchronous=False)

    def poll_until(self, done: Callable[[], bool], timeout_s: float = 25) -> bool:
        deadline = time.monotonic() + timeout_s
        while not done() and time.monotonic() < deadline:
            self.poll_once()
        return done()

    def assignments(self) -> list[set[int]]:
        return [{tp.partition for tp in c.assignment()} for c in self.ours] + [
            {tp.partition for tp in c.assignment()} for c in self.theirs
        ]

    def partitioned(self, sizes: list[int]) -> bool:
        a = self.assignments()
        return sorted(len(x) for x in a) == sorted(sizes) and set().union(*a) == set(range(PARTITIONS))

    def consumed(self) -> list[tuple[int, int]]:
        return [x for xs in self.got.values() for x in xs]


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_mixed_group_shares_partitions_and_takes_over(broker: MiniBroker, strategy: str) -> None:  # noqa: F811
    topic = _topic(broker)
    group = f"mixed-{uuid.uuid4().hex[:8]}"
    ours = [_ours(broker, group, strategy) for _ in range(2)]
    theirs = [_consumer(broker, group, strategy)]
    mixed = Mixed(ours, theirs)
    try:
        for c in ours:
            c.subscribe([topic])
        theirs[0].subscribe([topic])
        assert mixed.poll_until(lambda: mixed.partitioned([2, 2, 2])), mixed.assignments()
        # every partition owned by exactly one member
        a = mixed.assignments()
        assert sum(len(x) for x in a) == PARTITIONS
        _produce(broker, topic, [f"a{i}" for i in range(60)])
        assert mixed.poll_until(lambda: len(mixed.consumed()) >= 60), mixed.got
        for _ in range(10):
            mixed.poll_once()  # a duplicate would show up here
        consumed = mixed.consumed()
        assert len(consumed) == len(set(consumed)) == 60
        assert set(consumed) == {(p, o) for p in range(PARTITIONS) for o in range(10)}
        assert len(mixed.got.get("theirs0", [])) == 20 and all(len(mixed.got[f"ours{i}"]) == 20 for i in range(2))
        theirs_before = a[2]

        # the librdkafka member leaves (LeaveGroup on close): ours take over its partitions
        theirs[0].close()
        mixed.theirs = []
        assert mixed.poll_until(lambda: mixed.partitioned([3, 3])), mixed.assignments()
        after = mixed.assignments()
        assert theirs_before <= after[0] | after[1]
        if strategy == "cooperative-sticky":  # sticky: ours kept what they had
            assert a[0] <= after[0] and a[1] <= after[1]
        _produce(broker, topic, [f"b{i}" for i in range(60)])
        assert mixed.poll_until(lambda: len(mixed.consumed()) >= 120), mixed.got
        for _ in range(10):
            mixed.poll_once()
        consumed = mixed.consumed()
        assert len(consumed) == len(set(consumed)) == 120
        assert set(consumed) == {(p, o) for p in range(PARTITIONS) for o in range(20)}
    finally:
        for c in ours:
            c.close(10)
        for c in mixed.theirs:
            c.close()
