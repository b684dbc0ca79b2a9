"""confluent-kafka (librdkafka) against mini_broker with Kafka 3.x's deprecated topic configs:
``message.format.version`` accepted by CreateTopics, AlterConfigs and IncrementalAlterConfigs and ignored (records
stay v2), ``message.timestamp.difference.max.ms`` accepted and enforced, both described as Kafka 3.x does."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mini_broker.broker import MiniBroker

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

MFV = "message.format.version"
DIFF = "message.timestamp.difference.max.ms"


def _admin(broker: MiniBroker) -> Any:
    return admin_mod.AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _describe(admin: Any, topic: str) -> dict[str, Any]:
    res = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, topic)
    return admin.describe_configs([res])[res].result(15)  # type: ignore[no-any-return]


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_create_alter_and_describe_message_format_version(mini_broker: MiniBroker) -> None:
    admin = _admin(mini_broker)
    admin.create_topics([admin_mod.NewTopic("ck-mfv", 1, 1, config={MFV: "0.10.0"})])["ck-mfv"].result(15)
    entry = _describe(admin, "ck-mfv")[MFV]
    assert (entry.value, entry.source, entry.is_read_only) == (
        "0.10.0", admin_mod.ConfigSource.DYNAMIC_TOPIC_CONFIG.value, False)
    assert not entry.is_default

    admin.create_topics([admin_mod.NewTopic("ck-mfv-alter", 1, 1)])["ck-mfv-alter"].result(15)
    entry = _describe(admin, "ck-mfv-alter")[MFV]
    assert (entry.value, entry.source) == ("3.0-IV1", admin_mod.ConfigSource.DEFAULT_CONFIG.value)
    # the legacy AlterConfigs
    res = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, "ck-mfv-alter", set_config={MFV: "0.10.0"})
    admin.alter_configs([res])[res].result(15)
    assert _describe(admin, "ck-mfv-alter")[MFV].value == "0.10.0"
    # IncrementalAlterConfigs
    res = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, "ck-mfv-alter", incremental_configs=[
        admin_mod.ConfigEntry(MFV, "2.8", incremental_operation=admin_mod.AlterConfigOpType.SET),
        admin_mod.ConfigEntry(DIFF, "60000", incremental_operation=admin_mod.AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(15)
    configs = _describe(admin, "ck-mfv-alter")
    assert (configs[MFV].value, configs[DIFF].value) == ("2.8", "60000")
    assert configs[DIFF].source == admin_mod.ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    # an unknown version is still INVALID_CONFIG
    res = admin_mod.ConfigResource(admin_mod.ResourceType.TOPIC, "ck-mfv-alter", incremental_configs=[
        admin_mod.ConfigEntry(MFV, "0.7", incremental_operation=admin_mod.AlterConfigOpType.SET)])
    with pytest.raises(ck.KafkaException) as e:
        admin.incremental_alter_configs([res])[res].result(15)
    assert e.value.args[0].code() == ck.KafkaError.INVALID_CONFIG


def test_records_stay_v2_and_difference_bounds_timestamps(mini_broker: MiniBroker) -> None:
    admin = _admin(mini_broker)
    admin.create_topics([admin_mod.NewTopic("ck-deprecated", 1, 1, config={MFV: "0.9.0", DIFF: "60000"})])[
        "ck-deprecated"].result(15)
    results: list[Any] = []
    p = ck.Producer({"bootstrap.servers": mini_broker.bootstrap_servers, "linger.ms": 0, "retries": 0})
    now = int(time.time() * 1000)
    p.produce("ck-deprecated", value=b"fresh", headers=[("h", b"1")], timestamp=now,
              on_delivery=lambda err, msg: results.append(err))
    p.flush(30)
    p.produce("ck-deprecated", value=b"an hour old", timestamp=now - 3_600_000,
              on_delivery=lambda err, msg: results.append(err))
    p.flush(30)
    assert results[0] is None
    assert results[1] is not None and results[1].code() == ck.KafkaError.INVALID_TIMESTAMP

    c = ck.Consumer({"bootstrap.servers": mini_broker.bootstrap_servers, "group.id": "ck-deprecated-reader",
                     "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition("ck-deprecated", 0, 0)])
        msg = None
        deadline = time.monotonic() + 30
        while msg is None and time.monotonic() < deadline:
            msg = c.poll(0.5)
        assert msg is not None and msg.error() is None
        # message.format.version=0.9.0 is ignored: headers (a v2-only feature) and CreateTime survive
        assert (msg.value(), msg.headers(), msg.timestamp()) == (b"fresh", [("h", b"1")], (ck.TIMESTAMP_CREATE_TIME, now))
    finally:
        c.close()
