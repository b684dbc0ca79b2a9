"""A share consumer keeps its membership while the application does not poll (Java's ShareConsumer heartbeats from
its background thread): a member idle for twice ``group.share.session.timeout.ms`` is still in the group, and the
other member is not given its partition. The sync consumer (its heartbeat thread) and the async twin (the sync
consumer underneath, so the same thread)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AcknowledgeType, KafkaProducer, KafkaShareConsumer, TopicPartition
from pykafka_client.admin import AdminClient, NewTopic
from pykafka_client.aio import AsyncKafkaShareConsumer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SESSION_TIMEOUT_MS = 1000
IDLE_S = 2 * SESSION_TIMEOUT_MS / 1000 + 0.5


@pytest.fixture
def broker() -> Iterator[MiniBroker]:
    b = MiniBroker(share_auto_offset_reset="earliest", group_share_session_timeout_ms=SESSION_TIMEOUT_MS,
                   group_share_heartbeat_interval_ms=200).start()
    yield b
    b.shutdown()


def _config(broker: MiniBroker, group: str) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "fetch.max.wait.ms": 100}


def _two_partition_topic(admin: AdminClient) -> str:
    name = f"share-hb-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 2, 1)])
    return name


def _members(admin: AdminClient, group: str) -> dict[str, list[TopicPartition]]:
    d = admin.describe_share_groups([group])[group]
    return {m.member_id: sorted(m.assignment) for m in d.members}


def _until_both_assigned(admin: AdminClient, group: str, poll: Callable[[], None]) -> dict[str, list[TopicPartition]]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        poll()
        members = _members(admin, group)
        if len(members) == 2 and all(len(tps) == 1 for tps in members.values()):
            return members
    raise AssertionError(f"the two members never had one partition each: {_members(admin, group)}")


def test_a_member_that_does_not_poll_for_twice_the_session_timeout_stays_in_the_group(broker: MiniBroker) -> None:
    group = f"sg-idle-{uuid.uuid4().hex[:6]}"
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        topic = _two_partition_topic(admin)
        with KafkaShareConsumer(_config(broker, group)) as idle, KafkaShareConsumer(_config(broker, group)) as busy:
            idle.subscribe([topic])
            busy.subscribe([topic])

            def poll_both() -> None:
                idle.poll(0.1)
                busy.poll(0.1)

            before = _until_both_assigned(admin, group, poll_both)
            idle_until = time.monotonic() + IDLE_S
            while time.monotonic() < idle_until:  # only the other member polls
                busy.poll(0.1)
            assert _members(admin, group) == before
            idle.poll(0.1)  # not fenced: polls on as a member
            assert _members(admin, group) == before


def test_the_async_share_consumer_keeps_its_membership_between_polls(broker: MiniBroker) -> None:
    group = f"sg-aidle-{uuid.uuid4().hex[:6]}"

    async def run(admin: AdminClient, topic: str, busy: KafkaShareConsumer[Any, Any]) -> None:
        async with AsyncKafkaShareConsumer(_config(broker, group)) as idle:
            await idle.subscribe([topic])
            before: dict[str, list[TopicPartition]] = {}
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (len(before) == 2 and all(len(t) == 1 for t in before.values())):
                await idle.poll(0.1)
                busy.poll(0.1)
                before = _members(admin, group)
            assert len(before) == 2, before
            idle_until = time.monotonic() + IDLE_S
            while time.monotonic() < idle_until:  # the async member's task only sleeps
                busy.poll(0.1)
                await asyncio.sleep(0)
            assert _members(admin, group) == before

    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        topic = _two_partition_topic(admin)
        with KafkaShareConsumer(_config(broker, group)) as busy:
            busy.subscribe([topic])
            asyncio.run(run(admin, topic, busy))


def test_an_idle_member_keeps_its_membership_but_not_the_records_whose_locks_expired() -> None:
    with MiniBroker(share_auto_offset_reset="earliest", group_share_session_timeout_ms=SESSION_TIMEOUT_MS,
                    group_share_heartbeat_interval_ms=200, group_share_record_lock_duration_ms=1000) as b, \
            AdminClient({"bootstrap.servers": b.bootstrap_servers}) as admin:
        topic = f"share-lock-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(topic, 1, 1)])
        with KafkaProducer({"bootstrap.servers": b.bootstrap_servers}) as producer:
            for i in range(3):
                producer.send(topic, value=f"v{i}".encode(), partition=0)
            producer.flush()
        group = f"sg-lock-{uuid.uuid4().hex[:6]}"
        explicit = {**_config(b, group), "share.acknowledgement.mode": "explicit"}
        with KafkaShareConsumer(explicit) as idle, KafkaShareConsumer(explicit) as taker:
            idle.subscribe([topic])
            held: list[Any] = []
            deadline = time.monotonic() + 30
            while len(held) < 3 and time.monotonic() < deadline:
                held.extend(idle.poll(0.1))
            assert [(r.offset, r.delivery_count) for r in held] == [(0, 1), (1, 1), (2, 1)]
            members = set(_members(admin, group))
            taker.subscribe([topic])  # the idle member neither polls nor acknowledges from here on
            again: list[Any] = []
            deadline = time.monotonic() + 30
            while len(again) < 3 and time.monotonic() < deadline:
                batch = taker.poll(0.1)
                for r in batch:
                    taker.acknowledge(r, AcknowledgeType.ACCEPT)
                again.extend(batch)
            assert [(r.offset, r.delivery_count) for r in again] == [(0, 2), (1, 2), (2, 2)]
            assert members <= set(_members(admin, group))  # the idle member is still in the group
