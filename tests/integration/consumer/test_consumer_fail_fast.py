"""Issue 9 item 3 for the consumer: no call waits default.api.timeout.ms on something that cannot
succeed where Java answers at once. Against a real MiniBroker, each call on a topic that does not
exist is timed. Settled against Java's KafkaConsumer:

* ``partitions_for``: empty list after one metadata round trip (Java returns an empty list);
* ``list_topics``: one round trip, the topic is simply absent;
* ``committed``: None for the partition, one OffsetFetch (no committed offset exists);
* ``subscribe`` / ``assign`` + ``poll``: poll returns no records within its own timeout, no error
  (Java keeps refreshing metadata; the topic may be created later);
* ``end_offsets`` / ``beginning_offsets`` / ``offsets_for_times`` / ``position``: Java retries a
  partition without a leader until the call's timeout and then raises TimeoutException; we keep that
  (KafkaTimeoutError naming the partition), bounded by the timeout the caller passes.

The broker here does not create topics on Metadata requests (``auto.create.topics.enable=false``);
with a broker that does, the consumer asks for creation only when ``allow.auto.create.topics`` is on
(the default, as in Java): see the last two tests.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer, TopicPartition
from pykafka_client.errors import KafkaTimeoutError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FAST_S = 5.0


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker({"auto.create.topics.enable": False, "group.initial.rebalance.delay.ms": 0}) as b:
        yield b


@pytest.fixture(scope="module")
def auto_create_broker() -> Iterator[MiniBroker]:
    with MiniBroker({"num.partitions": 2}) as b:
        yield b


def missing() -> str:
    return f"missing-{uuid.uuid4().hex[:8]}"


def consumer(broker: MiniBroker, **cfg: Any) -> KafkaConsumer[bytes | None, bytes | None]:
    return KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, **cfg})


class Clock:
    def __enter__(self) -> Clock:
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.monotonic() - self.start


def test_partitions_for_an_unknown_topic_is_empty_at_once(broker: MiniBroker) -> None:
    with consumer(broker) as c:
        c.list_topics(timeout=10)  # connect first: time only the look-up
        with Clock() as clock:
            assert c.partitions_for(missing()) == []
    assert clock.elapsed < FAST_S


def test_list_topics_does_not_wait_for_an_unknown_topic(broker: MiniBroker) -> None:
    name = missing()
    with consumer(broker) as c:
        with Clock() as clock:
            assert name not in c.list_topics()
    assert clock.elapsed < FAST_S


def test_committed_for_an_unknown_topic_is_none_at_once(broker: MiniBroker) -> None:
    tp = TopicPartition(missing(), 0)
    with consumer(broker, **{"group.id": f"g-{uuid.uuid4().hex[:6]}"}) as c:
        with Clock() as clock:
            assert c.committed([tp]) == {tp: None}
    assert clock.elapsed < FAST_S


def test_poll_after_subscribing_to_an_unknown_topic_returns_within_its_timeout(broker: MiniBroker) -> None:
    with consumer(broker, **{"group.id": f"g-{uuid.uuid4().hex[:6]}", "session.timeout.ms": 6000}) as c:
        c.subscribe([missing()])
        with Clock() as clock:
            assert c.poll(1.0).count() == 0
    assert clock.elapsed < FAST_S


def test_poll_after_assigning_an_unknown_partition_returns_within_its_timeout(broker: MiniBroker) -> None:
    with consumer(broker) as c:
        c.assign([TopicPartition(missing(), 0)])
        with Clock() as clock:
            assert c.poll(1.0).count() == 0
    assert clock.elapsed < FAST_S


@pytest.mark.parametrize("call", ["end_offsets", "beginning_offsets", "offsets_for_times", "position"])
def test_offset_look_ups_for_an_unknown_topic_wait_only_the_given_timeout(broker: MiniBroker, call: str) -> None:
    """Java waits for a leader until the timeout (the topic may be being created): so do we, but the
    wait is the caller's timeout, and the error names the partition."""
    tp = TopicPartition(missing(), 0)
    with consumer(broker) as c:
        with Clock() as clock, pytest.raises(KafkaTimeoutError, match=f"{tp.topic}-0"):
            if call == "offsets_for_times":
                c.offsets_for_times({tp: 0}, timeout=1.0)
            elif call == "position":
                c.assign([tp])
                c.position(tp, timeout=1.0)
            else:
                getattr(c, call)([tp], timeout=1.0)
    assert 0.9 <= clock.elapsed < FAST_S


def test_without_allow_auto_create_topics_partitions_for_does_not_create_the_topic(
    auto_create_broker: MiniBroker,
) -> None:
    name = missing()
    with consumer(auto_create_broker, **{"allow.auto.create.topics": False}) as c:
        with Clock() as clock:
            assert c.partitions_for(name) == []
        assert clock.elapsed < FAST_S
        assert name not in c.list_topics()


def test_with_allow_auto_create_topics_partitions_for_creates_the_topic_as_java_does(
    auto_create_broker: MiniBroker,
) -> None:
    name = missing()
    with consumer(auto_create_broker) as c:
        with Clock() as clock:
            parts = c.partitions_for(name, timeout=10)
        assert clock.elapsed < FAST_S
        assert [(p.partition, p.leader is not None) for p in parts] == [(0, True), (1, True)]
