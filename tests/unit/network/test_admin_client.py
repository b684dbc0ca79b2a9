"""AdminClient on a MockSelector and MockTime: requests on the wire, error mapping, retries, timeouts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pykafka_client import AdminClient, TopicPartition
from pykafka_client.admin import NewTopic, OffsetSpec
from pykafka_client.errors import (
    ConfigurationError,
    GroupIdNotFoundError,
    IllegalArgumentError,
    IllegalStateError,
    KafkaTimeoutError,
    PolicyViolationError,
    TopicExistsError,
    UnsupportedVersionError,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    ConsumerGroupDescribeResponse,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeClusterResponse,
    ListOffsetsResponse,
)
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_selector import MockSelector, SentRequest
from tests.doubles.responses import api_versions_response, metadata_response, nodes

Responder = Callable[[SentRequest], Any]
BROKERS = nodes(2, host="127.0.0.1")


class Env:
    """An AdminClient whose broker answers through ``responders[api_key](request)``."""

    def __init__(self, api_versions: Any = None, **config: Any) -> None:
        self.time = MockTime()
        self.selector = MockSelector(self.time)
        self.api_versions = api_versions or api_versions_response()
        self.responders: dict[int, Responder] = {
            ApiKey.METADATA: lambda r: metadata_response(BROKERS, {"t": 2}),
            # a broker whose groups are all classic: describe_consumer_groups falls back to DescribeGroups
            ApiKey.CONSUMER_GROUP_DESCRIBE: lambda r: ConsumerGroupDescribeResponse(groups=[
                ConsumerGroupDescribeResponse.DescribedGroup(group_id=g, error_code=GroupIdNotFoundError.code)
                for g in r.body.group_ids]),
        }
        self.selector.on_poll = self._answer
        self.admin = AdminClient({"bootstrap.servers": "127.0.0.1:9092", **config}, time=self.time, selector=self.selector)

    def _answer(self, selector: MockSelector) -> None:
        for req in selector.unanswered():
            if req.api_key == ApiKey.API_VERSIONS:
                selector.respond(req.destination, self.api_versions)
            elif req.api_key in self.responders:
                body = self.responders[req.api_key](req)
                if body is not None:
                    selector.respond(req.destination, body, api_key=req.api_key)

    def sent(self, api_key: int) -> list[SentRequest]:
        return [r for r in self.selector.sent_requests if r.api_key == api_key]


def created(name: str, code: int = 0, message: str | None = None) -> CreateTopicsResponse:
    return CreateTopicsResponse(
        topics=[
            CreateTopicsResponse.CreatableTopicResult(
                name=name, error_code=code, error_message=message, num_partitions=3, replication_factor=1
            )
        ]
    )


def test_unknown_config_key_raises_configuration_error_naming_it() -> None:
    with pytest.raises(ConfigurationError, match=r"no\.such\.key"):
        AdminClient({"bootstrap.servers": "127.0.0.1:9092", "no.such.key": "x"})
    with pytest.raises(ConfigurationError, match=r"bootstrap\.servers"):
        AdminClient({})
    with pytest.raises(ConfigurationError, match=r"request\.timeout\.ms"):
        AdminClient({"bootstrap.servers": "127.0.0.1:9092", "request.timeout.ms": "soon"})


def test_describe_cluster_uses_describe_cluster_api() -> None:
    e = Env()
    e.responders[ApiKey.DESCRIBE_CLUSTER] = lambda r: DescribeClusterResponse(
        cluster_id="c1",
        controller_id=1,
        brokers=[DescribeClusterResponse.DescribeClusterBroker(broker_id=b.id, host=b.host, port=b.port) for b in BROKERS],
    )
    d = e.admin.describe_cluster(timeout=5)
    assert d.cluster_id == "c1" and d.controller is not None and d.controller.id == 1
    assert [n.id for n in d.nodes] == [0, 1]


def test_describe_cluster_falls_back_to_metadata_for_old_brokers() -> None:
    e = Env(api_versions=api_versions_response({ApiKey.DESCRIBE_CLUSTER: None}))
    d = e.admin.describe_cluster(timeout=5)
    assert d.cluster_id == "test-cluster" and len(d.nodes) == 2
    assert e.sent(ApiKey.DESCRIBE_CLUSTER) == []


def test_create_topics_sends_to_controller_and_maps_errors() -> None:
    e = Env()
    e.responders[ApiKey.CREATE_TOPICS] = lambda r: created(r.body.topics[0].name)
    result = e.admin.create_topics([NewTopic("a", 3, 1, configs={"retention.ms": "1000"})], timeout=5)
    assert result["a"].num_partitions == 3
    req = e.sent(ApiKey.CREATE_TOPICS)[0]
    assert req.destination == "0"  # the controller (metadata_response makes broker 0 the controller)
    assert req.body.topics[0].configs[0].name == "retention.ms"
    e.responders[ApiKey.CREATE_TOPICS] = lambda r: created("a", 36, "exists")
    with pytest.raises(TopicExistsError, match="'a'"):
        e.admin.create_topics([NewTopic("a", 3, 1)], timeout=5)
    e.responders[ApiKey.CREATE_TOPICS] = lambda r: created("a", 44, "nope")
    with pytest.raises(PolicyViolationError):
        e.admin.create_topics([NewTopic("a", 3, 1)], timeout=5)


def test_create_topics_retries_not_controller() -> None:
    e = Env()
    answers = iter([created("a", 41), created("a")])
    e.responders[ApiKey.CREATE_TOPICS] = lambda r: next(answers)
    assert "a" in e.admin.create_topics([NewTopic("a")], timeout=5)
    assert len(e.sent(ApiKey.CREATE_TOPICS)) == 2


def test_delete_topics_body_follows_negotiated_version() -> None:
    for max_version, field in ((6, "topics"), (5, "topic_names")):
        e = Env(api_versions=api_versions_response({ApiKey.DELETE_TOPICS: (0, max_version)}))
        e.responders[ApiKey.DELETE_TOPICS] = lambda r: DeleteTopicsResponse(
            responses=[DeleteTopicsResponse.DeletableTopicResult(name="a", error_code=0)]
        )
        e.admin.delete_topics(["a"], timeout=5)
        req = e.sent(ApiKey.DELETE_TOPICS)[0]
        assert req.api_version == max_version
        body = req.body
        assert isinstance(body, DeleteTopicsRequest)
        assert (body.topics if field == "topics" else body.topic_names)


def test_list_offsets_groups_by_leader_and_retries_after_not_leader() -> None:
    e = Env()
    calls: list[str] = []

    def answer(r: SentRequest) -> ListOffsetsResponse:
        calls.append(r.destination)
        parts = r.body.topics[0].partitions
        code = 6 if len(calls) == 1 else 0  # NOT_LEADER_OR_FOLLOWER on the first try
        return ListOffsetsResponse(
            topics=[
                ListOffsetsResponse.ListOffsetsTopicResponse(
                    name="t",
                    partitions=[
                        ListOffsetsResponse.ListOffsetsPartitionResponse(
                            partition_index=p.partition_index, error_code=code, offset=40 + p.partition_index,
                            timestamp=-1, leader_epoch=0,
                        )
                        for p in parts
                    ],
                )
            ]
        )

    e.responders[ApiKey.LIST_OFFSETS] = answer
    out = e.admin.list_offsets({("t", 0): OffsetSpec.earliest(), ("t", 1): OffsetSpec.latest()}, timeout=5)
    assert ("t", 0) in out and ("t", 1) in out  # the results are found by the tuples given too
    assert out[TopicPartition("t", 0)].offset == 40 and out[TopicPartition("t", 1)].offset == 41
    assert all(type(tp) is TopicPartition for tp in out)  # the one TopicPartition, equal to the tuples given
    first_round = {r.destination for r in e.sent(ApiKey.LIST_OFFSETS)[:2]}
    assert first_round == {"0", "1"}  # partitions 0 and 1 have different leaders
    sent = e.sent(ApiKey.LIST_OFFSETS)[0]
    assert sent.body.topics[0].partitions[0].timestamp in (OffsetSpec.EARLIEST_TIMESTAMP, OffsetSpec.LATEST_TIMESTAMP)


def test_max_timestamp_needs_list_offsets_v7() -> None:
    e = Env(api_versions=api_versions_response({ApiKey.LIST_OFFSETS: (0, 6)}))
    with pytest.raises(UnsupportedVersionError):
        e.admin.list_offsets({("t", 0): OffsetSpec.max_timestamp()}, timeout=5)


def test_timeout_when_broker_never_answers() -> None:
    e = Env()
    # CreateTopics is never answered: request timeouts, retries, then the call times out.
    t0 = e.time.hi_res_clock_ms()
    with pytest.raises(KafkaTimeoutError):
        e.admin.create_topics([NewTopic("a")], timeout=2.0)
    elapsed = e.time.hi_res_clock_ms() - t0
    assert 2000 <= elapsed < 2500


def test_invalid_timeout_and_closed_client() -> None:
    e = Env()
    with pytest.raises(IllegalArgumentError):
        e.admin.describe_topics(["t"], timeout=-1)
    e.admin.close()
    e.admin.close()
    with pytest.raises(IllegalStateError):
        e.admin.describe_topics(["t"], timeout=1)
    assert e.selector.closed


def test_retries_limit_disconnect_retries() -> None:
    from pykafka_client.errors import DisconnectError

    e = Env(retries=1, **{"request.timeout.ms": 100})
    with pytest.raises(DisconnectError, match="2 attempts"):
        e.admin.create_topics([NewTopic("a")], timeout=30)
    assert len(e.sent(ApiKey.CREATE_TOPICS)) == 2


def test_describe_configs_routes_broker_resources_to_that_broker() -> None:
    from pykafka_client.admin import ConfigResource, ConfigResourceType, ConfigSource
    from pykafka_client.protocol.messages import DescribeConfigsResponse

    e = Env()

    def answer(r: SentRequest) -> DescribeConfigsResponse:
        res = r.body.resources[0]
        return DescribeConfigsResponse(
            results=[
                DescribeConfigsResponse.DescribeConfigsResult(
                    error_code=0,
                    resource_type=res.resource_type,
                    resource_name=res.resource_name,
                    configs=[
                        DescribeConfigsResponse.DescribeConfigsResourceResult(
                            name="log.retention.ms", value="1000", read_only=False, config_source=5, is_sensitive=False
                        )
                    ],
                )
            ]
        )

    e.responders[ApiKey.DESCRIBE_CONFIGS] = answer
    broker1 = ConfigResource(ConfigResourceType.BROKER, "1")
    topic = ConfigResource(ConfigResourceType.TOPIC, "t")
    out = e.admin.describe_configs([broker1, topic], timeout=5)
    assert out[broker1]["log.retention.ms"].value == "1000"
    assert out[topic]["log.retention.ms"].source is ConfigSource.DEFAULT_CONFIG
    by_resource = {r.body.resources[0].resource_name: r.destination for r in e.sent(ApiKey.DESCRIBE_CONFIGS)}
    assert by_resource["1"] == "1"


def test_describe_topics_raises_the_topic_error() -> None:
    from pykafka_client.errors import UnknownTopicOrPartitionError

    e = Env()
    with pytest.raises(UnknownTopicOrPartitionError, match="'missing'"):
        e.responders[ApiKey.METADATA] = lambda r: metadata_response(
            BROKERS, {"t": 2}, topic_errors={"missing": 3} if r.body.topics and r.body.topics[0].name == "missing" else None
        )
        e.admin.describe_topics(["missing"], timeout=5)
    desc = e.admin.describe_topics(["t"], timeout=5)["t"]
    assert [p.partition for p in desc.partitions] == [0, 1]
    assert desc.partitions[1].leader is not None and desc.partitions[1].leader.id == 1
