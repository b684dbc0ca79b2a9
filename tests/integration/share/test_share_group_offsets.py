"""The share-group offsets admin APIs (KIP-932; DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets) against a real MiniBroker with our KafkaShareConsumer: the start offset before and after
consumption, an altered start offset is where the next consumer starts (also after a restart), altering or
deleting while the group has members is refused (NON_EMPTY_GROUP), and deleted state restarts the partition at
``share.auto.offset.reset``; on the wire, errors are per partition (alter) or per topic (delete) and a null topic
list describes every share partition of the group."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.security.authorizer import STANDARD_AUTHORIZER
from pykafka_client import AcknowledgeType, KafkaConsumer, KafkaShareConsumer, ShareConsumerRecord
from pykafka_client.admin import AdminClient, SharePartitionOffsetInfo
from pykafka_client.aio.admin import AsyncAdminClient
from pykafka_client.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    GroupNotEmptyError,
    InvalidRequestError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.protocol.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from pykafka_client.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ShareGroupHeartbeatRequest,
)
from pykafka_client.protocol.types import ZERO_UUID
from pykafka_client.structs import TopicPartition
from tests.integration.share.helpers import create_share_topic, produce
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

Recs = list[ShareConsumerRecord[Any, Any]]
BROKER_CONF: dict[str, Any] = {"share_auto_offset_reset": "earliest", "group_share_record_lock_duration_ms": 60_000,
                               "group_share_heartbeat_interval_ms": 200}


@pytest.fixture
def broker() -> Iterator[MiniBroker]:
    b = MiniBroker(**BROKER_CONF).start()
    yield b
    b.shutdown()


def _at(start_offset: int, lag: int) -> SharePartitionOffsetInfo:
    """What list_share_group_offsets says of a share partition of a single broker (leader epoch 0)."""
    return SharePartitionOffsetInfo(start_offset, 0, lag)


def _admin(broker: MiniBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _consumer(broker: MiniBroker, group: str, topic: str) -> KafkaShareConsumer[Any, Any]:
    c: KafkaShareConsumer[Any, Any] = KafkaShareConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "value.deserializer": "str",
         "fetch.max.wait.ms": 100})
    c.subscribe([topic])
    return c


def _poll_until(c: KafkaShareConsumer[Any, Any], done: Callable[[Recs], bool], timeout_s: float = 30) -> Recs:
    got: Recs = []
    deadline = time.monotonic() + timeout_s
    while not done(got) and time.monotonic() < deadline:
        got.extend(c.poll(0.2))
    return got


def _consume(broker: MiniBroker, group: str, topic: str, want: int) -> Recs:
    """A share consumer's first ``want`` records, accepted (implicit acknowledgement: close accepts the last
    poll's); the consumer has left the group when this returns."""
    with _consumer(broker, group, topic) as c:
        got = _poll_until(c, lambda g: len(g) >= want)
    return got


def test_the_start_offset_before_and_after_consumption(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    other = create_share_topic(broker)
    produce(broker, topic, [f"v{i}" for i in range(10)])
    tp = TopicPartition(topic, 0)
    with _admin(broker) as admin:
        with pytest.raises(GroupIdNotFoundError, match="sg-offsets"):
            admin.list_share_group_offsets("sg-offsets")
        with _consumer(broker, "sg-offsets", topic) as c:
            assert len(_poll_until(c, lambda g: len(g) >= 10)) == 10
            # acquired, not yet acknowledged: the start offset has not moved
            assert admin.list_share_group_offsets("sg-offsets") == {tp: _at(0, lag=10)}
        # closing accepted them: every record is done
        assert admin.list_share_group_offsets("sg-offsets") == {tp: _at(10, lag=0)}
        # named partitions: one the group never fetched has no start offset
        assert admin.list_share_group_offsets("sg-offsets", [(topic, 0), (other, 0)]) == {
            tp: _at(10, lag=0), TopicPartition(other, 0): None}
        with pytest.raises(UnknownTopicOrPartitionError, match="no-such-topic"):
            admin.list_share_group_offsets("sg-offsets", [("no-such-topic", 0)])


def test_an_altered_start_offset_is_where_the_next_consumer_starts(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    produce(broker, topic, [f"v{i}" for i in range(10)])
    assert len(_consume(broker, "sg-alter", topic, 10)) == 10
    produce(broker, topic, [f"v{i}" for i in range(10, 20)])
    tp = TopicPartition(topic, 0)
    with _admin(broker) as admin:
        admin.alter_share_group_offsets("sg-alter", {tp: 15})
        assert admin.list_share_group_offsets("sg-alter") == {tp: _at(15, lag=5)}
    got = _consume(broker, "sg-alter", topic, 5)
    assert [r.offset for r in got] == [15, 16, 17, 18, 19]
    assert {r.delivery_count for r in got} == {1}
    # back before records the group had accepted: they are delivered again, as new
    with _admin(broker) as admin:
        admin.alter_share_group_offsets("sg-alter", {tp: 3})
    again = _consume(broker, "sg-alter", topic, 17)
    assert [r.offset for r in again] == list(range(3, 20))
    assert {r.delivery_count for r in again} == {1}


def test_altering_or_deleting_the_offsets_of_a_group_with_members_is_refused(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    produce(broker, topic, ["a", "b"])
    tp = TopicPartition(topic, 0)
    with _admin(broker) as admin, _consumer(broker, "sg-busy", topic) as c:
        assert len(_poll_until(c, lambda g: len(g) >= 2)) == 2
        with pytest.raises(GroupNotEmptyError, match=r"sg-busy.*member"):
            admin.alter_share_group_offsets("sg-busy", {tp: 0})
        with pytest.raises(GroupNotEmptyError, match="sg-busy"):
            admin.delete_share_group_offsets("sg-busy", [topic])
        assert admin.list_share_group_offsets("sg-busy") == {tp: _at(0, lag=2)}
    with _admin(broker) as admin:
        with pytest.raises(GroupIdNotFoundError, match="never-joined"):
            admin.delete_share_group_offsets("never-joined", [topic])


def test_altering_the_offsets_of_a_new_group_id_creates_the_share_group_there(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    produce(broker, topic, [f"v{i}" for i in range(6)])
    tp = TopicPartition(topic, 0)
    with _admin(broker) as admin:
        admin.alter_share_group_offsets("sg-new", {tp: 4})  # before any consumer joined it (Kafka 4.2)
        assert admin.describe_share_groups(["sg-new"])["sg-new"].state == "Empty"
        assert admin.list_share_group_offsets("sg-new") == {tp: _at(4, lag=2)}
        # a group id a consumer group holds is not taken
        with KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "cg-taken",
                            "group.protocol": "consumer"}) as consumer:
            consumer.subscribe([topic])
            deadline = time.monotonic() + 30
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(0.2)
            with pytest.raises(GroupIdNotFoundError, match="consumer group"):
                admin.alter_share_group_offsets("cg-taken", {tp: 0})
    assert [r.offset for r in _consume(broker, "sg-new", topic, 2)] == [4, 5]


def test_deleted_offsets_restart_the_partition_at_share_auto_offset_reset(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    produce(broker, topic, [f"v{i}" for i in range(6)])
    assert len(_consume(broker, "sg-delete", topic, 6)) == 6
    with _admin(broker) as admin:
        assert admin.list_share_group_offsets("sg-delete") == {TopicPartition(topic, 0): _at(6, lag=0)}
        admin.delete_share_group_offsets("sg-delete", [topic])
        assert admin.list_share_group_offsets("sg-delete") == {}
        with pytest.raises(UnknownTopicOrPartitionError, match="no-such-topic"):
            admin.delete_share_group_offsets("sg-delete", ["no-such-topic"])
    # share.auto.offset.reset=earliest: every record again, as a first delivery
    again = _consume(broker, "sg-delete", topic, 6)
    assert [r.value for r in again] == [f"v{i}" for i in range(6)]
    assert {r.delivery_count for r in again} == {1}


def test_an_altered_start_offset_survives_a_restart(tmp_path: Path) -> None:
    with MiniBroker(data_dir=str(tmp_path), **BROKER_CONF) as b:
        topic = create_share_topic(b)
        produce(b, topic, [f"v{i}" for i in range(8)])
        assert len(_consume(b, "sg-durable", topic, 8)) == 8
        with _admin(b) as admin:
            admin.alter_share_group_offsets("sg-durable", {TopicPartition(topic, 0): 5})
            admin.alter_share_group_offsets("sg-created", {TopicPartition(topic, 0): 7})  # a new group
    with MiniBroker(data_dir=str(tmp_path), **BROKER_CONF) as b, _admin(b) as admin:
        assert admin.list_share_group_offsets("sg-durable") == {TopicPartition(topic, 0): _at(5, lag=3)}
        assert admin.list_share_group_offsets("sg-created") == {TopicPartition(topic, 0): _at(7, lag=1)}
        assert [r.offset for r in _consume(b, "sg-durable", topic, 3)] == [5, 6, 7]


def test_the_async_admin_lists_alters_and_deletes_share_group_offsets(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    produce(broker, topic, ["a", "b", "c"])
    assert len(_consume(broker, "sg-async", topic, 3)) == 3
    tp = TopicPartition(topic, 0)

    async def main() -> list[Any]:
        async with AsyncAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            before = await admin.list_share_group_offsets("sg-async")
            await admin.alter_share_group_offsets("sg-async", {tp: 1})
            altered = await admin.list_share_group_offsets("sg-async", [(topic, 0)])
            await admin.delete_share_group_offsets("sg-async", [topic])
            return [before, altered, await admin.list_share_group_offsets("sg-async")]

    assert asyncio.run(main()) == [{tp: _at(3, lag=0)}, {tp: _at(1, lag=2)}, {}]


def test_on_the_wire_errors_are_per_partition_or_per_topic_and_a_null_topic_list_means_all(broker: MiniBroker) -> None:
    t1, t2 = create_share_topic(broker), create_share_topic(broker)
    produce(broker, t1, ["a"])
    produce(broker, t2, ["b"])
    assert len(_consume(broker, "sg-wire", t1, 1)) == 1
    assert len(_consume(broker, "sg-wire", t2, 1)) == 1
    D, A, X = DescribeShareGroupOffsetsRequest, AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest
    with Conn(broker) as c:
        every = c.call(D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id="sg-wire", topics=None),
                                 D.DescribeShareGroupOffsetsRequestGroup(group_id="nope", topics=None)]), 1)
        [found, missing] = every.groups
        assert sorted((t.topic_name, [(p.partition_index, p.start_offset, p.error_code) for p in t.partitions])
                      for t in found.topics) == sorted([(t1, [(0, 1, 0)]), (t2, [(0, 1, 0)])])
        assert all(t.topic_id != ZERO_UUID for t in found.topics)
        assert (missing.group_id, missing.error_code) == ("nope", GroupIdNotFoundError.code)

        altered = c.call(A(group_id="sg-wire", topics=[
            A.AlterShareGroupOffsetsRequestTopic(topic_name=t1, partitions=[
                A.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=0),
                A.AlterShareGroupOffsetsRequestPartition(partition_index=3, start_offset=0),
                A.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=-5)]),
            A.AlterShareGroupOffsetsRequestTopic(topic_name="no-such-topic", partitions=[
                A.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=0)])]), 0)
        assert altered.error_code == 0
        assert [(t.topic_name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in altered.responses] == [
            (t1, [(0, 0), (3, UnknownTopicOrPartitionError.code), (0, InvalidRequestError.code)]),
            ("no-such-topic", [(0, UnknownTopicOrPartitionError.code)])]

        deleted = c.call(X(group_id="sg-wire", topics=[X.DeleteShareGroupOffsetsRequestTopic(topic_name=t2),
                                                       X.DeleteShareGroupOffsetsRequestTopic(topic_name="gone")]), 0)
        assert deleted.error_code == 0
        assert [(t.topic_name, t.error_code) for t in deleted.responses] == [
            (t2, 0), ("gone", UnknownTopicOrPartitionError.code)]
        after = c.call(D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id="sg-wire", topics=None)]), 0)
        assert [(t.topic_name, [p.start_offset for p in t.partitions]) for t in after.groups[0].topics] == [(t1, [0])]


def test_the_group_and_topic_acls_decide_as_in_kafka(tmp_path: Path) -> None:
    """DESCRIBE (describe), READ (alter) or DELETE (delete) on the group, then DESCRIBE (describe) or READ (alter,
    delete) on each topic; a null topic list leaves out the topics the principal may not describe."""
    anon = "User:ANONYMOUS"
    secured = {"authorizer.class.name": STANDARD_AUTHORIZER}
    D, A, X = DescribeShareGroupOffsetsRequest, AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest

    def acl(rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
        return AclBinding(ResourcePattern(rtype, name, PatternType.LITERAL),
                          AccessControlEntry(anon, "*", op, AclPermissionType.ALLOW))

    with MiniBroker({**secured, "super.users": anon}, data_dir=str(tmp_path), **BROKER_CONF) as b:
        topic = create_share_topic(b)
        with Conn(b) as c:  # the group exists, now empty
            for epoch in (0, -1):
                assert c.call(ShareGroupHeartbeatRequest(
                    group_id="sg-acl", member_id="m", member_epoch=epoch,
                    subscribed_topic_names=[topic] if epoch == 0 else None), 1).error_code == 0
        with _admin(b) as admin:
            admin.alter_share_group_offsets("sg-acl", {TopicPartition(topic, 0): 0})
    with MiniBroker(secured, data_dir=str(tmp_path), **BROKER_CONF) as b, Conn(b) as c:

        def describe(topics: list[str] | None) -> Any:
            asked = None if topics is None else [D.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=[0])
                                                 for t in topics]
            return c.call(D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id="sg-acl", topics=asked)]),
                          1).groups[0]

        def alter() -> Any:
            return c.call(A(group_id="sg-acl", topics=[A.AlterShareGroupOffsetsRequestTopic(
                topic_name=topic, partitions=[A.AlterShareGroupOffsetsRequestPartition(partition_index=0)])]), 0)

        def delete() -> Any:
            return c.call(X(group_id="sg-acl", topics=[X.DeleteShareGroupOffsetsRequestTopic(topic_name=topic)]), 0)

        denied = GroupAuthorizationFailedError.code
        assert (describe(None).error_code, alter().error_code, delete().error_code) == (denied, denied, denied)
        authorizer = b.context.authorizer if b.context is not None else None
        assert authorizer is not None
        authorizer.create_acls([acl(ResourceType.GROUP, "sg-acl", op)
                                for op in (AclOperation.DESCRIBE, AclOperation.READ, AclOperation.DELETE)])
        no_topic = TopicAuthorizationFailedError.code
        assert describe(None).topics == []
        assert [p.error_code for p in describe([topic]).topics[0].partitions] == [no_topic]
        assert [p.error_code for p in alter().responses[0].partitions] == [no_topic]
        assert [t.error_code for t in delete().responses] == [no_topic]
        authorizer.create_acls([acl(ResourceType.TOPIC, topic, op) for op in (AclOperation.DESCRIBE, AclOperation.READ)])
        assert [(t.topic_name, [p.start_offset for p in t.partitions]) for t in describe(None).topics] == [(topic, [0])]
        assert [p.error_code for p in alter().responses[0].partitions] == [0]
        assert [t.error_code for t in delete().responses] == [0]


def test_the_lag_leaves_out_records_acknowledged_beyond_the_start_offset(broker: MiniBroker) -> None:
    topic = create_share_topic(broker)
    produce(broker, topic, [f"v{i}" for i in range(5)])
    tp = TopicPartition(topic, 0)
    c: KafkaShareConsumer[Any, Any] = KafkaShareConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": "sg-lag", "value.deserializer": "str",
         "fetch.max.wait.ms": 100, "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    with c, _admin(broker) as admin:
        got = _poll_until(c, lambda g: len(g) >= 5)
        for r in got:
            if r.offset in (1, 2):
                c.acknowledge(r, AcknowledgeType.ACCEPT)
        c.commit_sync()
        # offset 0 is still acquired, so the start offset stays; 1 and 2 are done and are no lag
        assert admin.list_share_group_offsets("sg-lag") == {tp: _at(0, lag=3)}
        produce(broker, topic, ["v5"])
        assert admin.list_share_group_offsets("sg-lag", [(topic, 0)]) == {tp: _at(0, lag=4)}
    D = DescribeShareGroupOffsetsRequest
    with Conn(broker) as conn:  # v0 (Kafka 4.1) has no lag: the field reads as its default
        [p] = conn.call(D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id="sg-lag", topics=None)]),
                        0).groups[0].topics[0].partitions
    assert (p.start_offset, p.lag) == (0, -1)


def test_deleted_offsets_restart_at_latest_when_share_auto_offset_reset_says_so() -> None:
    with MiniBroker(**{**BROKER_CONF, "share_auto_offset_reset": "latest"}) as b, _admin(b) as admin:
        topic = create_share_topic(b)
        tp = TopicPartition(topic, 0)
        produce(b, topic, ["old"])

        def started() -> bool:
            try:
                return admin.list_share_group_offsets("sg-latest", [tp]).get(tp) is not None
            except GroupIdNotFoundError:  # the member has not joined yet
                return False

        def first_new_record(c: KafkaShareConsumer[Any, Any], value: str) -> Recs:
            for _ in range(100):  # the share partition starts when the member first fetches it
                if started():
                    break
                assert c.poll(0.2) == []
            produce(b, topic, [value])
            return _poll_until(c, lambda g: len(g) >= 1)

        with _consumer(b, "sg-latest", topic) as c:
            assert [(r.offset, r.value) for r in first_new_record(c, "a")] == [(1, "a")]
        assert admin.list_share_group_offsets("sg-latest") == {tp: _at(2, lag=0)}
        admin.delete_share_group_offsets("sg-latest", [topic])
        produce(b, topic, ["b"])  # offset 2: before the group starts the partition again, so never delivered
        with _consumer(b, "sg-latest", topic) as c:
            assert [(r.offset, r.value) for r in first_new_record(c, "c")] == [(3, "c")]
