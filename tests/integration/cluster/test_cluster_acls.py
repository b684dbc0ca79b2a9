"""ACLs on a 3-broker MiniCluster with the authorizer on: replicated with the controller's metadata image (Kafka
KRaft: ACL records in the metadata log, applied by every broker), so an ACL created through one broker is
enforced by all of them, survives a restart of the whole cluster (the controller's image is persisted) and a
broker's failover.

Inter-broker traffic (replica fetches, transaction verification and markers) uses PLAINTEXT connections whose
principal is User:ANONYMOUS; as in Kafka, the brokers' principal must be a super user or have CLUSTER_ACTION on
the cluster. Here it has CLUSTER_ACTION only: acks=all produce to a topic with 3 replicas then proves the
replication keeps working under the authorizer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_broker.cluster.mini_cluster import MiniCluster
from mini_broker.security.authorizer import STANDARD_AUTHORIZER
from pykafka_client import AdminClient, KafkaProducer
from pykafka_client.admin import NewTopic
from pykafka_client.errors import TopicAuthorizationFailedError
from pykafka_client.protocol.acl import (
    CLUSTER_NAME,
    AclOperation,
    ResourceType,
)
from pykafka_client.protocol.messages import DescribeAclsRequest, MetadataRequest
from tests.integration.broker.test_acl_apis_wire import ANON, grant
from tests.integration.cluster.helpers import conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

Op, RT = AclOperation, ResourceType


ACLS = [
    grant(RT.CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION),  # the brokers' own connections (replication, markers)
    grant(RT.CLUSTER, CLUSTER_NAME, Op.DESCRIBE),        # to list ACLs
    grant(RT.TOPIC, "repl", Op.WRITE),
]
OVERRIDES = {"authorizer.class.name": STANDARD_AUTHORIZER, "min.insync.replicas": 2,
             "group.initial.rebalance.delay.ms": 0}


def acls_seen_by(cluster: MiniCluster, broker_id: int) -> list[tuple[int, str, str, int]]:
    with conn(cluster, broker_id) as c:
        r = c.call(DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                       principal_filter=None, host_filter=None, operation=1, permission_type=1), 3)
    assert r.error_code == 0, r.error_message
    return sorted((res.resource_type, res.resource_name, a.principal, a.operation) for res in r.resources
                  for a in res.acls)


def test_acls_are_cluster_metadata(tmp_path: Path) -> None:
    data = str(tmp_path / "cluster")
    expected = sorted((int(b.pattern.resource_type), b.pattern.name, b.entry.principal, int(b.entry.operation))
                      for b in ACLS)
    with MiniCluster(3, data_dir=data, overrides={**OVERRIDES, "super.users": ANON}) as cluster:
        with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
            admin.create_topics([NewTopic("repl", 1, 3), NewTopic("other", 1, 3)], timeout=30)
            assert admin.create_acls(ACLS, timeout=30) == {b: None for b in ACLS}
        # the answer waits for the other brokers only up to the controller's propagation bound (5 s), which a
        # loaded box can pass: wait until every broker applied the change, then each answers from its own copy
        cluster.wait_for_metadata()
        # created through one broker, known to every broker (each answers from its own copy)
        for broker_id in cluster.brokers:
            assert acls_seen_by(cluster, broker_id) == expected
    # the whole cluster restarted without super users: the ACLs came back with the controller's image
    with MiniCluster(3, data_dir=data, overrides=OVERRIDES) as cluster:
        for broker_id in cluster.brokers:
            assert acls_seen_by(cluster, broker_id) == expected
        config = {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "max.block.ms": 20000,
                  "delivery.timeout.ms": 60000}
        with KafkaProducer(config) as producer:
            # on all three replicas (min.insync.replicas=2): the followers' fetches were authorized
            assert producer.send("repl", b"replicated").result(60).offset == 0
            with pytest.raises(TopicAuthorizationFailedError):
                producer.send("other", b"no WRITE here").result(30)
        leader = cluster.leader("repl", 0)
        cluster.kill(leader)
        cluster.wait_for_leader("repl", 0, not_in=[leader])
        with KafkaProducer(config) as producer:
            assert producer.send("repl", b"after failover").result(60).offset == 1
        cluster.restart(leader)
        assert acls_seen_by(cluster, leader) == expected
        with conn(cluster, leader) as c:
            md = c.call(MetadataRequest(topics=None), 12)
        assert [t.name for t in md.topics] == ["repl"]  # DESCRIBE (implied by WRITE) on repl only
