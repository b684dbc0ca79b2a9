"""DescribeShareGroupOffsets (Java ``KafkaAdminClient.listShareGroupOffsets``, KIP-932): to the share group's
coordinator, the start offset, leader epoch and (v1, Kafka 4.2's KIP-1226) lag of each of its share partitions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.group_types import SharePartitionOffsetInfo
from pykafka_client.admin.lookups import GROUP_COORDINATOR
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse
from pykafka_client.structs import Node, TopicPartition

V = TypeVar("V")

#: per partition its start offset, leader epoch and lag; None while the group has not initialized it
ShareGroupOffsets = dict[TopicPartition, SharePartitionOffsetInfo | None]


def group_failed(result: ApiResult[str, V], group_id: str, code: int, message: str | None, doing: str) -> bool:
    """Whether a share-group offsets answer has a group-level error (then put in ``result`` for ``group_id``:
    ask again, look the coordinator up again, or fail); ``doing`` names the call in the error."""
    if not code:
        return False
    result.coordinator_error(group_id, code, broker_error(code, message, f"{doing} share group {group_id!r}"))
    return True


@dataclass
class ListShareGroupOffsetsHandler:
    """One key, the group id; ``wanted`` the partitions asked for (None: every share partition of the group)."""

    wanted: list[tuple[str, int]] | None
    by_topic: dict[str, list[int]] = field(init=False, default_factory=lambda: defaultdict(list))
    api_key = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
    lookup = GROUP_COORDINATOR

    def __post_init__(self) -> None:
        for topic, partition in self.wanted or []:
            self.by_topic[topic].append(partition)

    def build_request(self, version: int, keys: list[str]) -> DescribeShareGroupOffsetsRequest:
        (group_id,) = keys
        topics = None if self.wanted is None else [
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=p)
            for t, p in self.by_topic.items()
        ]
        return DescribeShareGroupOffsetsRequest(groups=[
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=group_id, topics=topics)])

    def handle_response(self, node: Node, keys: list[str], response: DescribeShareGroupOffsetsResponse
                        ) -> ApiResult[str, ShareGroupOffsets]:
        assert isinstance(response, DescribeShareGroupOffsetsResponse)
        (group_id,) = keys
        result: ApiResult[str, ShareGroupOffsets] = ApiResult()
        group = next((g for g in response.groups if g.group_id == group_id), None)
        if group is None:
            result.look_up_unanswered(keys)
            return result
        if group_failed(result, group_id, group.error_code, group.error_message, "listing the offsets of"):
            return result
        out: ShareGroupOffsets = {}
        for t in group.topics:
            for p in t.partitions:
                if p.error_code:
                    result.fail(group_id, broker_error(
                        p.error_code, p.error_message,
                        f"offset of {t.topic_name}-{p.partition_index} in share group {group_id!r}"))
                    return result
                out[TopicPartition(t.topic_name, p.partition_index)] = None if p.start_offset < 0 else (
                    SharePartitionOffsetInfo(p.start_offset, p.leader_epoch if p.leader_epoch >= 0 else None,
                                             p.lag if p.lag >= 0 else None))
        result.completed[group_id] = out
        return result

    @staticmethod
    def call(ctx: AdminContext, group_id: str, partitions: Iterable[tuple[str, int]] | None = None,
             timeout: float | None = None) -> ShareGroupOffsets:
        """The start offset, leader epoch and lag of each share partition of ``group_id`` (every one it has, or
        those of ``partitions``: None for one it has not initialized)."""
        wanted = None if partitions is None else sorted({(tp[0], tp[1]) for tp in partitions})
        handler = ListShareGroupOffsetsHandler(wanted)
        return ctx.run_call(lambda _timer: handler, [group_id], timeout)[group_id]
