"""ACL authorization end to end against a real MiniBroker with
``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer``.

Every client connects over PLAINTEXT, so its principal is ``User:ANONYMOUS``; the tests drive allow and deny
through ACLs for that principal. The ``secured`` broker is prepared by a first start with
``super.users=User:ANONYMOUS`` (topics, plus ALTER and DESCRIBE on the cluster so the tests can manage ACLs) and
restarted on the same data directory without super users: from then on only ACLs decide, and the ACLs made
before the restart must still be there.

The expected answers are Kafka's documented ones (docs "Authorization and ACLs" / the operations table of
KIP-11 and its successors, KafkaApis): Metadata lists only topics the principal may DESCRIBE and answers
TOPIC_AUTHORIZATION_FAILED for a named topic it may not describe, whether it exists or not; Produce needs WRITE on
the topic; an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679);
consumer groups need READ on the group; transactional ids need DESCRIBE (FindCoordinator) and WRITE; CreateTopics
needs CREATE on the cluster or the topic; DESCRIBE_CONFIGS on the cluster for broker configs; DENY wins.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mini_broker.broker import MiniBroker
from mini_broker.security.authorizer import STANDARD_AUTHORIZER
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import ConfigResource, ConfigResourceType, NewTopic
from pykafka_client.aio.admin import AsyncAdminClient
from pykafka_client.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    InvalidRequestError,
    SecurityDisabledError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationError,
)
from pykafka_client.protocol.acl import (
    ANY_ACL,
    CLUSTER_NAME,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from tests.integration.cli.conftest import runner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ANON = "User:ANONYMOUS"
Op, Perm, RT, PT = AclOperation, AclPermissionType, ResourceType, PatternType
#: the ACLs the first (super user) start grants, so that the tests may manage ACLs afterwards
ADMIN_ACLS = [AclBinding(ResourcePattern(RT.CLUSTER, CLUSTER_NAME), AccessControlEntry(ANON, "*", op, Perm.ALLOW))
              for op in (Op.ALTER, Op.DESCRIBE)]
FAST = {"request.timeout.ms": 5000, "retry.backoff.ms": 50, "default.api.timeout.ms": 5000}
PRODUCER_FAST = {"request.timeout.ms": 5000, "retry.backoff.ms": 50, "max.block.ms": 5000, "delivery.timeout.ms": 10000}


def anon(rtype: ResourceType, name: str, op: AclOperation, perm: AclPermissionType = Perm.ALLOW,
         pattern: PatternType = PT.LITERAL, principal: str = ANON) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, "*", op, perm))


def broker_config(**extra: object) -> dict[str, object]:
    return {"authorizer.class.name": STANDARD_AUTHORIZER, "group.initial.rebalance.delay.ms": 0, **extra}


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[MiniBroker]:
    data = str(tmp_path / "data")
    with MiniBroker(broker_config(**{"super.users": ANON}), data_dir=data) as first:
        with AdminClient(bootstrap_servers=first.bootstrap_servers) as admin:
            admin.create_topics([NewTopic("orders", 2, 1), NewTopic("audit", 1, 1)], timeout=10)
            assert admin.create_acls(ADMIN_ACLS, timeout=10) == {b: None for b in ADMIN_ACLS}
    with MiniBroker(broker_config(), data_dir=data) as b:
        yield b


@pytest.fixture
def admin(secured: MiniBroker) -> Iterator[AdminClient]:
    with AdminClient({"bootstrap.servers": secured.bootstrap_servers, **FAST}) as a:
        yield a


def test_acls_survive_a_restart_and_only_they_decide(secured: MiniBroker, admin: AdminClient) -> None:
    assert sorted(admin.describe_acls(timeout=10), key=str) == sorted(ADMIN_ACLS, key=str)
    # no super user any more: no ACL on the topics, so they are not visible (not even their existence)
    assert admin.list_topics(timeout=10) == set()
    with pytest.raises(TopicAuthorizationFailedError):
        admin.describe_topics(["audit"], timeout=10)
    with pytest.raises(TopicAuthorizationFailedError):
        admin.describe_topics(["no-such-topic"], timeout=10)
    admin.create_acls([anon(RT.TOPIC, "orders", Op.DESCRIBE)], timeout=10)
    assert admin.list_topics(timeout=10) == {"orders"}
    assert len(admin.describe_topics(["orders"], timeout=10)["orders"].partitions) == 2


def test_produce_needs_write_and_deny_wins(secured: MiniBroker, admin: AdminClient) -> None:
    config = {"bootstrap.servers": secured.bootstrap_servers, "linger.ms": 0, **PRODUCER_FAST}
    with KafkaProducer(config) as producer, pytest.raises(TopicAuthorizationFailedError):
        producer.send("orders", b"not even DESCRIBE").result(15)
    # the topic is visible now, but an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some
    # topic (KIP-679): InitProducerId answers CLUSTER_AUTHORIZATION_FAILED
    admin.create_acls([anon(RT.TOPIC, "orders", Op.DESCRIBE)], timeout=10)
    with KafkaProducer(config) as producer, pytest.raises(ClusterAuthorizationFailedError):
        producer.send("orders", b"no write anywhere").result(15)
    admin.create_acls([anon(RT.TOPIC, "ord", Op.WRITE, pattern=PT.PREFIXED)], timeout=10)
    with KafkaProducer(config) as producer:
        assert producer.send("orders", b"allowed").result(15).offset == 0
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("audit", b"no write on audit").result(15)
    admin.create_acls([anon(RT.TOPIC, "orders", Op.WRITE, Perm.DENY, principal="User:*")], timeout=10)
    with KafkaProducer({**config, "enable.idempotence": False}) as producer, \
            pytest.raises(TopicAuthorizationFailedError):
        producer.send("orders", b"denied").result(15)


def test_consume_needs_read_on_topic_and_group(secured: MiniBroker, admin: AdminClient) -> None:
    admin.create_acls([anon(RT.TOPIC, "orders", Op.WRITE), anon(RT.TOPIC, "orders", Op.READ)], timeout=10)
    with KafkaProducer({"bootstrap.servers": secured.bootstrap_servers, **PRODUCER_FAST}) as producer:
        producer.send("orders", b"r1", partition=0).result(15)
    group = f"g-{uuid.uuid4().hex[:6]}"
    config = {"bootstrap.servers": secured.bootstrap_servers, "group.id": group, "auto.offset.reset": "earliest",
              **FAST}
    with KafkaConsumer(config) as consumer:
        consumer.subscribe(["orders"])
        with pytest.raises(GroupAuthorizationFailedError):
            for _ in range(20):
                consumer.poll(0.5)
    admin.create_acls([anon(RT.GROUP, "g-", Op.READ, pattern=PT.PREFIXED)], timeout=10)
    with KafkaConsumer(config) as consumer:
        consumer.subscribe(["orders"])
        values: list[bytes] = []
        for _ in range(40):
            values += [r.value for r in consumer.poll(0.5).records()]
            if values:
                break
        assert values == [b"r1"]
    # READ on the topic taken away: the fetch answers TOPIC_AUTHORIZATION_FAILED
    admin.delete_acls([anon(RT.TOPIC, "orders", Op.READ).to_filter()], timeout=10)
    with KafkaConsumer({**config, "group.id": group + "-2"}) as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        consumer.seek(TopicPartition("orders", 0), 0)
        with pytest.raises(TopicAuthorizationFailedError):
            for _ in range(20):
                consumer.poll(0.5)


def test_transactional_id_needs_write(secured: MiniBroker, admin: AdminClient) -> None:
    admin.create_acls([anon(RT.TOPIC, "orders", Op.WRITE)], timeout=10)
    tid = f"tx-{uuid.uuid4().hex[:6]}"
    config = {"bootstrap.servers": secured.bootstrap_servers, "transactional.id": tid, **PRODUCER_FAST}
    with KafkaProducer(config) as producer, pytest.raises(TransactionalIdAuthorizationError):
        producer.init_transactions(15)
    admin.create_acls([anon(RT.TRANSACTIONAL_ID, tid, Op.WRITE)], timeout=10)
    with KafkaProducer(config) as producer:
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.send("orders", b"in a transaction", partition=1).result(15)
        producer.commit_transaction(15)


def test_admin_operations_check_kafkas_operations(secured: MiniBroker, admin: AdminClient) -> None:
    with pytest.raises(TopicAuthorizationFailedError):
        admin.create_topics([NewTopic("new-a", 1, 1)], timeout=10)
    admin.create_acls([anon(RT.TOPIC, "new-", Op.CREATE, pattern=PT.PREFIXED)], timeout=10)
    admin.create_topics([NewTopic("new-a", 1, 1)], timeout=10)
    with pytest.raises(TopicAuthorizationFailedError):
        admin.delete_topics(["audit"], timeout=10)
    with pytest.raises(ClusterAuthorizationFailedError):
        admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "0")], timeout=10)
    admin.create_acls([anon(RT.CLUSTER, CLUSTER_NAME, Op.ALTER_CONFIGS)], timeout=10)  # implies DESCRIBE_CONFIGS
    assert admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "0")], timeout=10)
    assert admin.describe_log_dirs(timeout=10)  # DESCRIBE on the cluster was granted
    # InvalidRequest for what Kafka refuses, the other creations still made
    bad, good = anon(RT.TOPIC, "x", Op.READ, pattern=PT.MATCH), anon(RT.GROUP, "g", Op.READ)
    with pytest.raises(InvalidRequestError):
        admin.create_acls([bad, good], timeout=10)
    assert admin.describe_acls(AclBindingFilter(ResourcePatternFilter(RT.GROUP)), timeout=10) == [good]


def test_managing_acls_needs_alter_on_the_cluster(secured: MiniBroker, admin: AdminClient) -> None:
    removed = admin.delete_acls([AclBindingFilter(ResourcePatternFilter(RT.CLUSTER),
                                                  AccessControlEntryFilter(operation=Op.ALTER))], timeout=10)
    assert list(removed.values()) == [[ADMIN_ACLS[0]]]
    with pytest.raises(ClusterAuthorizationFailedError):
        admin.create_acls([anon(RT.TOPIC, "orders", Op.READ)], timeout=10)
    assert admin.describe_acls(timeout=10) == [ADMIN_ACLS[1]]  # DESCRIBE on the cluster is still granted


def test_host_of_an_acl_is_the_clients_ip(secured: MiniBroker, admin: AdminClient) -> None:
    """Kafka matches an ACL's host against the client's IP address (``*``: any)."""
    def on(host: str, perm: AclPermissionType) -> AclBinding:
        return AclBinding(ResourcePattern(RT.TOPIC, "orders"), AccessControlEntry(ANON, host, Op.DESCRIBE, perm))

    admin.create_acls([on("10.9.9.9", Perm.ALLOW)], timeout=10)
    assert admin.list_topics(timeout=10) == set()
    admin.create_acls([on("127.0.0.1", Perm.ALLOW), on("10.9.9.9", Perm.DENY)], timeout=10)
    assert admin.list_topics(timeout=10) == {"orders"}
    admin.create_acls([on("127.0.0.1", Perm.DENY)], timeout=10)
    assert admin.list_topics(timeout=10) == set()


def test_acl_apis_without_an_authorizer_answer_security_disabled() -> None:
    with MiniBroker() as b, AdminClient(bootstrap_servers=b.bootstrap_servers) as admin:
        with pytest.raises(SecurityDisabledError):
            admin.describe_acls(timeout=10)
        with pytest.raises(SecurityDisabledError):
            admin.create_acls([anon(RT.TOPIC, "t", Op.READ)], timeout=10)
        # and without an authorizer everything stays allowed
        admin.create_topics([NewTopic("free", 1, 1)], timeout=10)


def test_async_admin_create_describe_delete(secured: MiniBroker) -> None:
    binding = anon(RT.TOPIC, "orders", Op.READ)

    async def main() -> None:
        async with AsyncAdminClient({"bootstrap.servers": secured.bootstrap_servers, **FAST}) as admin:
            assert await admin.create_acls([binding], timeout=10) == {binding: None}
            assert binding in await admin.describe_acls(ANY_ACL, timeout=10)
            removed = await admin.delete_acls([binding.to_filter()], timeout=10)
            assert removed == {binding.to_filter(): [binding]}

    anyio.run(main)


def test_confluent_kafka_admin_and_clients(secured: MiniBroker, admin: AdminClient) -> None:
    ck = pytest.importorskip("confluent_kafka")
    cka = pytest.importorskip("confluent_kafka.admin")
    client = cka.AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    binding = cka.AclBinding(cka.ResourceType.TOPIC, "orders", cka.ResourcePatternType.PREFIXED, ANON, "*",
                             cka.AclOperation.WRITE, cka.AclPermissionType.ALLOW)
    for future in client.create_acls([binding], request_timeout=10).values():
        assert future.result(15) is None
    ours = admin.describe_acls(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders", PT.PREFIXED)), timeout=10)
    assert ours == [anon(RT.TOPIC, "orders", Op.WRITE, pattern=PT.PREFIXED)]
    everything = cka.AclBindingFilter(cka.ResourceType.ANY, None, cka.ResourcePatternType.ANY, None, None,
                                      cka.AclOperation.ANY, cka.AclPermissionType.ANY)
    described = client.describe_acls(everything, request_timeout=10).result(15)
    assert binding in described and len(described) == 3
    # librdkafka's producer: a topic without WRITE fails the delivery with TOPIC_AUTHORIZATION_FAILED, no retry loop
    errors: list[object] = []
    producer = ck.Producer({"bootstrap.servers": secured.bootstrap_servers, "message.timeout.ms": 10000})
    producer.produce("audit", b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.produce("orders", b"y", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    codes = sorted(e.code() if e is not None else 0 for e in errors)  # type: ignore[attr-defined]
    assert codes == [0, ck.KafkaError.TOPIC_AUTHORIZATION_FAILED]
    # librdkafka's consumer: READ on the topic but not the group -> GROUP_AUTHORIZATION_FAILED
    admin.create_acls([anon(RT.TOPIC, "orders", Op.READ)], timeout=10)
    consumer = ck.Consumer({"bootstrap.servers": secured.bootstrap_servers, "group.id": "ck-group",
                            "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["orders"])
        seen = None
        for _ in range(40):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is not None:
                seen = msg.error().code()
                break
        assert seen == ck.KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()
    deleted = client.delete_acls([everything], request_timeout=10)
    assert len(next(iter(deleted.values())).result(15)) == 4
    with pytest.raises(ClusterAuthorizationFailedError):
        admin.describe_acls(timeout=10)


def test_kafka_python_admin(secured: MiniBroker) -> None:
    ka = pytest.importorskip("kafka.admin")
    client = ka.KafkaAdminClient(bootstrap_servers=secured.bootstrap_servers, request_timeout_ms=10000)
    try:
        acl = ka.ACL(principal=ANON, host="*", operation=ka.ACLOperation.READ,
                     permission_type=ka.ACLPermissionType.ALLOW,
                     resource_pattern=ka.ResourcePattern(ka.ResourceType.GROUP, "kp-", ka.ACLResourcePatternType.PREFIXED))
        result = client.create_acls([acl])
        assert len(result["succeeded"]) == 1 and not result["failed"]
        group_filter = ka.ACLFilter(principal=None, host="*", operation=ka.ACLOperation.ANY,
                                    permission_type=ka.ACLPermissionType.ANY,
                                    resource_pattern=ka.ResourcePatternFilter(ka.ResourceType.GROUP, None,
                                                                             ka.ACLResourcePatternType.ANY))
        acls, error = client.describe_acls(group_filter)
        assert error.errno == 0 and [(a.principal, a.resource_pattern.resource_name) for a in acls] == [(ANON, "kp-")]
        [(_, affected, error)] = client.delete_acls([group_filter])
        assert error.errno == 0 and len(affected) == 1
    finally:
        client.close()


def test_cli_acls_add_list_remove(secured: MiniBroker) -> None:
    def pykafka(*args: str) -> subprocess.CompletedProcess[bytes]:
        return runner(secured)(*args)

    added = pykafka("acls", "add", "--allow-principal", "User:alice", "--operation", "Read", "--operation",
                    "describe-configs", "--topic", "orders", "--group", "billing")
    assert added.returncode == 0, added.stderr
    assert b"Added 4 ACLs" in added.stderr
    listed = pykafka("acls", "list", "--topic", "orders", "--resource-pattern-type", "match", "--output", "json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert sorted(r["operation"] for r in rows) == ["DESCRIBE_CONFIGS", "READ"]
    assert {r["principal"] for r in rows} == {"User:alice"}
    removed = pykafka("acls", "remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
    assert removed.returncode == 0, removed.stderr
    assert b"Removed 1 ACL" in removed.stderr
    listed = pykafka("acls", "list", "--principal", "User:alice", "--output", "json")
    assert sorted((r["resource_type"], r["operation"]) for r in json.loads(listed.stdout)) == [
        ("GROUP", "DESCRIBE_CONFIGS"), ("GROUP", "READ"), ("TOPIC", "DESCRIBE_CONFIGS")]
    bad = pykafka("acls", "add", "--allow-principal", "alice", "--operation", "Read", "--topic", "t")
    assert bad.returncode == 2 and b"User:alice" in bad.stderr
