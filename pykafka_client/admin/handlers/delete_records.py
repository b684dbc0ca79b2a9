"""DeleteRecords (Java ``KafkaAdminClient.deleteRecords``): to each partition's leader in fresh metadata."""

from __future__ import annotations

from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import CurrentLeaders
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse
from pykafka_client.structs import Node, PartitionMapping, TopicPartition
from pykafka_client.utils.arguments import mapping_argument
from pykafka_client.utils.time import Timer


@dataclass
class DeleteRecordsHandler:
    """Keys: the partitions; ``before_offsets`` the offset to delete below in each; a partition's error stops
    the call."""

    before_offsets: PartitionMapping[int]
    timer: Timer
    api_key = ApiKey.DELETE_RECORDS
    lookup = CurrentLeaders("leaders to delete records on")

    def build_request(self, version: int, keys: list[tuple[str, int]]) -> DeleteRecordsRequest:
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for tp in keys:
            by_topic.setdefault(tp[0], []).append((tp[1], self.before_offsets[TopicPartition(tp[0], tp[1])]))
        return DeleteRecordsRequest(
            topics=[
                DeleteRecordsRequest.DeleteRecordsTopic(
                    name=t,
                    partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=o)
                                for p, o in parts],
                )
                for t, parts in by_topic.items()
            ],
            timeout_ms=max(0, min(self.timer.remaining_ms(), 2**31 - 1)),
        )

    def handle_response(self, node: Node, keys: list[tuple[str, int]], response: DeleteRecordsResponse
                        ) -> ApiResult[tuple[str, int], int]:
        assert isinstance(response, DeleteRecordsResponse)
        result: ApiResult[tuple[str, int], int] = ApiResult()
        for t in response.topics:
            for p in t.partitions:
                if p.error_code:
                    raise broker_error(p.error_code, None, f"deleting records of {t.name}-{p.partition_index}")
                result.completed[TopicPartition(t.name, p.partition_index)] = p.low_watermark
        return result

    @staticmethod
    def call(ctx: AdminContext, before_offsets: PartitionMapping[int],
             timeout: float | None = None) -> dict[TopicPartition, int]:
        """Delete the records of each partition below the given offset; each partition's new low watermark."""
        mapping_argument(
            "delete_records", "before_offsets", before_offsets,
            "a mapping of TopicPartition to offset, e.g. {TopicPartition('orders', 0): 100}",
        )
        if not before_offsets:
            return {}
        completed = ctx.run_call(lambda timer: DeleteRecordsHandler(before_offsets, timer), list(before_offsets),
                                 timeout)
        return {TopicPartition(tp[0], tp[1]): offset for tp, offset in completed.items()}
