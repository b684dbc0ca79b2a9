"""Two of our KafkaConsumers in one group on a real MiniBroker: a dynamic member that closes or
unsubscribes sends LeaveGroup (built for the negotiated version), so the other member owns every
partition within 2 s; a static member (``group.instance.id``) that closes does not leave and keeps its
partitions until its ``session.timeout.ms`` expires, as in Kafka."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaConsumer, TopicPartition
from pykafka_client.admin.types import NewTopic

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(120)]

PARTITIONS = 4
SESSION_TIMEOUT_MS = 6000
#: What the survivor may take to own everything after a LeaveGroup: one heartbeat interval to see the
#: rebalance, then a JoinGroup/SyncGroup round. Far below the session timeout.
LEAVE_DEADLINE_S = 2.0

GROUP_CONFIG = {
    "session.timeout.ms": SESSION_TIMEOUT_MS,
    "heartbeat.interval.ms": 300,
    "max.poll.interval.ms": 30000,
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
}


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker({"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def _topic(broker: MiniBroker) -> str:
    topic = f"leave-{uuid.uuid4().hex[:10]}"
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)], timeout=10)
    return topic


def _consumer(broker: MiniBroker, group: str, **overrides: Any) -> KafkaConsumer[Any, Any]:
    return KafkaConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, **GROUP_CONFIG, **overrides}
    )


def _all(topic: str) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(PARTITIONS)}


def _join_both(a: KafkaConsumer[Any, Any], b: KafkaConsumer[Any, Any], topic: str) -> None:
    """Poll both members (one thread, alternating) until they share the partitions, both non-empty."""
    a.subscribe([topic])
    b.subscribe([topic])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        a.poll(0.05)
        b.poll(0.05)
        if a.assignment() and b.assignment() and a.assignment() | b.assignment() == _all(topic):
            if not a.assignment() & b.assignment():
                return
    pytest.fail(f"the two members did not share the partitions: {a.assignment()} / {b.assignment()}")


def _seconds_until_owns_all(c: KafkaConsumer[Any, Any], topic: str, limit_s: float) -> float | None:
    """Poll ``c`` until it owns every partition; the seconds that took, or None after ``limit_s``."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        c.poll(0.05)
        if c.assignment() == _all(topic):
            return time.monotonic() - start
    return None


@pytest.mark.parametrize("leave", ["close", "unsubscribe"])
def test_dynamic_member_leaves_and_the_other_takes_every_partition(broker: MiniBroker, leave: str) -> None:
    topic = _topic(broker)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    leaving, staying = _consumer(broker, group), _consumer(broker, group)
    try:
        _join_both(leaving, staying, topic)
        if leave == "close":
            leaving.close()
        else:
            leaving.unsubscribe()
            assert leaving.assignment() == set()
        took = _seconds_until_owns_all(staying, topic, LEAVE_DEADLINE_S)
        assert took is not None, f"survivor owns {staying.assignment()} {LEAVE_DEADLINE_S} s after {leave}()"
    finally:
        leaving.close()
        staying.close()


def test_static_member_that_closes_keeps_its_partitions_until_the_session_expires(broker: MiniBroker) -> None:
    topic = _topic(broker)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    static = _consumer(broker, group, **{"group.instance.id": f"static-{uuid.uuid4().hex[:6]}"})
    staying = _consumer(broker, group)
    try:
        _join_both(static, staying, topic)
        kept = staying.assignment()
        closed_at = time.monotonic()
        static.close()  # no LeaveGroup: the coordinator keeps the static member until its session times out
        assert _seconds_until_owns_all(staying, topic, LEAVE_DEADLINE_S) is None
        assert staying.assignment() == kept
        took = _seconds_until_owns_all(staying, topic, SESSION_TIMEOUT_MS / 1000 + 10)
        assert took is not None, f"survivor owns {staying.assignment()} long after the static member's session"
        assert time.monotonic() - closed_at >= SESSION_TIMEOUT_MS / 1000 - 1.0
    finally:
        static.close()
        staying.close()
