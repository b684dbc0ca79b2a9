"""confluent-kafka's ShareConsumer (librdkafka's KIP-932 share consumer) against a real MiniBroker's share
groups: two members on one partition share its records, each record delivered once; a released record comes
back with its delivery count raised and a rejected one never does; the records a member holds and abandons
come back to another member once their acquisition lock expires."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from tests.integration.share.helpers import create_share_topic, produce

ck = pytest.importorskip("confluent_kafka")
if not hasattr(ck, "ShareConsumer"):
    if os.environ.get("CI"):  # the interop extra installs one that has it: a missing peer fails CI
        pytest.fail("this confluent-kafka has no ShareConsumer (2.15+ has it)", pytrace=False)
    pytest.skip("this confluent-kafka has no ShareConsumer (2.15+ has it)", allow_module_level=True)

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(120)]

LOCK_MS = 1000


@pytest.fixture
def make_broker() -> Iterator[Callable[[int], MiniBroker]]:
    brokers: list[MiniBroker] = []

    def make(lock_ms: int) -> MiniBroker:
        b = MiniBroker(share_auto_offset_reset="earliest", group_share_record_lock_duration_ms=lock_ms,
                       group_share_heartbeat_interval_ms=200).start()
        brokers.append(b)
        return b

    yield make
    for b in brokers:
        b.shutdown()


def _share_consumer(broker: MiniBroker, group: str, topic: str, **conf: Any) -> Any:
    c = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group, **conf})
    c.subscribe([topic])
    return c


def _poll(c: Any, timeout_s: float = 0.2) -> list[Any]:
    out = []
    for m in c.poll(timeout_s):
        assert m.error() is None, m.error()
        out.append(m)
    return out


def _poll_until(c: Any, done: Callable[[list[Any]], bool], timeout_s: float = 30) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while not done(got) and time.monotonic() < deadline:
        got.extend(_poll(c))
    return got


def test_two_share_consumers_on_one_partition_get_distinct_records_and_together_all(
        make_broker: Callable[[int], MiniBroker]) -> None:
    broker = make_broker(30000)
    topic = create_share_topic(broker)
    group = f"sg-{uuid.uuid4().hex[:6]}"
    consumers = [_share_consumer(broker, group, topic) for _ in range(2)]
    try:
        for c in consumers:
            _poll(c)  # join; both are assigned the one partition
        seen: list[list[int]] = [[], []]
        expected = 0
        for round_ in range(10):
            values = [f"r{round_}-{i}" for i in range(20)]
            produce(broker, topic, values)
            expected += len(values)
            deadline = time.monotonic() + 10
            while sum(map(len, seen)) < expected and time.monotonic() < deadline:
                for i, c in enumerate(consumers):
                    seen[i].extend(m.offset() for m in _poll(c, 0.05))
        for c in consumers:
            c.commit_sync()  # implicit mode: the last batch is accepted
    finally:
        for c in consumers:
            c.close()
    everything = seen[0] + seen[1]
    assert sorted(everything) == list(range(expected))  # together all, none twice
    assert not set(seen[0]) & set(seen[1])
    assert seen[0] and seen[1]  # both members took part


def test_a_released_record_is_redelivered_with_its_count_raised_and_a_rejected_one_never(
        make_broker: Callable[[int], MiniBroker]) -> None:
    broker = make_broker(30000)
    topic = create_share_topic(broker)
    produce(broker, topic, ["accept", "release", "reject"])
    c = _share_consumer(broker, f"sg-{uuid.uuid4().hex[:6]}", topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        first = _poll_until(c, lambda got: len(got) >= 3)
        assert [(m.value(), m.delivery_count()) for m in first] == [(b"accept", 1), (b"release", 1), (b"reject", 1)]
        kinds = {b"accept": ck.AcknowledgeType.ACCEPT, b"release": ck.AcknowledgeType.RELEASE,
                 b"reject": ck.AcknowledgeType.REJECT}
        for m in first:
            c.acknowledge(m, kinds[m.value()])
        c.commit_sync()
        again = _poll_until(c, lambda got: len(got) >= 1)
        assert [(m.value(), m.delivery_count()) for m in again] == [(b"release", 2)]
        for m in again:
            c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        c.commit_sync()
        produce(broker, topic, ["later"])  # a record after the rejected one proves the fetches go on
        rest = _poll_until(c, lambda got: any(m.value() == b"later" for m in got))
        for m in rest:
            c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        c.commit_sync()
        assert [m.value() for m in rest] == [b"later"]  # the rejected record never came back
    finally:
        c.close()


def test_records_a_member_holds_and_abandons_return_after_the_lock_duration(
        make_broker: Callable[[int], MiniBroker]) -> None:
    broker = make_broker(LOCK_MS)
    topic = create_share_topic(broker)
    group = f"sg-{uuid.uuid4().hex[:6]}"
    produce(broker, topic, [f"v{i}" for i in range(5)])
    abandoning = _share_consumer(broker, group, topic, **{"share.acknowledgement.mode": "explicit"})
    taker = None
    try:
        held = _poll_until(abandoning, lambda got: len(got) >= 5)
        assert [m.delivery_count() for m in held] == [1] * 5
        # the first member stops polling and never acknowledges (as if killed); its heartbeats go on, so only
        # the acquisition locks can free its records
        taker = _share_consumer(broker, group, topic, **{"share.acknowledgement.mode": "explicit"})
        started = time.monotonic()
        redelivered = _poll_until(taker, lambda got: len(got) >= 5)
        waited_ms = (time.monotonic() - started) * 1000
        for m in redelivered:
            taker.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        taker.commit_sync()
        assert [(m.offset(), m.delivery_count()) for m in redelivered] == [(i, 2) for i in range(5)]
        assert waited_ms >= LOCK_MS * 0.5  # not before the locks could expire (a configured bound)
    finally:
        if taker is not None:
            taker.close()
        abandoning.close()


def test_records_a_closing_member_holds_are_released_at_once(make_broker: Callable[[int], MiniBroker]) -> None:
    broker = make_broker(60000)  # far beyond the test's timeout: only the close can free the records
    topic = create_share_topic(broker)
    group = f"sg-{uuid.uuid4().hex[:6]}"
    produce(broker, topic, [f"v{i}" for i in range(3)])
    closing = _share_consumer(broker, group, topic, **{"share.acknowledgement.mode": "explicit"})
    held = _poll_until(closing, lambda got: len(got) >= 3)
    assert [m.delivery_count() for m in held] == [1, 1, 1]
    closing.close()  # nothing acknowledged: its share session ends and what it held is released
    taker = _share_consumer(broker, group, topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        again = _poll_until(taker, lambda got: len(got) >= 3)
        for m in again:
            taker.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        taker.commit_sync()
        assert [(m.offset(), m.delivery_count()) for m in again] == [(0, 2), (1, 2), (2, 2)]
    finally:
        taker.close()
