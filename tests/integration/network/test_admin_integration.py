"""AdminClient against independent Kafka-compatible brokers: Tansu and noida-db."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pykafka_client import AdminClient, TopicPartition
from pykafka_client.admin import (
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from pykafka_client.errors import (
    ConfigurationError,
    InvalidPartitionsError,
    KafkaTimeoutError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from pykafka_client.protocol.api_keys import ApiKey
from tests.integration.tansu import TansuBroker

pytestmark = pytest.mark.integration


@pytest.fixture(params=["tansu_broker", "noida_broker", "mini_broker_server"])
def broker(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


@pytest.fixture
def admin(broker: Any) -> Iterator[AdminClient]:
    with AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "admin-it"}) as a:
        yield a


def test_describe_cluster(admin: AdminClient, broker: Any) -> None:
    d = admin.describe_cluster(timeout=10)
    assert d.nodes and d.nodes[0].port == broker.port


def test_create_describe_list_offsets_delete(admin: AdminClient) -> None:
    created = admin.create_topics([NewTopic("orders", 3, 1, configs={"cleanup.policy": "delete"})], timeout=10)
    assert created["orders"].num_partitions == 3
    desc = admin.describe_topics(["orders"], timeout=10)["orders"]
    assert [p.partition for p in desc.partitions] == [0, 1, 2]
    assert all(p.leader is not None for p in desc.partitions)
    assert "orders" in admin.list_topics(timeout=10)
    offsets = admin.list_offsets(
        {
            ("orders", 0): OffsetSpec.earliest(),
            ("orders", 1): OffsetSpec.latest(),
            ("orders", 2): OffsetSpec.for_timestamp(int(time.time() * 1000) - 60_000),
        },
        timeout=10,
    )
    assert offsets[TopicPartition("orders", 0)].offset == 0
    assert offsets[TopicPartition("orders", 1)].offset == 0
    assert offsets[TopicPartition("orders", 2)].offset in (-1, 0)
    configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "orders")], timeout=10)
    assert isinstance(configs[ConfigResource(ConfigResourceType.TOPIC, "orders")], dict)
    with pytest.raises(TopicExistsError):
        admin.create_topics([NewTopic("orders", 1, 1)], timeout=10)
    admin.delete_topics(["orders"], timeout=10)
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.describe_topics(["orders"], timeout=10)


def test_unknown_config_key_names_the_key() -> None:
    with pytest.raises(ConfigurationError, match=r"no\.such\.key"):
        AdminClient({"bootstrap.servers": "127.0.0.1:1", "no.such.key": 1})


def test_timeout_when_no_broker_listens() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}) as a:
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError):
            a.describe_cluster(timeout=0.5)
        assert time.monotonic() - started < 5
    with pytest.raises(Exception, match="closed"):
        a.describe_cluster(timeout=0.1)


def test_create_partitions(admin: AdminClient, broker: Any) -> None:
    admin.create_topics([NewTopic("grow", 1, 1)], timeout=10)
    versions = admin.network_client.api_versions
    node_versions = [versions.get(n) for n in versions.nodes()]
    if not any(v is not None and v.api_version(ApiKey.CREATE_PARTITIONS) for v in node_versions):
        # Tansu does not implement CreatePartitions: the request never hits the wire.
        with pytest.raises(UnsupportedVersionError):
            admin.create_partitions({"grow": NewPartitions(3)}, timeout=10)
        return
    admin.create_partitions({"grow": NewPartitions(3)}, timeout=10)
    deadline = time.monotonic() + 10
    while len(admin.describe_topics(["grow"], timeout=10)["grow"].partitions) != 3:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    with pytest.raises(InvalidPartitionsError):
        admin.create_partitions({"grow": NewPartitions(2)}, timeout=10)


def test_admin_survives_broker_restart(tansu_broker: TansuBroker) -> None:
    with AdminClient(
        {"bootstrap.servers": tansu_broker.bootstrap, "reconnect.backoff.max.ms": 200, "request.timeout.ms": 2000}
    ) as a:
        before = a.describe_cluster(timeout=10)
        tansu_broker.stop()
        with pytest.raises(KafkaTimeoutError):
            a.describe_cluster(timeout=0.5)
        tansu_broker.start()
        after = a.describe_cluster(timeout=20)
        assert after.cluster_id == before.cluster_id and after.nodes[0].port == tansu_broker.port


def test_list_offsets_max_timestamp(admin: AdminClient, broker: Any) -> None:
    if isinstance(broker, TansuBroker):
        pytest.skip("Tansu drops the connection on ListOffsets with timestamp -3 (MAX_TIMESTAMP)")
    admin.create_topics([NewTopic("maxts", 1, 1)], timeout=10)
    out = admin.list_offsets({("maxts", 0): OffsetSpec.max_timestamp()}, timeout=10)
    assert out[TopicPartition("maxts", 0)].offset in (-1, 0)
