"""OffsetCommit as an admin (Java ``KafkaAdminClient.alterConsumerGroupOffsets``): to the group's coordinator,
with no member and generation -1."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import GROUP_COORDINATOR
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import OffsetCommitRequest, OffsetCommitResponse
from pykafka_client.structs import Node, OffsetAndMetadata, PartitionMapping
from pykafka_client.utils.arguments import mapping_argument


@dataclass
class AlterConsumerGroupOffsetsHandler:
    """One key, the group id; ``by_topic`` the offsets to commit, per topic."""

    by_topic: dict[str, list[tuple[int, OffsetAndMetadata]]]
    api_key = ApiKey.OFFSET_COMMIT
    lookup = GROUP_COORDINATOR

    def build_request(self, version: int, keys: list[str]) -> OffsetCommitRequest:
        (group_id,) = keys
        return OffsetCommitRequest(
            group_id=group_id,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=p, committed_offset=o.offset,
                            committed_leader_epoch=-1 if o.leader_epoch is None else o.leader_epoch,
                            committed_metadata=o.metadata,
                        )
                        for p, o in parts
                    ],
                )
                for topic, parts in self.by_topic.items()
            ],
        )

    def handle_response(self, node: Node, keys: list[str], response: OffsetCommitResponse) -> ApiResult[str, None]:
        assert isinstance(response, OffsetCommitResponse)
        (group_id,) = keys
        for t in response.topics:
            for p in t.partitions:
                if p.error_code:
                    error = broker_error(p.error_code, None,
                                         f"committing {t.name}-{p.partition_index} for group {group_id!r}")
                    result: ApiResult[str, None] = ApiResult()
                    result.coordinator_error(group_id, p.error_code, error)
                    return result
        return ApiResult(completed={group_id: None})

    @staticmethod
    def call(ctx: AdminContext, group_id: str, offsets: PartitionMapping[OffsetAndMetadata | int],
             timeout: float | None = None) -> None:
        """Commit ``offsets`` for ``group_id`` as an admin; the group must have no active members."""
        mapping_argument(
            "alter_consumer_group_offsets", "offsets", offsets,
            "a mapping of TopicPartition to OffsetAndMetadata, e.g. "
            "{TopicPartition('orders', 0): OffsetAndMetadata(42)}",
        )
        if not offsets:
            return
        by_topic: dict[str, list[tuple[int, OffsetAndMetadata]]] = defaultdict(list)
        for tp, o in offsets.items():
            by_topic[tp[0]].append((tp[1], o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)))
        ctx.run_call(lambda _timer: AlterConsumerGroupOffsetsHandler(by_topic), [group_id], timeout)
