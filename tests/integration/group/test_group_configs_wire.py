"""KIP-848 group configs over raw frames against a real MiniBroker: IncrementalAlterConfigs and DescribeConfigs on
a GROUP resource (type 32), validated against the broker's ``group.consumer.min/max.*`` bounds (INVALID_CONFIG),
applied to the group's heartbeats, and kept across a restart (a record in ``__consumer_offsets``)."""

from __future__ import annotations

from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    CreateTopicsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

GROUP_RESOURCE = 32
SET, DELETE = 0, 1
INVALID_CONFIG = 40
GROUP_CONFIG_SOURCE, DEFAULT_CONFIG = 8, 5


def _alter(c: Conn, group: str, *configs: tuple[str, int, str | None]) -> Any:
    r = c.call(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group, configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name=n, config_operation=op, value=v)
            for n, op, v in configs])], validate_only=False), 1)
    return r.responses[0]


def _describe(c: Conn, group: str) -> dict[str, tuple[str, int]]:
    r = c.call(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=None)], include_synonyms=False,
        include_documentation=False), 4)
    assert r.results[0].error_code == 0
    # the share.* keys are the share groups' (tests/integration/share)
    return {e.name: (e.value, e.config_source) for e in r.results[0].configs if not e.name.startswith("share.")}


def test_group_configs_are_validated_applied_and_kept_across_a_restart(tmp_path: Any) -> None:
    def start() -> MiniBroker:
        return MiniBroker(data_dir=str(tmp_path), num_network_threads=1, num_io_threads=2)

    with start() as b, Conn(b, client_id="wire") as c:
        c.call(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
            name="gc", num_partitions=1, replication_factor=1)]), 5)
        assert _describe(c, "g1") == {"consumer.heartbeat.interval.ms": ("5000", DEFAULT_CONFIG),
                                      "consumer.session.timeout.ms": ("45000", DEFAULT_CONFIG)}
        bad = _alter(c, "g1", ("consumer.session.timeout.ms", SET, "1000"))
        assert bad.error_code == INVALID_CONFIG and "group.consumer.min.session.timeout.ms" in bad.error_message
        assert _alter(c, "g1", ("consumer.heartbeat.interval.ms", SET, "6000")).error_code == 0
        assert _describe(c, "g1")["consumer.heartbeat.interval.ms"] == ("6000", GROUP_CONFIG_SOURCE)
        hb = c.call(ConsumerGroupHeartbeatRequest(group_id="g1", member_id="m1", member_epoch=0,
                                                  rebalance_timeout_ms=5000, subscribed_topic_names=["gc"],
                                                  topic_partitions=[]), 1)
        assert hb.error_code == 0 and hb.heartbeat_interval_ms == 6000
    with start() as b, Conn(b, client_id="wire") as c:
        assert _describe(c, "g1")["consumer.heartbeat.interval.ms"] == ("6000", GROUP_CONFIG_SOURCE)
        assert _alter(c, "g1", ("consumer.heartbeat.interval.ms", DELETE, None)).error_code == 0
        assert _describe(c, "g1")["consumer.heartbeat.interval.ms"] == ("5000", DEFAULT_CONFIG)
