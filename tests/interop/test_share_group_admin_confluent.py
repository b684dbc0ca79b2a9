"""Our admin client on share groups whose members are confluent-kafka's ShareConsumer (librdkafka's KIP-932 share
consumer), against a real MiniBroker: ``describe_share_groups`` shows the members with their client ids and
assignments, ``list_groups`` lists the group as a share group, ``delete_share_groups`` refuses the group while it
has members and, once they closed, deletes it with its share partitions' state, so a member joining the id again
gets the acknowledged records anew (at ``share.auto.offset.reset``)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaProducer
from pykafka_client.admin import AdminClient, NewTopic, ShareGroupDescription
from pykafka_client.errors import GroupNotEmptyError
from pykafka_client.structs import TopicPartition

ck = pytest.importorskip("confluent_kafka")
if not hasattr(ck, "ShareConsumer"):
    if os.environ.get("CI"):  # the interop extra installs one that has it: a missing peer fails CI
        pytest.fail("this confluent-kafka has no ShareConsumer (2.15+ has it)", pytrace=False)
    pytest.skip("this confluent-kafka has no ShareConsumer (2.15+ has it)", allow_module_level=True)

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.timeout(120)]


@pytest.fixture
def broker() -> Iterator[MiniBroker]:
    b = MiniBroker(share_auto_offset_reset="earliest", group_share_heartbeat_interval_ms=200).start()
    yield b
    b.shutdown()


def _share_consumer(broker: MiniBroker, group: str, topic: str, client_id: str) -> Any:
    c = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "client.id": client_id})
    c.subscribe([topic])
    return c


def _poll_until(consumers: list[Any], done: Callable[[list[Any]], bool], timeout_s: float = 30) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while not done(got) and time.monotonic() < deadline:
        for c in consumers:
            for m in c.poll(0.1):
                assert m.error() is None, m.error()
                got.append(m)
    return got


def _described(admin: AdminClient, group: str) -> ShareGroupDescription | None:
    if group not in {g.group_id for g in admin.list_groups(types=["share"])}:
        return None
    return admin.describe_share_groups([group])[group]


def test_admin_describes_lists_and_deletes_a_group_of_confluent_share_consumers(broker: MiniBroker) -> None:
    topic = f"share-admin-{uuid.uuid4().hex[:6]}"
    group = f"sg-{uuid.uuid4().hex[:6]}"
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)])
        with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as p:
            for i in range(6):
                p.send(topic, value=f"v{i}".encode(), partition=i % 2)
            p.flush()
        consumers = [_share_consumer(broker, group, topic, f"ck-share-{i}") for i in range(2)]
        try:
            def both_assigned() -> bool:
                d = _described(admin, group)
                return d is not None and len(d.members) == 2 and all(m.assignment for m in d.members)

            got = _poll_until(consumers, lambda got: both_assigned() and len(got) >= 6)
            d = admin.describe_share_groups([group])[group]
            assert (d.state, d.partition_assignor) == ("Stable", "simple")
            assert sorted(m.client_id for m in d.members) == ["ck-share-0", "ck-share-1"]
            # two members, two partitions: one each
            assert sorted(tp for m in d.members for tp in m.assignment) == [TopicPartition(topic, 0),
                                                                             TopicPartition(topic, 1)]
            assert [(g.group_id, g.state, g.type) for g in admin.list_groups(types=["share"])] == [
                (group, "Stable", "share")]
            assert sorted(m.value() for m in got) == [f"v{i}".encode() for i in range(6)]
            with pytest.raises(GroupNotEmptyError, match=group):
                admin.delete_share_groups([group])
            for c in consumers:
                c.commit_sync()  # implicit acknowledgement: what they got is accepted
        finally:
            for c in consumers:
                c.close()  # leaves the group
        deadline = time.monotonic() + 20
        left = _described(admin, group)
        while left is not None and left.members and time.monotonic() < deadline:
            time.sleep(0.1)
            left = _described(admin, group)
        assert left is not None and left.state == "Empty"
        admin.delete_share_groups([group])
        assert admin.list_groups(types=["share"]) == []

        # the id is a new group: its share partitions start again at the earliest offset
        again = _share_consumer(broker, group, topic, "ck-share-again")
        try:
            redelivered = _poll_until([again], lambda got: len(got) >= 6)
            again.commit_sync()
        finally:
            again.close()
        assert sorted((m.value(), m.delivery_count()) for m in redelivered) == [
            (f"v{i}".encode(), 1) for i in range(6)]
