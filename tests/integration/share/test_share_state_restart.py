"""Share-partition state survives a broker kill -9 (issue #25 item 3, single broker): a broker process is killed
with SIGKILL after our KafkaShareConsumer accepted, released and rejected some records and kept others acquired,
and restarted on the same data dir. A new member of the group then gets exactly the released and the acquired
records again, with their delivery count raised; the accepted and rejected ones never come back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykafka_client import AcknowledgeType, KafkaProducer, KafkaShareConsumer, ShareConsumerRecord
from pykafka_client.admin import AdminClient, NewTopic
from tests.integration.broker.broker_process import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOPIC = "share-restart"
OVERRIDES = {"share.auto.offset.reset": "earliest", "group.share.record.lock.duration.ms": 60_000,
             "group.share.heartbeat.interval.ms": 200}


@pytest.fixture
def brokers() -> Iterator[list[BrokerProcess]]:
    started: list[BrokerProcess] = []
    yield started
    for b in started:
        b.ensure_dead()


def _consumer(bootstrap: str) -> KafkaShareConsumer[Any, Any]:
    c: KafkaShareConsumer[Any, Any] = KafkaShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": "sg-restart", "value.deserializer": "str",
         "fetch.max.wait.ms": 100, "share.acknowledgement.mode": "explicit"})
    c.subscribe([TOPIC])
    return c


def _poll(c: KafkaShareConsumer[Any, Any], want: int, timeout_s: float,
          kinds: dict[int, AcknowledgeType]) -> list[ShareConsumerRecord[Any, Any]]:
    """Poll until ``want`` records came, acknowledging each as ``kinds`` says (an offset not in it: left acquired,
    so only the last poll may leave some)."""
    got: list[ShareConsumerRecord[Any, Any]] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        batch = c.poll(0.2)
        for r in batch:
            if r.offset in kinds:
                c.acknowledge(r, kinds[r.offset])
        got.extend(batch)
    return got


def test_a_killed_broker_keeps_the_share_partition_state(tmp_path: Path, brokers: list[BrokerProcess]) -> None:
    first = BrokerProcess(tmp_path, overrides=OVERRIDES)
    brokers.append(first)
    with AdminClient({"bootstrap.servers": first.bootstrap}) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
    with KafkaProducer({"bootstrap.servers": first.bootstrap}) as producer:
        for i in range(6):
            producer.send(TOPIC, value=f"v{i}".encode(), partition=0)
            producer.flush()  # one batch per record: the broker acquires whole batches
    c1 = _consumer(first.bootstrap)
    try:
        got = _poll(c1, 6, 60, {0: AcknowledgeType.ACCEPT, 1: AcknowledgeType.ACCEPT, 2: AcknowledgeType.RELEASE,
                                3: AcknowledgeType.REJECT})
        assert [(r.offset, r.delivery_count) for r in got] == [(i, 1) for i in range(6)]
        c1.commit_sync()  # answered once the acknowledgements are in __share_group_state
        first.kill9()  # offsets 4 and 5 are still acquired by c1
    finally:
        c1.close(timeout=1)

    second = BrokerProcess(tmp_path, overrides=OVERRIDES)
    brokers.append(second)
    c2 = _consumer(second.bootstrap)
    try:
        accept_all = dict.fromkeys(range(6), AcknowledgeType.ACCEPT)
        again = _poll(c2, 3, 60, accept_all)
        again.extend(_poll(c2, 1, 1.0, accept_all))  # nothing else is delivered
    finally:
        c2.close(timeout=5)
    assert [(r.offset, r.value, r.delivery_count) for r in again] == [(2, "v2", 2), (4, "v4", 2), (5, "v5", 2)]
    assert second.terminate() == 0
