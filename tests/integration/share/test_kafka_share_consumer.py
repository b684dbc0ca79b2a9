"""Our KafkaShareConsumer against a real MiniBroker's share groups: members on one partition share its records;
explicit RELEASE redelivers with the count raised and REJECT never; closing with unacknowledged records
releases them to another member; implicit mode accepts a poll's records at the next poll."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AcknowledgeType, KafkaShareConsumer, ShareConsumerRecord
from tests.integration.share.helpers import create_share_topic, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def broker() -> Iterator[MiniBroker]:
    b = MiniBroker(share_auto_offset_reset="earliest", group_share_record_lock_duration_ms=60_000,
                   group_share_heartbeat_interval_ms=200).start()
    yield b
    b.shutdown()


def _consumer(broker: MiniBroker, group: str, topic: str, **conf: Any) -> KafkaShareConsumer[Any, Any]:
    c: KafkaShareConsumer[Any, Any] = KafkaShareConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "value.deserializer": "str",
         "fetch.max.wait.ms": 100, **conf})
    c.subscribe([topic])
    return c


Recs = list[ShareConsumerRecord[Any, Any]]


def _accept_all(c: KafkaShareConsumer[Any, Any]) -> Callable[[Recs], None]:
    """An ``on_batch`` that acknowledges every record of a batch (ACCEPT)."""
    def accept(batch: Recs) -> None:
        for r in batch:
            c.acknowledge(r)
    return accept


def _poll_until(c: KafkaShareConsumer[Any, Any], done: Callable[[Recs], bool], timeout_s: float = 30,
                on_batch: Callable[[Recs], None] | None = None) -> Recs:
    got: Recs = []
    deadline = time.monotonic() + timeout_s
    while not done(got) and time.monotonic() < deadline:
        batch = c.poll(0.2)
        if on_batch is not None:
            on_batch(batch)
        got.extend(batch)
    return got


def test_one_share_consumer_gets_every_record_with_delivery_count_one(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    values = [f"v{i}" for i in range(20)]
    produce(broker, topic, values)
    with _consumer(broker, "sg-one", topic) as c:
        got = _poll_until(c, lambda g: len(g) >= 20)
    assert [r.value for r in got] == values
    assert {r.delivery_count for r in got} == {1}


def test_two_share_consumers_on_one_partition_get_distinct_records_and_together_all(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    values = [f"v{i}" for i in range(60)]
    produce(broker, topic, values, batch_each=True)
    with _consumer(broker, "sg-two", topic, **{"max.poll.records": 5}) as c1, \
            _consumer(broker, "sg-two", topic, **{"max.poll.records": 5}) as c2:
        got1: Recs = []
        got2: Recs = []
        deadline = time.monotonic() + 60
        while len(got1) + len(got2) < len(values) and time.monotonic() < deadline:
            got1.extend(c1.poll(0.2))
            got2.extend(c2.poll(0.2))
    offsets1, offsets2 = [r.offset for r in got1], [r.offset for r in got2]
    assert got1 and got2, "both members should have been given records"
    assert not set(offsets1) & set(offsets2)
    assert sorted(offsets1 + offsets2) == list(range(60))
    assert sorted(r.value for r in got1 + got2) == sorted(values)
    assert {r.delivery_count for r in got1 + got2} == {1}


def test_explicit_release_redelivers_with_count_two_and_reject_never(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    produce(broker, topic, ["a", "b", "c"])
    with _consumer(broker, "sg-explicit", topic, **{"share.acknowledgement.mode": "explicit"}) as c:
        first = _poll_until(c, lambda g: len(g) >= 3)
        assert [(r.value, r.delivery_count) for r in first] == [("a", 1), ("b", 1), ("c", 1)]
        c.acknowledge(first[0], AcknowledgeType.ACCEPT)
        c.acknowledge(first[1], AcknowledgeType.RELEASE)
        c.acknowledge(first[2], AcknowledgeType.REJECT)
        again = _poll_until(c, lambda g: len(g) >= 1, on_batch=_accept_all(c))
        assert [(r.value, r.offset, r.delivery_count) for r in again] == [("b", 1, 2)]
        produce(broker, topic, ["d"])  # the next record comes next: c was rejected, not made available again
        later = _poll_until(c, lambda g: len(g) >= 1, on_batch=_accept_all(c))
        assert [(r.value, r.offset, r.delivery_count) for r in later] == [("d", 3, 1)]


def test_explicit_mode_requires_acknowledging_the_previous_poll(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    produce(broker, topic, ["a"])
    with _consumer(broker, "sg-unacked", topic, **{"share.acknowledgement.mode": "explicit"}) as c:
        assert len(_poll_until(c, lambda g: len(g) >= 1)) == 1
        with pytest.raises(Exception, match="unacknowledged"):
            c.poll(0.1)


def test_closing_with_unacknowledged_records_releases_them_to_another_member(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    produce(broker, topic, [f"v{i}" for i in range(5)])
    explicit = {"share.acknowledgement.mode": "explicit"}
    c2 = _consumer(broker, "sg-close", topic, **explicit)
    try:
        with _consumer(broker, "sg-close", topic, **explicit) as c1:
            held = _poll_until(c1, lambda g: len(g) >= 5)
            assert [r.offset for r in held] == list(range(5))
            c1.acknowledge(held[0], AcknowledgeType.ACCEPT)
        # the lock lasts 60 s: the records come back because close released them
        back = _poll_until(c2, lambda g: len(g) >= 4, on_batch=_accept_all(c2))
        assert [(r.offset, r.delivery_count) for r in back] == [(o, 2) for o in range(1, 5)]
    finally:
        c2.close()


def test_implicit_mode_accepts_the_records_at_commit_and_close(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    produce(broker, topic, [f"v{i}" for i in range(5)])
    c2 = _consumer(broker, "sg-implicit", topic)
    try:
        with _consumer(broker, "sg-implicit", topic) as c1:
            got = _poll_until(c1, lambda g: len(g) >= 5)
            assert [r.offset for r in got] == list(range(5))
            assert c1.commit_sync(10) == {r.topic_partition(): None for r in got}
        produce(broker, topic, ["v5"])
        after = _poll_until(c2, lambda g: len(g) >= 1)
        assert [(r.offset, r.delivery_count) for r in after] == [(5, 1)]
    finally:
        c2.close()
