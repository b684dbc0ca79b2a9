"""AlterShareGroupOffsets (Java ``KafkaAdminClient.alterShareGroupOffsets``, KIP-932): to the share group's
coordinator, new share-partition start offsets; the group must be empty (GroupNotEmptyError otherwise)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.handlers.list_share_group_offsets import group_failed
from pykafka_client.admin.lookups import GROUP_COORDINATOR
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse
from pykafka_client.structs import Node, PartitionMapping
from pykafka_client.utils.arguments import mapping_argument

_Request = AlterShareGroupOffsetsRequest


@dataclass
class AlterShareGroupOffsetsHandler:
    """One key, the group id; ``by_topic`` the start offsets to set, per topic."""

    by_topic: dict[str, list[tuple[int, int]]]
    api_key = ApiKey.ALTER_SHARE_GROUP_OFFSETS
    lookup = GROUP_COORDINATOR

    def build_request(self, version: int, keys: list[str]) -> AlterShareGroupOffsetsRequest:
        (group_id,) = keys
        return _Request(group_id=group_id, topics=[
            _Request.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[
                _Request.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o) for p, o in parts])
            for topic, parts in self.by_topic.items()
        ])

    def handle_response(self, node: Node, keys: list[str], response: AlterShareGroupOffsetsResponse
                        ) -> ApiResult[str, None]:
        assert isinstance(response, AlterShareGroupOffsetsResponse)
        (group_id,) = keys
        result: ApiResult[str, None] = ApiResult()
        if group_failed(result, group_id, response.error_code, response.error_message, "altering the offsets of"):
            return result
        for t in response.responses:
            for p in t.partitions:
                if p.error_code:
                    result.fail(group_id, broker_error(
                        p.error_code, p.error_message,
                        f"setting the start offset of {t.topic_name}-{p.partition_index} in share group {group_id!r}"))
                    return result
        result.completed[group_id] = None
        return result

    @staticmethod
    def call(ctx: AdminContext, group_id: str, offsets: PartitionMapping[int],
             timeout: float | None = None) -> None:
        """Set the share-partition start offsets of an empty share group (its in-flight records are dropped)."""
        mapping_argument("alter_share_group_offsets", "offsets", offsets,
                         "a mapping of TopicPartition to a start offset, e.g. {TopicPartition('orders', 0): 42}")
        if not offsets:
            return
        by_topic: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for tp, offset in offsets.items():
            by_topic[tp[0]].append((tp[1], int(offset)))
        ctx.run_call(lambda _timer: AlterShareGroupOffsetsHandler(by_topic), [group_id], timeout)
