"""Our KafkaShareConsumer and confluent-kafka's ShareConsumer (librdkafka) as members of one share group on a
real MiniBroker: together they get every record, none twice, and each takes part; records our consumer releases
on close go to the confluent member."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaShareConsumer
from tests.integration.share.helpers import create_share_topic, produce

ck = pytest.importorskip("confluent_kafka")
if not hasattr(ck, "ShareConsumer"):
    if os.environ.get("CI"):  # the interop extra installs one that has it: a missing peer fails CI
        pytest.fail("this confluent-kafka has no ShareConsumer (2.15+ has it)", pytrace=False)
    pytest.skip("this confluent-kafka has no ShareConsumer (2.15+ has it)", allow_module_level=True)

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(120)]


@pytest.fixture
def broker() -> Iterator[MiniBroker]:
    b = MiniBroker(share_auto_offset_reset="earliest", group_share_record_lock_duration_ms=60_000,
                   group_share_heartbeat_interval_ms=200).start()
    yield b
    b.shutdown()


def _confluent(broker: MiniBroker, group: str, topic: str, **conf: Any) -> Any:
    c = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group, **conf})
    c.subscribe([topic])
    return c


def _ours(broker: MiniBroker, group: str, topic: str, **conf: Any) -> KafkaShareConsumer[Any, Any]:
    c: KafkaShareConsumer[Any, Any] = KafkaShareConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "fetch.max.wait.ms": 50, **conf})
    c.subscribe([topic])
    return c


def _confluent_offsets(c: Any, timeout_s: float = 0.05) -> list[tuple[int, int]]:
    out = []
    for m in c.poll(timeout_s):
        assert m.error() is None, m.error()
        out.append((m.offset(), m.delivery_count()))
    return out


def test_our_share_consumer_and_confluents_share_one_group(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    group = f"sg-{uuid.uuid4().hex[:6]}"
    theirs = _confluent(broker, group, topic)
    ours = _ours(broker, group, topic)
    try:
        _confluent_offsets(theirs)
        ours.poll(0.05)  # both join; both are assigned the one partition
        seen_ours: list[int] = []
        seen_theirs: list[int] = []
        expected = 0
        for round_ in range(10):
            produce(broker, topic, [f"r{round_}-{i}" for i in range(20)])
            expected += 20
            deadline = time.monotonic() + 10
            while len(seen_ours) + len(seen_theirs) < expected and time.monotonic() < deadline:
                seen_ours.extend(r.offset for r in ours.poll(0.05))
                seen_theirs.extend(o for o, _ in _confluent_offsets(theirs))
        ours.commit_sync(10)
        theirs.commit_sync()
    finally:
        ours.close()
        theirs.close()
    assert sorted(seen_ours + seen_theirs) == list(range(expected))  # together all, none twice
    assert not set(seen_ours) & set(seen_theirs)
    assert seen_ours and seen_theirs  # both members took part


def test_records_our_consumer_releases_on_close_go_to_the_confluent_member(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    group = f"sg-{uuid.uuid4().hex[:6]}"
    produce(broker, topic, [f"v{i}" for i in range(3)])
    ours = _ours(broker, group, topic, **{"share.acknowledgement.mode": "explicit"})
    held: list[int] = []
    deadline = time.monotonic() + 30
    while len(held) < 3 and time.monotonic() < deadline:
        held.extend(r.offset for r in ours.poll(0.2))
    assert held == [0, 1, 2]
    ours.close()  # nothing acknowledged: released (the 60 s lock could not free them within the test)
    theirs = _confluent(broker, group, topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        got: list[tuple[int, int]] = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            batch = theirs.poll(0.2)
            for m in batch:
                theirs.acknowledge(m, ck.AcknowledgeType.ACCEPT)
            got.extend((m.offset(), m.delivery_count()) for m in batch)
        theirs.commit_sync()
        assert got == [(0, 2), (1, 2), (2, 2)]
    finally:
        theirs.close()
