"""Error text is not doubled (issue 9 item 6): an ``error_message`` on the wire carries only the message.

The error code is its own field, and a client prints ``[Error <code>] <NAME>: <message>``; a message that
already held ``[Error 37] INVALID_PARTITIONS: ...`` (``str(exc)`` of a broker error) came out twice.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    IncrementalAlterConfigsRequest,
)
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def conn() -> Iterator[Conn]:
    with MiniBroker() as broker, Conn(broker) as c:
        yield c


def assert_message_only(error_code: int, message: str | None, expected: type[BrokerResponseError]) -> None:
    assert error_code == expected.code
    assert message, "an error carries a message that says what went wrong"
    assert expected.name not in message, message
    assert "[Error" not in message, message


def create(conn: Conn, name: str, partitions: int, configs: dict[str, str] | None = None) -> tuple[int, str | None]:
    t = CreateTopicsRequest.CreatableTopic
    c = CreateTopicsRequest.CreatableTopicConfig
    topic = t(name=name, num_partitions=partitions, replication_factor=1,
              configs=[c(name=k, value=v) for k, v in (configs or {}).items()])
    resp = conn.call(CreateTopicsRequest(topics=[topic], timeout_ms=5000), 5)
    result = resp.topics[0]
    return result.error_code, result.error_message


def test_create_topics_bad_partition_count(conn: Conn) -> None:
    assert_message_only(*create(conn, "zero-partitions", 0), InvalidPartitionsError)


def test_create_topics_invalid_config(conn: Conn) -> None:
    assert_message_only(*create(conn, "bad-config", 1, {"retention.ms": "soon"}), InvalidConfigurationError)


def test_create_partitions_unknown_topic(conn: Conn) -> None:
    t = CreatePartitionsRequest.CreatePartitionsTopic
    resp = conn.call(CreatePartitionsRequest(topics=[t(name="nowhere", count=3, assignments=None)],
                                             timeout_ms=5000), 3)
    r = resp.results[0]
    assert_message_only(r.error_code, r.error_message, UnknownTopicOrPartitionError)


def test_delete_topics_unknown_topic(conn: Conn) -> None:
    resp = conn.call(DeleteTopicsRequest(topic_names=["nowhere"], timeout_ms=5000), 5)
    r = resp.responses[0]
    assert_message_only(r.error_code, r.error_message, UnknownTopicOrPartitionError)


def test_incremental_alter_configs_unknown_topic(conn: Conn) -> None:
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    C = IncrementalAlterConfigsRequest.AlterableConfig
    resource = R(resource_type=2, resource_name="nowhere", configs=[C(name="retention.ms", config_operation=0,
                                                                          value="1")])
    resp = conn.call(IncrementalAlterConfigsRequest(resources=[resource], validate_only=False), 1)
    r = resp.responses[0]
    assert_message_only(r.error_code, r.error_message, UnknownTopicOrPartitionError)
