"""Our consumers with ``group.protocol=consumer`` (KIP-848) against a real MiniBroker's consumer groups: the
broker assigns, members converge by heartbeats (revoke before assign), commits carry the member epoch, a
member closing hands its partitions over, a topic gaining partitions gets them assigned, a restarted static
member keeps its partitions, a regex subscription picks up a created topic; our consumers and confluent-kafka's
in one group; the async consumer once. One broker for the module, short heartbeat interval."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.security.authorizer import STANDARD_AUTHORIZER
from pykafka_client import KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import AdminClient, NewPartitions, NewTopic
from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
from pykafka_client.errors import TopicAuthorizationFailedError
from pykafka_client.protocol import acl

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 6
HEARTBEAT_INTERVAL_MS = 200


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker(group_consumer_heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                    group_consumer_session_timeout_ms=10000, group_initial_rebalance_delay_ms=0) as b:  # fmt: skip
        yield b


def _topic(broker: MiniBroker, partitions: int = PARTITIONS, prefix: str = "kc") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(name, partitions, 1)])
    return name


def _produce(broker: MiniBroker, topic: str, values: list[str], partitions: int = PARTITIONS) -> None:
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5}) as p:
        for i, v in enumerate(values):
            p.send(topic, value=v.encode(), partition=i % partitions)
        p.flush()


def _consumer(broker: MiniBroker, group: str, **conf: Any) -> KafkaConsumer[Any, Any]:
    return KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                          "group.protocol": "consumer", "auto.offset.reset": "earliest",
                          "auto.commit.interval.ms": 200}, **conf)  # fmt: skip


def _poll_until(consumers: list[KafkaConsumer[Any, Any]], done: Callable[[], bool],
                sink: list[str] | None = None, timeout_s: float = 30) -> bool:  # fmt: skip
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() >= deadline:
            return False
        for c in consumers:
            for r in c.poll(0.05):
                if sink is not None:
                    sink.append(r.value.decode())
    return True


def _owned(consumers: list[KafkaConsumer[Any, Any]], topic: str) -> list[set[int]]:
    return [{tp.partition for tp in c.assignment() if tp.topic == topic} for c in consumers]


def _each_partition_once(consumers: list[KafkaConsumer[Any, Any]], topic: str, partitions: int = PARTITIONS) -> bool:
    owned = _owned(consumers, topic)
    return all(owned) and sum(map(len, owned)) == partitions and set().union(*owned) == set(range(partitions))


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        self.calls.append(("revoked", set(revoked)))

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        self.calls.append(("assigned", set(assigned)))


def test_one_then_three_members_consume_every_record_once_and_take_over_on_close(broker: MiniBroker) -> None:
    """KIP-848: one member gets every partition; two more join and the broker's uniform assignor spreads them
    2/2/2, each partition owned by one member at a time (revoke before assign, auto-commit before revoking);
    the listener hears only the incremental changes; a member closing (leave, epoch -1) hands its partitions
    to the others; with commits every record is consumed exactly once."""
    topic = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:8]}"
    _produce(broker, topic, [f"a{i}" for i in range(120)])
    listeners = [Recorder() for _ in range(3)]
    consumers = [_consumer(broker, group)]
    got: list[str] = []
    try:
        consumers[0].subscribe([topic], listeners[0])
        assert _poll_until(consumers, lambda: len(got) >= 120, got)
        assert _owned(consumers, topic) == [set(range(PARTITIONS))]
        assert listeners[0].calls == [("assigned", {TopicPartition(topic, p) for p in range(PARTITIONS)})]
        for i in (1, 2):
            consumers.append(_consumer(broker, group))
            consumers[i].subscribe([topic], listeners[i])
        assert _poll_until(consumers, lambda: _each_partition_once(consumers, topic), got)
        assert sorted(map(len, _owned(consumers, topic))) == [2, 2, 2]
        # the first member only revoked what moved away; on_partitions_assigned follows each revocation (as in
        # Java, also when nothing is added) and names nothing it already had
        revoked = set().union(*(p for kind, p in listeners[0].calls if kind == "revoked"))
        assert len(revoked) == 4
        assert all(p == set() for kind, p in listeners[0].calls[1:] if kind == "assigned")
        _produce(broker, topic, [f"b{i}" for i in range(60)])
        assert _poll_until(consumers, lambda: len(got) >= 180, got)
        consumers[0].close()
        rest = consumers[1:]
        assert _poll_until(rest, lambda: _each_partition_once(rest, topic), got)
        _produce(broker, topic, [f"c{i}" for i in range(60)])
        assert _poll_until(rest, lambda: len(got) >= 240, got)
        _poll_until(rest, lambda: False, got, timeout_s=0.5)  # nothing more may arrive
        assert sorted(got) == sorted([f"a{i}" for i in range(120)] + [f"b{i}" for i in range(60)]
                                     + [f"c{i}" for i in range(60)])  # fmt: skip
    finally:
        for c in consumers:
            c.close()


def test_commit_with_member_epoch_then_a_new_member_resumes(broker: MiniBroker) -> None:
    """KIP-848: OffsetCommit v9 carries the member epoch; the committed offset is where the next member of
    the group starts."""
    topic = _topic(broker, 1)
    group = f"g-{uuid.uuid4().hex[:8]}"
    _produce(broker, topic, [str(i) for i in range(10)], partitions=1)
    got: list[str] = []
    with _consumer(broker, group, enable_auto_commit=False) as c:
        c.subscribe([topic])
        assert _poll_until([c], lambda: len(got) >= 10, got)
        c.commit_sync({TopicPartition(topic, 0): 6})
        assert c.committed([TopicPartition(topic, 0)])[TopicPartition(topic, 0)].offset == 6  # type: ignore[union-attr]
    rest: list[str] = []
    with _consumer(broker, group, enable_auto_commit=False) as c2:
        c2.subscribe([topic])
        assert _poll_until([c2], lambda: len(rest) >= 4, rest)
    assert rest == ["6", "7", "8", "9"]


def test_topic_gaining_partitions_gets_them_assigned(broker: MiniBroker) -> None:
    """KIP-848: a partition count change moves the group epoch; the new partitions are assigned."""
    topic = _topic(broker, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with _consumer(broker, group, metadata_max_age_ms=500) as c:
        c.subscribe([topic])
        assert _poll_until([c], lambda: _owned([c], topic) == [{0, 1}])
        with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            admin.create_partitions({topic: NewPartitions(4)})
        assert _poll_until([c], lambda: _owned([c], topic) == [{0, 1, 2, 3}])


def test_static_member_restart_keeps_its_partitions(broker: MiniBroker) -> None:
    """KIP-848: a static member closes with epoch -2; the coordinator keeps its assignment, and the same
    group.instance.id rejoining gets it back without the other member taking it."""
    topic = _topic(broker, 4)
    group = f"g-{uuid.uuid4().hex[:8]}"
    a = _consumer(broker, group, group_instance_id="static-a")
    b = _consumer(broker, group, group_instance_id="static-b")
    try:
        a.subscribe([topic])
        b.subscribe([topic])
        assert _poll_until([a, b], lambda: _each_partition_once([a, b], topic, 4))
        kept = _owned([a], topic)[0]
        a.close()
        _poll_until([b], lambda: False, timeout_s=1.0)
        assert _owned([b], topic)[0] == set(range(4)) - kept  # b did not get a's partitions
        a = _consumer(broker, group, group_instance_id="static-a")
        a.subscribe([topic])
        assert _poll_until([a, b], lambda: _owned([a], topic)[0] == kept)
    finally:
        a.close()
        b.close()


def test_regex_subscription_picks_up_a_created_topic(broker: MiniBroker) -> None:
    """KIP-848: SubscribedTopicRegex is resolved by the broker and refreshed when topics are created."""
    prefix = f"rx{uuid.uuid4().hex[:6]}"
    first = _topic(broker, 2, prefix=prefix)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with _consumer(broker, group, metadata_max_age_ms=500) as c:
        c.subscribe(pattern=f"{prefix}-.*")
        assert _poll_until([c], lambda: _owned([c], first) == [{0, 1}])
        second = _topic(broker, 2, prefix=prefix)
        assert _poll_until([c], lambda: _owned([c], second) == [{0, 1}])


def test_ours_and_confluent_consumers_share_a_group(broker: MiniBroker) -> None:
    """KIP-848 interop: our member and librdkafka's (group.protocol=consumer) split one topic's partitions
    and consume every record between them."""
    ck = pytest.importorskip("confluent_kafka")
    topic = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:8]}"
    _produce(broker, topic, [str(i) for i in range(60)])
    ours = _consumer(broker, group)
    theirs = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                          "group.protocol": "consumer", "auto.offset.reset": "earliest"})  # fmt: skip
    got: list[str] = []
    try:
        ours.subscribe([topic])
        theirs.subscribe([topic])
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            for r in ours.poll(0.05):
                got.append(r.value.decode())
            m = theirs.poll(0.05)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
            mine = _owned([ours], topic)[0]
            their = {tp.partition for tp in theirs.assignment()}
            if len(got) >= 60 and mine and their and not mine & their and len(mine | their) == PARTITIONS:
                break
        assert mine and their and not mine & their and mine | their == set(range(PARTITIONS))
        assert sorted(got, key=int) == [str(i) for i in range(60)]
    finally:
        ours.close()
        theirs.close()


def test_async_consumer_with_consumer_protocol(broker: MiniBroker) -> None:
    """The async consumer wraps the same core: group.protocol=consumer gets an assignment and records."""
    from pykafka_client.aio import AsyncKafkaConsumer

    topic = _topic(broker, 2)
    _produce(broker, topic, [str(i) for i in range(10)], partitions=2)

    async def run() -> list[str]:
        got: list[str] = []
        c: AsyncKafkaConsumer[Any, Any] = AsyncKafkaConsumer({
            "bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "group.protocol": "consumer", "auto.offset.reset": "earliest"})  # fmt: skip
        try:
            await c.subscribe([topic])
            deadline = time.monotonic() + 30
            while len(got) < 10 and time.monotonic() < deadline:
                got.extend(r.value.decode() for r in await c.poll(0.1))
        finally:
            await c.close()
        return got

    assert sorted(asyncio.run(run()), key=int) == [str(i) for i in range(10)]


def test_admin_describes_consumer_groups_and_lists_by_type(broker: MiniBroker) -> None:
    """Java Admin.describeConsumerGroups: a consumer group (KIP-848) is described by ConsumerGroupDescribe
    (type consumer, group epoch, members with their epochs and assignments); a classic group by DescribeGroups.
    Admin.listGroups with a type filter (ListGroups v5 TypesFilter)."""
    topic = _topic(broker, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    classic_group = f"classic-{uuid.uuid4().hex[:8]}"
    with _consumer(broker, group) as c, KafkaConsumer({
            "bootstrap.servers": broker.bootstrap_servers, "group.id": classic_group,
            "auto.offset.reset": "earliest"}) as classic:  # fmt: skip
        c.subscribe([topic])
        classic.subscribe([topic])
        assert _poll_until([c, classic], lambda: _owned([c], topic) == [{0, 1}] and _owned([classic], topic) == [{0, 1}])
        _poll_until([c], lambda: False, timeout_s=2 * HEARTBEAT_INTERVAL_MS / 1000)  # acknowledged
        with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            described = admin.describe_consumer_groups([group, classic_group])
            mine = described[group]
            assert mine.type == "consumer" and mine.state == "Stable" and mine.group_epoch is not None
            [member] = mine.members
            assert member.member_epoch is not None and member.member_epoch > 0
            assert member.assignment == [TopicPartition(topic, 0), TopicPartition(topic, 1)]
            assert member.target_assignment == member.assignment
            assert described[classic_group].type == "classic" and described[classic_group].state == "Stable"
            consumer_groups = {g.group_id for g in admin.list_consumer_groups(types=["consumer"])}
            classic_groups = {g.group_id for g in admin.list_consumer_groups(types=["classic"])}
            assert group in consumer_groups and classic_group not in consumer_groups
            assert classic_group in classic_groups and group not in classic_groups
            listed = {g.group_id: g for g in admin.list_consumer_groups()}
            assert listed[group].type == "consumer" and listed[classic_group].type == "classic"


def _deny_describe(b: MiniBroker, topic: str) -> acl.AclBinding:
    """A DENY DESCRIBE ACL on ``topic`` for every client here (PLAINTEXT: User:ANONYMOUS); its binding."""
    deny = acl.AclBinding(acl.ResourcePattern(acl.ResourceType.TOPIC, topic),
                          acl.AccessControlEntry("User:ANONYMOUS", "*", acl.AclOperation.DESCRIBE,
                                                 acl.AclPermissionType.DENY))
    with AdminClient({"bootstrap.servers": b.bootstrap_servers}) as admin:
        admin.create_acls([deny], timeout=10)
    return deny


def _allow_again(b: MiniBroker, deny: acl.AclBinding) -> None:
    with AdminClient({"bootstrap.servers": b.bootstrap_servers}) as admin:
        admin.delete_acls([deny.to_filter()], timeout=10)


def _acl_broker() -> MiniBroker:
    return MiniBroker({"authorizer.class.name": STANDARD_AUTHORIZER, "allow.everyone.if.no.acl.found": "true"},
                      group_consumer_heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                      group_initial_rebalance_delay_ms=0)  # fmt: skip


def test_an_unauthorized_subscribed_topic_is_reported_by_poll_and_the_member_recovers() -> None:
    """Kafka's KafkaApis answers a ConsumerGroupHeartbeat whose subscribed topics the principal may not DESCRIBE
    with TOPIC_AUTHORIZATION_FAILED; Java's consumer reports it to the application (poll raises
    TopicAuthorizationException) and keeps its membership and heartbeats, so that it recovers once the ACL
    allows the topic: here the member keeps its partitions meanwhile and gets the new topic's once the DENY
    ACL is deleted."""
    with _acl_broker() as b:
        open_topic, secret = _topic(b, 2, "open"), _topic(b, 2, "secret")
        deny = _deny_describe(b, secret)
        c = _consumer(b, "g-" + uuid.uuid4().hex[:8])
        try:
            c.subscribe([open_topic])
            assert _poll_until([c], lambda: len(c.assignment()) == 2)
            epoch_before = c.group_metadata().generation_id
            c.subscribe([open_topic, secret])
            deadline = time.monotonic() + 30
            raised: TopicAuthorizationFailedError | None = None
            while raised is None and time.monotonic() < deadline:
                try:
                    c.poll(0.1)
                except TopicAuthorizationFailedError as e:
                    raised = e
            assert raised is not None, "poll() never reported the unauthorized topic"
            assert secret in str(raised)
            try:
                c.poll(0.1)
            except TopicAuthorizationFailedError:
                pass  # the heartbeat is retried after its backoff: a second failed one may be reported here too
            # not fatal: the member is still in the group with its partitions
            assert c.assignment() == {TopicPartition(open_topic, 0), TopicPartition(open_topic, 1)}
            assert c.group_metadata().generation_id >= epoch_before > 0
            _allow_again(b, deny)
            errors: list[BaseException] = []

            def all_four() -> bool:
                try:
                    c.poll(0.05)
                except TopicAuthorizationFailedError as e:  # a heartbeat answered before the ACL went
                    errors.append(e)
                return len(c.assignment()) == 4

            assert _poll_until([c], all_four), f"never got {secret}'s partitions; errors {errors}"
        finally:
            c.close(5)


def test_confluent_kafka_gets_topic_authorization_failed_and_recovers() -> None:
    """Our broker's TOPIC_AUTHORIZATION_FAILED to librdkafka (group.protocol=consumer): reported as a consume
    error, and the member gets its partitions once the DENY ACL is deleted, as against Kafka."""
    ck = pytest.importorskip("confluent_kafka")
    with _acl_broker() as b:
        open_topic, secret = _topic(b, 2, "open"), _topic(b, 2, "secret")
        deny = _deny_describe(b, secret)
        c = ck.Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "ck-" + uuid.uuid4().hex[:8],
                         "group.protocol": "consumer"})  # fmt: skip
        try:
            c.subscribe([open_topic, secret])
            deadline = time.monotonic() + 30
            error = None
            while error is None and time.monotonic() < deadline:
                m = c.poll(0.1)
                if m is not None and m.error() is not None:
                    error = m.error()
            assert error is not None and error.code() == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED
            assert secret in error.str()
            _allow_again(b, deny)
            deadline = time.monotonic() + 30
            while len(c.assignment()) < 4 and time.monotonic() < deadline:
                c.poll(0.1)
            assert {(tp.topic, tp.partition) for tp in c.assignment()} == {
                (t, p) for t in (open_topic, secret) for p in (0, 1)}
        finally:
            c.close()
