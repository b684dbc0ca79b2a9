"""Describe topics (Java ``KafkaAdminClient.describeTopics``): a Metadata request naming them, to any broker."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.handlers.create_topics import ZERO_UUID
from pykafka_client.admin.lookups import LeastLoaded
from pykafka_client.admin.types import TopicDescription, TopicPartitionInfo
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import MetadataRequest, MetadataResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument


@dataclass
class DescribeTopicsHandler:
    """Keys: the topic names."""

    api_key = ApiKey.METADATA
    lookup = LeastLoaded()

    def build_request(self, version: int, keys: list[str]) -> MetadataRequest:
        return MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in keys], allow_auto_topic_creation=False)

    def handle_response(self, node: Node, keys: list[str], response: MetadataResponse) -> ApiResult[str, TopicDescription]:
        assert isinstance(response, MetadataResponse)
        brokers = {b.node_id: Node(b.node_id, b.host, b.port, b.rack) for b in response.brokers}

        def node_of(i: int) -> Node:
            return brokers.get(i) or Node(i, "", -1)

        result: ApiResult[str, TopicDescription] = ApiResult()
        for t in response.topics:
            name = t.name or ""
            if t.error_code:
                result.failed.setdefault(name, broker_error(t.error_code, None, f"topic {name!r}"))
                continue
            parts = [
                TopicPartitionInfo(
                    p.partition_index,
                    brokers.get(p.leader_id),
                    [node_of(i) for i in p.replica_nodes],
                    [node_of(i) for i in p.isr_nodes],
                    p.leader_epoch if p.leader_epoch >= 0 else None,
                )
                for p in sorted(t.partitions, key=lambda p: p.partition_index)
            ]
            tid = t.topic_id if t.topic_id != ZERO_UUID else None
            result.completed[name] = TopicDescription(name, tid, t.is_internal, parts)
        return result

    @staticmethod
    def call(ctx: AdminContext, topics: Iterable[str], timeout: float | None = None) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and ISR of each topic; raises the first topic's error."""
        names = list_argument("describe_topics", "topics", topics, str, "a list of topic names, e.g. ['orders']")
        if not names:
            return {}
        return ctx.run_call(lambda _timer: DescribeTopicsHandler(), names, timeout)
