"""OffsetDelete (Java ``KafkaAdminClient.deleteConsumerGroupOffsets``): to the group's coordinator, which removes
the group's committed offsets of partitions it no longer consumes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import GROUP_COORDINATOR
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import OffsetDeleteRequest, OffsetDeleteResponse
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.arguments import list_argument

#: per partition: None (deleted) or its error
PartitionResults = dict[TopicPartition, BaseException | None]


@dataclass
class DeleteConsumerGroupOffsetsHandler:
    """One key, the group id; ``partitions`` the offsets to delete."""

    partitions: list[TopicPartition]
    api_key = ApiKey.OFFSET_DELETE
    lookup = GROUP_COORDINATOR

    def build_request(self, version: int, keys: list[str]) -> OffsetDeleteRequest:
        (group_id,) = keys
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in self.partitions:
            by_topic[tp.topic].append(tp.partition)
        return OffsetDeleteRequest(group_id=group_id, topics=[
            OffsetDeleteRequest.OffsetDeleteRequestTopic(name=topic, partitions=[
                OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p) for p in parts])
            for topic, parts in by_topic.items()])

    def handle_response(self, node: Node, keys: list[str],
                        response: OffsetDeleteResponse) -> ApiResult[str, PartitionResults]:
        assert isinstance(response, OffsetDeleteResponse)
        (group_id,) = keys
        result: ApiResult[str, PartitionResults] = ApiResult()
        if response.error_code:
            result.coordinator_error(group_id, response.error_code,
                                     broker_error(response.error_code, None, f"deleting offsets of group {group_id!r}"))
            return result
        per_partition: PartitionResults = {}
        for t in response.topics:
            for p in t.partitions:
                per_partition[TopicPartition(t.name, p.partition_index)] = None if not p.error_code else broker_error(
                    p.error_code, None, f"deleting the offset of {t.name}-{p.partition_index} for group {group_id!r}")
        result.completed[group_id] = per_partition
        return result

    @staticmethod
    def call(ctx: AdminContext, group_id: str, partitions: Iterable[TopicPartition],
             timeout: float | None = None) -> PartitionResults:
        """Delete ``group_id``'s committed offsets of ``partitions``. A group-level error (GroupIdNotFoundError,
        NonEmptyGroupError for a group that consumes with an active member, authorization) is raised; a
        partition's own error (GroupSubscribedToTopicError: the group's members still subscribe to its topic)
        is that partition's value in the result, None where the offset was deleted."""
        wanted = list_argument("delete_consumer_group_offsets", "partitions", partitions, TopicPartition,
                               "a list of TopicPartition, e.g. [TopicPartition('orders', 0)]")
        if not wanted:
            return {}
        results: dict[str, PartitionResults] = ctx.run_call(
            lambda _timer: DeleteConsumerGroupOffsetsHandler(list(dict.fromkeys(wanted))), [group_id], timeout)
        return results[group_id]
