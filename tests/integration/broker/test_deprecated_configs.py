"""Kafka 3.x's deprecated topic configs against a real MiniBroker with our AdminClient and the wire protocol:
``message.format.version`` is accepted at CreateTopics, AlterConfigs and IncrementalAlterConfigs and ignored
(records stay v2: headers survive), ``message.timestamp.difference.max.ms`` is accepted and bounds timestamps,
and DescribeConfigs shows them as Kafka 3.x does."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, ConsumerRecord, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    NewTopic,
)
from pykafka_client.errors import InvalidConfigurationError, InvalidTimestampError
from pykafka_client.protocol.messages import AlterConfigsRequest, DescribeConfigsRequest
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

NONE, INVALID_CONFIG = 0, 40
TOPIC = 2
MFV = "message.format.version"
DIFF = "message.timestamp.difference.max.ms"


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker(num_network_threads=1, num_io_threads=2) as b:
        yield b


@pytest.fixture
def admin(broker: MiniBroker) -> Iterator[AdminClient]:
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as a:
        yield a


def describe(admin: AdminClient, topic: str) -> dict[str, ConfigEntry]:
    res = ConfigResource(ConfigResourceType.TOPIC, topic)
    return admin.describe_configs([res], timeout=10)[res]


def test_create_topics_with_message_format_version_and_records_stay_v2(broker: MiniBroker, admin: AdminClient) -> None:
    admin.create_topics([NewTopic("old-format", 1, 1, configs={MFV: "0.10.0"})], timeout=10)
    entry = describe(admin, "old-format")[MFV]
    assert (entry.value, entry.source, entry.is_read_only) == ("0.10.0", ConfigSource.DYNAMIC_TOPIC_CONFIG, False)
    # ignored as Kafka 3.x ignores it: a v2-only feature (headers) still round-trips
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        p.send("old-format", b"v", key=b"k", headers=[("h", b"1")]).result(30)
    with KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"}) as c:
        c.assign([TopicPartition("old-format", 0)])
        deadline = time.monotonic() + 30
        records: list[ConsumerRecord[bytes | None, bytes | None]] = []
        while not records and time.monotonic() < deadline:
            records = list(c.poll(0.5))
    assert [(r.value, list(r.headers)) for r in records] == [(b"v", [("h", b"1")])]


def test_incremental_alter_configs_sets_and_deletes_message_format_version(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("inc-format", 1, 1)], timeout=10)
    entry = describe(admin, "inc-format")[MFV]
    assert (entry.value, entry.source) == ("3.0-IV1", ConfigSource.DEFAULT_CONFIG)
    res = ConfigResource(ConfigResourceType.TOPIC, "inc-format")
    admin.incremental_alter_configs({res: [AlterConfigOp(MFV, "0.10.0"), AlterConfigOp(DIFF, "3600000")]}, timeout=10)
    configs = describe(admin, "inc-format")
    assert (configs[MFV].value, configs[MFV].source) == ("0.10.0", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert (configs[DIFF].value, configs[DIFF].source) == ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    admin.incremental_alter_configs({res: [AlterConfigOp(MFV, None, AlterConfigOpType.DELETE)]}, timeout=10)
    assert describe(admin, "inc-format")[MFV].value == "3.0-IV1"
    with pytest.raises(InvalidConfigurationError, match=r"Version 0\.7 is not a valid version"):
        admin.incremental_alter_configs({res: [AlterConfigOp(MFV, "0.7")]}, timeout=10)


def test_alter_configs_and_describe_with_synonyms_and_documentation(broker: MiniBroker, admin: AdminClient) -> None:
    admin.create_topics([NewTopic("legacy-alter", 1, 1)], timeout=10)
    R, C = AlterConfigsRequest.AlterConfigsResource, AlterConfigsRequest.AlterableConfig
    with Conn(broker) as c:
        resp = c.call(AlterConfigsRequest(resources=[R(resource_type=TOPIC, resource_name="legacy-alter", configs=[
            C(name=MFV, value="0.10.0"), C(name=DIFF, value="60000")])], validate_only=False), 2)
        assert (resp.responses[0].error_code, resp.responses[0].error_message) == (NONE, None)
        bad = c.call(AlterConfigsRequest(resources=[R(resource_type=TOPIC, resource_name="legacy-alter", configs=[
            C(name=MFV, value="banana")])], validate_only=False), 2)
        assert bad.responses[0].error_code == INVALID_CONFIG
        assert bad.responses[0].error_message.startswith(
            "Invalid value banana for configuration message.format.version: Version banana is not a valid version")
        described = c.call(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=TOPIC, resource_name="legacy-alter", configuration_keys=[MFV, DIFF])],
            include_synonyms=True, include_documentation=True), 4)
    entries = {e.name: e for e in described.results[0].configs}
    mfv, diff = entries[MFV], entries[DIFF]
    assert (mfv.value, mfv.config_source, mfv.read_only, mfv.config_type) == ("0.10.0", 1, False, 2)  # STRING
    assert [(s.name, s.value, s.source) for s in mfv.synonyms] == [
        (MFV, "0.10.0", 1), ("log.message.format.version", "3.0-IV1", 5)]
    assert mfv.documentation.startswith("[DEPRECATED]")
    assert (diff.value, diff.config_source, diff.config_type) == ("60000", 1, 5)  # LONG
    assert [(s.name, s.source) for s in diff.synonyms] == [(DIFF, 1), ("log.message.timestamp.difference.max.ms", 5)]
    assert diff.documentation.startswith("[DEPRECATED]")
    # the legacy AlterConfigs replaced the whole set: the bad request changed nothing
    assert describe(admin, "legacy-alter")[MFV].value == "0.10.0"


def test_message_timestamp_difference_max_ms_bounds_create_time(broker: MiniBroker, admin: AdminClient) -> None:
    admin.create_topics([NewTopic("ts-diff", 1, 1, configs={DIFF: "60000"})], timeout=10)
    now = int(time.time() * 1000)
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "retries": 0}) as p:
        assert p.send("ts-diff", b"fresh", timestamp=now).result(30).offset == 0
        with pytest.raises(InvalidTimestampError):
            p.send("ts-diff", b"an hour old", timestamp=now - 3_600_000).result(30)
