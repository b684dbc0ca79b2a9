"""AlterConfigs and IncrementalAlterConfigs answer each resource on its own (Kafka's per-resource errors)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.protocol.messages import (
    AlterConfigsRequest,
    CreateTopicsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG, INVALID_REQUEST = 0, 3, 40, 42
TOPIC, BROKER = 2, 4


@pytest.fixture(scope="module")
def conn() -> Iterator[Conn]:
    with MiniBroker() as broker:
        c = Conn(broker)
        t = CreateTopicsRequest.CreatableTopic
        resp = c.call(CreateTopicsRequest(topics=[t(name="cfg", num_partitions=1, replication_factor=1)],
                                          timeout_ms=5000), 5)
        assert resp.topics[0].error_code == NONE
        yield c
        c.close()


def _retention(c: Conn) -> str | None:
    r = DescribeConfigsRequest.DescribeConfigsResource
    resp = c.call(DescribeConfigsRequest(resources=[r(resource_type=TOPIC, resource_name="cfg",
                                                      configuration_keys=["retention.ms"])]), 4)
    return resp.results[0].configs[0].value  # type: ignore[no-any-return]


def test_incremental_per_resource_errors_and_only_good_resources_apply(conn: Conn) -> None:
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    C = IncrementalAlterConfigsRequest.AlterableConfig

    def res(name: str, *configs: tuple[str, str | None], rtype: int = TOPIC) -> object:
        return R(resource_type=rtype, resource_name=name,
                 configs=[C(name=k, config_operation=0, value=v) for k, v in configs])

    resources = [
        res("cfg", ("retention.ms", "12345")),
        res("missing", ("retention.ms", "1")),
        res("dup", ("retention.ms", "1")), res("dup", ("retention.ms", "2")),
        res("1", ("x", "y"), rtype=BROKER),
    ]
    resp = conn.call(IncrementalAlterConfigsRequest(resources=resources, validate_only=False), 1)  # type: ignore[arg-type]
    codes = [(r.resource_name, r.error_code) for r in resp.responses]
    assert codes == [("cfg", NONE), ("missing", UNKNOWN_TOPIC_OR_PARTITION), ("dup", INVALID_REQUEST),
                     ("dup", INVALID_REQUEST), ("1", INVALID_REQUEST)]
    assert _retention(conn) == "12345"

    bad = [res("cfg", ("retention.ms", "not-a-number")), res("cfg2", ("retention.ms", "1"), ("retention.ms", "2"))]
    resp = conn.call(IncrementalAlterConfigsRequest(resources=bad, validate_only=False), 1)  # type: ignore[arg-type]
    assert [r.error_code for r in resp.responses] == [INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION]
    assert _retention(conn) == "12345"


def test_alter_configs_duplicate_keys_validate_only_and_replace(conn: Conn) -> None:
    R = AlterConfigsRequest.AlterConfigsResource
    C = AlterConfigsRequest.AlterableConfig
    dup = R(resource_type=TOPIC, resource_name="cfg",
            configs=[C(name="retention.ms", value="1"), C(name="retention.ms", value="2")])
    resp = conn.call(AlterConfigsRequest(resources=[dup], validate_only=False), 2)
    assert resp.responses[0].error_code == INVALID_REQUEST and "duplicate config keys" in resp.responses[0].error_message

    one = R(resource_type=TOPIC, resource_name="cfg", configs=[C(name="retention.ms", value="777")])
    resp = conn.call(AlterConfigsRequest(resources=[one], validate_only=True), 2)
    assert resp.responses[0].error_code == NONE
    assert _retention(conn) != "777"  # validate_only changes nothing
    resp = conn.call(AlterConfigsRequest(resources=[one], validate_only=False), 2)
    assert resp.responses[0].error_code == NONE
    assert _retention(conn) == "777"
