"""Our KafkaShareConsumer against a real MiniBroker's share groups: members on one partition share its records;
explicit RELEASE redelivers with the count raised and REJECT never; closing with unacknowledged records
releases them to another member; implicit mode accepts a poll's records at the next poll."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaProducer, KafkaShareConsumer, ShareConsumerRecord
from pykafka_client.admin import AdminClient, NewTopic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def broker() -> Iterator[MiniBroker]:
    b = MiniBroker(share_auto_offset_reset="earliest", group_share_record_lock_duration_ms=60_000,
                   group_share_heartbeat_interval_ms=200).start()
    yield b
    b.shutdown()


def _topic(broker: MiniBroker) -> str:
    name = f"share-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(name, 1, 1)])
    return name


def _produce(broker: MiniBroker, topic: str, values: list[str]) -> None:
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5}) as p:
        for v in values:
            p.send(topic, value=v.encode(), partition=0)
        p.flush()


def _consumer(broker: MiniBroker, group: str, topic: str, **conf: Any) -> KafkaShareConsumer[Any, Any]:
    c: KafkaShareConsumer[Any, Any] = KafkaShareConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "value.deserializer": "str",
         "fetch.max.wait.ms": 100, **conf})
    c.subscribe([topic])
    return c


Recs = list[ShareConsumerRecord[Any, Any]]


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
    topic = _topic(broker)
    values = [f"v{i}" for i in range(20)]
    _produce(broker, topic, values)
    with _consumer(broker, "sg-one", topic) as c:
        got = _poll_until(c, lambda g: len(g) >= 20)
    assert [r.value for r in got] == values
    assert {r.delivery_count for r in got} == {1}
