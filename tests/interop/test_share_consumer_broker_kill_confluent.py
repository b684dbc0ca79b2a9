"""confluent-kafka's ShareConsumer (librdkafka's KIP-932 share consumer, explicit acknowledgement) across a broker
SIGKILL: the broker (``python -m mini_broker`` in its own process) is killed while the consumer holds records it has
not acknowledged yet, and restarted on the same data dir and port. The same ShareConsumer goes on; in the end every
record was acknowledged exactly once: none acknowledged before the kill is delivered again, none is lost, and the
only redeliveries are of the records held at the kill, with their delivery count raised."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pykafka_client import KafkaProducer, KafkaShareConsumer
from pykafka_client.admin import AdminClient, NewTopic
from tests.integration.broker.broker_process import BrokerProcess
from tests.interop.share_consumer_peer import confluent_with_share_consumer

ck = confluent_with_share_consumer()

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(240)]

TOPIC = "share-kill"
OVERRIDES = {"share.auto.offset.reset": "earliest", "group.share.record.lock.duration.ms": 60_000,
             "group.share.heartbeat.interval.ms": 200}
BEFORE, HELD = 10, 10  # records acknowledged before the kill; records held (unacknowledged) at the kill


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _produce(bootstrap: str, values: list[str]) -> None:
    with KafkaProducer({"bootstrap.servers": bootstrap}) as producer:
        for v in values:
            producer.send(TOPIC, value=v.encode(), partition=0)
            producer.flush()  # one batch per record: the broker acquires whole batches


class _Ledger:
    """What the consumer was given (offset, delivery count, when) and which acknowledgements the broker confirmed
    (the acknowledgement commit callback: offsets per partition and None, or the error)."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[int, int]] = []
        self.confirmed: list[int] = []
        self.failed: list[int] = []
        self.errors: set[str] = set()
        #: offsets confirmed when each delivery happened
        self.confirmed_at_delivery: list[set[int]] = []

    def on_commit(self, offsets: dict[Any, Any], error: Any) -> None:
        if error is not None:
            self.errors.add(str(error))
        for tp, acked in offsets.items():
            assert tp.topic == TOPIC
            (self.failed if error is not None else self.confirmed).extend(acked)

    def delivered(self, messages: list[Any]) -> None:
        for m in messages:
            assert m.error() is None, m.error()
            self.deliveries.append((m.offset(), m.delivery_count()))
            self.confirmed_at_delivery.append(set(self.confirmed))


def _poll_until(c: Any, ledger: _Ledger, done: Callable[[], bool], timeout_s: float) -> None:
    """Poll until ``done()``, each batch acknowledged (ACCEPT) and committed."""
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        batch = list(c.poll(0.5))
        ledger.delivered(batch)
        if batch:
            for m in batch:
                c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
            c.commit_sync(30)


@pytest.fixture
def processes() -> Iterator[list[BrokerProcess]]:
    """The broker processes a test starts, SIGKILLed at its end if still running."""
    started: list[BrokerProcess] = []
    try:
        yield started
    finally:
        while started:
            started.pop().ensure_dead()


def test_a_killed_broker_neither_redelivers_acknowledged_records_nor_loses_any(
        tmp_path: Path, processes: list[BrokerProcess]) -> None:
    brokers = processes
    port = _free_port()
    first = BrokerProcess(tmp_path, overrides=OVERRIDES, port=port)
    brokers.append(first)
    with AdminClient({"bootstrap.servers": first.bootstrap}) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
    group = f"sg-kill-{uuid.uuid4().hex[:6]}"
    ledger = _Ledger()
    c = ck.ShareConsumer({"bootstrap.servers": first.bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit"})
    c.set_acknowledgement_commit_callback(ledger.on_commit)
    c.subscribe([TOPIC])
    try:
        _produce(first.bootstrap, [f"a{i}" for i in range(BEFORE)])
        _poll_until(c, ledger, lambda: len(set(ledger.confirmed)) >= BEFORE, 60)
        assert sorted(ledger.confirmed) == list(range(BEFORE)), ledger.confirmed
        _produce(first.bootstrap, [f"h{i}" for i in range(HELD)])
        held: list[Any] = []
        deadline = time.monotonic() + 60
        while not held and time.monotonic() < deadline:  # held: polled, not acknowledged before the kill
            held = list(c.poll(0.5))
            ledger.delivered(held)
        assert held, "the records produced after the acknowledged ones never came"
        held_offsets = sorted(m.offset() for m in held)
        first.kill9()

        second = BrokerProcess(tmp_path, overrides=OVERRIDES, port=port)
        brokers.append(second)
        for m in held:  # acknowledged after the restart: the broker lost their locks with the old session
            c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        try:
            c.commit_sync(30)
        except ck.KafkaException as e:  # the session is gone: the records come back (recorded by the callback)
            print(f"commit after the restart failed as expected: {e}")
        total = BEFORE + HELD
        _poll_until(c, ledger, lambda: len(set(ledger.confirmed)) >= total, 90)
    finally:
        c.close()

    print(f"held at the kill: {held_offsets}; deliveries: {ledger.deliveries}; failed acknowledgements: "
          f"{sorted(ledger.failed)} ({ledger.errors})")
    # every record acknowledged exactly once, none lost
    assert sorted(ledger.confirmed) == list(range(total)), (ledger.confirmed, ledger.failed, ledger.deliveries)
    # no record was delivered again once its acknowledgement was confirmed
    for (offset, count), confirmed in zip(ledger.deliveries, ledger.confirmed_at_delivery, strict=True):
        assert offset not in confirmed, f"offset {offset} was delivered again (count {count}) after it was acknowledged"
    # redeliveries only of records not acknowledged at the kill (those held, or acquired for the consumer and not
    # yet handed to the application), with their delivery count raised; every held record came back
    redelivered = [(o, n) for o, n in ledger.deliveries if n > 1]
    assert all(o >= BEFORE and n == 2 for o, n in redelivered), redelivered
    assert set(held_offsets) <= {o for o, _ in redelivered}
    # the broker agrees: nothing is left for a new member of the group
    with KafkaShareConsumer({"bootstrap.servers": second.bootstrap, "group.id": group,
                             "fetch.max.wait.ms": 100}) as ours:
        ours.subscribe([TOPIC])
        leftover = [r.offset for _ in range(10) for r in ours.poll(0.3)]
    assert leftover == []
    assert second.terminate() == 0
